// The Relay example (examples/web) in a real browser: Debian's Chromium driven by
// puppeteer-core, against an itemgraph server with auth on and CORS for the app's origin.
//
//   node tests/browser/web.mjs <examples/web/dist> <app-port> <api-url> <token> <screenshot-prefix>
//
// Serves the built app on 127.0.0.1:<app-port> itself, then walks it: pages a status
// queue to its end (rows = totalCount), pages a user's tickets older then newer (each
// once), sees a ticket created through the API arrive on the live page, cuts the app's
// connection (a TCP proxy of its own between the app and the server) while changes are
// made and sees each arrive once after the reconnect, cuts it while more changes are made
// than the server replays and sees "changes were missed" and the list reloaded, creates a
// ticket in the app with the server's answers held back and sees it listed at once
// (optimistically) then confirmed, provokes VERSION_MISMATCH from a second tab and sees
// the message, changes an order's status; no console error anywhere but the expected
// failed reconnects. Exits 1 with the reason on the first failure.

import { createServer } from 'node:http';
import { connect, createServer as createTcpServer } from 'node:net';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import puppeteer from 'puppeteer-core';

const [dist, appPort, api, token, shots] = process.argv.slice(2);
const APP = `http://127.0.0.1:${appPort}/`;
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

const server = createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, APP).pathname)).replace(/^(\.\.[/\\])+/, '');
  const file = join(dist, path === '/' ? 'index.html' : path);
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(Number(appPort), '127.0.0.1', resolve));

