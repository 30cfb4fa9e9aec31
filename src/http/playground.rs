//! The playground: GraphiQL served by the binary itself, so it works with no internet and
//! no third party serves code into the API's origin.
//!
//! The third-party files (GraphiQL, React, the explorer plugin, the graphql-ws client for
//! subscriptions: production builds at
//! pinned versions, with their licenses) live in `assets/playground/vendor/`, fetched and
//! checked by `scripts/vendor-playground` against `assets/playground/vendor.lock.json`;
//! `playground.js` and `playground.css` beside them are the project's own (the DynamoDB
//! panel, the example tabs). All are embedded with `include_bytes!`, so building needs no
//! network. Each is served under `/playground/<its SHA-256, 16 hex>/<name>` with immutable
//! caching; the page is served with a Content-Security-Policy that lets scripts, styles
//! and requests come from this origin only.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The route of the assets.
pub const ASSET_ROUTE: &str = "/playground/{hash}/{name}";

/// The page's policy: nothing but this origin's files. Styles allow `'unsafe-inline'`
/// because GraphiQL's editors (CodeMirror) and its layout set `style` attributes; scripts,
/// connections, fonts (data: URLs inside graphiql.min.css) and images get no such latitude,
/// and no `'unsafe-eval'`.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; \
     font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page's policy for a page served at `host` (the request's `Host`): the policy
/// above, with the playground's WebSocket (subscriptions, over graphql-ws) allowed to
/// this very host and nowhere else. A `Host` that is not a plain host and port adds
/// nothing, so it can never widen or break the policy.
pub fn content_security_policy(host: Option<&str>) -> String {
    let plain = |h: &&str| {
        !h.is_empty()
            && h.len() <= 255
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
    };
    match host.filter(plain) {
        Some(host) => CONTENT_SECURITY_POLICY.replacen(
            "connect-src 'self';",
            &format!("connect-src 'self' ws://{host} wss://{host};"),
            1,
        ),
        None => CONTENT_SECURITY_POLICY.to_owned(),
    }
}

/// One embedded file.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
    /// The first 16 hex digits of its SHA-256: the path segment that changes with it.
    pub hash: String,
    /// Its whole SHA-256, hex: what `vendor.lock.json` records for a vendored file.
    pub sha256: String,
}

macro_rules! asset {
    ($name:literal, $dir:literal, $type:literal) => {
        (
            $name,
            $type,
            &include_bytes!(concat!("../../assets/playground/", $dir, $name))[..],
        )
    };
}

/// Every file the page loads, in the order its scripts must run, then the others.
pub static ASSETS: LazyLock<Vec<Asset>> = LazyLock::new(|| {
    const JS: &str = "text/javascript; charset=utf-8";
    const CSS: &str = "text/css; charset=utf-8";
    const TEXT: &str = "text/plain; charset=utf-8";
    let files: [(&str, &str, &[u8]); 15] = [
        asset!("react.production.min.js", "vendor/", "js"),
        asset!("react-dom.production.min.js", "vendor/", "js"),
        asset!("graphiql.min.js", "vendor/", "js"),
        asset!("plugin-explorer.umd.js", "vendor/", "js"),
        asset!("graphql-ws.min.js", "vendor/", "js"),
        asset!("playground.js", "", "js"),
        asset!("graphiql.min.css", "vendor/", "css"),
        asset!("plugin-explorer.css", "vendor/", "css"),
        asset!("playground.css", "", "css"),
        asset!("LICENSE.react", "vendor/", "text"),
        asset!("LICENSE.react-dom", "vendor/", "text"),
        asset!("LICENSE.graphiql", "vendor/", "text"),
        asset!("LICENSE.graphql-ws", "vendor/", "text"),
        asset!("plugin-explorer.package.json", "vendor/", "text"),
        asset!("vendor.lock.json", "", "text"),
    ];
    files
        .into_iter()
        .map(|(name, kind, bytes)| {
            let sha256 = hex(&Sha256::digest(bytes));
            Asset {
                name,
                content_type: match kind {
                    "js" => JS,
                    "css" => CSS,
                    _ => TEXT,
                },
                bytes,
                hash: sha256[..16].to_owned(),
                sha256,
            }
        })
        .collect()
});

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The path an asset is served under.
pub fn asset_path(asset: &Asset) -> String {
    format!("/playground/{}/{}", asset.hash, asset.name)
}

/// `GET /playground/{hash}/{name}`: the file, when the hash is its current one (an old
/// hash is 404: the page that asked for it is older than this binary).
pub async fn serve_asset(Path((hash, name)): Path<(String, String)>) -> Response {
    match ASSETS.iter().find(|a| a.name == name && a.hash == hash) {
        Some(asset) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(asset.content_type),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=31536000, immutable"),
                ),
                (
                    header::X_CONTENT_TYPE_OPTIONS,
                    HeaderValue::from_static("nosniff"),
                ),
            ],
            asset.bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}

