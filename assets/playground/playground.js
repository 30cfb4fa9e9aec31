// The itemgraph playground: GraphiQL (vendored, see assets/playground/vendor.lock.json)
// with the query builder, the example operations of examples/ as tabs, a DynamoDB
// panel listing the requests the last operation made, and a Chart panel with the entity
// chart and access-pattern table of the chart being served. Subscriptions run over this origin's
// WebSocket (graphql-ws, vendored too) with the Headers pane's values: their events
// stream into the result pane, and the panel shows what each one cost and where in the
// change stream it was read. No inline script: the page's
// settings come from the JSON block #itemgraph-config, so the Content-Security-Policy
// can forbid every script that is not a file of this origin.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("itemgraph-config").textContent);
  var h = React.createElement;

  // The last operation's outcome, and the panels that show it.
  var last = null;
  var listeners = [];
  function publish(entry) {
    last = entry;
    listeners.forEach(function (listener) {
      listener(entry);
    });
  }

  function byteLength(text) {
    return new TextEncoder().encode(text).length;
  }

  function readableBytes(n) {
    return n < 1024 ? n + " B" : (n / 1024).toFixed(1) + " KiB";
  }

  // The operation `params` runs: is it a subscription?
  function isSubscription(params, options) {
    var doc = options && options.documentAST;
    if (doc && doc.definitions) {
      var ops = doc.definitions.filter(function (d) {
        return d.kind === "OperationDefinition";
      });
      var op =
        ops.find(function (d) {
          return params.operationName && d.name && d.name.value === params.operationName;
        }) || (ops.length === 1 ? ops[0] : null);
      if (op) return op.operation === "subscription";
    }
    return /^\s*subscription\b/.test(params.query || "");
  }

  // One graphql-ws client per set of headers (a new token opens a new socket): the
  // headers go in `connection_init`, where the server reads `Authorization` and the trace.
  var ws = { key: null, client: null };
  function wsClient(headers) {
    var params = Object.assign({}, headers);
    params[config.traceHeader] = "1";
    var key = JSON.stringify(params);
    if (ws.key !== key) {
      if (ws.client) ws.client.dispose();
      ws.key = key;
      ws.client = graphqlWs.createClient({
        url: (location.protocol === "https:" ? "wss://" : "ws://") + location.host + config.endpoint,
        connectionParams: params,
        lazy: true,
        retryAttempts: 0,
      });
    }
    return ws.client;
  }

  function readable(error) {
    if (Array.isArray(error)) return { errors: error };
    if (error && typeof error.code === "number") {
      var why = error.code === 4403 || error.code === 4401 ? ": the token was refused (Headers pane)" : "";
      return { errors: [{ message: "The subscription's connection closed (" + error.code + (error.reason ? " " + error.reason : "") + ")" + why }] };
    }
    return { errors: [{ message: String((error && error.message) || error) }] };
  }

  // A subscription: its results as GraphiQL reads them (an async iterator), each event
  // also published to the panel with its own trace.
  function subscribe(params, headers) {
    var iterator = wsClient(headers).iterate({
      query: params.query,
      variables: params.variables || undefined,
      operationName: params.operationName || undefined,
    });
    var count = 0;
    var since = performance.now();
    return {
      next: function () {
        return iterator.next().then(
          function (step) {
            if (!step.done) {
              count += 1;
              var now = performance.now();
              var trace = step.value && step.value.extensions ? step.value.extensions.dynamodb : undefined;
              publish({
                status: "event " + count,
                millis: now - since,
                bytes: byteLength(JSON.stringify(step.value)),
                trace: trace,
                stream: trace ? trace.stream : undefined,
              });
              since = now;
            }
            return step;
          },
          function (error) {
            return { done: false, value: readable(error) };
          }
        );
      },
      return: function () {
        return iterator.return ? iterator.return() : Promise.resolve({ done: true, value: undefined });
      },
      [Symbol.asyncIterator]: function () {
        return this;
      },
    };
  }

  // Every operation asks for the trace (`x-itemgraph-trace: 1`), which the panel shows.
  // A 401 becomes a readable error in the response pane instead of a parse failure.
  async function fetcher(params, options) {
    if (isSubscription(params, options)) {
      if (!config.subscriptions) {
        return {
          errors: [
            {
              message:
                "This deployment serves no subscriptions: they need a connection that outlives a " +
                "request, which AWS Lambda does not keep. The container image (itemgraph serve) serves them.",
              extensions: { code: "SUBSCRIPTIONS_UNAVAILABLE" },
            },
          ],
        };
      }
      return subscribe(params, (options && options.headers) || {});
    }
    var headers = Object.assign(
      {
        "content-type": "application/json",
        accept: "application/graphql-response+json, application/json",
      },
      (options && options.headers) || {}
    );
    headers[config.traceHeader] = "1";
    var started = performance.now();
    var response = await fetch(config.endpoint, {
      method: "POST",
      headers: headers,
      body: JSON.stringify(params),
      credentials: "same-origin",
    });
    var text = await response.text();
    var millis = performance.now() - started;
    var body;
    try {
      body = JSON.parse(text);
    } catch (_) {
      body = { errors: [{ message: "HTTP " + response.status + ": " + text.slice(0, 500) }] };
    }
    if (response.status === 401) {
      var detail = body.errors && body.errors[0] ? body.errors[0].message : "";
      body = {
        errors: [
          {
            message:
              "401 Unauthorized: this server wants a bearer token. Put it in the Headers pane: " +
              '{"Authorization": "Bearer <token>"} (`itemgraph token --org <org>` prints a development one). ' +
              detail,
            extensions: { code: "UNAUTHENTICATED" },
          },
        ],
      };
    }
    if (params.operationName !== "IntrospectionQuery") {
      publish({
        status: response.status,
        millis: millis,
        bytes: byteLength(text),
        trace: body && body.extensions ? body.extensions.dynamodb : undefined,
      });
    }
    return body;
  }

  function Request(props) {
    var r = props.request;
    var where = r.index ? r.table + " · " + r.index : r.table;
    var meta = [];
    if (typeof r.itemCount === "number") {
      meta.push(r.itemCount + (r.itemCount === 1 ? " item" : " items"));
    }
    meta.push((r.durationMicros / 1000).toFixed(2) + " ms");
    if (typeof r.consumedCapacity === "number") meta.push(r.consumedCapacity + " capacity units");
    if (r.limit !== null && r.limit !== undefined) meta.push("limit " + r.limit);
    if (r.scanForward === false) meta.push("backward");
    // A Scan: what it read beside what its filter kept (to a caller who sees every tenant).
    if (typeof r.scannedCount === "number") meta.push(r.scannedCount + " read");
    return h(
      "li",
      { className: "ig-request", "data-operation": r.operation },
      h("div", { className: "ig-op" }, h("strong", null, r.operation), " ", h("span", null, where)),
      r.keyCondition ? h("code", { className: "ig-key" }, r.keyCondition) : null,
      r.filter ? h("code", { className: "ig-key" }, "filter " + r.filter) : null,
      h("div", { className: "ig-meta" }, meta.join(" · "))
    );
  }

  function DynamoPanel() {
    var state = React.useState(last);
    var entry = state[0];
    var setEntry = state[1];
    React.useEffect(function () {
      listeners.push(setEntry);
      return function () {
        listeners = listeners.filter(function (l) {
          return l !== setEntry;
        });
      };
    }, []);
    if (!entry) {
      return h(
        "div",
        { className: "ig-dynamo", id: "ig-dynamo" },
        h("div", { className: "graphiql-doc-explorer-title" }, "DynamoDB"),
        h("p", null, "Run an operation: the DynamoDB requests it made show here.")
      );
    }
    var requests = entry.trace && entry.trace.requests ? entry.trace.requests : [];
    var event = typeof entry.status === "string";
    var summary =
      requests.length +
      (requests.length === 1 ? " request" : " requests") +
      " · " +
      (event ? entry.millis.toFixed(0) + " ms since the last · " : entry.millis.toFixed(1) + " ms · ") +
      readableBytes(entry.bytes) +
      " · " +
      (event ? entry.status : "HTTP " + entry.status);
    return h(
      "div",
      {
        className: "ig-dynamo",
        id: "ig-dynamo",
        "data-request-count": String(requests.length),
        "data-event": event ? entry.status : undefined,
      },
      h("div", { className: "graphiql-doc-explorer-title" }, "DynamoDB"),
      h("p", { className: "ig-summary" }, summary),
      entry.stream
        ? h(
            "p",
            { className: "ig-stream", id: "ig-stream" },
            "Read from the change stream at shard ",
            h("code", null, entry.stream.shard),
            ", sequence ",
            h("code", null, entry.stream.sequence)
          )
        : null,
      entry.trace ? null : h("p", null, "The response carries no trace (refused before any read)."),
      h(
        "ol",
        { className: "ig-requests" },
        requests.map(function (r, i) {
          return h(Request, { key: i, request: r });
        })
      )
    );
  }

  function DynamoIcon() {
    return h(
      "svg",
      { viewBox: "0 0 24 24", width: 20, height: 20, fill: "none", stroke: "currentColor", strokeWidth: 1.5 },
      h("ellipse", { cx: 12, cy: 5, rx: 8, ry: 3 }),
      h("path", { d: "M4 5v14c0 1.7 3.6 3 8 3s8-1.3 8-3V5" }),
      h("path", { d: "M4 12c0 1.7 3.6 3 8 3s8-1.3 8-3" })
    );
  }

  // The chart being served (`itemgraph chart explain`'s tables, and `chart check`'s
  // advice): each access pattern linked to the tab that runs it.
  function cost(c) {
    var figure = c.least === c.most ? String(c.least) : c.least + "–" + c.most;
    return figure + " " + c.unit;
  }

  // Whether a tab's operation runs access pattern `number`, as the server's `tab_of`
  // decides it: headed `# Access pattern N:`, or naming `(access pattern N)` in its
  // heading comment.
  function runs(query, number) {
    var text = query || "";
    if (text.indexOf("# Access pattern " + number + ":") === 0) return true;
    var heading = [];
    var lines = text.split("\n");
    for (var i = 0; i < lines.length && lines[i].charAt(0) === "#"; i++) heading.push(lines[i]);
    return heading.join("\n").indexOf("(access pattern " + number + ")") >= 0;
  }

  // Shows the tab that runs access pattern `number` by clicking its button (GraphiQL
  // exposes no way to change tabs from outside). The tabs are looked up as GraphiQL keeps
  // them, in localStorage: a tab closed, moved or edited since the page opened is found
  // where it is, or not at all. Says whether it found one.
  function showPattern(number) {
    var tabs = null;
    try {
      var state = JSON.parse(localStorage.getItem("graphiql:tabState") || "null");
      tabs = state && Array.isArray(state.tabs) ? state.tabs : null;
    } catch (_) {
      tabs = null;
    }
    var queries = tabs
      ? tabs.map(function (t) {
          return t.query;
        })
      : config.examples.map(function (e) {
          return e.query;
        });
    var exact = queries.findIndex(function (q) {
      return (q || "").indexOf("# Access pattern " + number + ":") === 0;
    });
    var index =
      exact >= 0
        ? exact
        : queries.findIndex(function (q) {
            return runs(q, number);
          });
    var buttons = document.querySelectorAll(".graphiql-tab-button");
    if (index < 0 || !buttons[index]) return false;
    buttons[index].click();
    return true;
  }

  // A chart's text as a person reads it: `code` spans (the chart's and the advice's own
  // Markdown) set as code, the rest as text.
  function inline(text) {
    return String(text || "")
      .split("`")
      .map(function (part, i) {
        return i % 2 === 1 ? h("code", { key: i }, part) : part;
      });
  }

  function ChartPanel() {
    var c = config.chart;
    var notice = React.useState(null);
    if (!c || !Array.isArray(c.entities) || !Array.isArray(c.patterns)) {
      return h(
        "div",
        { className: "ig-chart", id: "ig-chart" },
        h("div", { className: "graphiql-doc-explorer-title" }, "Chart"),
        h("p", null, "This page carries no chart.")
      );
    }
    var keyHeads = c.keyAttributes.map(function (k) {
      return h("th", { key: k }, k);
    });
    var entities = c.entities.map(function (e) {
      var keys = {};
      e.keys.forEach(function (k) {
        keys[k[0]] = k[1];
      });
      return h(
        "tr",
        { key: e.name, className: "ig-entity" },
        h("th", { scope: "row" }, e.name + (e.system ? " *" : "")),
        c.keyAttributes.map(function (k) {
          return h("td", { key: k }, keys[k] ? h("code", null, keys[k]) : "");
        })
      );
    });
    var patterns = c.patterns.map(function (p) {
      var where = p.request + (p.index ? " · " + p.index : "") + (p.forward === false ? " · backward" : "");
      var title =
        p.tab === null
          ? h("span", { className: "ig-pattern-name" }, p.number + ". ", inline(p.name))
          : h(
              "button",
              {
                type: "button",
                className: "ig-pattern-link",
                "data-pattern": String(p.number),
                title: "Open the tab that runs it",
                onClick: function () {
                  notice[1](
                    showPattern(p.number)
                      ? null
                      : "No open tab runs pattern " + p.number + " any more (it was closed or edited): reload the page for its tab."
                  );
                },
              },
              p.number + ". ",
              inline(p.name)
            );
      return h(
        "li",
        { key: p.number, className: "ig-pattern", "data-pattern": String(p.number) },
        title,
        h("div", { className: "ig-meta" }, where + " · " + cost(p.cost)),
        p.keyCondition ? h("code", { className: "ig-key" }, p.keyCondition) : null,
        h("div", { className: "ig-meta" }, inline(p.returns))
      );
    });
    var warnings = (c.warnings || []).map(function (w, i) {
      return h(
        "li",
        { key: i, className: "ig-warning" },
        h("strong", null, w.entity + " · " + w.rule),
        " ",
        w.pattern ? "pattern " + w.pattern + ": " : "",
        inline(w.message),
        h("div", { className: "ig-meta" }, "Why: ", inline(w.why))
      );
    });
    return h(
      "div",
      { className: "ig-chart", id: "ig-chart" },
      h("div", { className: "graphiql-doc-explorer-title" }, "Chart"),
      h(
        "p",
        { className: "ig-summary" },
        "Chart " + c.chart + ", table " + c.table + ": costs for items of " + c.itemBytes + " B, a first page of " + c.pageSize
      ),
      h("h3", null, "Entity chart"),
      h(
        "div",
        { className: "ig-scroll" },
        h(
          "table",
          { className: "ig-entities" },
          h("thead", null, h("tr", null, h("th", null, "Entity"), keyHeads)),
          h("tbody", null, entities)
        )
      ),
      h("p", { className: "ig-meta" }, "* one of the server's own items (migrations, leases, the chart recorded in the table)"),
      // Links of two entities (many to many), as `chart explain` names them.
      c.entities.some(function (e) { return e.link; })
        ? h(
            "ul",
            { className: "ig-links" },
            c.entities
              .filter(function (e) { return e.link; })
              .map(function (e) { return h("li", { key: e.name, className: "ig-link" }, e.link); })
          )
        : null,
      h("h3", null, "Access patterns"),
      notice[0] ? h("p", { className: "ig-notice", role: "status" }, notice[0]) : null,
      h("ol", { className: "ig-patterns" }, patterns),
      warnings.length
        ? h("div", null, h("h3", null, "Advice (itemgraph chart check)"), h("ul", { className: "ig-warnings" }, warnings))
        : null
    );
  }

  function ChartIcon() {
    return h(
      "svg",
      { viewBox: "0 0 24 24", width: 20, height: 20, fill: "none", stroke: "currentColor", strokeWidth: 1.5 },
      h("rect", { x: 3, y: 4, width: 18, height: 16, rx: 1 }),
      h("path", { d: "M3 9h18M3 14h18M9 4v16" })
    );
  }

  var dynamoPlugin = { title: "DynamoDB", icon: DynamoIcon, content: DynamoPanel };
  var chartPlugin = { title: "Chart", icon: ChartIcon, content: ChartPanel };
  var plugins = [dynamoPlugin, chartPlugin, GraphiQLPluginExplorer.explorerPlugin()];
  var tabs = config.examples.map(function (e) {
    return { query: e.query, variables: e.variables || undefined };
  });
  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    h(GraphiQL, {
      fetcher: fetcher,
      plugins: plugins,
      visiblePlugin: dynamoPlugin,
      defaultTabs: tabs,
      defaultHeaders: config.auth
        ? '{\n  "Authorization": "Bearer <token: itemgraph token --org <org>>"\n}'
        : undefined,
      defaultEditorToolsVisibility: config.auth ? "headers" : false,
      shouldPersistHeaders: false,
    })
  );
})();
