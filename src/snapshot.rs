//! `itemgraph snapshot`: snapshot tests of GraphQL operations for any repository that has
//! the binary and its operations. Each operation runs against a store holding known data;
//! its normalized response and the DynamoDB requests it made are compared with a snapshot
//! file in insta's `.snap` format (a header, then the content; a pending change as
//! `.snap.new`), which a plain diff reads; an operation may declare a request budget (`# dynamodb-requests: 2` or `<= 3`)
//! that fails the run whenever it is exceeded, snapshots updated or not.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use serde_json::Value;

use crate::auth::Access;
use crate::graphql::{self, CursorCodec};
use crate::store::Store;

/// The cursor secret of every snapshot run: cursors are a pure function of it and of the
/// data, so they are stable in snapshots.
const CURSOR_SECRET: &[u8] = b"itemgraph-snapshot-fixed-cursor-secret";

/// One operation to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Its name in reports and in the snapshot's file name: the file's stem, or the id in
    /// a persisted-operations map.
    pub name: String,
    /// Where it came from, for messages.
    pub source: PathBuf,
    pub query: String,
    pub variables: Option<Value>,
    pub budget: Option<Budget>,
    /// Where its snapshot lives.
    pub snapshot: PathBuf,
}

/// A request budget: `# dynamodb-requests: N` (exactly N) or `<= N` (at most N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Exactly(u64),
    AtMost(u64),
}

impl Budget {
    fn allows(self, n: u64) -> bool {
        match self {
            Budget::Exactly(b) => n == b,
            Budget::AtMost(b) => n <= b,
        }
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Budget::Exactly(n) => write!(f, "{n}"),
            Budget::AtMost(n) => write!(f, "<= {n}"),
        }
    }
}

/// The budget a document declares in a comment line, if any.
pub fn budget_of(query: &str, source: &Path) -> anyhow::Result<Option<Budget>> {
    let mut found = None;
    for line in query.lines() {
        let Some(rest) = line.trim().strip_prefix('#') else {
            continue;
        };
        let Some(value) = rest.trim().strip_prefix("dynamodb-requests:") else {
            continue;
        };
        let value = value.trim();
        let (at_most, number) = match value.strip_prefix("<=") {
            Some(n) => (true, n.trim()),
            None => (false, value),
        };
        let n: u64 = number.parse().with_context(|| {
            format!(
                "{}: `# dynamodb-requests: {value}` is not a number or `<= number`",
                source.display()
            )
        })?;
        if found.is_some() {
            bail!(
                "{}: more than one `# dynamodb-requests:` line",
                source.display()
            );
        }
        found = Some(if at_most {
            Budget::AtMost(n)
        } else {
            Budget::Exactly(n)
        });
    }
    Ok(found)
}

/// Checks that a document holds exactly one operation and parses.
fn check_document(query: &str, source: &Path) -> anyhow::Result<()> {
    let doc = async_graphql::parser::parse_query(query)
        .map_err(|e| anyhow::anyhow!("{}: not valid GraphQL: {e}", source.display()))?;
    let count = match &doc.operations {
        async_graphql::parser::types::DocumentOperations::Single(_) => 1,
        async_graphql::parser::types::DocumentOperations::Multiple(ops) => ops.len(),
    };
    if count != 1 {
        bail!(
            "{}: holds {count} operations; a snapshot file holds exactly one",
            source.display()
        );
    }
    Ok(())
}

/// The operations under `paths`: `.graphql` files (with `NAME.variables.json` beside),
/// directories of them (sorted, not recursive), and persisted-operations maps (`.json`
/// objects of id → document, as Relay's and Apollo's build tools write). Snapshots go
/// under `snapshots` when given, else into `__snapshots__` beside each file.
pub fn collect(paths: &[PathBuf], snapshots: Option<&Path>) -> anyhow::Result<Vec<Operation>> {
    let mut ops = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("reading {}", path.display()))?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()?;
            files.retain(|f| f.extension().is_some_and(|e| e == "graphql"));
            files.sort();
            for file in files {
                ops.push(graphql_file(&file, snapshots)?);
            }
        } else if path.extension().is_some_and(|e| e == "json") {
            ops.extend(persisted_map(path, snapshots)?);
        } else if path.extension().is_some_and(|e| e == "graphql") {
            ops.push(graphql_file(path, snapshots)?);
        } else {
            bail!(
                "{}: not a .graphql file, a directory of them, or a persisted-operations .json map",
                path.display()
            );
        }
    }
    let mut seen = BTreeMap::new();
    for op in &ops {
        if let Some(other) = seen.insert(op.snapshot.clone(), op.source.clone()) {
            bail!(
                "{} and {} would write the same snapshot {}",
                other.display(),
                op.source.display(),
                op.snapshot.display()
            );
        }
    }
    Ok(ops)
}

