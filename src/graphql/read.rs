//! The reads of a chart's access patterns, each one store request (two where the chart
//! declares them): a Query pattern's page (a parent, what sits beside it and a first page
//! of children; later pages on the children's prefix from the last-seen key; the keys an
//! index that holds less found, then one BatchGetItem of them: `then`), and items by key
//! through the request's DataLoader (GetItem for one, BatchGetItem for many).

use std::collections::HashMap;
use std::sync::Arc;

use dataloader::BatchFn;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

use super::connection::Resolved;
use super::errors::ApiError;
use super::loader_wait;
use super::loaders::answer_batch;
use super::record::{render, ItemKey, Record, Vars};
use crate::chart::format::Connection;
use crate::chart::plan::{PagePlan, Read};
use crate::chart::template::Template;
use crate::chart::MAX_PAGE_SIZE;
use crate::chart::{Chart, Entity, Pattern, Request, SortCondition as ChartSort};
use crate::store::validate::MAX_BATCH_GET_KEYS;
use crate::store::{
    AttributeValue, BatchGet, Condition, GetItem, Item, PageKey, PrimaryKey, Query, Scan,
    SortCondition, Store,
};
use crate::telemetry;

/// One page a Query pattern read: the parent (its shards' counters summed in) when the
/// page carried it, the children in the order read, and whether more follow.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    pub parent: Option<Arc<Record>>,
    pub children: Vec<Arc<Record>>,
    pub more: bool,
}

/// The Query that Query pattern `pattern` of `chart` sends for a page of `size` items from
/// `start` (the first page, which carries the parent, when none), with the key values
/// `vars`: what the server sends for it ([`query`]), for a reader of the store port that
/// reads as the server does (the benchmark's floor). `None` when the chart has no such
/// Query pattern, the values do not render its key or `start` is not on its partition.
pub fn pattern_query(
    chart: &Chart,
    pattern: u32,
    vars: &[(&str, &str)],
    size: u32,
    start: Option<PageKey>,
) -> Option<Query> {
    let vars = texts(vars);
    let page = Resolved {
        size,
        start,
        forward: true,
    };
    query(chart, chart.patterns.get(&pattern)?, &vars, &page)
        .ok()
        .map(|(q, _)| q)
}

/// The Query that serves `page` of a Query pattern, and whether it carries the parent:
/// its resolved plan ([`PagePlan`]) with the key values and the page filled in.
pub fn query(
    chart: &Chart,
    pattern: &Pattern,
    vars: &Vars,
    page: &Resolved,
) -> Result<(Query, bool), ApiError> {
    let plan = chart.pages.get(&pattern.number).ok_or(ApiError::Internal)?;
    let partition = render(&plan.condition.partition, vars)?;
    let (partition_more, sort_prefix) = multi_values(&plan.condition, vars)?;
    let size = page.size.clamp(1, MAX_PAGE_SIZE);
    let carries_parent = plan.carries_parent(page.forward, page.start.is_none());
    // A collection's later pages query its whole range from the last-seen key (its kinds
    // share no prefix); a backward one may reach the parent at its edge, and leaves it.
    let sort = if plan.parent.is_some()
        && !carries_parent
        && plan.kinds.is_empty()
        && !plan.children_prefix.is_none()
    {
        Some(SortCondition::BeginsWith(
            plan.children_prefix.source().to_owned(),
        ))
    } else {
        sort_of(&plan.condition.sort, vars)?
    };
    if let Some(start) = &page.start {
        check_cursor(chart, pattern, plan, &partition, &sort, start)?;
        if !multi_within(start, &partition_more, &sort_prefix) {
            return Err(ApiError::InvalidCursor(
                "the cursor does not belong to this connection",
            ));
        }
    }
    Ok((
        Query {
            index: plan.condition.index.clone(),
            partition,
            partition_more,
            sort_prefix,
            sort,
            forward: page.forward == plan.forward,
            limit: Some(plan.limit(size, carries_parent)),
            start: page.start.clone(),
            consistent_read: false,
        },
        carries_parent,
    ))
}

