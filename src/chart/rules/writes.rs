//! The writes: what each entity's writes keep (its version, unique markers, counters on
//! what it references, its life cycle), and each mutation one write request of at most
//! 100 actions that keeps it (rule `writes`).

use indexmap::IndexMap;

use super::super::format::{self, File};
use super::super::types::{Kind, Type};
use super::super::{Action, Entity, Mutation, Pattern, Request, WriteRequest};
use super::*;

/// The most actions one TransactWriteItems may hold.
pub const MAX_ACTIONS: usize = 100;

impl Checker {
    /// A counter's `referrers` names what other entities' counts keep on it.
    pub(super) fn referrers(&mut self, entities: &IndexMap<String, Entity>) {
        for e in entities.values().filter(|e| !e.system) {
            self.at(Some(&e.name), None);
            for (name, a) in &e.attributes {
                if a.referrers.is_none() || !matches!(a.ty, Type::Counter) {
                    continue;
                }
                let kept = entities.values().any(|other| {
                    other.writes.counts.iter().any(|c| {
                        other
                            .references
                            .get(&c.reference)
                            .is_some_and(|r| r.entity == e.name)
                            && c.all().contains(name)
                    })
                });
                if !kept {
                    self.refuse(
                        "writes",
                        format!("attribute `{name}` names its referrers, and no entity's `counts` keeps it"),
                    );
                }
            }
        }
    }

    /// Every entity's declared invariants name what they keep, and can be kept.
    /// Expiring entities: the table's one time-to-live attribute, an `expiry`, and
    /// nothing an expiry would break when DynamoDB deletes the item with no write of ours:
    /// no counts kept (nothing would uncount it), no reference to it (it would dangle), its
    /// unique markers expiring with it.
    pub(super) fn time_to_live(
        &mut self,
        tables: &[Table],
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
    ) {
        for e in entities.values().filter(|e| !e.system) {
            let table = &tables[e.table];
            let ttl = table.time_to_live.as_deref();
            self.at(Some(&e.name), None);
            for (name, a) in &e.attributes {
                let expiry = matches!(a.ty, Type::Expiry);
                if expiry && Some(name.as_str()) != ttl {
                    self.refuse(
                        "time-to-live",
                        format!(
                            "attribute `{name}` is an expiry, and DynamoDB expires items by the one attribute `[table] time_to_live` names ({})",
                            ttl.map_or_else(|| "none".to_owned(), |t| format!("`{t}`"))
                        ),
                    );
                } else if !expiry && Some(name.as_str()) == ttl {
                    self.refuse(
                        "time-to-live",
                        format!("attribute `{name}` is the table's time to live, which DynamoDB reads as epoch seconds: its type is `expiry`"),
                    );
                }
            }
            if e.expiry(table).is_none() {
                continue;
            }
            if !e.writes.counts.is_empty() {
                self.refuse(
                    "time-to-live",
                    "an expiring entity keeps no counts: DynamoDB deletes an expired item without the write that would uncount it",
                );
            }
            for (attr, m) in &e.writes.unique {
                if entities
                    .get(m)
                    .is_some_and(|m| m.expiry(&tables[m.table]).is_none())
                {
                    self.refuse(
                        "time-to-live",
                        format!("the marker {m} of `{attr}` must expire with its owner: it declares `{}` too", ttl.unwrap_or_default()),
                    );
                }
            }
            if !e.lists.is_empty() {
                self.refuse(
                    "time-to-live",
                    "an expiring entity has no lists: DynamoDB deletes it without its children, which would be left orphaned",
                );
            }
            for other in entities.values().filter(|o| !o.system) {
                for (l, list) in &other.lists {
                    let holds = patterns.get(&list.pattern).is_some_and(|p| {
                        matches!(&p.request, Request::Query { children, .. } if *children == e.name)
                    });
                    if holds {
                        self.at(Some(&other.name), None);
                        self.refuse(
                            "time-to-live",
                            format!("list `{l}` holds {}, which expires: the counts and sums computed from it would go stale once DynamoDB deletes one", e.name),
                        );
                        self.at(Some(&e.name), None);
                    }
                }
                for (r, reference) in &other.references {
                    if reference.entity == e.name && other.expiry(&tables[other.table]).is_none() {
                        self.at(Some(&other.name), None);
                        self.refuse(
                            "time-to-live",
                            format!("reference `{r}` names {}, which expires: it would dangle once DynamoDB deletes it", e.name),
                        );
                        self.at(Some(&e.name), None);
                    }
                }
            }
        }
        self.at(None, None);
    }