fn snapshot_path(source: &Path, name: &str, snapshots: Option<&Path>) -> PathBuf {
    let dir = match snapshots {
        Some(dir) => dir.to_owned(),
        None => source
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("__snapshots__"),
    };
    dir.join(format!("{name}.snap"))
}

fn graphql_file(path: &Path, snapshots: Option<&Path>) -> anyhow::Result<Operation> {
    let query =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    check_document(&query, path)?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .with_context(|| format!("{}: a file name in UTF-8", path.display()))?
        .to_owned();
    let vars_path = path.with_file_name(format!("{name}.variables.json"));
    let variables = match std::fs::read_to_string(&vars_path) {
        Ok(text) => {
            let v: Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not JSON", vars_path.display()))?;
            if !v.is_object() {
                bail!("{}: variables must be a JSON object", vars_path.display());
            }
            Some(v)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", vars_path.display())),
    };
    Ok(Operation {
        budget: budget_of(&query, path)?,
        snapshot: snapshot_path(path, &name, snapshots),
        name,
        source: path.to_owned(),
        query,
        variables,
    })
}

fn persisted_map(path: &Path, snapshots: Option<&Path>) -> anyhow::Result<Vec<Operation>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let map: BTreeMap<String, Value> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: a persisted-operations map is a JSON object of id → document",
            path.display()
        )
    })?;
    map.into_iter()
        .map(|(id, doc)| {
            let Value::String(query) = doc else {
                bail!("{}: the operation {id:?} is not a string", path.display());
            };
            let source = path.join(&id);
            check_document(&query, &source)?;
            let safe: String = id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            Ok(Operation {
                budget: budget_of(&query, &source)?,
                snapshot: snapshot_path(path, &safe, snapshots),
                name: id,
                source,
                query,
                variables: None,
            })
        })
        .collect()
}

/// What one operation came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The snapshot matched.
    Same,
    /// No snapshot yet: written.
    New,
    /// The snapshot differed and `--update` wrote the new one.
    Updated,
    /// The snapshot differed: the diff; the new content is in `<snapshot>.new`.
    Changed(String),
    /// More requests than the budget: the requests.
    OverBudget(String),
}

/// Runs one operation and returns its snapshot content: the normalized response and its
/// DynamoDB requests, and the request count.
pub async fn run_one(
    schema: &graphql::ItemgraphSchema,
    store: Arc<dyn Store>,
    access: &Access,
    op: &Operation,
    started_ms: u64,
) -> (String, u64, Vec<Value>) {
    let mut request = async_graphql::Request::new(op.query.clone());
    if let Some(vars) = &op.variables {
        request = request.variables(async_graphql::Variables::from_json(vars.clone()));
    }
    let response = graphql::execute(
        schema,
        store,
        CursorCodec::new(CURSOR_SECRET),
        access.clone(),
        request,
        true,
    )
    .await;
    let mut value = serde_json::to_value(&response).unwrap_or(Value::Null);
    let trace = value
        .as_object_mut()
        .and_then(|o| o.remove("extensions"))
        .and_then(|mut e| e.get_mut("dynamodb").map(Value::take))
        .unwrap_or(Value::Null);
    let count = trace["requestCount"].as_u64().unwrap_or(0);
    let requests: Vec<Value> = trace["requests"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            let mut kept = serde_json::Map::new();
            for field in [
                "operation",
                "index",
                "keyCondition",
                "scanForward",
                "limit",
                "filter",
                "itemCount",
                "scannedCount",
            ] {
                if let Some(v) = r.get(field).filter(|v| !v.is_null()) {
                    kept.insert(field.to_owned(), v.clone());
                }
            }
            Value::Object(kept)
        })
        .collect();
    let mut snapshot = serde_json::json!({ "response": value, "dynamodb": requests });
    let mut names = Stable::new(started_ms);
    names.value(&mut snapshot);
    let body = serde_json::to_string_pretty(&snapshot).unwrap_or_default();
    (body, count, requests)
}

/// Makes what a run creates stable: ids minted during it (ULIDs at or after its start)
/// become `<new id N>` in order of appearance, and timestamps at or after its start
/// `<now>`. The demo data's ids and times are fixed, so they stay.
struct Stable {
    started_ms: u64,
    ids: BTreeMap<String, usize>,
}

impl Stable {
    fn new(started_ms: u64) -> Self {
        Stable {
            started_ms,
            ids: BTreeMap::new(),
        }
    }