/// The example operations of `examples/`, preloaded as the playground's tabs, each with
/// the comment that says what it shows and what it costs.
pub const EXAMPLES: [&str; 8] = [
    include_str!("../../examples/org_users.graphql"),
    include_str!("../../examples/user_tickets.graphql"),
    include_str!("../../examples/ticket.graphql"),
    include_str!("../../examples/org_orders.graphql"),
    include_str!("../../examples/order_lines.graphql"),
    include_str!("../../examples/status_queue.graphql"),
    include_str!("../../examples/node.graphql"),
    include_str!("../../examples/paging.graphql"),
];

/// The built-in chart's tabs: [`EXAMPLES`], then one per write pattern of the chart, its
/// input made from the demo data.
pub fn builtin_examples() -> Vec<String> {
    let mut tabs: Vec<String> = EXAMPLES.iter().map(|t| (*t).to_owned()).collect();
    tabs.extend(crate::graphql::write_examples(
        &crate::chart::builtin(),
        &crate::chart::data::builtin_demo(),
    ));
    tabs
}

/// The tab that runs access pattern `number`: the first whose operation is headed
/// `# Access pattern N:`, else the first whose heading comment names it
/// (`(access pattern 9)`). The page's script looks a tab up the same way.
pub fn tab_of(examples: &[&str], number: u32) -> Option<usize> {
    let head = format!("# Access pattern {number}:");
    let named = format!("(access pattern {number})");
    examples
        .iter()
        .position(|q| q.starts_with(&head))
        .or_else(|| {
            examples.iter().position(|q| {
                q.lines()
                    .take_while(|l| l.starts_with('#'))
                    .any(|l| l.contains(&named))
            })
        })
}

/// What the Chart panel shows of the chart served: `itemgraph chart explain`'s tables (as
/// its JSON has them, costs for items of 1 KB), each pattern with the tab that runs it
/// (`tab`, `null` where none does), and `itemgraph chart check`'s advice (`warnings`).
pub fn chart_panel(chart: &crate::chart::Chart, examples: &[&str]) -> serde_json::Value {
    let explained = crate::chart::explain::explain(chart, 1024);
    let mut panel = serde_json::to_value(&explained).unwrap_or_default();
    if let Some(patterns) = panel["patterns"].as_array_mut() {
        for p in patterns {
            let number = p["number"].as_u64().and_then(|n| u32::try_from(n).ok());
            p["tab"] = number.and_then(|n| tab_of(examples, n)).into();
        }
    }
    panel["warnings"] =
        serde_json::to_value(crate::chart::advice::advise(chart)).unwrap_or_default();
    panel
}

/// The page, for a server with authentication on (`auth`: the headers pane opens with an
/// `Authorization` placeholder) or off, and serving subscriptions or not (AWS Lambda: a
/// subscription run in the page then says why it cannot run there), its tabs preloaded
/// with `examples` ([`EXAMPLES`] for the built-in chart, a chart's own for another), its
/// Chart panel showing `chart` ([`chart_panel`]).
pub fn page(
    endpoint: &str,
    trace_header: &str,
    auth: bool,
    subscriptions: bool,
    examples: &[&str],
    chart: &crate::chart::Chart,
) -> String {
    let panel = chart_panel(chart, examples);
    page_with(
        endpoint,
        trace_header,
        auth,
        subscriptions,
        examples,
        &panel,
    )
}

