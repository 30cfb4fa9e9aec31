// Drives the playground in headless Chromium (Debian's, through puppeteer-core) with every
// request to another host blocked, and checks what a first visit gets:
//   node tests/browser/playground.mjs URL SCREENSHOT.png [--auth] [--no-introspection] [--chart N]
// URL is the page (http://127.0.0.1:PORT/). With --auth the server wants a bearer token:
// the headers pane must open with the Authorization placeholder, and running a query
// without a real token must show a readable 401 in the response pane. With
// --no-introspection the server refuses `__schema`: the page must still run a query.
// With --chart N the server serves a chart of its own: the page must hold N tabs written
// from its patterns, the first (access pattern 1) must answer without an error, and the
// panel must list its requests. Without --auth and --no-introspection, the Chart panel
// must show every entity and pattern of the chart served, and pattern 3's link open its
// tab (SCREENSHOT-chart-panel.png).
// Without either, it also runs a subscription and creates a ticket from a second tab: the
// event must reach the result pane and its requests the DynamoDB panel, with no CSP
// violation. Exits 1 with the reasons when anything is off;
// prints a JSON summary on success. tests/e2e/playground.rs runs it against a server it
// starts; ITEMGRAPH_CHROMIUM names the browser (default /usr/bin/chromium).
import puppeteer from "puppeteer-core";

const [url, screenshot, ...flags] = process.argv.slice(2);
const auth = flags.includes("--auth");
const chartTabs = flags.includes("--chart") ? Number(flags[flags.indexOf("--chart") + 1]) : null;
if (!url || !screenshot) {
  console.error("usage: node tests/browser/playground.mjs URL SCREENSHOT.png");
  process.exit(2);
}
const origin = new URL(url).origin;
const problems = [];
const offOrigin = [];
const consoleErrors = [];

