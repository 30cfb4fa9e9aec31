//! Each access pattern: one request of GetItem, Query or BatchGetItem that returns only
//! what it declares, its parent at the edge of its children, its index projecting what it
//! reads.

use std::cmp::Ordering;

use indexmap::IndexMap;

use super::super::condition::parse_condition;
use super::super::format::{self};
use super::super::reach::{condition_binder, reachable, Included};
use super::super::template::{self, Laid, Template};
use super::super::{
    Entity, Index, KeyCondition, Pattern, Projection, Request, SortCondition, Table, WriteRequest,
};
use super::*;

impl Checker {
    /// A Query of an item collection of several kinds: each kind an entity with keys where
    /// the condition reads, projected there, the condition returning only them (and the
    /// parent, at the edge), and each kind's sort-key prefix returning it alone (the
    /// prefix a page of one kind queries).
    fn collection(
        &mut self,
        p: &format::Pattern,
        table: &Table,
        entities: &IndexMap<String, Entity>,
        indexes: &IndexMap<String, Index>,
    ) -> Option<Request> {
        if p.children.is_some() || p.then.is_some() || !p.beside.is_empty() {
            self.refuse(
                "one-request",
                "a Query of several `kinds` names them alone: no `children`, `then` or `beside`",
            );
        }
        let Some(cond) = &p.key else {
            self.refuse("one-request", "a Query needs its key condition, `key`");
            return None;
        };
        let condition = self.condition(cond, table, indexes)?;
        let mut kinds = Vec::new();
        for k in &p.kinds {
            match entities.get(k).filter(|e| !e.system && e.graphql) {
                Some(_) if kinds.contains(k) => {
                    self.refuse("one-request", format!("`kinds` names {k} twice"));
                }
                Some(_) => kinds.push(k.clone()),
                None => {
                    self.refuse(
                        "one-request",
                        format!("its kind `{k}` is no GraphQL type of the chart"),
                    );
                    return None;
                }
            }
        }
        if kinds.len() < 2 {
            self.refuse(
                "one-request",
                "`kinds` names two entities or more (one is `children`)",
            );
        }
        let parent = match &p.parent {
            Some(pa) if entities.get(pa).is_some_and(|e| !e.system) => Some(pa.clone()),
            Some(pa) => {
                self.refuse(
                    "one-request",
                    format!("its parent `{pa}` is no entity of the chart"),
                );
                return None;
            }
            None => None,
        };
        let index = condition.index.as_deref();
        for e in parent.iter().chain(&kinds) {
            if entities[e].keys_in(index).is_none() {
                self.refuse(
                    "indexes",
                    format!(
                        "`{e}` has no keys in {}, which the pattern reads",
                        index.unwrap_or("the base table")
                    ),
                );
                return None;
            }
            self.projected(e, table, entities, indexes, index);
        }
        let forward = p.forward.unwrap_or(true);
        let mut expected = kinds.clone();
        expected.extend(parent.clone());
        let edge: Vec<&str> = parent.iter().map(String::as_str).collect();
        self.reads_only(&condition, entities, &expected, &edge);
        let mut prefixes = IndexMap::new();
        for k in &kinds {
            prefixes.insert(k.clone(), self.later_pages(&condition, entities, k));
            if let Some(pa) = &parent {
                self.parent_at_edge(&condition, entities, pa, &[], k, forward);
            }
        }
        if let Some(pa) = &parent {
            self.sorted_by_parent(&condition, entities, pa);
        }
        Some(Request::Collection {
            condition,
            forward,
            parent,
            kinds,
            prefixes,
        })
    }