    fn value(&mut self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => map.values_mut().for_each(|i| self.value(i)),
            _ => {}
        }
    }

    fn text(&mut self, s: &str) -> String {
        if let Ok(at) =
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        {
            let ms = at.unix_timestamp_nanos() / 1_000_000;
            if ms >= i128::from(self.started_ms) {
                return "<now>".into();
            }
        }
        // A global id (base64url of `Type:key`) of a minted entity: its decoded form.
        if let Some(decoded) =
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, s)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .filter(|text| text.contains(':') && text.chars().all(|c| !c.is_control()))
        {
            let stable = self.text(&decoded);
            if stable != decoded {
                return format!("<global id {stable}>");
            }
        }
        let mut out = String::with_capacity(s.len());
        let mut token = String::new();
        for c in s.chars().chain(std::iter::once('\0')) {
            if c.is_ascii_alphanumeric() {
                token.push(c);
                continue;
            }
            out.push_str(&self.token(&token));
            token.clear();
            if c != '\0' {
                out.push(c);
            }
        }
        out
    }

    fn token(&mut self, token: &str) -> String {
        match ulid::Ulid::from_string(token) {
            Ok(id) if token.len() == 26 && id.timestamp_ms() >= self.started_ms => {
                let next = self.ids.len() + 1;
                let n = *self.ids.entry(token.to_owned()).or_insert(next);
                format!("<new id {n}>")
            }
            _ => token.to_owned(),
        }
    }
}

/// A snapshot file in insta's format: a YAML header, then the content.
pub fn snapshot_file(op: &Operation, body: &str) -> String {
    let mut out = String::from("---\nsource: itemgraph snapshot\n");
    let _ = writeln!(out, "expression: {:?}", op.source.display().to_string());
    out.push_str("---\n");
    out.push_str(body);
    out.push('\n');
    out
}

/// The content of a snapshot file (after its header).
fn snapshot_body(file: &str) -> &str {
    match file
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
    {
        Some((_, body)) => body,
        None => file,
    }
}

/// Compares one operation's result with its snapshot, writing what `update` allows.
pub fn settle(
    op: &Operation,
    body: &str,
    count: u64,
    requests: &[Value],
    update: bool,
) -> anyhow::Result<Outcome> {
    if let Some(budget) = op.budget.filter(|b| !b.allows(count)) {
        let list: Vec<String> = requests
            .iter()
            .map(|r| {
                format!(
                    "  {} {}{}",
                    r["operation"].as_str().unwrap_or("?"),
                    r["index"]
                        .as_str()
                        .map(|i| format!("on {i} "))
                        .unwrap_or_default(),
                    r["keyCondition"].as_str().unwrap_or("")
                )
            })
            .collect();
        return Ok(Outcome::OverBudget(format!(
            "{count} DynamoDB requests, budget {budget}:\n{}",
            list.join("\n")
        )));
    }
    let file = snapshot_file(op, body);
    let new_path = op.snapshot.with_extension("snap.new");
    match std::fs::read_to_string(&op.snapshot) {
        Ok(old) if snapshot_body(&old).trim_end() == body.trim_end() => {
            let _ = std::fs::remove_file(&new_path);
            Ok(Outcome::Same)
        }
        Ok(old) => {
            if update {
                std::fs::write(&op.snapshot, file)
                    .with_context(|| format!("writing {}", op.snapshot.display()))?;
                let _ = std::fs::remove_file(&new_path);
                return Ok(Outcome::Updated);
            }
            std::fs::write(&new_path, &file)
                .with_context(|| format!("writing {}", new_path.display()))?;
            let (old, new) = (
                format!("{}\n", snapshot_body(&old).trim_end()),
                format!("{}\n", body.trim_end()),
            );
            let diff = similar::TextDiff::from_lines(&old, &new);
            let text = diff
                .unified_diff()
                .context_radius(3)
                .header("snapshot", "now")
                .to_string();
            Ok(Outcome::Changed(text))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = op.snapshot.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&op.snapshot, file)
                .with_context(|| format!("writing {}", op.snapshot.display()))?;
            Ok(Outcome::New)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", op.snapshot.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_read_from_comments() {
        let p = Path::new("x.graphql");
        assert_eq!(
            budget_of("# dynamodb-requests: 2\n{ a }", p).unwrap(),
            Some(Budget::Exactly(2))
        );
        assert_eq!(
            budget_of("#dynamodb-requests: <= 3\n{ a }", p).unwrap(),
            Some(Budget::AtMost(3))
        );
        assert_eq!(budget_of("# DynamoDB requests: 2\n{ a }", p).unwrap(), None);
        let err = budget_of("# dynamodb-requests: two\n{ a }", p)
            .unwrap_err()
            .to_string();
        assert!(err.contains("x.graphql"), "{err}");
        assert!(!Budget::Exactly(2).allows(1) && Budget::AtMost(2).allows(1));
    }

    #[test]
    fn what_a_run_mints_becomes_stable_and_the_rest_stays() {
        let started = 1_800_000_000_000;
        let minted = ulid::Ulid::from_parts(started + 5, 7).to_string();
        let old = ulid::Ulid::from_parts(started - 5, 7).to_string();
        let mut v = serde_json::json!({
            "id": minted, "old": old, "key": format!("TICKET#{minted} AND x"),
            "at": "2027-01-15T08:00:00.000Z", "then": "2020-01-01T00:00:00.000Z"
        });
        Stable::new(started).value(&mut v);
        assert_eq!(v["id"], "<new id 1>");
        assert_eq!(v["old"], old);
        assert_eq!(v["key"], "TICKET#<new id 1> AND x");
        assert_eq!(v["at"], "<now>");
        assert_eq!(v["then"], "2020-01-01T00:00:00.000Z");
        let global = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            format!("Ticket:{minted}"),
        );
        let mut v = serde_json::json!({ "id": global, "name": "Acme" });
        Stable::new(started).value(&mut v);
        assert_eq!(v["id"], "<global id Ticket:<new id 1>>");
        assert_eq!(v["name"], "Acme");
    }
}