/// A multi-attribute key's further partition values and the sort values held equal, as
/// the condition's templates render them from `vars` (none on any other key).
fn multi_values(
    cond: &crate::chart::KeyCondition,
    vars: &Vars,
) -> Result<(Vec<String>, Vec<String>), ApiError> {
    let all = |ts: &[Template]| {
        ts.iter()
            .map(|t| render(t, vars))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok((all(&cond.partition_more)?, all(&cond.sort_prefix)?))
}

/// Whether a cursor's index key lies where a multi-attribute key's condition reads: its
/// further partition values and its first sort values are those given.
fn multi_within(start: &PageKey, partition_more: &[String], sort_prefix: &[String]) -> bool {
    if partition_more.is_empty() && sort_prefix.is_empty() {
        return true;
    }
    start.index.as_ref().is_some_and(|ik| {
        ik.pk_more == partition_more
            && ik
                .sort_values()
                .take(sort_prefix.len())
                .eq(sort_prefix.iter().map(String::as_str))
    })
}

/// What a connection's cursors are signed for: the chart's `cursor`, else `Owner.field`.
pub fn cursor_name(owner: &Entity, field: &str, c: &Connection) -> String {
    c.cursor
        .clone()
        .unwrap_or_else(|| format!("{}.{field}", owner.name))
}

/// The connection a cursor of `owner`'s connection `field` is signed for, on the
/// partition its key values `vars` pick ([`connection_name`]): for a client that signs
/// its own cursors with the server's secret (the benchmark's deep pages). `None` when
/// the chart has no such connection or the values do not render its partition.
pub fn connection_of(
    chart: &Chart,
    owner: &str,
    field: &str,
    vars: &[(&str, &str)],
) -> Option<String> {
    let e = chart.entities.get(owner)?;
    let c = e.connections.get(field)?;
    let vars = texts(vars);
    connection_name(
        chart.patterns.get(&c.pattern)?,
        &cursor_name(e, field, c),
        &vars,
    )
    .ok()
}

/// Key values given as text, as templates render them.
fn texts(vars: &[(&str, &str)]) -> Vars {
    vars.iter()
        .map(|(k, v)| {
            (
                (*k).to_owned(),
                crate::chart::template::Value::Text((*v).to_owned()),
            )
        })
        .collect()
}

/// The connection a cursor is bound to: its name (`cursor` in the chart, else
/// `Owner.field`) and the very partition it pages, and for a hierarchy read at one level,
/// that level (`storesIn` of one city is not `storesIn` of another).
pub fn connection_name(pattern: &Pattern, name: &str, vars: &Vars) -> Result<String, ApiError> {
    let (Request::Query { condition, .. } | Request::Collection { condition, .. }) =
        &pattern.request
    else {
        return Err(ApiError::Internal);
    };
    let mut out = format!("{name}:{}", render(&condition.partition, vars)?);
    // A multi-attribute key's every value given is the connection's.
    for t in condition
        .partition_more
        .iter()
        .chain(&condition.sort_prefix)
    {
        out.push('|');
        out.push_str(&render(t, vars)?);
    }
    if let Some(ChartSort::BeginsWith(t)) = &condition.sort {
        if t.vars().next().is_some() {
            out.push('|');
            out.push_str(&t.render(|n| vars.get(n).cloned()).unwrap_or_default());
        }
    }
    Ok(out)
}

fn sort_of(sort: &Option<ChartSort>, vars: &Vars) -> Result<Option<SortCondition>, ApiError> {
    use crate::chart::template::{Template, HIGHEST};
    // A variable left out ends the rendering there: a level of a hierarchy, or an open
    // end of a range, which starts at the text before it, or runs past every key that
    // starts with it.
    let r = |t: &Template| {
        t.render(|n| vars.get(n).cloned())
            .map_err(|e| ApiError::bad_input(&field_of(&e), e.to_string()))
    };
    let open = |t: &Template| t.left_open(|n| vars.contains_key(n));
    let upper = |t: &Template| -> Result<String, ApiError> {
        let mut s = r(t)?;
        if open(t) {
            s.push(HIGHEST);
        }
        Ok(s)
    };
    // An open lower end with no text before it (`BETWEEN {from?} AND {to?}`) starts at the
    // partition's start: no bound there (DynamoDB takes no empty key value).
    let lowest = |s: &str| s.is_empty();
    Ok(Some(match sort {
        None => return Ok(None),
        Some(ChartSort::Gt(t) | ChartSort::Ge(t)) if open(t) && lowest(&r(t)?) => return Ok(None),
        Some(ChartSort::BeginsWith(t)) if lowest(&r(t)?) => return Ok(None),
        Some(ChartSort::Between(a, b)) if open(a) && lowest(&r(a)?) => {
            let hi = upper(b)?;
            if open(b) && hi.strip_suffix(HIGHEST) == Some("") {
                return Ok(None);
            }
            SortCondition::Le(hi)
        }
        Some(ChartSort::Eq(t)) => SortCondition::Eq(r(t)?),
        Some(ChartSort::Lt(t)) if open(t) => SortCondition::Le(upper(t)?),
        Some(ChartSort::Lt(t)) => SortCondition::Lt(r(t)?),
        Some(ChartSort::Le(t)) => SortCondition::Le(upper(t)?),
        Some(ChartSort::Gt(t)) if open(t) => SortCondition::Ge(r(t)?),
        Some(ChartSort::Gt(t)) => SortCondition::Gt(r(t)?),
        Some(ChartSort::Ge(t)) => SortCondition::Ge(r(t)?),
        Some(ChartSort::Between(a, b)) => {
            let (lo, hi) = (r(a)?, upper(b)?);
            if open(a) && open(b) && hi.strip_suffix(HIGHEST) == Some(lo.as_str()) {
                SortCondition::BeginsWith(lo)
            } else if lo.as_bytes() > hi.as_bytes() {
                let name = |t: &Template| {
                    t.vars()
                        .find(|v| vars.contains_key(&v.name))
                        .map_or_else(String::new, |v| v.name.clone())
                };
                let (from, to) = (name(a), name(b));
                return Err(ApiError::bad_input(
                    &from,
                    format!("`{from}` comes after `{to}`: the range is empty"),
                ));
            } else {
                SortCondition::Between(lo, hi)
            }
        }
        Some(ChartSort::BeginsWith(t)) => SortCondition::BeginsWith(r(t)?),
    }))
}

fn field_of(e: &crate::chart::template::Unrendered) -> String {
    match e {
        crate::chart::template::Unrendered::Missing(n) => n.clone(),
        crate::chart::template::Unrendered::LevelSkipped { given, .. } => given.clone(),
    }
}

/// A cursor must be a child of this very connection: anything else would make the store
/// reject the request, or read another collection.
fn check_cursor(
    chart: &Chart,
    pattern: &Pattern,
    plan: &PagePlan,
    partition: &str,
    sort: &Option<SortCondition>,
    start: &PageKey,
) -> Result<(), ApiError> {
    // On a multi-attribute key, the sort value the condition compares follows those it
    // holds equal.
    let key = match (&plan.condition.index, &start.index) {
        (None, None) => Some((start.table.pk.as_str(), start.table.sk.as_str())),
        (Some(_), Some(ik)) => Some((
            ik.pk.as_str(),
            ik.sort_values()
                .nth(plan.condition.sort_prefix.len())
                .unwrap_or(""),
        )),
        _ => None,
    };
    let prefix = match sort {
        Some(SortCondition::BeginsWith(p)) => p.as_str(),
        // A collection's page of every kind: the key of one of them.
        _ if !plan.kinds.is_empty() => {
            let sk = key.map(|(_, sk)| sk).unwrap_or_default();
            plan.kinds
                .values()
                .map(Template::source)
                .find(|p| sk.starts_with(p))
                .unwrap_or(plan.children_prefix.source())
        }
        _ => plan.children_prefix.source(),
    };
    // A page of a range starts within it: a cursor of another range (its connection's
    // arguments are not what it is signed for) reads nothing of this one.
    // Compared as the sort attribute's type orders them (a number by value).
    let cond = &plan.condition;
    let ty = match &cond.index {
        None => chart.tables[pattern.table].sk_type,
        Some(i) => chart
            .indexes
            .get(i)
            .and_then(|i| i.key_type(i.partition_len() + cond.sort_prefix.len()))
            .unwrap_or_default(),
    };
    let within = |sk: &str| {
        sort.as_ref()
            .is_none_or(|s| crate::store::validate::sort_matches_typed(s, sk, ty))
    };
    match key {
        Some((pk, sk)) if pk == partition && sk.starts_with(prefix) && within(sk) => Ok(()),
        _ => Err(ApiError::InvalidCursor(
            "the cursor does not belong to this connection",
        )),
    }
}

/// Reads one page of a Query pattern: one Query.
pub async fn page(
    store: &Arc<dyn Store>,
    chart: &Chart,
    pattern: &Pattern,
    vars: &Vars,
    page: &Resolved,
) -> Result<Fetched, ApiError> {
    let store = chart.store_of(store, pattern.table)?;
    let store = store.as_ref();
    let table = &chart.tables[pattern.table];
    let (query, carries_parent) = query(chart, pattern, vars, page)?;
    let plan = chart.pages.get(&pattern.number).ok_or(ApiError::Internal)?;
    let children = &plan.children;
    let limit = query.limit.unwrap_or(0) as usize;
    let otel = telemetry::child("connection page", SpanKind::Internal, || {
        vec![
            KeyValue::new("itemgraph.page.children", children.clone()),
            KeyValue::new("itemgraph.page.size", i64::from(page.size)),
            KeyValue::new("itemgraph.page.forward", page.forward),
            KeyValue::new("itemgraph.page.from_cursor", page.start.is_some()),
        ]
    });
    let again = query.clone();
    let out = telemetry::within(otel.as_ref(), store.query(query)).await;
    if let Some(cx) = &otel {
        let (items, cut) = match &out {
            Ok(out) => (out.items.len(), out.last_evaluated_key.is_some()),
            Err(_) => (0, false),
        };
        telemetry::end(
            cx,
            vec![
                KeyValue::new("itemgraph.page.items_read", items as i64),
                KeyValue::new("itemgraph.page.cut", cut),
            ],
            out.as_ref()
                .err()
                .map(|e| ApiError::from(e.clone()).code().into()),
        );
    }
    let mut out = out?;
    if table.time_to_live.is_some() {
        read_past_expired(store, chart, children, again, &mut out).await?;
    }
    let read = out.items.len();
    if plan.then_get {
        // The index found the children's keys: the first `size` of them are read whole,
        // the one after only tells that more follow.
        out.items.truncate(page.size as usize);
        out.items = whole(store, chart, &out.items).await?;
    }
    let mut fetched = Fetched::default();
    let mut shards = Vec::new();
    let (now, mut expired) = (crate::chart::epoch_now(), 0);
    for item in out.items {
        let rec = Record::decode(chart, item)?;
        let entity = rec.entity(chart);
        if entity.expired(table, &rec.item, now) {
            expired += 1;
            continue;
        }
        match plan.reads.get(&*rec.entity) {
            Some(Read::Child) => fetched.children.push(Arc::new(rec)),
            Some(Read::Parent) if carries_parent => fetched.parent = Some(Arc::new(rec)),
            Some(Read::Shard) if carries_parent => shards.push(rec),
            Some(Read::Parent) if !plan.kinds.is_empty() => {}
            _ => {
                tracing::error!(entity = %rec.entity, pattern = pattern.number, "a page read an item its pattern does not declare");
                return Err(ApiError::Internal);
            }
        }
    }
    if let Some(parent) = &mut fetched.parent {
        *parent = Arc::new(with_shards(chart, parent, &shards));
    }
    // Expired items DynamoDB has not deleted yet are read and left out: a page cut short
    // by them still has more after it, unless it shows nothing to continue from.
    fetched.more = fetched.children.len() > page.size as usize
        || (plan.then_get && read > page.size as usize)
        || (out.last_evaluated_key.is_some()
            && (read < limit || (expired > 0 && !fetched.children.is_empty())));
    Ok(fetched)
}

/// Reads one page of one kind of a collection pattern: one Query of that kind's sort-key
/// prefix in the collection's partition, from `page.start`, `size + 1` items.
pub async fn kind_page(
    store: &Arc<dyn Store>,
    chart: &Chart,
    pattern: &Pattern,
    kind: &str,
    vars: &Vars,
    page: &Resolved,
) -> Result<Fetched, ApiError> {
    let store = chart.store_of(store, pattern.table)?;
    let store = store.as_ref();
    let table = &chart.tables[pattern.table];
    let plan = chart.pages.get(&pattern.number).ok_or(ApiError::Internal)?;
    let prefix = plan.kinds.get(kind).ok_or(ApiError::Internal)?;
    let partition = render(&plan.condition.partition, vars)?;
    let sort = Some(SortCondition::BeginsWith(prefix.source().to_owned()));
    if let Some(start) = &page.start {
        check_cursor(chart, pattern, plan, &partition, &sort, start)?;
    }
    let size = page.size.clamp(1, MAX_PAGE_SIZE);
    let query = Query {
        index: plan.condition.index.clone(),
        partition,
        partition_more: Vec::new(),
        sort_prefix: Vec::new(),
        sort,
        forward: page.forward == plan.forward,
        limit: Some(size + 1),
        start: page.start.clone(),
        consistent_read: false,
    };
    let mut out = store.query(query.clone()).await?;
    if table.time_to_live.is_some() {
        read_past_expired(store, chart, kind, query, &mut out).await?;
    }
    let (now, mut fetched) = (crate::chart::epoch_now(), Fetched::default());
    let read = out.items.len();
    for item in out.items {
        let rec = Record::decode(chart, item)?;
        if *rec.entity != *kind {
            tracing::error!(entity = %rec.entity, pattern = pattern.number, "a page of one kind read another");
            return Err(ApiError::Internal);
        }
        if !rec.entity(chart).expired(table, &rec.item, now) {
            fetched.children.push(Arc::new(rec));
        }
    }
    fetched.more = fetched.children.len() > page.size as usize
        || (out.last_evaluated_key.is_some() && read as u32 > size);
    Ok(fetched)
}

/// Reads one page of a Scan pattern: one Scan of its sparse index from the last-read key,
/// `size + 1` items read (to tell whether more follow), filtered to `tenant`'s (none: a
/// caller who sees every tenant) on the attribute the children's binding names. A filter
/// keeps what it keeps of what was read: a page may hold fewer, and `more` holds while
/// the index has more to read.
pub async fn scan_page(
    store: &Arc<dyn Store>,
    chart: &Chart,
    pattern: &Pattern,
    tenant: Option<&str>,
    page: &Resolved,
) -> Result<Fetched, ApiError> {
    let Request::Scan { index, children } = &pattern.request else {
        return Err(ApiError::Internal);
    };
    let e = &chart.entities[children];
    let store = chart.store_of(store, pattern.table)?;
    let filter = match (e.binding.condition_or_key(), tenant) {
        (Some(attr), Some(t)) => Some(Condition::eq(attr, AttributeValue::S(t.to_owned()))),
        _ => None,
    };
    let size = page.size.clamp(1, MAX_PAGE_SIZE);
    let out = store
        .scan(Scan {
            index: Some(index.clone()),
            filter,
            limit: Some(size + 1),
            start: page.start.clone(),
            ..Scan::default()
        })
        .await?;
    let (now, mut fetched) = (crate::chart::epoch_now(), Fetched::default());
    for item in out.items {
        let rec = Record::decode(chart, item)?;
        if *rec.entity != *children {
            tracing::error!(entity = %rec.entity, pattern = pattern.number, "a Scan read an item its pattern does not declare");
            return Err(ApiError::Internal);
        }
        if !e.expired(chart.table_of(e), &rec.item, now) {
            fetched.children.push(Arc::new(rec));
        }
    }
    fetched.more = fetched.children.len() > page.size as usize || out.last_evaluated_key.is_some();
    Ok(fetched)
}

/// The items whose keys a Query of an index that does not project what they need found,
/// read whole by one BatchGetItem (a page is at most [`MAX_BATCH_GET_KEYS`] keys), in the
/// order found; one deleted since is left out, as it would be from a later page.
async fn whole(store: &dyn Store, chart: &Chart, found: &[Item]) -> Result<Vec<Item>, ApiError> {
    let keys: Vec<PrimaryKey> = found
        .iter()
        .map(|i| chart.key_of(i))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            tracing::error!("an index answered with an item without the table's keys");
            ApiError::Internal
        })?;
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let got = store
        .batch_get_item(BatchGet {
            keys: keys.clone(),
            consistent_read: false,
        })
        .await?;
    let mut by_key: HashMap<PrimaryKey, Item> = got
        .into_iter()
        .filter_map(|i| Some((chart.key_of(&i)?, i)))
        .collect();
    Ok(keys.iter().filter_map(|k| by_key.remove(k)).collect())
}