    pub(super) fn invariants(
        &mut self,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
    ) {
        for e in entities.values().filter(|e| !e.system) {
            self.at(Some(&e.name), None);
            let w = &e.writes;
            let key_vars = key_vars(e);
            self.computed(entities, patterns, e);
            if let Some(v) = &w.version {
                match e.attributes.get(v) {
                    Some(a) if matches!(a.ty, Type::Int { .. }) && !a.optional => {}
                    _ => self.refuse(
                        "writes",
                        format!("`version` names `{v}`, which is no required int attribute"),
                    ),
                }
                if in_any_key(e, v) {
                    self.refuse("writes", format!("the version `{v}` is part of a key"));
                }
            }
            for (attr, marker) in &w.unique {
                if !e.attributes.contains_key(attr) {
                    self.refuse("writes", format!("unique `{attr}` is no attribute"));
                    continue;
                }
                if key_vars.contains(attr) {
                    self.refuse(
                        "writes",
                        format!(
                            "unique `{attr}` is part of the primary key, which is unique already"
                        ),
                    );
                }
                let Some(m) = entities
                    .get(marker)
                    .filter(|m| !m.system && *m.name != e.name)
                else {
                    self.refuse(
                        "writes",
                        format!("unique `{attr}`: its marker `{marker}` is no other entity of the chart"),
                    );
                    continue;
                };
                self.marker(e, m, attr, &format!("unique `{attr}`"));
            }
            for c in &w.counts {
                let Some(r) = e.references.get(&c.reference) else {
                    self.refuse(
                        "writes",
                        format!("counts on `{}`, which is no reference", c.reference),
                    );
                    continue;
                };
                let Some(target) = entities.get(&r.entity) else {
                    continue;
                };
                let shards = entities.values().find(|s| {
                    s.shards_of
                        .as_ref()
                        .is_some_and(|(of, _)| *of == target.name)
                });
                for b in &c.by {
                    match e.attributes.get(&b.by).map(|a| &a.ty) {
                        Some(Type::Enum { name, values }) => {
                            for v in b.counters.keys() {
                                if !values.contains(v) {
                                    self.refuse(
                                        "writes",
                                        format!(
                                            "counts by `{}`: `{v}` is no value of {name}",
                                            b.by
                                        ),
                                    );
                                }
                            }
                        }
                        _ => self.refuse(
                            "writes",
                            format!("counts by `{}`, which is no enum attribute", b.by),
                        ),
                    }
                }
                for counter in &c.all() {
                    match target.attributes.get(counter) {
                        Some(a) if matches!(a.ty, Type::Counter) => {}
                        _ => {
                            self.refuse(
                                "writes",
                                format!(
                                    "counts `{counter}` on `{}`, which is no counter of {}",
                                    c.reference, target.name
                                ),
                            );
                            continue;
                        }
                    }
                    if let Some(s) = shards {
                        if !s.attributes.contains_key(counter) {
                            self.refuse("writes", format!("counts `{counter}` on {}, whose counter shards `{}` do not hold it", target.name, s.name));
                        }
                    }
                    for (conn, spec) in &target.connections {
                        let totals: Vec<&String> = match &spec.total {
                            None => Vec::new(),
                            Some(format::Total::Counter(t)) => vec![t],
                            Some(format::Total::ByArgument(by)) => {
                                by.values().flat_map(|m| m.values()).collect()
                            }
                        };
                        if !totals.contains(&counter) {
                            continue;
                        }
                        let children = patterns.get(&spec.pattern).and_then(|p| match &p.request {
                            Request::Query { children, .. } => Some(children.as_str()),
                            _ => None,
                        });
                        if children.is_some_and(|ch| ch != e.name) {
                            self.refuse("writes", format!(
                                "counts `{counter}` on {}, but `{counter}` is the total of {}.{conn}, which pages {}: a counter on an entity that is not {}'s parent",
                                target.name, target.name, children.unwrap_or_default(), e.name
                            ));
                        }
                    }
                }
            }
            if let Some(l) = &w.lifecycle {
                match e.attributes.get(&l.attribute).map(|a| &a.ty) {
                    Some(Type::Enum { name, values }) => {
                        let states = std::iter::once(&l.initial)
                            .chain(l.transitions.keys())
                            .chain(l.transitions.values().flatten());
                        for s in states {
                            if !values.contains(s) {
                                self.refuse(
                                    "writes",
                                    format!("lifecycle: `{s}` is no value of {name}"),
                                );
                            }
                        }
                        if e.attributes[&l.attribute].optional {
                            self.refuse("writes", format!("lifecycle: `{}` is optional, and an item without a state has no transition to take: make it required", l.attribute));
                        }
                        if key_vars.contains(&l.attribute) {
                            self.refuse("writes", format!("lifecycle: `{}` is part of the primary key, which no write changes", l.attribute));
                        }
                    }
                    _ => self.refuse(
                        "writes",
                        format!("lifecycle: `{}` is no enum attribute", l.attribute),
                    ),
                }
            }
        }
        self.at(None, None);
    }