/// What `itemgraph snapshot` reports and whether it passed.
#[derive(Debug, Default)]
pub struct Report {
    pub lines: Vec<String>,
    pub failed: usize,
}

/// Runs every operation in order against `schema` over `store` (holding the data already)
/// as `access`.
/// Ids and times from `started_ms` on (taken before the data was loaded, so a setup
/// fixture's are included) are made stable.
pub async fn run(
    schema: &graphql::ItemgraphSchema,
    store: Arc<dyn Store>,
    access: &Access,
    ops: &[Operation],
    update: bool,
    started_ms: u64,
) -> anyhow::Result<Report> {
    let mut report = Report::default();
    for op in ops {
        let (body, count, requests) = run_one(schema, store.clone(), access, op, started_ms).await;
        let line = match settle(op, &body, count, &requests, update)? {
            Outcome::Same => format!("ok       {} ({count} requests)", op.name),
            Outcome::New => format!(
                "new      {} ({count} requests): wrote {}",
                op.name,
                op.snapshot.display()
            ),
            Outcome::Updated => format!(
                "updated  {} ({count} requests): wrote {}",
                op.name,
                op.snapshot.display()
            ),
            Outcome::Changed(diff) => {
                report.failed += 1;
                format!(
                    "CHANGED  {} ({}): the new snapshot is in {}.new (--update accepts it)\n{diff}",
                    op.name,
                    op.source.display(),
                    op.snapshot.display()
                )
            }
            Outcome::OverBudget(what) => {
                report.failed += 1;
                format!("BUDGET   {} ({}): {what}", op.name, op.source.display())
            }
        };
        report.lines.push(line);
    }
    Ok(report)
}

/// Loads a fixture into an empty store: a JSON array of items, or a `.graphql` file of
/// setup mutations (every operation in it, in order, as an unrestricted caller).
pub async fn load_fixture(store: Arc<dyn Store>, path: &Path) -> anyhow::Result<usize> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "json") {
        let items = crate::chart::data::parse(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let n = crate::chart::data::put_new(store.as_ref(), items)
            .await
            .with_context(|| format!("{}: writing the items", path.display()))?;
        return Ok(n);
    }
    let doc = async_graphql::parser::parse_query(&text)
        .map_err(|e| anyhow::anyhow!("{}: not valid GraphQL: {e}", path.display()))?;
    let names: Vec<Option<String>> = match &doc.operations {
        async_graphql::parser::types::DocumentOperations::Single(_) => vec![None],
        async_graphql::parser::types::DocumentOperations::Multiple(ops) => {
            ops.keys().map(|k| Some(k.to_string())).collect()
        }
    };
    let schema = graphql::schema();
    for name in &names {
        let mut request = async_graphql::Request::new(text.clone());
        if let Some(name) = name {
            request = request.operation_name(name.clone());
        }
        let response = graphql::execute(
            &schema,
            store.clone(),
            CursorCodec::new(CURSOR_SECRET),
            Access::Unrestricted,
            request,
            false,
        )
        .await;
        if !response.errors.is_empty() {
            bail!(
                "{}: the setup operation {} failed: {}",
                path.display(),
                name.as_deref().unwrap_or("(unnamed)"),
                response.errors[0].message
            );
        }
    }
    Ok(names.len())
}