/// The parent with its counter shards' counters added to its own.
pub fn with_shards(chart: &Chart, parent: &Record, shards: &[Record]) -> Record {
    let mut out = parent.clone();
    let entity = parent.entity(chart);
    for (name, a) in &entity.attributes {
        if matches!(a.ty, crate::chart::types::Type::Counter) {
            let total = parent.count(name) + shards.iter().map(|s| s.count(name)).sum::<i64>();
            out.item.insert(
                name.clone(),
                crate::store::AttributeValue::N(total.to_string()),
            );
        }
    }
    out
}

/// Reads an entity with its counter shards: one Query (a GetItem pattern's `with_shards`).
pub async fn with_counts(
    store: &dyn Store,
    chart: &Chart,
    entity: &str,
    cond: &crate::chart::KeyCondition,
    vars: &Vars,
) -> Result<Option<Arc<Record>>, ApiError> {
    // The entity and every shard: the Limit says how many items that is.
    let shards = chart.shards_of(entity).map_or(0, |(_, n)| n);
    let (partition_more, sort_prefix) = multi_values(cond, vars)?;
    let query = Query {
        index: cond.index.clone(),
        partition: render(&cond.partition, vars)?,
        partition_more,
        sort_prefix,
        sort: sort_of(&cond.sort, vars)?,
        forward: true,
        limit: Some(1 + shards),
        start: None,
        consistent_read: false,
    };
    let out = store.query(query).await?;
    let mut parent = None;
    let mut shards = Vec::new();
    let now = crate::chart::epoch_now();
    for item in out.items {
        let rec = Record::decode(chart, item)?;
        let entity = rec.entity(chart);
        if entity.expired(chart.table_of(entity), &rec.item, now) {
            continue;
        }
        if entity.shards_of.is_some() {
            shards.push(rec);
        } else {
            parent = Some(rec);
        }
    }
    Ok(parent.map(|p| Arc::new(with_shards(chart, &p, &shards))))
}