    /// A Scan: of a declared index that only its `children` carry keys in (a sparse
    /// index: a Scan of it lists exactly them), projecting what they need (their tenant
    /// attribute among it, which the Scan's filter holds to the caller's).
    fn scan(
        &mut self,
        p: &format::Pattern,
        table: &Table,
        entities: &IndexMap<String, Entity>,
        indexes: &IndexMap<String, Index>,
    ) -> Option<Request> {
        if p.key.is_some() || p.parent.is_some() || !p.beside.is_empty() || p.then.is_some() {
            self.refuse(
                "one-request",
                "a Scan reads an index whole: it takes no `key`, `parent`, `beside` or `then`",
            );
        }
        let Some(index) = p.index.clone() else {
            self.refuse("one-request", "a Scan names the sparse `index` it reads (a Scan of the whole table is no access pattern)");
            return None;
        };
        if !indexes.contains_key(&index) {
            self.refuse(
                "indexes",
                format!("the Scan reads index `{index}`, which the chart does not declare"),
            );
            return None;
        }
        let Some(children) = p.children.clone() else {
            self.refuse(
                "one-request",
                "a Scan names the entity it lists, `children`",
            );
            return None;
        };
        let Some(e) = entities.get(&children).filter(|e| !e.system) else {
            self.refuse(
                "one-request",
                format!("its children `{children}` is no entity of the chart"),
            );
            return None;
        };
        // In the index: by keys rendered into it, or by its own values (a multi-attribute key).
        let in_index =
            |e: &Entity| e.keys_in(Some(&index)).is_some() || e.multi.contains_key(&index);
        if !in_index(e) {
            self.refuse(
                "indexes",
                format!("`{children}` has no keys in {index}, which the Scan reads"),
            );
            return None;
        }
        // Sparse: what else writes keys to the index would be read too.
        for other in entities.values() {
            if other.name != children && in_index(other) {
                self.refuse("one-request", format!("{} carries keys in {index} too: a Scan of it would read them beside the {}; only the entity it lists may (a sparse index)", other.name, super::super::plural(&children)));
            }
        }
        self.projected(&children, table, entities, indexes, Some(&index));
        Some(Request::Scan { index, children })
    }