    /// What an entity's computed numbers and positions are made of is there: the product's
    /// numbers on the item, a sum's or a count's list on it with the number on its
    /// children; a position only on what a list holds.
    fn computed(
        &mut self,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
        e: &Entity,
    ) {
        let number = |a: Option<&super::super::Attribute>| {
            a.is_some_and(|a| matches!(a.ty, Type::Int { .. } | Type::Cents { .. } | Type::Counter))
        };
        for (name, a) in &e.attributes {
            if a.auto == Some(super::super::Auto::Position) {
                // Each list that holds it, and the most children a create writes with it.
                let mut lists: Vec<(&str, &str, u32)> = Vec::new();
                for p in entities.values() {
                    for (l, list) in &p.lists {
                        if super::super::list_child(entities, patterns, p, l)
                            .is_some_and(|c| c.name == e.name)
                        {
                            let most = list.max.unwrap_or(crate::chart::MAX_PAGE_SIZE);
                            lists.push((p.name.as_str(), l.as_str(), most));
                        }
                    }
                }
                if lists.is_empty() {
                    self.refuse("writes", format!("attribute `{name}`: `auto = \"position\"` is a child's place in a list, and no list holds {}", e.name));
                }
                // The places are 1 to the list's `max`, each within the attribute's bounds
                // (whose `max` fits the width of a key it is in: rule `key-values`).
                if let Type::Int { min, max } = &a.ty {
                    if let Some(m) = min.filter(|m| *m > 1) {
                        self.refuse("writes", format!("attribute `{name}`: `auto = \"position\"` starts at 1, below its `min` ({m})"));
                    }
                    for (owner, l, most) in &lists {
                        if let Some(m) = max.filter(|m| i64::from(*most) > *m) {
                            self.refuse("writes", format!("attribute `{name}`: `auto = \"position\"` numbers the children of `{owner}.{l}` 1 to {most}, and `{name}` is at most {m}: lower the list's `max` or raise the attribute's"));
                        }
                    }
                }
            }
            let Some(c) = &a.computed else { continue };
            match c {
                super::super::Computed::Product(x, y) => {
                    for f in [x, y] {
                        if !number(e.attributes.get(f)) {
                            self.refuse("writes", format!("attribute `{name}` is computed from `{f}`, which is no number of {}", e.name));
                        }
                    }
                }
                super::super::Computed::Sum { list, attribute } => {
                    match super::super::list_child(entities, patterns, e, list) {
                        Some(child) if number(child.attributes.get(attribute)) => {}
                        Some(child) => self.refuse(
                            "writes",
                            format!(
                                "attribute `{name}` sums `{attribute}`, which is no number of {}",
                                child.name
                            ),
                        ),
                        None => self.refuse(
                            "writes",
                            format!(
                                "attribute `{name}` sums over `{list}`, which is no list of {}",
                                e.name
                            ),
                        ),
                    }
                }
                super::super::Computed::Count(list) => {
                    if super::super::list_child(entities, patterns, e, list).is_none() {
                        self.refuse(
                            "writes",
                            format!(
                                "attribute `{name}` counts `{list}`, which is no list of {}",
                                e.name
                            ),
                        );
                    }
                }
            }
        }
    }

