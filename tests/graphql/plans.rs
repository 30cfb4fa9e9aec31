//! What the write path sends is what the chart's resolved plans say, which is what `chart
//! explain` prints (`itemgraph::chart::plan`): every mutation of every example chart, run
//! as its playground tab (in order, on the embedded engine, over its seeded data), sends
//! only actions its plan names: each action writes or checks an item of the entity one of
//! the plan's steps names (a counter shard for a counter of a sharded item), no step gets
//! more actions than its most, and the actions of one mutation number no more than the
//! plan's most, the figure `chart explain` prints. And each action is sent as its step's
//! act says (`chart explain`'s write plans print them): its request one of the step's, its
//! condition on the key the act guards and on no attribute the act's guards do not name.
//!
//! And what the read path sends is what the Query patterns' resolved plans say: every Query
//! a read tab of every example chart sends is one of its page plans filled in (its index
//! and direction, a partition its template admits, the Limit it gives for a page of at
//! most 100) and reads only the entities that plan decodes (or is an item read with its
//! counter shards, one Query of the item and its shards).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use itemgraph::chart::plan::{Act, Guard, MutationPlan, Role, Verb};
use itemgraph::chart::Chart;
use itemgraph::store::{
    AttributeValue, BatchGet, BatchGetPage, Condition, Delete, GetItem, Item, PrimaryKey, Put,
    Query, QueryOutput, Store, StoreResult, TableDescription, TableSchema, TransactAction, Update,
};

use crate::common::graphql::Api;

/// The type of each item a Query read.
type Call = Vec<Option<String>>;

/// One action of a write call.
#[derive(Debug)]
struct Sent {
    /// The type of the item it wrote or checked (read before the write for the actions
    /// that name only a key; `None`: no item there).
    found: Option<String>,
    verb: Verb,
    /// The attributes its condition compares.
    compared: Vec<String>,
    /// The counters an update adds to.
    adds: Vec<String>,
}

/// Every attribute `c` compares.
fn compared(c: Option<&Condition>, out: &mut Vec<String>) {
    let Some(c) = c else { return };
    let mut push = |a: &str| {
        if !out.iter().any(|x| x == a) {
            out.push(a.to_owned());
        }
    };
    match c {
        Condition::Exists(a)
        | Condition::NotExists(a)
        | Condition::Cmp(a, ..)
        | Condition::Between(a, ..)
        | Condition::BeginsWith(a, _)
        | Condition::EntryExists(a, _)
        | Condition::Size(a, ..) => push(a),
        Condition::And(all) | Condition::Or(all) => {
            for x in all {
                compared(Some(x), out);
            }
        }
        Condition::Not(x) => compared(Some(x), out),
    }
}

fn sent(found: Option<String>, verb: Verb, c: Option<&Condition>, update: Option<&Update>) -> Sent {
    let mut attrs = Vec::new();
    compared(c, &mut attrs);
    Sent {
        found,
        verb,
        compared: attrs,
        adds: update.map_or_else(Vec::new, |u| {
            u.update.add.iter().map(|(a, _)| a.clone()).collect()
        }),
    }
}

/// A store that records, for each write call, the type of each item it touches.
struct Recording {
    inner: Arc<dyn Store>,
    type_attribute: String,
    /// Shared with the recordings of its sibling tables: one list of calls.
    calls: Arc<Mutex<Vec<Vec<Sent>>>>,
    /// Each Query sent, with the type of each item it read.
    queries: Arc<Mutex<Vec<(Query, Call)>>>,
}

impl Recording {
    async fn type_at(&self, key: &PrimaryKey) -> Option<String> {
        let item = self
            .inner
            .get_item(GetItem {
                key: key.clone(),
                consistent_read: true,
            })
            .await
            .ok()??;
        self.type_of(&item)
    }

    fn type_of(&self, item: &Item) -> Option<String> {
        match item.get(&self.type_attribute) {
            Some(AttributeValue::S(t)) => Some(t.clone()),
            _ => None,
        }
    }

    /// What a transaction's action `a` on this table sends.
    async fn sent(&self, a: &TransactAction) -> Sent {
        match a {
            TransactAction::Put(p) => {
                sent(self.type_of(&p.item), Verb::Put, p.condition.as_ref(), None)
            }
            TransactAction::Update(u) => sent(
                self.type_at(&u.key).await,
                Verb::Update,
                u.condition.as_ref(),
                Some(u),
            ),
            TransactAction::Delete(d) => sent(
                self.type_at(&d.key).await,
                Verb::Delete,
                d.condition.as_ref(),
                None,
            ),
            TransactAction::ConditionCheck(c) => sent(
                self.type_at(&c.key).await,
                Verb::Check,
                Some(&c.condition),
                None,
            ),
        }
    }