    pub(super) fn pattern(
        &mut self,
        n: u32,
        p: &format::Pattern,
        table: &Table,
        entities: &IndexMap<String, Entity>,
        indexes: &IndexMap<String, Index>,
    ) -> Option<Pattern> {
        let known = |name: &Option<String>, this: &mut Self, what: &str| -> Option<String> {
            let name = name.clone()?;
            if entities.get(&name).is_some_and(|e| !e.system) {
                Some(name)
            } else {
                this.refuse(
                    "one-request",
                    format!("its {what} `{name}` is no entity of the chart"),
                );
                None
            }
        };
        let request = match p.request.as_str() {
            "GetItem" => {
                let Some(entity) = known(&p.entity, self, "entity") else {
                    self.refuse(
                        "one-request",
                        "a GetItem names the `entity` it reads by key",
                    );
                    return None;
                };
                let with_shards = match &p.with_shards {
                    None => None,
                    Some(cond) => {
                        let condition = self.condition(cond, table, indexes)?;
                        let shards: Vec<String> = entities
                            .values()
                            .filter(|s| s.shards_of.as_ref().is_some_and(|(of, _)| *of == entity))
                            .map(|s| s.name.clone())
                            .collect();
                        if shards.is_empty() {
                            self.refuse(
                                "one-request",
                                format!("`with_shards`: {entity} has no counter shards"),
                            );
                        }
                        let mut expected = shards.clone();
                        expected.push(entity.clone());
                        self.reads_only(&condition, entities, &expected, &[entity.as_str()]);
                        Some(condition)
                    }
                };
                Request::GetItem {
                    entity,
                    with_shards,
                }
            }
            "BatchGetItem" => Request::BatchGetItem,
            "Scan" => self.scan(p, table, entities, indexes)?,
            "Query" if !p.kinds.is_empty() => self.collection(p, table, entities, indexes)?,
            "Query" => {
                let Some(cond) = &p.key else {
                    self.refuse("one-request", "a Query needs its key condition, `key`");
                    return None;
                };
                let condition = self.condition(cond, table, indexes)?;
                let Some(children) = known(&p.children, self, "children") else {
                    self.refuse(
                        "one-request",
                        "a Query names the entity it pages, `children`",
                    );
                    return None;
                };
                let parent = match &p.parent {
                    Some(_) => Some(known(&p.parent, self, "parent")?),
                    None => None,
                };
                let mut beside = Vec::new();
                for b in &p.beside {
                    let b = known(&Some(b.clone()), self, "beside")?;
                    let shard_of_parent = entities[&b]
                        .shards_of
                        .as_ref()
                        .is_some_and(|(of, _)| Some(of) == parent.as_ref());
                    if !shard_of_parent {
                        self.refuse(
                            "one-request",
                            format!("`{b}` read beside the parent must be its counter shards (a known number of items), or the page's Limit cannot be set"),
                        );
                    }
                    beside.push(b);
                }
                let forward = p.forward.unwrap_or(true);
                let index = condition.index.as_deref();
                if index.and_then(|i| indexes.get(i)).is_some_and(|i| i.multi) {
                    return self.multi_query(
                        p,
                        n,
                        condition,
                        children,
                        parent.is_some() || !beside.is_empty(),
                        table,
                        entities,
                        indexes,
                    );
                }
                for e in parent
                    .iter()
                    .chain(beside.iter())
                    .chain(std::iter::once(&children))
                {
                    if entities[e].keys_in(index).is_none() {
                        self.refuse(
                            "indexes",
                            format!(
                                "`{e}` has no keys in {}, which the pattern reads",
                                index.unwrap_or("the base table")
                            ),
                        );
                        return None;
                    }
                }
                let then_get = self.then_get(p, indexes, index);
                if then_get && (parent.is_some() || !beside.is_empty()) {
                    self.refuse(
                        "one-request",
                        "a Query followed by a BatchGetItem pages its children alone: read the parent by its own pattern",
                    );
                }
                if !then_get {
                    for e in parent
                        .iter()
                        .chain(beside.iter())
                        .chain(std::iter::once(&children))
                    {
                        self.projected(e, table, entities, indexes, index);
                    }
                }
                let mut expected: Vec<String> = beside.clone();
                expected.push(children.clone());
                expected.extend(parent.clone());
                let edge: Vec<&str> = parent.iter().map(String::as_str).collect();
                self.reads_only(&condition, entities, &expected, &edge);
                let children_prefix = self.later_pages(&condition, entities, &children);
                if let Some(parent) = &parent {
                    self.parent_at_edge(&condition, entities, parent, &beside, &children, forward);
                    self.sorted_by_parent(&condition, entities, parent);
                }
                Request::Query {
                    condition,
                    forward,
                    parent,
                    beside,
                    children,
                    children_prefix,
                    then_get,
                }
            }
            other => {
                if p.then.is_some() {
                    self.refuse("format", "`then` follows a Query only");
                }
                let Some(request) = WriteRequest::parse(other) else {
                    self.refuse(
                        "one-request",
                        format!("request `{other}` is none of GetItem, Query, Scan, BatchGetItem, PutItem, UpdateItem, DeleteItem, TransactWriteItems, BatchWriteItem"),
                    );
                    return None;
                };
                let Some(entity) = known(&p.entity, self, "entity") else {
                    self.refuse("one-request", "a write names the `entity` it writes");
                    return None;
                };
                Request::Write { request, entity }
            }
        };
        Some(Pattern {
            number: n,
            name: p.name.clone(),
            request,
            field: p.field.clone(),
            table: 0,
        })
    }