/// [`page`], with its Chart panel's [`chart_panel`] made once for every page of a chart.
pub fn page_with(
    endpoint: &str,
    trace_header: &str,
    auth: bool,
    subscriptions: bool,
    examples: &[&str],
    panel: &serde_json::Value,
) -> String {
    let config = serde_json::json!({
        "endpoint": endpoint,
        "traceHeader": trace_header,
        "auth": auth,
        "subscriptions": subscriptions,
        "examples": examples.iter().map(|q| serde_json::json!({ "query": q })).collect::<Vec<_>>(),
        "chart": panel,
    });
    // `</` cannot end the JSON block early once escaped; the JSON stays the same value.
    let config = config.to_string().replace("</", "<\\/");
    let mut head = String::new();
    let mut scripts = String::new();
    for asset in ASSETS.iter() {
        if asset.content_type.starts_with("text/css") {
            head.push_str(&format!(
                "    <link rel=\"stylesheet\" href=\"{}\">\n",
                asset_path(asset)
            ));
        } else if asset.content_type.starts_with("text/javascript") {
            scripts.push_str(&format!(
                "    <script src=\"{}\"></script>\n",
                asset_path(asset)
            ));
        }
    }
    format!(
        "<!doctype html>\n<html lang=\"en\">\n  <head>\n    <meta charset=\"utf-8\">\n    \
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n    \
         <title>itemgraph playground</title>\n    <link rel=\"icon\" href=\"data:,\">\n{head}  \
         </head>\n  <body>\n    <div id=\"graphiql\">Loading the playground…</div>\n    \
         <script type=\"application/json\" id=\"itemgraph-config\">{config}</script>\n{scripts}  \
         </body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's WebSocket is allowed to its own host only, and a `Host` that is not a
    /// plain host and port changes nothing.
    #[test]
    fn the_policy_admits_this_hosts_websocket_only() {
        let policy = content_security_policy(Some("127.0.0.1:8080"));
        assert!(policy.contains("connect-src 'self' ws://127.0.0.1:8080 wss://127.0.0.1:8080;"));
        assert!(policy.contains("script-src 'self';"));
        for hostile in ["evil; script-src *", "a b", "", "x\r\ny"] {
            assert_eq!(
                content_security_policy(Some(hostile)),
                CONTENT_SECURITY_POLICY,
                "{hostile:?}"
            );
        }
        assert_eq!(content_security_policy(None), CONTENT_SECURITY_POLICY);
    }

    /// The embedded third-party files are exactly the ones the lock records.
    #[test]
    fn vendored_files_match_the_lock() {
        let lock: serde_json::Value = serde_json::from_slice(
            ASSETS
                .iter()
                .find(|a| a.name == "vendor.lock.json")
                .unwrap()
                .bytes,
        )
        .unwrap();
        let recorded = lock["sha256"].as_object().unwrap();
        assert!(recorded.len() >= 9, "{recorded:?}");
        for (name, sha256) in recorded {
            let asset = ASSETS
                .iter()
                .find(|a| a.name == name)
                .unwrap_or_else(|| panic!("{name} is locked but not embedded"));
            assert_eq!(asset.sha256, sha256.as_str().unwrap(), "{name}");
        }
    }

    #[test]
    fn the_page_loads_every_script_and_style_from_this_origin_and_nothing_inline() {
        let page = page(
            "/graphql",
            "x-itemgraph-trace",
            false,
            true,
            &EXAMPLES,
            &crate::chart::builtin(),
        );
        for asset in ASSETS
            .iter()
            .filter(|a| !a.content_type.starts_with("text/plain"))
        {
            assert!(page.contains(&asset_path(asset)), "{}", asset.name);
        }
        for attr in ["src=\"", "href=\""] {
            for value in page.split(attr).skip(1) {
                assert!(
                    value.starts_with("/playground/") || value.starts_with("data:"),
                    "{attr}{}",
                    &value[..value.len().min(40)]
                );
            }
        }
        // The only script element without a src is the JSON block, which never runs.
        assert_eq!(page.matches("<script>").count(), 0);
        assert_eq!(page.matches("<script type=\"application/json\"").count(), 1);
        let config = page
            .split("id=\"itemgraph-config\">")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next())
            .unwrap();
        let config: serde_json::Value = serde_json::from_str(config).unwrap();
        assert_eq!(config["examples"].as_array().unwrap().len(), EXAMPLES.len());
        assert_eq!(config["auth"], false);
        // The Chart panel: every pattern of the chart, each read pattern with the tab of
        // `examples/` that runs it (the references, 9, in the ticket's tab; pattern 1, the
        // organization alone, has none: the users' tab reads it with its users).
        let patterns = config["chart"]["patterns"].as_array().unwrap();
        assert_eq!(patterns.len(), crate::chart::builtin().patterns.len());
        let tab = |n: usize| {
            patterns[n - 1]["tab"]
                .as_u64()
                .map(|t| EXAMPLES[t as usize])
        };
        assert_eq!(tab(1), None);
        for n in 2..=8 {
            assert!(
                tab(n)
                    .unwrap()
                    .starts_with(&format!("# Access pattern {n}:")),
                "{n}"
            );
        }
        assert!(tab(9).unwrap().contains("(access pattern 9)"));
        // A heading naming pattern 19 does not name pattern 9.
        assert_eq!(tab_of(&["# About (access pattern 19)\n{ a }"], 9), None);
        assert_eq!(
            tab_of(&["# Access pattern 19: x\n", "# x (access pattern 9)\n"], 9),
            Some(1)
        );
        // The write patterns' tabs are not in `EXAMPLES` alone.
        assert_eq!(tab(10), None);
        assert!(config["chart"]["entities"].as_array().unwrap().len() >= 8);
        assert!(config["chart"]["warnings"].is_array());
    }
}