    /// A child a create writes with its parent (`with`) is written as the parent's
    /// transaction says, so it keeps no declarations of its own (its own unique values,
    /// counts, references checked, version or life cycle would be skipped), and its key
    /// holds what names its parent: every key value of the parent, or a generated id of
    /// it, so no two parents' (or tenants') children can share a key.
    fn child(&mut self, mutation: &str, parent: &Entity, list: &str, child: &Entity) {
        let what = format!(
            "mutation `{mutation}` writes {} with its `{list}`",
            super::super::plural(&child.name)
        );
        let w = &child.writes;
        let own: Vec<&str> = [
            (!w.unique.is_empty()).then_some("unique values"),
            (!w.counts.is_empty()).then_some("counts"),
            child.checked_references().next().map(|_| "references"),
            w.version.as_ref().map(|_| "a version"),
            w.lifecycle.as_ref().map(|_| "a life cycle"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !own.is_empty() {
            self.refuse(
                "writes",
                format!(
                    "{what}, and {} declares {}, which a child written with its parent does not keep: declare them on {} or write {} on their own",
                    child.name,
                    own.join(", "),
                    parent.name,
                    super::super::plural(&child.name)
                ),
            );
        }
        // Its tenant is its parent's: the create copies it from the parent, by name.
        let tenant = |e: &Entity| match &e.binding {
            super::super::Binding::Key(a) | super::super::Binding::Condition(a) => Some(a.clone()),
            _ => None,
        };
        if let Some(t) = tenant(child) {
            if tenant(parent).as_deref() != Some(t.as_str()) {
                self.refuse(
                    "tenant",
                    format!(
                        "{what}, and {}'s tenant attribute `{t}` is not {}'s: a child takes its parent's tenant, so name it as the parent does",
                        child.name, parent.name
                    ),
                );
            }
        }
        let child_key = key_vars(child);
        let parent_key = key_vars(parent);
        let holds_all = parent_key.iter().all(|v| child_key.contains(v));
        let holds_generated = parent_key.iter().any(|v| {
            child_key.contains(v)
                && parent
                    .attributes
                    .get(v)
                    .is_some_and(|a| a.auto == Some(super::super::Auto::Ulid))
        });
        if !holds_all && !holds_generated {
            self.refuse(
                "writes",
                format!(
                    "{what}, and {}'s key `{}` / `{}` holds neither all of {}'s key ({}) nor a generated id of it: two {} could share one child's key",
                    child.name,
                    child.key.pk,
                    child.key.sk,
                    parent.name,
                    parent_key.join(", "),
                    super::super::plural(&parent.name)
                ),
            );
        }
    }

    /// A marker entity (of a unique attribute, or of a client token) holds the value it
    /// keeps in its key and names its owner.
    fn marker(&mut self, owner: &Entity, m: &Entity, attr: &str, what: &str) {
        if m.graphql {
            self.refuse(
                "writes",
                format!(
                    "{what}: its marker `{}` is a GraphQL type (set `graphql = false`)",
                    m.name
                ),
            );
        }
        if !key_vars(m).iter().any(|v| v == attr) {
            self.refuse(
                "writes",
                format!("{what}: the key of its marker `{}` holds no `{attr}`: a marker with no attribute makes nothing unique", m.name),
            );
        }
        // Keyed by the owner's tenant, a marker holds one tenant's values only; without it,
        // a value one tenant holds would be refused to another (and a token would replay
        // another tenant's item), unless the value is global on purpose.
        let owner_tenant = match &owner.binding {
            super::super::Binding::Key(a) | super::super::Binding::Condition(a) => Some(a),
            _ => None,
        };
        if let Some(t) = owner_tenant {
            if !m.global && !key_vars(m).iter().any(|v| v == t) {
                self.refuse(
                    "tenant",
                    format!(
                        "{what}: the key of its marker `{}` holds no `{t}`: a value one tenant holds would be refused to another, telling it what the other holds; put `{{{t}}}` in its key, or set `global = true` on `{}` where the value is unique across tenants on purpose",
                        m.name, m.name
                    ),
                );
            }
        }
        for owner_key in key_vars(owner) {
            if !m.attributes.contains_key(&owner_key) {
                self.refuse(
                    "writes",
                    format!(
                        "{what}: its marker `{}` does not name its owner: it has no `{owner_key}`",
                        m.name
                    ),
                );
            }
        }
    }

    pub(super) fn mutations(
        &mut self,
        file: &File,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
        kinds: &std::collections::HashMap<String, Kind>,
    ) -> IndexMap<String, Mutation> {
        let mut out = IndexMap::new();
        for (name, m) in &file.mutations {
            self.at(Some(&m.entity), Some(m.pattern));
            if !is_graphql_name(name) {
                self.refuse("names", format!("mutation `{name}` is not a GraphQL name"));
            }
            let Some(e) = entities.get(&m.entity).filter(|e| e.graphql && !e.system) else {
                self.refuse(
                    "writes",
                    format!(
                        "mutation `{name}` writes `{}`, which is no GraphQL type of the chart",
                        m.entity
                    ),
                );
                continue;
            };
            let action = match m.action.as_str() {
                "create" => Action::Create,
                "update" | "put-entry" | "remove-entry" => Action::Update,
                "delete" => Action::Delete,
                other => {
                    self.refuse(
                        "format",
                        format!("mutation `{name}`: `action` is create, update or delete (or put-entry, remove-entry: one entry of a map), not `{other}`"),
                    );
                    continue;
                }
            };
            let by_id = match m.by.as_deref() {
                None | Some("key") => false,
                Some("id") if e.node => true,
                Some("id") => {
                    self.refuse(
                        "writes",
                        format!("mutation `{name}` takes an `id`, and {} is no node", e.name),
                    );
                    false
                }
                Some(other) => {
                    self.refuse(
                        "format",
                        format!("mutation `{name}`: `by` is `key` or `id`, not `{other}`"),
                    );
                    false
                }
            };
            if m.action.ends_with("-entry") || m.map.is_some() || m.key_kind.is_some() {
                if let Some(entry) = self.entry(name, m, e, by_id, patterns, kinds) {
                    out.insert(name.clone(), entry);
                }
                continue;
            }
            if m.every.is_some() || m.max.is_some() || m.atomic {
                if let Some(every) = self.bulk(name, m, e, action, entities, patterns) {
                    out.insert(name.clone(), every);
                }
                continue;
            }
            let key = key_vars(e);
            // The tenant an item belongs to is never changed: an update could move it into
            // another tenant's partitions and counts.
            let tenant_attr = match &e.binding {
                super::super::Binding::Key(a) | super::super::Binding::Condition(a) => {
                    Some(a.as_str())
                }
                _ => None,
            };
            let changeable = |a: &str| {
                let attr = &e.attributes[a];
                Some(a) != tenant_attr
                    && !key.iter().any(|k| k == a)
                    && !matches!(attr.ty, Type::Counter)
                    && attr.auto.is_none()
                    && attr.on_create.is_none()
                    && attr.computed.is_none()
                    && e.writes.version.as_deref() != Some(a)
            };
            let fields = match (&m.fields, action) {
                (Some(_), Action::Create | Action::Delete) => {
                    self.refuse(
                        "format",
                        format!("mutation `{name}`: `fields` are what an update changes"),
                    );
                    Vec::new()
                }
                (None, Action::Update) => e
                    .attributes
                    .keys()
                    .filter(|a| changeable(a))
                    .cloned()
                    .collect(),
                (Some(fields), Action::Update) => {
                    for f in fields {
                        if !e.attributes.contains_key(f) {
                            self.refuse(
                                "writes",
                                format!("mutation `{name}` changes `{f}`, which is no attribute"),
                            );
                        } else if Some(f.as_str()) == tenant_attr {
                            self.refuse("tenant", format!("mutation `{name}` changes `{f}`, the tenant {} belongs to: a change could move an item into another tenant", e.name));
                        } else if !changeable(f) {
                            self.refuse("writes", format!("mutation `{name}` changes `{f}`, which is part of the primary key, a counter, the version or kept by the writes"));
                        }
                    }
                    fields.clone()
                }
                (None, _) => Vec::new(),
            };
            for f in &m.required {
                if !fields.contains(f) {
                    self.refuse(
                        "writes",
                        format!("mutation `{name}` requires `{f}`, which is none of the fields it changes"),
                    );
                }
            }
            if action == Action::Update && fields.is_empty() {
                self.refuse("writes", format!("mutation `{name}` has nothing to change"));
            }
            if let Some(t) = &m.token {
                if action != Action::Create {
                    self.refuse("writes", format!("mutation `{name}`: a client token makes a create idempotent; an update has its version"));
                }
                match entities.get(t).filter(|t| !t.system) {
                    None => self.refuse(
                        "writes",
                        format!(
                            "mutation `{name}`: its token marker `{t}` is no entity of the chart"
                        ),
                    ),
                    Some(marker) => {
                        let token_var = key_vars(marker).into_iter().find(|v| {
                            matches!(
                                marker.attributes.get(v).map(|a| &a.ty),
                                Some(Type::Kind(Kind::Token))
                            )
                        });
                        match token_var {
                            Some(v) => self.marker(e, marker, &v, &format!("mutation `{name}`")),
                            None => self.refuse("writes", format!("mutation `{name}`: the key of its token marker `{t}` holds no `token` attribute")),
                        }
                    }
                }
            }
            if let Some(role) = &m.role {
                if !["ADMIN", "MEMBER"].contains(&role.as_str()) {
                    self.refuse(
                        "writes",
                        format!("mutation `{name}`: `role` is ADMIN or MEMBER, not `{role}`"),
                    );
                }
            }
            // The children written with a create: at most their list's `max` each.
            let mut children = 0;
            for list in m.with.keys() {
                if action != Action::Create {
                    self.refuse(
                        "writes",
                        format!("mutation `{name}`: `with` writes children with a create"),
                    );
                    continue;
                }
                let Some(child) = super::super::list_child(entities, patterns, e, list) else {
                    self.refuse(
                        "writes",
                        format!(
                            "mutation `{name}` writes `{list}` with it, which is no list of {}",
                            e.name
                        ),
                    );
                    continue;
                };
                self.child(name, e, list, child);
                let l = &e.lists[list];
                let max = l.max.unwrap_or(crate::chart::MAX_PAGE_SIZE);
                if l.min.unwrap_or(0) > max {
                    self.refuse(
                        "writes",
                        format!("list `{list}`: its `min` is more than its `max`"),
                    );
                }
                children += max as usize;
                if m.token.is_some() {
                    let carries = matches!(
                        &patterns[&l.pattern].request,
                        Request::Query { parent: Some(p), .. } if *p == e.name
                    );
                    if !carries {
                        self.refuse("writes", format!("mutation `{name}`: a client token's replay reads the {} back with its `{list}`, and pattern {} does not read it with them", e.name, l.pattern));
                    }
                }
            }
            let shards = entities
                .values()
                .find(|s| s.shards_of.as_ref().is_some_and(|(of, _)| *of == e.name))
                .map_or(0, |s| s.shards_of.as_ref().map_or(0, |(_, n)| *n as usize));
            let counted_refs = e.writes.counts.len();
            // Every other reference is checked to exist when it is given or changed.
            let checked: Vec<&format::Reference> = e.checked_references().map(|(_, r)| r).collect();
            let actions = match action {
                Action::Create => {
                    1 + e.writes.unique.len()
                        + counted_refs
                        + checked.len()
                        + shards
                        + usize::from(m.token.is_some())
                        + children
                }
                Action::Update => {
                    let unique = fields
                        .iter()
                        .filter(|f| e.writes.unique.contains_key(*f))
                        .count();
                    let moved =
                        e.writes
                            .counts
                            .iter()
                            .filter(|c| {
                                e.references.get(&c.reference).is_some_and(|r| {
                                    r.key.values().any(|from| fields.contains(from))
                                }) || c.by_attributes().any(|a| fields.iter().any(|f| f == a))
                            })
                            .count();
                    let rechecked = checked
                        .iter()
                        .filter(|r| r.key.values().any(|from| fields.contains(from)))
                        .count();
                    1 + 2 * unique + 2 * moved + rechecked
                }
                Action::Delete => {
                    if let Some(list) = e.lists.keys().next() {
                        self.refuse("writes", format!("mutation `{name}` deletes {}, whose `{list}` would be left behind, orphaned: a delete of an entity with lists is not served", crate::chart::one(&e.name)));
                    }
                    if shards > 0 {
                        self.refuse("writes", format!("mutation `{name}` deletes a {}, whose counts live on {shards} counter shards that one condition cannot check", e.name));
                    }
                    1 + e.writes.unique.len() + counted_refs
                }
            };
            if actions > MAX_ACTIONS {
                self.refuse("writes", format!(
                    "mutation `{name}` is a transaction of up to {actions} actions; DynamoDB takes at most {MAX_ACTIONS}"
                ));
            }
            let request = match (actions > 1, action) {
                (true, _) => WriteRequest::TransactWriteItems,
                (false, Action::Create) => WriteRequest::PutItem,
                // A versioned change is a transaction, one action too, for its client
                // request token (a retry after a lost reply must not meet its own version).
                (false, Action::Update) if e.writes.version.is_some() => {
                    WriteRequest::TransactWriteItems
                }
                (false, Action::Update) => WriteRequest::UpdateItem,
                (false, Action::Delete) => WriteRequest::DeleteItem,
            };
            let is = format!(
                "is one {} ({actions} action{})",
                request.name(),
                if actions == 1 { "" } else { "s" }
            );
            self.write_pattern(name, m.pattern, e, request, &is, patterns);
            let plain = e.plain_id.as_deref().unwrap_or("id");
            for f in m.input.keys() {
                let known = match action {
                    Action::Create => {
                        e.attributes.contains_key(f)
                            || f == "clientToken"
                            || m.with.contains_key(f)
                            || f.split_once('.').is_some_and(|(list, field)| {
                                m.with.contains_key(list)
                                    && super::super::list_child(entities, patterns, e, list)
                                        .is_some_and(|c| c.attributes.contains_key(field))
                            })
                    }
                    Action::Update | Action::Delete => {
                        (by_id && f == plain)
                            || (!by_id && key.iter().any(|k| k == f))
                            || f == "expectedVersion"
                            || fields.contains(f)
                    }
                };
                if !known {
                    self.refuse(
                        "writes",
                        format!("mutation `{name}` describes input `{f}`, which it does not take"),
                    );
                }
            }
            out.insert(
                name.clone(),
                Mutation {
                    name: name.clone(),
                    entity: e.name.clone(),
                    action,
                    pattern: m.pattern,
                    by_id,
                    required: m.required.clone(),
                    fields,
                    token: m.token.clone(),
                    role: m.role.clone(),
                    may: m.may.clone().unwrap_or_else(|| {
                        let verb = match action {
                            Action::Create => "add",
                            Action::Update => "change",
                            Action::Delete => "remove",
                        };
                        format!("{verb} {}", super::super::plural(&e.name))
                    }),
                    description: m.description.clone(),
                    input_description: m.input_description.clone(),
                    payload: m.payload.clone(),
                    with: m.with.clone(),
                    input: m.input.clone(),
                    request,
                    every: None,
                    entry: None,
                },
            );
        }
        self.at(None, None);
        out
    }
}

/// The variables of an entity's primary key, in the order its templates spell them.
pub(super) fn key_vars(e: &Entity) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in e.key.pk.vars().chain(e.key.sk.vars()) {
        if !out.contains(&v.name) {
            out.push(v.name.clone());
        }
    }
    out
}

pub(super) fn in_any_key(e: &Entity, attr: &str) -> bool {
    std::iter::once(&e.key)
        .chain(e.indexes.values())
        .flat_map(|k| k.pk.vars().chain(k.sk.vars()))
        .any(|v| v.name == attr)
}