    /// A Query of a multi-attribute key: its children alone (their values are the key,
    /// no parent sorts beside them), the only entity in the index, later pages on the
    /// same condition from the last key.
    #[allow(clippy::too_many_arguments)]
    fn multi_query(
        &mut self,
        p: &format::Pattern,
        n: u32,
        condition: KeyCondition,
        children: String,
        with_others: bool,
        table: &Table,
        entities: &IndexMap<String, Entity>,
        indexes: &IndexMap<String, Index>,
    ) -> Option<Pattern> {
        let index = condition.index.clone().unwrap_or_default();
        if with_others {
            self.refuse(
                "one-request",
                format!("index {index} has a multi-attribute key, the items' own values: a Query of it pages its children alone, with no parent or counters beside them"),
            );
            return None;
        }
        if !entities[&children].multi.contains_key(&index) {
            self.refuse(
                "indexes",
                format!("`{children}` is not in {index}, which the pattern reads: join it with `indexes.{index} = [\"{{attribute}}\", …]`"),
            );
            return None;
        }
        let then_get = self.then_get(p, indexes, Some(&index));
        if !then_get {
            self.projected(&children, table, entities, indexes, Some(&index));
        }
        self.reads_only(&condition, entities, std::slice::from_ref(&children), &[]);
        // A number compared: by value, so neither a prefix of its text nor an end left
        // open (which reads from the text before it) has a meaning DynamoDB takes.
        let i = &indexes[&index];
        let compared = i
            .typed_keys()
            .get(i.partition_len() + condition.sort_prefix.len())
            .map(|(name, t)| ((*name).to_owned(), *t));
        if let (Some((name, crate::store::KeyType::N)), Some(sort)) = (&compared, &condition.sort) {
            let open = crate::chart::reach::sort_templates(sort)
                .iter()
                .any(|t| t.has_open());
            if matches!(sort, SortCondition::BeginsWith(_)) || open {
                self.refuse(
                    "indexes",
                    format!("`{name}` is a number (N): compare it by `=`, `<`, `<=`, `>`, `>=` or `BETWEEN` with every end given, not `begins_with` or an end left open (`?`)"),
                );
            }
        }
        for v in crate::chart::reach::condition_vars(&condition) {
            if crate::chart::reach::var_type(&condition, entities, &v.name).is_none() {
                self.refuse(
                    "indexes",
                    format!("`{}` meets no attribute of {children} in {index}'s key: each value of a multi-attribute key is one `{{attribute}}` of the key's", v.name),
                );
            }
        }
        Some(Pattern {
            number: n,
            name: p.name.clone(),
            request: Request::Query {
                condition,
                forward: p.forward.unwrap_or(true),
                parent: None,
                beside: Vec::new(),
                children,
                children_prefix: Template::none(),
                then_get,
            },
            field: p.field.clone(),
            table: 0,
        })
    }

    /// Parses `PK = … [AND <sort condition>]`, naming the index by its key attributes.
    /// `?` marks a level of a `begins_with` or an end of a range a caller may leave open:
    /// never a part of the partition, nor of an `=`.
    pub(super) fn condition(
        &mut self,
        text: &str,
        table: &Table,
        indexes: &IndexMap<String, Index>,
    ) -> Option<KeyCondition> {
        match parse_condition(text, table, indexes) {
            Ok(c) => {
                let eq = matches!(&c.sort, Some(SortCondition::Eq(t)) if t.has_open());
                let fixed = c.partition_more.iter().chain(&c.sort_prefix);
                if c.partition.has_open() || eq || fixed.into_iter().any(Template::has_open) {
                    self.refuse(
                        "format",
                        format!("`{text}`: `?` marks a level of a `begins_with` or an end of a range a caller may leave open, not a part of a partition or of an `=`"),
                    );
                }
                Some(c)
            }
            Err(e) => {
                self.refuse("indexes", format!("`{text}`: {e}"));
                None
            }
        }
    }