    fn record(&self, call: Vec<Sent>) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait]
impl Store for Recording {
    fn table_name(&self) -> &str {
        self.inner.table_name()
    }
    fn schema(&self) -> &TableSchema {
        self.inner.schema()
    }
    fn engine_name(&self) -> &'static str {
        self.inner.engine_name()
    }
    async fn create_table(&self) -> StoreResult<bool> {
        self.inner.create_table().await
    }
    async fn delete_table(&self) -> StoreResult<bool> {
        self.inner.delete_table().await
    }
    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        self.inner.describe_table().await
    }
    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        self.inner.get_item(req).await
    }
    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        self.inner.batch_get_page(req).await
    }
    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        let out = self.inner.query(req.clone()).await?;
        let read = out.items.iter().map(|i| self.type_of(i)).collect();
        self.queries.lock().unwrap().push((req, read));
        Ok(out)
    }
    async fn scan(&self, req: itemgraph::store::Scan) -> StoreResult<QueryOutput> {
        self.inner.scan(req).await
    }
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        let found = self.type_of(&req.item);
        self.record(vec![sent(found, Verb::Put, req.condition.as_ref(), None)]);
        self.inner.put_item(req).await
    }
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        let found = self.type_at(&req.key).await;
        self.record(vec![sent(
            found,
            Verb::Update,
            req.condition.as_ref(),
            Some(&req),
        )]);
        self.inner.update_item(req).await
    }
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        let found = self.type_at(&req.key).await;
        self.record(vec![sent(
            found,
            Verb::Delete,
            req.condition.as_ref(),
            None,
        )]);
        self.inner.delete_item(req).await
    }
    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        Some(Arc::new(Recording {
            inner: self.inner.sibling(table)?,
            type_attribute: self.type_attribute.clone(),
            calls: self.calls.clone(),
            queries: self.queries.clone(),
        }))
    }
    async fn batch_get_tables_page(
        &self,
        req: itemgraph::store::BatchGetTables,
    ) -> StoreResult<itemgraph::store::BatchGetTablesPage> {
        self.inner.batch_get_tables_page(req).await
    }
    async fn transact_write_tables(
        &self,
        actions: Vec<itemgraph::store::TableAction>,
    ) -> StoreResult<()> {
        let mut call = Vec::with_capacity(actions.len());
        for a in &actions {
            let store = itemgraph::store::table_store(&self.inner, &a.table)?;
            let at = Recording {
                inner: store,
                type_attribute: self.type_attribute.clone(),
                calls: self.calls.clone(),
                queries: self.queries.clone(),
            };
            call.push(at.sent(&a.action).await);
        }
        self.record(call);
        self.inner.transact_write_tables(actions).await
    }
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        let mut call = Vec::with_capacity(actions.len());
        for a in &actions {
            call.push(self.sent(a).await);
        }
        self.record(call);
        self.inner.transact_write(actions).await
    }
    async fn batch_write_page(
        &self,
        req: itemgraph::store::BatchWrite,
    ) -> StoreResult<itemgraph::store::BatchWritePage> {
        let mut call = Vec::with_capacity(req.requests.len());
        for r in &req.requests {
            call.push(match r {
                itemgraph::store::BatchWriteRequest::Put(item) => {
                    sent(self.type_of(item), Verb::Put, None, None)
                }
                itemgraph::store::BatchWriteRequest::Delete(key) => {
                    sent(self.type_at(key).await, Verb::BatchDelete, None, None)
                }
            });
        }
        self.record(call);
        self.inner.batch_write_page(req).await
    }
}

/// Whether an item of type `found` is one of the items `step` writes: of its entity, or
/// one of that entity's counter shards for a counter update.
fn fits(chart: &Chart, step: &itemgraph::chart::plan::Step, found: &str) -> bool {
    found == step.entity
        || (step.role == Role::Counter
            && chart.entities.get(found).is_some_and(|e| {
                e.shards_of
                    .as_ref()
                    .is_some_and(|(of, _)| *of == step.entity)
            }))
}

/// Whether `a` was sent as act `act` says: its request the act's (a check merged into a
/// count on the same item is the count's update), its condition on the key the act guards
/// and on nothing the act's guards do not name (with `others`, the acts of the plan's other
/// steps on that item: a count and a check on one item are one action on the conditions of
/// both), and for an act that takes from counters, on those it takes from.
fn as_act(a: &Sent, act: &Act, others: &[&Act]) -> bool {
    let verb = a.verb == act.verb || (act.verb == Verb::Check && a.verb == Verb::Update);
    let named = |x: &str| {
        std::iter::once(act)
            .chain(others.iter().copied())
            .any(|act| {
                act.when.iter().any(|g| g.attributes().contains(&x))
                    || (act.when.contains(&Guard::Positive) && a.adds.iter().any(|c| c == x))
            })
    };
    let key = act
        .when
        .first()
        .and_then(|g| g.attributes().first().copied());
    verb && key.is_none_or(|k| a.compared.iter().any(|x| x == k))
        && a.compared.iter().all(|x| named(x))
}