/// What the loader answers for one key.
pub type Loaded = Result<Option<Arc<Record>>, Arc<ApiError>>;

/// The per-request loader of a chart's items by table and primary key, with its cache.
pub type ItemLoader = dataloader::cached::Loader<ItemKey, Loaded, ItemBatch>;

/// A fresh loader reading `chart`'s items from `store`.
pub fn item_loader(store: Arc<dyn Store>, chart: Arc<Chart>) -> ItemLoader {
    dataloader::cached::Loader::new(ItemBatch { store, chart })
        .with_max_batch_size(MAX_BATCH_GET_KEYS)
        .with_custom_wait_for_work(loader_wait::wait_once)
}

/// The batch read behind [`ItemLoader`]: GetItem for one key, BatchGetItem for more (one
/// call over every table they are in).
pub struct ItemBatch {
    store: Arc<dyn Store>,
    chart: Arc<Chart>,
}

impl ItemBatch {
    /// The items at `keys`, in one request.
    async fn read(&self, keys: &[ItemKey]) -> Result<Vec<Item>, ApiError> {
        let first = keys.first().map_or(0, |k| k.table);
        if keys.iter().any(|k| k.table != first) {
            // Each table by its name on the connection: the first by the store's own.
            let mut tables: Vec<(String, Vec<PrimaryKey>)> = Vec::new();
            for k in keys {
                let name = match k.table {
                    0 => self.store.table_name(),
                    t => self.chart.tables[t].name.as_str(),
                };
                match tables.iter_mut().find(|(n, _)| n == name) {
                    Some((_, keys)) => keys.push(k.key.clone()),
                    None => tables.push((name.to_owned(), vec![k.key.clone()])),
                }
            }
            let got = self
                .store
                .batch_get_tables(crate::store::BatchGetTables {
                    tables,
                    consistent_read: false,
                })
                .await?;
            return Ok(got.into_iter().flat_map(|(_, items)| items).collect());
        }
        let store = self.chart.store_of(&self.store, first)?;
        Ok(if let [key] = keys {
            store
                .get_item(GetItem {
                    key: key.key.clone(),
                    consistent_read: false,
                })
                .await?
                .into_iter()
                .collect()
        } else {
            store
                .batch_get_item(BatchGet {
                    keys: keys.iter().map(|k| k.key.clone()).collect(),
                    consistent_read: false,
                })
                .await?
        })
    }
}