    /// A pattern that reads its parent with its first page reads later pages on the
    /// children's prefix alone: its sort condition takes nothing but the parent's values,
    /// or a later page would not keep what a caller gave.
    pub(super) fn sorted_by_parent(
        &mut self,
        cond: &KeyCondition,
        entities: &IndexMap<String, Entity>,
        parent: &str,
    ) {
        let Some(sort) = &cond.sort else { return };
        let e = &entities[parent];
        for t in crate::chart::reach::sort_templates(sort) {
            for v in t.vars() {
                if !e.attributes.contains_key(&v.name) || v.optional {
                    self.refuse(
                        "one-request",
                        format!("its sort condition takes `{}`, which is not {parent}'s: a pattern that reads its parent reads later pages on the children's prefix alone, which would not keep it", v.name),
                    );
                }
            }
        }
    }

    /// The items a condition can return must be those the pattern declares.
    pub(super) fn reads_only(
        &mut self,
        cond: &KeyCondition,
        entities: &IndexMap<String, Entity>,
        expected: &[String],
        must: &[&str],
    ) {
        let reads = reachable(cond, entities, self.table);
        for (e, inc) in &reads {
            if *inc == Included::Maybe && !expected.iter().any(|x| x == e) {
                let keys = match entities[e].keys_in(cond.index.as_deref()) {
                    Some(keys)
                        if !entities[e]
                            .multi
                            .contains_key(cond.index.as_deref().unwrap_or("")) =>
                    {
                        format!("`{}` / `{}`", keys.pk, keys.sk)
                    }
                    // A multi-attribute key: the entity's own values, in the index too.
                    _ => format!(
                        "in {} by its own values",
                        cond.index.as_deref().unwrap_or("the table")
                    ),
                };
                self.refuse(
                    "one-request",
                    format!(
                        "its key condition can also return {e} ({keys}), which the pattern does not declare: one request would not return only what it serves"
                    ),
                );
            }
        }
        for e in expected {
            if reads.get(e.as_str()) != Some(&Included::Maybe) {
                let rule = if must.contains(&e.as_str()) {
                    "parent-at-edge"
                } else {
                    "one-request"
                };
                self.refuse(
                    rule,
                    format!("its key condition cannot return {e}, which it declares"),
                );
            }
        }
    }

    /// Later pages read `begins_with` of the children's sort-key prefix: it must hold
    /// the children alone.
    pub(super) fn later_pages(
        &mut self,
        cond: &KeyCondition,
        entities: &IndexMap<String, Entity>,
        children: &str,
    ) -> Template {
        let keys = entities[children]
            .keys_in(cond.index.as_deref())
            .expect("checked");
        let prefix = keys.sk.literal_prefix().to_owned();
        let prefix_t = Template::parse(if prefix.is_empty() { "~" } else { &prefix })
            .expect("a literal parses");
        let later = KeyCondition::new(
            cond.index.clone(),
            cond.partition.clone(),
            (!prefix.is_empty()).then(|| SortCondition::BeginsWith(prefix_t.clone())),
        );
        for (e, inc) in reachable(&later, entities, self.table) {
            if inc == Included::Maybe && e != children {
                self.refuse(
                    "one-request",
                    format!("a later page reads `begins_with({}, \"{prefix}\")`, which can also return {e}: give {children}'s sort key a prefix of its own", sort_attr(cond)),
                );
            }
        }
        // No prefix: later pages read the partition, which holds the children alone.
        if prefix.is_empty() {
            return Template::none();
        }
        prefix_t
    }