/// Each action of `call` assigned to a step of `plan` that names its entity, has room and
/// has an act it was sent as; a refusal names the action that has none.
fn within(chart: &Chart, plan: &MutationPlan, call: &[Sent]) -> Result<(), String> {
    let mut room: Vec<u64> = plan.steps.iter().map(|s| s.most).collect();
    let alone = call.len() == 1;
    for a in call {
        let Some(found) = &a.found else {
            return Err(format!("{}: an action on no item: {call:?}", plan.mutation));
        };
        let sent_as = |i: usize| {
            let step = &plan.steps[i];
            let others: Vec<&Act> = plan
                .steps
                .iter()
                .filter(|s| fits(chart, s, found))
                .flat_map(|s| s.acts.iter())
                .collect();
            let on_shard = step.on_shard.as_ref().map(|when| Act {
                verb: Verb::Update,
                when: when.clone(),
            });
            step.acts
                .iter()
                .chain(on_shard.as_ref())
                // A change or a delete sent without reading first is its one write.
                .chain(
                    plan.in_place
                        .as_ref()
                        .filter(|_| alone && step.role == Role::Item),
                )
                .any(|act| as_act(a, act, &others))
        };
        let Some(i) = (0..plan.steps.len())
            .find(|&i| room[i] > 0 && fits(chart, &plan.steps[i], found) && sent_as(i))
        else {
            return Err(format!(
                "{}: an action on a {found} that no step of its plan has room for or sends so: {a:?} of {call:?} against {:#?}",
                plan.mutation, plan.steps
            ));
        };
        room[i] -= 1;
    }
    if call.len() as u64 > plan.most(None) {
        return Err(format!(
            "{}: {} actions, the plan's most is {}",
            plan.mutation,
            call.len(),
            plan.most(None)
        ));
    }
    Ok(())
}

/// Runs every write tab of `chart` on `api` (whose store is `recording`), in order, and
/// holds each one's write calls to its mutation's plan.
async fn holds(chart: &Chart, api: &Api, recording: &Recording, tabs: Vec<String>) {
    let mut ran = 0;
    for tab in tabs {
        let name = tab
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("mutation Pattern"))
            .expect("a mutation tab");
        let number: u32 = name
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap();
        let m = chart
            .mutations
            .values()
            .find(|m| m.pattern == number)
            .expect("the tab's mutation");
        recording.calls.lock().unwrap().clear();
        let response = api.run(&tab).await;
        assert!(
            response.get("errors").is_none(),
            "{}: {response:#}\n{tab}",
            m.name
        );
        let calls = std::mem::take(&mut *recording.calls.lock().unwrap());
        assert_eq!(calls.len(), 1, "{}: one write request: {calls:?}", m.name);
        let plan = &chart.plans[&m.name];
        if let Err(why) = within(chart, plan, &calls[0]) {
            panic!("{why}");
        }
        // What `chart explain` prints of it is this plan: its steps, each act as sent.
        let shown = itemgraph::chart::explain::plan_shown(chart, m);
        assert_eq!(shown.steps.len(), plan.steps.len(), "{}", m.name);
        for (shown, step) in shown.steps.iter().zip(&plan.steps) {
            let acts: Vec<String> = step.acts.iter().map(ToString::to_string).collect();
            assert_eq!(
                (&shown.entity, shown.most, &shown.actions),
                (&step.entity, step.most, &acts),
                "{}",
                m.name
            );
        }
        ran += 1;
    }
    assert_eq!(ran, chart.mutations.len(), "every mutation has its tab");
}

fn recording(store: Arc<dyn Store>, chart: &Chart) -> Arc<Recording> {
    Arc::new(Recording {
        inner: store,
        type_attribute: chart.table.type_attribute.clone(),
        calls: Arc::new(Mutex::new(Vec::new())),
        queries: Arc::new(Mutex::new(Vec::new())),
    })
}