impl BatchFn<ItemKey, Loaded> for ItemBatch {
    async fn load(&mut self, keys: &[ItemKey]) -> HashMap<ItemKey, Loaded> {
        answer_batch(keys, async {
            let items = self.read(keys).await?;
            let mut found = HashMap::new();
            let now = crate::chart::epoch_now();
            for item in items {
                let rec = Record::decode(&self.chart, item)?;
                let e = rec.entity(&self.chart);
                let table = self.chart.table_of(e);
                if table.time_to_live.is_some() && e.expired(table, &rec.item, now) {
                    continue;
                }
                if let Some(key) = rec.item_key(&self.chart) {
                    found.insert(key, Arc::new(rec));
                }
            }
            Ok(found)
        })
        .await
    }
}

/// The most Queries a page reads on past a run of expired children.
const EXPIRED_READ_ON: usize = 3;

/// A page whose children all expired (DynamoDB deletes them within days) reads on from
/// where it stopped, a few Queries at most, so a run of them does not end the connection
/// before the live children after it.
async fn read_past_expired(
    store: &dyn Store,
    chart: &Chart,
    children: &str,
    mut query: crate::store::Query,
    out: &mut crate::store::QueryOutput,
) -> Result<(), ApiError> {
    let now = crate::chart::epoch_now();
    let t = &chart.table;
    let child = |i: &crate::store::Item| matches!(i.get(&t.type_attribute), Some(crate::store::AttributeValue::S(s)) if s == children);
    let expired = |i: &crate::store::Item| {
        chart
            .entities
            .get(children)
            .is_some_and(|e| e.expired(chart.table_of(e), i, now))
    };
    for _ in 0..EXPIRED_READ_ON {
        let stalled = out.items.iter().any(|i| child(i) && expired(i))
            && !out.items.iter().any(|i| child(i) && !expired(i));
        let Some(start) = out.last_evaluated_key.clone().filter(|_| stalled) else {
            break;
        };
        query.start = Some(start);
        let next = store.query(query.clone()).await?;
        out.items.extend(next.items);
        out.last_evaluated_key = next.last_evaluated_key;
    }
    Ok(())
}