const browser = await puppeteer.launch({
  executablePath: process.env.ITEMGRAPH_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    const target = request.url();
    if (target.startsWith("data:") || target.startsWith(origin + "/")) {
      request.continue();
    } else {
      offOrigin.push(target);
      request.abort("blockedbyclient");
    }
  });
  page.on("console", (message) => {
    // With --auth the page's own requests are answered 401, and without introspection
    // its schema request 400 (INTROSPECTION_DISABLED), which the browser logs.
    const expected =
      (auth && message.text().includes("status of 401")) ||
      (flags.includes("--no-introspection") && message.text().includes("status of 400"));
    if (message.type() === "error" && !expected) consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  await page.evaluateOnNewDocument(() => {
    window.__cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });

  const response = await page.goto(url, { waitUntil: "networkidle0", timeout: 60000 });
  const csp = response.headers()["content-security-policy"] || "";
  if (!csp.includes("script-src 'self'")) problems.push(`no strict CSP on the page: ${csp}`);
  await page.waitForSelector(".graphiql-container", { timeout: 30000 });
  await page.waitForSelector("#ig-dynamo", { timeout: 30000 });

  // Run the first tab (organization + users: a nested query) by its UI.
  await page.click(".graphiql-execute-button");
  await page.waitForFunction(
    () => {
      const cm = document.querySelector(".result-window .CodeMirror");
      return cm && cm.CodeMirror && /"(data|errors)"/.test(cm.CodeMirror.getValue());
    },
    { timeout: 30000 }
  );
  await page.waitForSelector("#ig-dynamo[data-request-count]", { timeout: 10000 });
  const seen = await page.evaluate(() => {
    const result = document.querySelector(".result-window .CodeMirror").CodeMirror.getValue();
    const panel = document.querySelector("#ig-dynamo");
    return {
      result,
      panelCount: Number(panel.getAttribute("data-request-count")),
      panelItems: panel.querySelectorAll(".ig-request").length,
      panelText: panel.innerText,
      csp: window.__cspViolations,
    };
  });
  const body = JSON.parse(seen.result);
  const traced = body.extensions && body.extensions.dynamodb ? body.extensions.dynamodb.requestCount : -1;
  if (auth) {
    const headersPane = await page.evaluate(() =>
      Array.from(document.querySelectorAll(".graphiql-editor-tool .CodeMirror"))
        .map((e) => e.CodeMirror.getValue())
        .join("\n")
    );
    if (!headersPane.includes('"Authorization": "Bearer')) {
      problems.push(`the headers pane has no Authorization placeholder: ${headersPane}`);
    }
    const message = body.errors && body.errors[0] ? body.errors[0].message : "";
    if (!message.startsWith("401 Unauthorized") || !message.includes("itemgraph token")) {
      problems.push(`a 401 is not readable in the response pane: ${seen.result.slice(0, 300)}`);
    }
  } else if (chartTabs !== null) {
    if (body.errors) problems.push(`the chart's first tab answered errors: ${JSON.stringify(body.errors)}`);
    const first = body.data ? Object.values(body.data)[0] : null;
    if (!first) problems.push(`the chart's first tab read nothing: ${seen.result.slice(0, 300)}`);
    const tabs = await page.evaluate(() => {
      const config = JSON.parse(document.getElementById("itemgraph-config").textContent);
      const editor = document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror.getValue();
      return { count: config.examples.length, first: editor.split("\n")[0] };
    });
    if (tabs.count !== chartTabs) problems.push(`the page holds ${tabs.count} tabs, the chart ${chartTabs} patterns`);
    if (!tabs.first.startsWith("# Access pattern 1:")) problems.push(`the first tab is not pattern 1's: ${tabs.first}`);
    if (seen.panelCount !== traced || seen.panelItems !== traced || traced < 1) {
      problems.push(`the DynamoDB panel lists ${seen.panelItems} (says ${seen.panelCount}), the trace ${traced}`);
    }
  } else {
    if (body.errors) problems.push(`the query answered errors: ${JSON.stringify(body.errors)}`);
    const organization = body.data && body.data.organization;
    if (!organization || !organization.users || organization.users.nodes.length === 0) {
      problems.push(`the response holds no users: ${seen.result.slice(0, 300)}`);
    }
    if (seen.panelCount !== traced || seen.panelItems !== traced) {
      problems.push(`the DynamoDB panel lists ${seen.panelItems} (says ${seen.panelCount}), the trace ${traced}`);
    }
  }
  if (!auth && !flags.includes("--no-introspection") && chartTabs === null) {
    // A subscription in the playground: ticketEvents over the page's WebSocket, then a
    // ticket created from a second tab through a mutation; the event reaches the result
    // pane, and the panel shows what resolving it cost and where it was read.
    // GraphiQL reads the edited document (and its operation's name) a moment after a change.
    const setQuery = async (p, text) => {
      await p.evaluate((t) => document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror.setValue(t), text);
      await new Promise((r) => setTimeout(r, 1000));
    };
    const resultText = (p) => p.evaluate(() => document.querySelector(".result-window .CodeMirror").CodeMirror.getValue());
    await setQuery(
      page,
      'subscription Watch { ticketEvents(org: "acme") { kind cursor ticket { title requester { name } } } }'
    );
    await page.click(".graphiql-execute-button");
    await new Promise((r) => setTimeout(r, 1500)); // the subscription in place
    // A context of its own: GraphiQL keeps its tabs in localStorage, and this one starts fresh.
    const otherContext = await browser.createBrowserContext();
    const other = await otherContext.newPage();
    await other.setViewport({ width: 1400, height: 900 });
    await other.goto(url, { waitUntil: "networkidle0", timeout: 60000 });
    await other.waitForSelector(".graphiql-container", { timeout: 30000 });
    await setQuery(
      other,
      'mutation { createTicket(input: {org: "acme", requester: "wile-e-coyote", title: "Seen in the playground", body: "From another tab.", priority: HIGH}) { ticket { ticketId } } }'
    );
    await other.click(".graphiql-execute-button");
    await other
      .waitForFunction(
        () => /createTicket/.test(document.querySelector(".result-window .CodeMirror").CodeMirror.getValue()),
        { timeout: 30000 }
      )
      .catch(async (e) => {
        throw new Error(`the second tab's mutation: ${e.message}; its result pane: ${(await resultText(other)).replace(/\s+/g, " ").slice(0, 1500)}`);
      });
    await page.bringToFront();
    try {
      await page.waitForFunction(
        () => /Seen in the playground/.test(document.querySelector(".result-window .CodeMirror").CodeMirror.getValue()),
        { timeout: 30000 }
      );
      await page.waitForSelector('#ig-dynamo[data-event="event 1"]', { timeout: 10000 });
      const event = await page.evaluate(() => {
        const panel = document.querySelector("#ig-dynamo");
        return {
          count: Number(panel.getAttribute("data-request-count")),
          items: panel.querySelectorAll(".ig-request").length,
          stream: (document.querySelector("#ig-stream") || {}).innerText || "",
          csp: window.__cspViolations,
        };
      });
      const result = JSON.parse(await resultText(page));
      const traced = result.extensions && result.extensions.dynamodb ? result.extensions.dynamodb.requestCount : -1;
      if (result.data.ticketEvents.kind !== "CREATED") problems.push(`the event: ${JSON.stringify(result)}`);
      if (event.count !== traced || event.items !== traced || traced < 1) {
        problems.push(`the panel lists ${event.items} requests (says ${event.count}) for the event, its trace ${traced}`);
      }
      if (!/shard .* sequence/.test(event.stream)) problems.push(`no stream position in the panel: "${event.stream}"`);
      seen.csp = seen.csp.concat(event.csp);
      await page.screenshot({ path: screenshot.replace(/\.png$/, "-subscription.png") });
    } catch (e) {
      problems.push(`the subscription's event did not show: ${e.message}; result pane: ${(await resultText(page)).slice(0, 300)}`);
    }
    await otherContext.close();
  }
  if (!auth && !flags.includes("--no-introspection")) {
    // The Chart panel: the entity chart and every access pattern of the chart served, a
    // pattern's link opening the tab that runs it.
    await page.screenshot({ path: screenshot });
    await page.click('button[aria-label="Show Chart"]');
    await page.waitForSelector("#ig-chart", { timeout: 10000 });
    const panel = await page.evaluate(() => {
      const config = JSON.parse(document.getElementById("itemgraph-config").textContent);
      const chart = document.querySelector("#ig-chart");
      return {
        patterns: config.chart.patterns.length,
        entities: config.chart.entities.length,
        shownPatterns: chart.querySelectorAll(".ig-pattern").length,
        shownEntities: chart.querySelectorAll(".ig-entity").length,
        links: chart.querySelectorAll(".ig-pattern-link").length,
        declaredLinks: config.chart.entities.filter((e) => e.link).length,
        shownLinks: chart.querySelectorAll(".ig-link").length,
        text: chart.innerText,
      };
    });
    if (panel.shownPatterns !== panel.patterns || panel.shownEntities !== panel.entities) {
      problems.push(`the Chart panel shows ${panel.shownPatterns} patterns and ${panel.shownEntities} entities, the chart has ${panel.patterns} and ${panel.entities}`);
    }
    if (panel.links < 2) problems.push(`the Chart panel links ${panel.links} patterns to tabs`);
    if (panel.shownLinks !== panel.declaredLinks) {
      problems.push(`the Chart panel names ${panel.shownLinks} links of two entities, the chart ${panel.declaredLinks}`);
    }
    if (!panel.text.includes("Entity chart") || !panel.text.includes("Access patterns")) {
      problems.push(`the Chart panel lacks its tables: ${panel.text.slice(0, 300)}`);
    }
    await page.click('.ig-pattern-link[data-pattern="3"]');
    await page
      .waitForFunction(
        () => document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror.getValue().startsWith("# Access pattern 3:"),
        { timeout: 10000 }
      )
      .catch(async () => {
        const first = await page.evaluate(() => document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror.getValue().split("\n")[0]);
        problems.push(`pattern 3's link did not open its tab: the editor holds "${first}"`);
      });
    seen.csp = seen.csp.concat(await page.evaluate(() => window.__cspViolations));
    await page.screenshot({ path: screenshot.replace(/\.png$/, "-chart-panel.png") });
  }
  if (seen.csp.length) problems.push(`CSP violations: ${[...new Set(seen.csp)].join("; ")}`);
  if (auth || flags.includes("--no-introspection")) await page.screenshot({ path: screenshot });
  if (offOrigin.length) problems.push(`requests left the origin: ${offOrigin.join(", ")}`);
  if (consoleErrors.length) problems.push(`console errors: ${consoleErrors.join(" | ")}`);
  if (problems.length) {
    console.error(problems.join("\n"));
    process.exitCode = 1;
  } else {
    console.log(JSON.stringify({ requests: traced, panel: seen.panelText.split("\n").slice(0, 3), screenshot }));
  }
} finally {
  await browser.close();
}