/// Every chart under `examples/charts/`, each over an embedded table of its own seeded
/// with its samples.
async fn example_charts() -> Vec<(Arc<Chart>, Arc<dyn Store>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let chart = Arc::new(
            itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        );
        let store: Arc<dyn Store> = Arc::new(
            itemgraph::store::embedded::EmbeddedStore::in_memory(
                &chart.table.name,
                chart.table_schema(),
            )
            .unwrap()
            .with_siblings(chart.other_tables(), None)
            .unwrap(),
        );
        for t in 0..chart.tables.len() {
            chart
                .store_of(&store, t)
                .unwrap()
                .create_table()
                .await
                .unwrap();
        }
        let store = itemgraph::store::stored::wrap(store, &chart);
        itemgraph::chart::samples::seed(store.as_ref(), &chart)
            .await
            .unwrap();
        out.push((chart, store));
    }
    out
}

#[tokio::test]
async fn the_builtin_charts_writes_send_what_their_plans_say() {
    let chart = itemgraph::chart::builtin();
    let seeded = crate::common::engines::embedded_demo().await;
    let recording = recording(Arc::new(seeded), &chart);
    let api = Api::over(recording.clone());
    let tabs = itemgraph::graphql::write_examples(&chart, &itemgraph::chart::data::builtin_demo());
    holds(&chart, &api, &recording, tabs).await;
}

#[tokio::test]
async fn the_example_charts_writes_send_what_their_plans_say() {
    let charts = example_charts().await;
    assert!(!charts.is_empty());
    for (chart, store) in charts {
        let recording = recording(store, &chart);
        let api = Api::chart_over(chart.clone(), recording.clone());
        let tabs = itemgraph::graphql::write_examples(&chart, &chart.samples);
        holds(&chart, &api, &recording, tabs).await;
    }
}

/// A Query sent that no page plan of `chart` (nor a read of an item with its counter
/// shards) accounts for, named.
fn unplanned(chart: &Chart, q: &Query, read: &Call) -> Option<String> {
    let types = || read.iter().flatten();
    let paged = chart.pages.values().any(|plan| {
        plan.condition.index == q.index
            && q.partition
                .starts_with(plan.condition.partition.literal_prefix())
            && [true, false].iter().any(|&first| {
                (1..=100)
                    .any(|size| Some(plan.limit(size, plan.parent.is_some() && first)) == q.limit)
            })
            && types().all(|t| plan.reads.contains_key(t))
    });
    let with_counts = chart.patterns.values().any(|p| match &p.request {
        itemgraph::chart::Request::GetItem {
            entity,
            with_shards: Some(c),
        } => {
            c.index == q.index
                && q.partition.starts_with(c.partition.literal_prefix())
                && Some(1 + chart.shards_of(entity).map_or(0, |(_, n)| n)) == q.limit
                && types().all(|t| {
                    t == entity || chart.shards_of(entity).is_some_and(|(s, _)| s.name == *t)
                })
        }
        _ => false,
    });
    (!paged && !with_counts).then(|| format!("{q:?} read {read:?}"))
}

/// Runs every read tab of `chart` on `api` and holds each Query it sends to a page plan.
async fn reads_hold(chart: &Chart, api: &Api, recording: &Recording, tabs: Vec<String>) {
    let mut sent = 0;
    for tab in tabs {
        if ["mutation", "subscription"]
            .iter()
            .any(|k| tab.trim_start().starts_with(k) || tab.contains(&format!("\n{k} ")))
        {
            continue;
        }
        recording.queries.lock().unwrap().clear();
        let response = api.run(&tab).await;
        assert!(response.get("errors").is_none(), "{response:#}\n{tab}");
        for (q, read) in std::mem::take(&mut *recording.queries.lock().unwrap()) {
            if let Some(why) = unplanned(chart, &q, &read) {
                panic!("a Query no plan of the chart sends: {why}\n{tab}");
            }
            sent += 1;
        }
    }
    assert!(
        // A chart whose Query patterns only find what a bulk mutation writes has none to read.
        sent > 0
            || chart
                .pages
                .keys()
                .all(|n| chart.patterns[n].field.starts_with("Mutation.")),
        "the read tabs sent no Query"
    );
}

#[tokio::test]
async fn the_builtin_charts_reads_send_what_their_plans_say() {
    let chart = itemgraph::chart::builtin();
    let seeded = crate::common::engines::embedded_demo().await;
    let recording = recording(Arc::new(seeded), &chart);
    let api = Api::over(recording.clone());
    reads_hold(
        &chart,
        &api,
        &recording,
        itemgraph::http::playground::builtin_examples(),
    )
    .await;
}

#[tokio::test]
async fn the_example_charts_reads_send_what_their_plans_say() {
    let charts = example_charts().await;
    assert!(!charts.is_empty());
    for (chart, store) in charts {
        let recording = recording(store, &chart);
        let api = Api::chart_over(chart.clone(), recording.clone());
        let tabs = itemgraph::graphql::examples(&chart);
        reads_hold(&chart, &api, &recording, tabs).await;
    }
}