// The app reaches the server through this proxy, so the test can cut its connections
// (`cut`, until `restore`) and hold the server's answers back (`hold`).
const upstream = new URL(api);
const links = new Set();
let down = false;
let holdMs = 0;
const proxy = createTcpServer((client) => {
  if (down) return client.destroy();
  const server = connect(Number(upstream.port), upstream.hostname);
  const link = { client, server };
  links.add(link);
  const end = () => {
    links.delete(link);
    client.destroy();
    server.destroy();
  };
  for (const s of [client, server]) s.on('error', end).on('close', end);
  client.pipe(server);
  server.on('data', (chunk) => {
    if (holdMs === 0) return client.write(chunk);
    server.pause();
    setTimeout(() => {
      client.write(chunk);
      server.resume();
    }, holdMs);
  });
});
await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
const proxied = `http://127.0.0.1:${proxy.address().port}${upstream.pathname}`;
const cut = () => {
  down = true;
  for (const { client, server } of links) {
    client.destroy();
    server.destroy();
  }
};
const restore = () => {
  down = false;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// While the connection is cut, the browser logs each failed reconnect: expected then.
let reconnecting = false;

const gql = async (query, variables) => {
  const r = await fetch(api, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await r.json();
  if (body.errors) throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
};
const check = (ok, what) => {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
};

const browser = await puppeteer.launch({
  executablePath: process.env.ITEMGRAPH_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
});
const problems = [];
async function tab() {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (reconnecting && /WebSocket connection to .* failed|ERR_CONNECTION/.test(m.text())) return;
    problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // Sign in on this tab (the token and the server are kept per tab).
  await page.goto(`${APP}?api=${encodeURIComponent(proxied)}`);
  await page.waitForSelector('[data-testid="token-input"]');
  await page.type('[data-testid="token-input"]', token);
  await page.click('[data-testid="sign-in-submit"]');
  await page.waitForSelector('[data-testid="ticket-row"]', { timeout: 20000 });
  return page;
}

let page;
let exitCode = 0;
try {
  page = await tab();
  await page.screenshot({ path: `${shots}-signed-in.png` });
  const count = (sel) => page.$$eval(sel, (els) => els.length);
  const text = (sel) => page.$eval(sel, (el) => el.textContent);

  // 0. Who is signed in comes from the server (`viewer`), not from reading the token:
  // its organization's name and the token's role (its subject names no member).
  const signedInAs = await text('[data-testid="signed-in-as"]');
  check(signedInAs === 'Acme Corporation · admin', `the nav says who is signed in: "${signedInAs}"`);

  // 1. A status queue paged to its end: as many rows as its totalCount.
  await page.click('[data-testid="queue-tab-OPEN"]');
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="ticket-row-status"]')].every((e) => e.textContent === 'OPEN'));
  const total = (await gql('{ organization(slug: "acme") { tickets(status: OPEN, first: 1) { totalCount } } }')).organization.tickets.totalCount;
  for (let i = 0; i < 50; i++) {
    const more = await page.$('[data-testid="queue-load-more"]:not([disabled])');
    if (!more) break;
    const before = await count('[data-testid="ticket-row"]');
    await more.click();
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="ticket-row"]').length > n, { timeout: 20000 }, before);
  }
  const queueIds = await page.$$eval('[data-testid="ticket-row"]', (els) => els.map((e) => e.dataset.ticketId));
  check(queueIds.length === total && new Set(queueIds).size === total, `the OPEN queue paged to its end shows ${queueIds.length} rows, its totalCount ${total}, each once`);
  await page.screenshot({ path: `${shots}-organization.png` });

  // 2. A user's tickets, older then newer: each once, newest first.
  await page.goto(`${APP}#/users/wile-e-coyote`);
  await page.waitForSelector('[data-testid="user-tickets"] [data-testid="ticket-row"]');
  for (let i = 0; i < 20; i++) {
    const older = await page.$('[data-testid="load-older"]:not([disabled])');
    if (!older) break;
    const before = await count('[data-testid="user-tickets"] [data-testid="ticket-row"]');
    await older.click();
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="user-tickets"] [data-testid="ticket-row"]').length > n, { timeout: 20000 }, before);
  }
  const userTotal = (await gql('{ user(org: "acme", username: "wile-e-coyote") { tickets(first: 1) { totalCount } } }')).user.tickets.totalCount;
  const olderIds = await page.$$eval('[data-testid="user-tickets"] [data-testid="ticket-row"]', (els) => els.map((e) => e.dataset.ticketId));
  check(olderIds.length === userTotal && new Set(olderIds).size === userTotal && olderIds.every((id, i) => i === 0 || olderIds[i - 1] > id), `paging older shows all ${userTotal} of the user's tickets once, newest first`);
  await page.click('[data-testid="start-oldest"]');
  await page.waitForFunction(() => !document.querySelector('[data-testid="load-newer"]').disabled, { timeout: 20000 });
  for (let i = 0; i < 20; i++) {
    const newer = await page.$('[data-testid="load-newer"]:not([disabled])');
    if (!newer) break;
    const before = await count('[data-testid="user-tickets"] [data-testid="ticket-row"]');
    await newer.click();
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="user-tickets"] [data-testid="ticket-row"]').length > n, { timeout: 20000 }, before);
  }
  const newerIds = await page.$$eval('[data-testid="user-tickets"] [data-testid="ticket-row"]', (els) => els.map((e) => e.dataset.ticketId));
  check(newerIds.length === userTotal && new Set(newerIds).size === userTotal && [...newerIds].sort().join() === [...olderIds].sort().join(), `paging newer from the oldest end shows the same ${userTotal} tickets once`);

  // 3. The live list: a ticket created elsewhere arrives through the subscription.
  await page.goto(`${APP}#/live`);
  await page.waitForSelector('[data-testid="live-list"] [data-testid="ticket-row"]');
  await new Promise((r) => setTimeout(r, 1500));
  const created = (await gql('mutation { createTicket(input: {org: "acme", requester: "daffy-duck", title: "Created elsewhere", body: "Through the API.", priority: HIGH}) { ticket { id ticketId } } }')).createTicket.ticket;
  await page.waitForFunction((id) => !!document.querySelector(`[data-testid="live-list"] [data-ticket-id="${id}"]`), { timeout: 20000 }, created.ticketId);
  check(true, 'a ticket created through the API appeared on the live list');
  await page.screenshot({ path: `${shots}-live.png` });

  // 3b. The connection cut while two tickets are created: after the reconnect each is on
  // the list and in the event log exactly once (resumed from the last event's cursor).
  const create = async (title) =>
    (await gql(`mutation { createTicket(input: {org: "acme", requester: "daffy-duck", title: "${title}", body: "Written while the app was cut off.", priority: LOW}) { ticket { ticketId } } }`)).createTicket.ticket.ticketId;
  reconnecting = true;
  cut();
  const away = ['Missed while away 1', 'Missed while away 2'];
  const awayIds = [];
  for (const title of away) awayIds.push(await create(title));
  await sleep(1000);
  restore();
  await page.waitForFunction(
    (ids) => ids.every((id) => document.querySelector(`[data-testid="live-list"] [data-ticket-id="${id}"]`)),
    { timeout: 20000 },
    awayIds,
  );
  await sleep(1500); // room for a repeat to show, if one came
  reconnecting = false;
  for (const [i, id] of awayIds.entries()) {
    const rows = await count(`[data-testid="live-list"] [data-ticket-id="${id}"]`);
    const events = await page.$$eval('[data-testid="live-event"]', (els, t) => els.filter((e) => e.textContent.includes(t)).length, away[i]);
    check(rows === 1 && events === 1, `"${away[i]}", made while the app was cut off, arrived once (${rows} row, ${events} event)`);
  }
  check(!(await page.$('[data-testid="live-expired"]')), 'a short cut is resumed, not reloaded');

  // 3c. Cut off while more changes are made than the server replays (--max-replay):
  // "changes were missed", and the list is fetched again with the newest of them.
  reconnecting = true;
  cut();
  let newest;
  for (let i = 0; i < 12; i++) newest = await create(`Missed for good ${i}`);
  await sleep(500);
  restore();
  await page.waitForSelector('[data-testid="live-expired"]', { timeout: 20000 });
  check(true, `the app says: "${await text('[data-testid="live-expired"]')}"`);
  await page.waitForFunction((id) => !!document.querySelector(`[data-testid="live-list"] [data-ticket-id="${id}"]`), { timeout: 20000 }, newest);
  check(true, 'the list was reloaded with the changes made while away');
  reconnecting = false;
  await page.screenshot({ path: `${shots}-live-reloaded.png` });

  // 4. A ticket created in the app is in its queue.
  // Through the app's own links, so its Relay store (with the OPEN queue) stays.
  await page.click('[data-testid="nav-org"]');
  await page.waitForSelector('[data-testid="queue-tab-OPEN"]');
  await page.click('[data-testid="queue-tab-OPEN"]');
  await page.waitForSelector('[data-testid="ticket-row"]');
  await page.click('[data-testid="nav-new-ticket"]');
  await page.waitForSelector('[data-testid="new-ticket-form"]');
  await page.type('[data-testid="new-ticket-title"]', 'Created in the browser');
  await page.type('[data-testid="new-ticket-body"]', 'Typed by the test.');
  // The server's answers are held back for 4 s: the new ticket is in the OPEN queue at
  // once (the optimistic update, its id a client one), then replaced by the server's.
  holdMs = 4000;
  await page.click('[data-testid="new-ticket-submit"]');
  await page.click('[data-testid="nav-org"]');
  await page.waitForSelector('[data-testid="queue-tab-OPEN"]');
  await page.click('[data-testid="queue-tab-OPEN"]');
  const browserRow = (optimistic) =>
    [...document.querySelectorAll('[data-testid="ticket-row"]')].some(
      (r) => r.textContent.includes('Created in the browser') && r.dataset.ticketId.startsWith('client:') === optimistic,
    );
  await page.waitForFunction(browserRow, { timeout: 3000 }, true);
  check(true, 'the ticket created in the app is in the OPEN queue before the server answered');
  holdMs = 0;
  await page.waitForFunction(browserRow, { timeout: 20000 }, false);
  check(true, 'then the server\'s answer replaced it: the ticket is listed with its own id');

  // 5. VERSION_MISMATCH provoked from a second tab.
  await page.goto(`${APP}#/tickets/${encodeURIComponent(created.id)}`);
  await page.waitForSelector('[data-testid="ticket-form"]');
  const other = await tab();
  await other.bringToFront();
  await other.goto(`${APP}#/tickets/${encodeURIComponent(created.id)}`);
  await other.waitForSelector('[data-testid="ticket-form"]');
  await other.select('[data-testid="ticket-priority-select"]', 'URGENT');
  await other.click('[data-testid="ticket-save"]');
  await other.waitForSelector('[data-testid="ticket-saved"]', { timeout: 20000 });
  await page.bringToFront();
  await page.select('[data-testid="ticket-priority-select"]', 'LOW');
  await page.click('[data-testid="ticket-save"]');
  await page.waitForSelector('[data-testid="error-message"][data-code="VERSION_MISMATCH"]', { timeout: 20000 });
  check((await text('[data-testid="error-message"]')).length > 0, `the second tab's save made this one's VERSION_MISMATCH: "${await text('[data-testid="error-message"]')}"`);
  await page.screenshot({ path: `${shots}-version-mismatch.png` });
  await page.click('[data-testid="ticket-reload"]');
  await page.waitForFunction(() => !document.querySelector('[data-testid="error-message"]'), { timeout: 20000 });
  await page.click('[data-testid="ticket-save"]');
  await page.waitForSelector('[data-testid="ticket-saved"]', { timeout: 20000 });
  check(true, 'after "Reload" the save goes through');
  await other.close();

  // 6. An order: lines, and a status change.
  const orders = (await gql('{ organization(slug: "acme") { orders(first: 50) { nodes { id status } } } }')).organization.orders.nodes;
  const placed = orders.find((o) => o.status === 'PLACED');
  await page.goto(`${APP}#/orders/${encodeURIComponent(placed.id)}`);
  await page.waitForSelector('[data-testid="order-lines"]');
  check((await count('[data-testid="order-line"]')) > 0, 'the order page lists its lines');
  await page.click('[data-testid="order-set-PAID"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="order-status"]').textContent === 'PAID', { timeout: 20000 });
  check(true, 'the order moved to PAID');

  check(problems.length === 0, `no console error (${problems.join('; ')})`);
} catch (e) {
  console.error(`FAIL: ${e.message}`);
  if (problems.length) console.error(problems.join('\n'));
  if (page) await page.screenshot({ path: `${shots}-failed.png` }).catch(() => {});
  exitCode = 1;
} finally {
  await browser.close();
  server.close();
  proxy.close();
}
process.exit(exitCode);