    pub(super) fn parent_at_edge(
        &mut self,
        cond: &KeyCondition,
        entities: &IndexMap<String, Entity>,
        parent: &str,
        beside: &[String],
        children: &str,
        forward: bool,
    ) {
        let index = cond.index.as_deref();
        let binder = condition_binder(cond, entities);
        let keys = |e: &str| entities[e].keys_in(index).expect("checked");
        let want = if forward {
            Ordering::Less
        } else {
            Ordering::Greater
        };
        let dir = if forward { "below" } else { "above" };
        let children_sk = keys(children).sk.clone();
        let bc = binder(children);
        let order_of = |e: &str| {
            let be = binder(e);
            template::compare(
                &Laid {
                    template: &keys(e).sk,
                    bind: &*be,
                },
                &Laid {
                    template: &children_sk,
                    bind: &*bc,
                },
            )
        };
        if order_of(parent) != Some(want) {
            self.refuse(
                "parent-at-edge",
                format!(
                    "{parent} (`{}`) does not sort {dir} every {children} (`{children_sk}`) of its partition by UTF-8 bytes, so reading {} from it would not meet it first",
                    keys(parent).sk,
                    if forward { "forward" } else { "backward" }
                ),
            );
        }
        for b in beside {
            if order_of(b) != Some(want) {
                self.refuse(
                    "parent-at-edge",
                    format!("{b} (`{}`) does not sort {dir} every {children} (`{children_sk}`): it would be read among them", keys(b).sk),
                );
            }
        }
    }

    /// An index that does not project everything must carry what the pattern decodes: the
    /// type attribute and every attribute the entity always has.
    pub(super) fn projected(
        &mut self,
        e: &str,
        table: &Table,
        entities: &IndexMap<String, Entity>,
        indexes: &IndexMap<String, Index>,
        index: Option<&str>,
    ) {
        let Some(index) = index.and_then(|i| indexes.get(i)) else {
            return;
        };
        for name in unprojected(&entities[e], table, index) {
            self.refuse(
                "indexes",
                format!("index {} does not project `{name}`, which {e} needs: project it (INCLUDE), read {e} by key, or follow the Query with `then = \"BatchGetItem\"`", index.name),
            );
        }
    }

    /// A Query's `then`: `"BatchGetItem"` reads the children by the keys an index that
    /// does not project what they need finds; anything else, or on an index that holds
    /// them whole, is refused.
    fn then_get(
        &mut self,
        p: &format::Pattern,
        indexes: &IndexMap<String, Index>,
        index: Option<&str>,
    ) -> bool {
        match p.then.as_deref() {
            None => return false,
            Some("BatchGetItem") => {}
            Some(other) => {
                self.refuse(
                    "format",
                    format!("`then = \"{other}\"`: a Query is followed by nothing or by a `BatchGetItem` of the keys it finds"),
                );
                return false;
            }
        }
        match index.and_then(|i| indexes.get(i)) {
            None => self.refuse(
                "indexes",
                "`then = \"BatchGetItem\"` on the base table, whose items are whole: leave it out",
            ),
            Some(i) if i.projection == Projection::All => self.refuse(
                "indexes",
                format!("`then = \"BatchGetItem\"` on index {}, which projects every attribute: the BatchGetItem would read nothing the Query has not; leave it out", i.name),
            ),
            Some(_) => {}
        }
        true
    }
}

/// What `e` needs that `index` does not project: its type attribute and the attributes it
/// always has (each is an attribute of its item, key parts too).
fn unprojected(e: &Entity, table: &Table, index: &Index) -> Vec<String> {
    let carried: &[String] = match &index.projection {
        Projection::All => return Vec::new(),
        Projection::KeysOnly => &[],
        Projection::Include(a) => a,
    };
    let keys: Vec<&str> = table
        .key_names()
        .into_iter()
        .chain(index.key_names())
        .collect();
    // As the table stores them: under their stored names; a value only in the key, and
    // the entity where the items hold no type attribute, read from the keys.
    table
        .types_stored
        .then_some(&table.type_attribute)
        .into_iter()
        .chain(
            e.attributes
                .iter()
                .filter(|(_, a)| !a.optional && !a.key_only)
                .map(|(name, a)| a.stored.as_ref().unwrap_or(name)),
        )
        .filter(|n| !carried.contains(n) && !keys.contains(&n.as_str()))
        .cloned()
        .collect()
}

fn sort_attr(cond: &KeyCondition) -> &str {
    match &cond.index {
        None => "SK",
        Some(_) => "the index's sort key",
    }
}
