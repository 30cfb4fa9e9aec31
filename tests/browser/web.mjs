// The Relay example (examples/web) in a real browser: Debian's Chromium driven by
// puppeteer-core, against an itemgraph server with auth on and CORS for the app's origin.
//
//   node tests/browser/web.mjs <examples/web/dist> <app-port> <api-url> <token> <screenshot-prefix>
//
// Serves the built app on 127.0.0.1:<app-port> itself, then walks it: pages a status
// queue to its end (rows = totalCount), pages a user's tickets older then newer (each
// once), sees a ticket created through the API arrive on the live page, creates a ticket
// in the app and finds it in its queue, provokes VERSION_MISMATCH from a second tab and
// sees the message, changes an order's status; no console error anywhere. Exits 1 with
// the reason on the first failure.

import { createServer } from 'node:http';
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
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // Sign in on this tab (the token and the server are kept per tab).
  await page.goto(`${APP}?api=${encodeURIComponent(api)}`);
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

  // 4. A ticket created in the app is in its queue.
  await page.goto(`${APP}#/new-ticket`);
  await page.waitForSelector('[data-testid="new-ticket-form"]');
  await page.type('[data-testid="new-ticket-title"]', 'Created in the browser');
  await page.type('[data-testid="new-ticket-body"]', 'Typed by the test.');
  await page.click('[data-testid="new-ticket-submit"]');
  await page.waitForSelector('[data-testid="new-ticket-created"]', { timeout: 20000 });
  await page.goto(`${APP}#/`);
  await page.waitForSelector('[data-testid="ticket-row"]');
  await page.click('[data-testid="queue-tab-OPEN"]');
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="ticket-row"]')].some((r) => r.textContent.includes('Created in the browser')), { timeout: 20000 });
  check(true, 'a ticket created in the app is listed in the OPEN queue');

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
}
process.exit(exitCode);
