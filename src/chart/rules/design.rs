//! The design as a whole: no two entities' keys equal, the tenant named by every entity,
//! references that name a whole key, the fields that use the patterns.

use indexmap::IndexMap;

use super::super::format::{self, File};
use super::super::reach::{condition_vars, var_type};
use super::super::template::{self, Template};
use super::super::types::Type;
use super::super::{Binding, Entity, KeyCondition, Pattern, Request};
use super::*;

impl Checker {
    pub(super) fn keys_distinct(&mut self, entities: &IndexMap<String, Entity>) {
        let list: Vec<&Entity> = entities.values().collect();
        for (i, a) in list.iter().enumerate() {
            // Keys in different tables never meet.
            for b in list[i + 1..].iter().filter(|b| b.table == a.table) {
                if crate::chart::reach::keys_may_equal(a, b) {
                    self.at(Some(&a.name), None);
                    self.refuse(
                        "keys-distinct",
                        format!(
                            "its key `{}` / `{}` can be equal to {}'s `{}` / `{}`: give one a prefix of its own",
                            a.key.pk, a.key.sk, b.name, b.key.pk, b.key.sk
                        ),
                    );
                }
            }
        }
        self.at(None, None);
    }

    pub(super) fn tenant(
        &mut self,
        file: &File,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
    ) {
        let Some(t) = &file.tenant else { return };
        let Some(owner) = entities.get(&t.entity) else {
            self.refuse(
                "tenant",
                format!(
                    "the tenant is entity `{}`, which the chart does not declare",
                    t.entity
                ),
            );
            return;
        };
        let owner_attr = owner.tenant.clone().unwrap_or_else(|| t.attribute.clone());
        let Some(owner_ty) = owner.attributes.get(&owner_attr).map(|a| a.ty.describe()) else {
            self.at(Some(&owner.name), None);
            self.refuse("tenant", format!("the tenant's own key is `{owner_attr}`, which is no attribute (set `tenant` on the entity)"));
            self.at(None, None);
            return;
        };
        // A token names its tenant by a name ([`crate::chart::kinds::validate_tenant`]): the
        // tenant's key is an identifier kind that such a name can be.
        let nameable = match &owner.attributes[&owner_attr].ty {
            Type::Kind(k) => k.max_len() <= crate::chart::kinds::MAX_TENANT_LEN,
            _ => false,
        };
        if !nameable {
            self.at(Some(&owner.name), None);
            self.refuse("tenant", format!("the tenant's own key `{owner_attr}` is {}: a token names its tenant by an identifier kind of at most {} characters (`slug`, or a kind of the chart's own)", super::super::one(&owner_ty), crate::chart::kinds::MAX_TENANT_LEN));
            self.at(None, None);
        }
        for e in entities.values().filter(|e| !e.system) {
            self.at(Some(&e.name), None);
            let attr = e.tenant.clone().unwrap_or_else(|| t.attribute.clone());
            match e.attributes.get(&attr) {
                None if self.reached_only_through_a_tenant(e, entities, patterns, &t.attribute) => {}
                None => self.refuse(
                    "tenant",
                    format!("holds no `{attr}`: which tenant it belongs to cannot be told, so no token could be kept to its own"),
                ),
                Some(a) if a.optional => self.refuse("tenant", format!("`{attr}` is optional: every item must name its tenant")),
                Some(a) if a.ty.describe() != owner_ty => self.refuse(
                    "tenant",
                    format!("`{attr}` is a {}, and the tenant's `{owner_attr}` a {owner_ty}", a.ty.describe()),
                ),
                Some(_) => {}
            }
        }
        self.at(None, None);
        // A multi-attribute key has no literal to hold a tenant in: a Query of one is
        // bound by the tenant attribute being one of its partition's values.
        for (n, p) in patterns {
            let Request::Query {
                condition,
                children,
                ..
            } = &p.request
            else {
                continue;
            };
            let Some(index) = &condition.index else {
                continue;
            };
            let e = &entities[children];
            if !e.multi.contains_key(index) {
                continue;
            }
            let attr = e.tenant.clone().unwrap_or_else(|| t.attribute.clone());
            // The tenant attribute is one of the index's partition attributes, and the
            // condition gives it the tenant's own value there (`{tenant}`), by position.
            let partition: Vec<&Template> = std::iter::once(&condition.partition)
                .chain(&condition.partition_more)
                .collect();
            let bound = e.multi[index]
                .iter()
                .zip(&partition)
                .any(|(a, t)| *a == attr && t.source() == format!("{{{attr}}}"));
            if e.attributes.contains_key(&attr) && !bound {
                self.at(None, Some(*n));
                self.refuse("tenant", format!("its Query of {index} has no `{attr}` among the partition's values: it would read every tenant's {}; make `{attr}` one of the index's partition attributes", super::super::plural(children)));
                self.at(None, None);
            }
        }
        if let Some(v) = &file.viewer {
            match entities.get(&v.entity) {
                None => self.refuse(
                    "tenant",
                    format!(
                        "the viewer is entity `{}`, which the chart does not declare",
                        v.entity
                    ),
                ),
                Some(e) => {
                    let attr = e.tenant.clone().unwrap_or_else(|| t.attribute.clone());
                    let in_key = e
                        .key
                        .pk
                        .vars()
                        .chain(e.key.sk.vars())
                        .any(|k| k.name == v.subject);
                    if !in_key {
                        self.at(Some(&e.name), None);
                        self.refuse(
                            "tenant",
                            format!(
                                "the viewer's subject `{}` is no part of {}'s key",
                                v.subject, e.name
                            ),
                        );
                    }
                    for var in e.key.pk.vars().chain(e.key.sk.vars()) {
                        if var.name != attr && var.name != v.subject {
                            self.at(Some(&e.name), None);
                            self.refuse("tenant", format!("the viewer's key needs `{}`, which neither the token's tenant nor its subject gives", var.name));
                        }
                    }
                }
            }
        }
        self.at(None, None);
    }

    /// Resolves how each entity is held to the caller's tenant ([`Binding`]) and refuses
    /// what cannot be bound: a reference whose tenant part is not the item's own tenant,
    /// a created entity whose key holds neither the tenant nor a generated id (a create
    /// would tell one tenant whether another holds a key), `global` said of what is no
    /// marker. Markers and tokens are bound where their owners' writes are checked
    /// (`Checker::marker`), changes of the tenant attribute where the mutations are.
    pub(super) fn bind(&mut self, file: &File, entities: &mut IndexMap<String, Entity>) {
        let attribute = file.tenant.as_ref().map(|t| t.attribute.clone());
        let tenant_of = |e: &Entity| -> Option<String> {
            let attr = e.tenant.clone().or_else(|| attribute.clone())?;
            e.attributes.contains_key(&attr).then_some(attr)
        };
        let markers: Vec<&str> = entities
            .values()
            .flat_map(|e| e.writes.unique.values().map(String::as_str))
            .chain(file.mutations.values().filter_map(|m| m.token.as_deref()))
            .collect();
        // One marker keeps one value: two kept by one marker render one key, and a write
        // of both would act on one item twice.
        let mut keeps: IndexMap<&str, Vec<String>> = IndexMap::new();
        for e in entities.values() {
            for (attr, m) in &e.writes.unique {
                keeps
                    .entry(m.as_str())
                    .or_default()
                    .push(format!("`{}.{attr}`", e.name));
            }
        }
        for (name, m) in &file.mutations {
            if let Some(t) = &m.token {
                keeps
                    .entry(t.as_str())
                    .or_default()
                    .push(format!("`{name}`'s client tokens"));
            }
        }
        for (marker, kept) in &keeps {
            if kept.len() > 1 {
                self.at(Some(marker), None);
                self.refuse(
                    "writes",
                    format!(
                        "the marker keeps {}: a marker keeps one value, and two on one item would be one action twice (give each its own marker entity)",
                        kept.join(" and ")
                    ),
                );
            }
        }
        let mut bindings = Vec::new();
        for e in entities.values().filter(|e| !e.system) {
            self.at(Some(&e.name), None);
            if e.global && !markers.contains(&e.name.as_str()) {
                self.refuse(
                    "tenant",
                    "`global` is said of a marker (of a unique attribute or a client token), and no write keeps this one",
                );
            }
            let binding = match (&file.tenant, tenant_of(e)) {
                (None, _) => Binding::Open,
                (Some(_), None) if e.global => Binding::Global,
                (Some(_), None) => Binding::Parent,
                (Some(_), Some(attr)) => {
                    let in_key = e
                        .key
                        .pk
                        .vars()
                        .chain(e.key.sk.vars())
                        .any(|v| v.name == attr);
                    if in_key {
                        Binding::Key(attr)
                    } else if e.global {
                        Binding::Global
                    } else {
                        Binding::Condition(attr)
                    }
                }
            };
            // A create's key of values the caller chooses, without the tenant: its
            // `CONFLICT` would say that another tenant holds that key.
            if let (Binding::Condition(attr), true) = (&binding, created(file, &e.name)) {
                let generated = e.key.pk.vars().chain(e.key.sk.vars()).any(|v| {
                    e.attributes
                        .get(&v.name)
                        .is_some_and(|a| a.auto == Some(super::super::Auto::Ulid))
                });
                if !generated {
                    self.refuse(
                        "tenant",
                        format!(
                            "its key `{}` / `{}` holds neither `{attr}` nor a generated id (`auto = \"ulid\"`): a create would tell one tenant whether another holds that key; put `{{{attr}}}` in the key",
                            e.key.pk, e.key.sk
                        ),
                    );
                }
            }
            // A reference reaches only the item's own tenant's items.
            for (field, r) in &e.references {
                let Some(target) = entities.get(&r.entity) else {
                    continue;
                };
                let Some(theirs) = tenant_of(target) else {
                    continue;
                };
                let Some(mine) = tenant_of(e) else {
                    self.refuse(
                        "tenant",
                        format!(
                            "reference `{field}` names {}, which belongs to a tenant, and {} holds no `{theirs}` to hold it to its own",
                            r.entity, e.name
                        ),
                    );
                    continue;
                };
                match r.key.get(&theirs) {
                    Some(from) if *from != mine => self.refuse(
                        "tenant",
                        format!(
                            "reference `{field}`: the tenant part `{theirs}` of {}'s key comes from `{from}`, not from {}'s own `{mine}`: it could reach another tenant's item",
                            r.entity, e.name
                        ),
                    ),
                    _ => {}
                }
            }
            bindings.push((e.name.clone(), binding));
        }
        self.at(None, None);
        for (name, binding) in bindings {
            if let Some(e) = entities.get_mut(&name) {
                e.binding = binding;
            }
        }
    }

    /// An entity without the tenant is served only as the children of a parent that holds
    /// it (an order's lines): never by key, as a node, or as a reference.
    pub(super) fn reached_only_through_a_tenant(
        &self,
        e: &Entity,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
        attribute: &str,
    ) -> bool {
        let holds = |name: &str| {
            entities.get(name).is_some_and(|p| {
                let a = p.tenant.as_deref().unwrap_or(attribute);
                p.attributes.contains_key(a)
            })
        };
        let referenced = entities
            .values()
            .any(|x| x.references.values().any(|r| r.entity == e.name));
        !e.node
            && !referenced
            && patterns.values().all(|p| match &p.request {
                Request::GetItem { entity, .. } => *entity != e.name,
                Request::Query {
                    parent, children, ..
                } => *children != e.name || parent.as_deref().is_some_and(holds),
                Request::BatchGetItem => true,
                Request::Scan { children, .. } => *children != e.name,
                Request::Collection { parent, kinds, .. } => {
                    !kinds.contains(&e.name) || parent.as_deref().is_some_and(holds)
                }
                // A write names its item's tenant.
                Request::Write { entity, .. } => *entity != e.name,
            })
    }

    pub(super) fn references(&mut self, entities: &IndexMap<String, Entity>) {
        for e in entities.values() {
            self.at(Some(&e.name), None);
            for (field, r) in &e.references {
                let Some(target) = entities.get(&r.entity) else {
                    self.refuse(
                        "references",
                        format!(
                            "`{field}` refers to `{}`, which the chart does not declare",
                            r.entity
                        ),
                    );
                    continue;
                };
                let mut needed: Vec<&str> = target
                    .key
                    .pk
                    .vars()
                    .chain(target.key.sk.vars())
                    .map(|v| v.name.as_str())
                    .collect();
                needed.dedup();
                for n in &needed {
                    let Some(from) = r.key.get(*n) else {
                        self.refuse("references", format!("`{field}`: the key of {} needs `{n}`, which the reference does not give", r.entity));
                        continue;
                    };
                    match (e.attributes.get(from), target.attributes.get(*n)) {
                        (None, _) => self.refuse(
                            "references",
                            format!("`{field}`: `{from}` is no attribute of {}", e.name),
                        ),
                        (Some(a), Some(b)) if a.ty.describe() != b.ty.describe() => self.refuse(
                            "references",
                            format!(
                                "`{field}`: `{from}` is a {} and {}'s `{n}` a {}",
                                a.ty.describe(),
                                r.entity,
                                b.ty.describe()
                            ),
                        ),
                        _ => {}
                    }
                }
                for k in r.key.keys() {
                    if !needed.contains(&k.as_str()) {
                        self.refuse(
                            "references",
                            format!("`{field}`: `{k}` is no part of {}'s key", r.entity),
                        );
                    }
                }
            }
        }
        self.at(None, None);
    }

    pub(super) fn fields(
        &mut self,
        file: &File,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
    ) {
        for e in entities.values().filter(|e| !e.system) {
            self.at(Some(&e.name), None);
            let mut names: Vec<&str> = Vec::new();
            if e.node {
                names.push("id");
            }
            let attrs = e
                .attributes
                .iter()
                .filter(|(_, a)| e.graphql && a.graphql)
                .map(|(n, _)| n.as_str());
            for n in attrs
                .chain(e.references.keys().map(String::as_str))
                .chain(e.connections.keys().map(String::as_str))
                .chain(e.lists.keys().map(String::as_str))
                .chain(e.collections.keys().map(String::as_str))
            {
                if names.contains(&n) {
                    self.refuse("names", format!("two fields are named `{n}` (hide the attribute with `graphql = false`)"));
                }
                names.push(n);
            }
            for (name, c) in &e.connections {
                let Some(p) = self.field_pattern(patterns, c.pattern, name) else {
                    continue;
                };
                if let Request::Query {
                    parent, condition, ..
                } = &p.request
                {
                    if parent.as_ref().is_some_and(|p| *p != e.name) {
                        self.refuse(
                            "fields",
                            format!(
                                "connection `{name}` uses pattern {}, whose parent is {}",
                                c.pattern,
                                parent.as_deref().unwrap_or("")
                            ),
                        );
                    }
                    let args = self.arguments(e, condition, entities, p);
                    match &c.total {
                        None => {}
                        Some(format::Total::Counter(counter)) => self.counter(e, counter, name),
                        Some(format::Total::ByArgument(by)) => {
                            for (arg, counters) in by {
                                if !args.iter().any(|(a, _)| a == arg) {
                                    self.refuse("fields", format!("connection `{name}`: `total` is by `{arg}`, which is no argument of it"));
                                }
                                for counter in counters.values() {
                                    self.counter(e, counter, name);
                                }
                            }
                        }
                    }
                } else {
                    self.refuse(
                        "fields",
                        format!(
                            "connection `{name}` uses pattern {}, which is no Query",
                            c.pattern
                        ),
                    );
                }
            }
            for (name, c) in &e.collections {
                let Some(p) = self.field_pattern(patterns, c.pattern, name) else {
                    continue;
                };
                match &p.request {
                    Request::Collection {
                        parent, condition, ..
                    } if parent.as_ref().is_none_or(|p| *p == e.name) => {
                        if !self.arguments(e, condition, entities, p).is_empty() {
                            self.refuse("fields", format!("collection `{name}`: its key condition takes values {} does not give; a collection takes no arguments of its own", e.name));
                        }
                    }
                    _ => self.refuse("fields", format!("collection `{name}` uses pattern {}, which is no Query of several `kinds` (with {} as its parent, where it reads one)", c.pattern, e.name)),
                }
                if c.total.is_some() {
                    self.refuse(
                        "fields",
                        format!(
                            "collection `{name}`: a collection of several kinds keeps no `total`"
                        ),
                    );
                }
            }
            for (name, l) in &e.lists {
                if l.max.is_some_and(|m| m > crate::chart::MAX_PAGE_SIZE) {
                    self.refuse("fields", format!("list `{name}` is read whole, as one page, and a page holds at most {} items", crate::chart::MAX_PAGE_SIZE));
                }
                let Some(p) = self.field_pattern(patterns, l.pattern, name) else {
                    continue;
                };
                match &p.request {
                    Request::Query { parent: Some(parent), .. } if *parent == e.name => {}
                    _ => self.refuse("fields", format!("list `{name}` uses pattern {}, which does not read {}'s children with it", l.pattern, e.name)),
                }
            }
        }
        self.at(None, None);
        for (name, q) in &file.query {
            if !is_graphql_name(name) {
                self.refuse(
                    "names",
                    format!("root field `{name}` is not a GraphQL name"),
                );
            }
            let Some(e) = entities.get(&q.entity).filter(|e| e.graphql) else {
                self.refuse(
                    "fields",
                    format!(
                        "root field `{name}` serves `{}`, which is no GraphQL type of the chart",
                        q.entity
                    ),
                );
                continue;
            };
            let Some(p) = self.field_pattern(patterns, q.pattern, name) else {
                continue;
            };
            let serves = match &p.request {
                Request::GetItem { entity, .. } => *entity == e.name,
                // A root connection of what a Query of no parent finds: its key condition's
                // values are the caller's arguments, which cannot be bound to a tenant.
                Request::Query {
                    parent: None,
                    children,
                    ..
                } if *children == e.name => {
                    if file.tenant.is_some() {
                        self.refuse(
                            "tenant",
                            format!(
                                "root field `{name}` lists what pattern {} finds by the caller's arguments, which no tenant binds: list them under their owner instead",
                                q.pattern
                            ),
                        );
                    }
                    true
                }
                Request::Query { parent, .. } | Request::Collection { parent, .. } => {
                    parent.as_deref() == Some(e.name.as_str())
                }
                Request::BatchGetItem => true,
                Request::Scan { children, .. } => {
                    // Every tenant's items are in the index: a filter on the tenant the
                    // item holds keeps the caller's.
                    if matches!(e.binding, Binding::Parent | Binding::Global) {
                        self.refuse("tenant", format!("root field `{name}` scans {}, whose items hold no tenant of their own for the Scan's filter to hold to the caller's", super::super::plural(&e.name)));
                    }
                    if q.by.is_some() {
                        self.refuse(
                            "fields",
                            format!(
                                "root field `{name}` lists what a Scan finds: it takes no `by`"
                            ),
                        );
                    }
                    *children == e.name
                }
                Request::Write { .. } => false,
            };
            if !serves {
                self.refuse(
                    "fields",
                    format!(
                        "root field `{name}` uses pattern {}, which does not read a {}",
                        q.pattern, e.name
                    ),
                );
            }
            match q.by.as_deref() {
                None | Some("key") => {}
                Some("id") if e.node || e.plain_id.is_some() => {}
                Some("id") => self.refuse("fields", format!("root field `{name}` takes an `id`, and {} is no node and has no `plain_id`", e.name)),
                Some(other) => self.refuse("format", format!("root field `{name}`: `by` is `key` or `id`, not `{other}`")),
            }
        }
    }

    pub(super) fn field_pattern<'p>(
        &mut self,
        patterns: &'p IndexMap<u32, Pattern>,
        n: u32,
        field: &str,
    ) -> Option<&'p Pattern> {
        let p = patterns.get(&n);
        if p.is_none() {
            self.refuse(
                "fields",
                format!(
                    "`{field}` uses pattern {n}, which the chart does not declare (or refused)"
                ),
            );
        }
        p
    }

    pub(super) fn counter(&mut self, e: &Entity, counter: &str, field: &str) {
        match e.attributes.get(counter) {
            Some(a) if matches!(a.ty, Type::Counter) => {}
            _ => self.refuse(
                "fields",
                format!(
                    "connection `{field}`: its total `{counter}` is no counter of {}",
                    e.name
                ),
            ),
        }
    }

    /// A connection's arguments: the variables of its pattern that its owner's attributes
    /// do not give, typed by the entity templates they meet.
    pub(super) fn arguments(
        &mut self,
        owner: &Entity,
        cond: &KeyCondition,
        entities: &IndexMap<String, Entity>,
        p: &Pattern,
    ) -> Vec<(String, Type)> {
        let mut out = Vec::new();
        // What the pattern reads of a tenant is named by the owner, never by a caller.
        let tenants: Vec<&str> = match &p.request {
            Request::Query {
                parent, children, ..
            } => std::iter::once(children)
                .chain(parent.iter())
                .filter_map(|n| entities.get(n))
                .filter_map(|e| match &e.binding {
                    Binding::Key(a) | Binding::Condition(a) => Some(a.as_str()),
                    _ => None,
                })
                .collect(),
            Request::Collection { parent, kinds, .. } => kinds
                .iter()
                .chain(parent.iter())
                .filter_map(|n| entities.get(n))
                .filter_map(|e| match &e.binding {
                    Binding::Key(a) | Binding::Condition(a) => Some(a.as_str()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if !tenants.is_empty() && condition_vars(cond).is_empty() {
            self.at(Some(&owner.name), Some(p.number));
            self.refuse("tenant", "its key condition names no tenant, and what it reads belongs to one: every tenant's items would be read together");
            self.at(Some(&owner.name), None);
        }
        for v in condition_vars(cond) {
            if owner.attributes.contains_key(&v.name) {
                continue;
            }
            if tenants.contains(&v.name.as_str()) {
                self.at(Some(&owner.name), Some(p.number));
                self.refuse("tenant", format!("`{{{}}}` is the tenant of what the pattern reads, and {} does not give it: it would be the caller's argument, reading another tenant's items; name the tenant by {}'s own attribute", v.name, owner.name, owner.name));
                self.at(Some(&owner.name), None);
                continue;
            }
            match var_type(cond, entities, &v.name) {
                Some(t) => out.push((v.name.clone(), t)),
                None => {
                    self.at(Some(&owner.name), Some(p.number));
                    self.refuse("key-values", format!("`{{{}}}` is no attribute of {} and meets no attribute of the entities the pattern reads", v.name, owner.name));
                    self.at(Some(&owner.name), None);
                }
            }
        }
        out
    }

    pub(super) fn graphql_name(&mut self, rule: &'static str, name: &str) {
        if !is_graphql_name(name) || name.starts_with("__") {
            self.refuse(rule, format!("`{name}` is not a GraphQL name"));
        }
    }
}

/// Whether a mutation of the chart creates items of `entity`.
fn created(file: &File, entity: &str) -> bool {
    file.mutations
        .values()
        .any(|m| m.entity == entity && m.action == "create")
}

impl Checker {
    /// Each link (`link = [near, far]`): its two references to two entities; its primary
    /// key holds both sides' keys (one link a pair) in the near side's partition (its item
    /// collection); an index of it is keyed by the far side (the link inverted); and each
    /// side reads it, the near one from the table, the far one from that index.
    pub(super) fn links(
        &mut self,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
    ) {
        for e in entities.values() {
            let Some([near, far]) = &e.link else {
                continue;
            };
            self.at(Some(&e.name), None);
            let side = |r: &str| e.references.get(r);
            let (Some(a), Some(b)) = (side(near), side(far)) else {
                for r in [near, far] {
                    if side(r).is_none() {
                        self.refuse(
                            "links",
                            format!("`link` names `{r}`, which is no reference of {}", e.name),
                        );
                    }
                }
                continue;
            };
            if near == far {
                self.refuse(
                    "links",
                    "`link` names one reference twice: a link joins two",
                );
                continue;
            }
            let (Some(ea), Some(eb)) = (entities.get(&a.entity), entities.get(&b.entity)) else {
                continue;
            };
            // One link a pair: its key holds both sides' keys.
            let key_vars = e.key.var_names();
            for (r, reference) in [(near, a), (far, b)] {
                let missing: Vec<&str> = reference
                    .key
                    .values()
                    .map(String::as_str)
                    .filter(|x| !key_vars.contains(x))
                    .collect();
                if !missing.is_empty() {
                    self.refuse("links", format!("its key does not hold `{}` of `{r}`: two links could join the same pair", missing.join("`, `")));
                }
            }
            // In the near side's item collection: its partition is the near side's,
            // rendered from the link's values for that side's key.
            let renamed = |t: &Template, key: &IndexMap<String, String>| -> Option<Vec<String>> {
                t.parts
                    .iter()
                    .map(|p| match p {
                        template::Part::Literal(l) => Some(format!("L{l}")),
                        template::Part::Var(v) => key.get(&v.name).map(|x| format!("V{x}")),
                    })
                    .collect()
            };
            let own = |t: &Template| -> Vec<String> {
                t.parts
                    .iter()
                    .map(|p| match p {
                        template::Part::Literal(l) => format!("L{l}"),
                        template::Part::Var(v) => format!("V{}", v.name),
                    })
                    .collect()
            };
            if renamed(&ea.key.pk, &a.key).as_ref() != Some(&own(&e.key.pk)) {
                self.refuse("links", format!("its partition `{}` is not {}'s (`{}`): the link is read with `{near}` only from that side's item collection", e.key.pk.source(), ea.name, ea.key.pk.source()));
            }
            // Inverted for the far side: an index whose partition is made of the far
            // side's key (and the tenant) alone, and holds all of it.
            let far_vars: Vec<&str> = b.key.values().map(String::as_str).collect();
            let tenant = e.binding.condition_or_key();
            let inverted = e.indexes.iter().find(|(_, k)| {
                let vars: Vec<&str> = k.pk.vars().map(|v| v.name.as_str()).collect();
                vars.iter()
                    .all(|v| far_vars.contains(v) || Some(*v) == tenant)
                    && far_vars.iter().all(|v| vars.contains(v))
            });
            let Some((index, _)) = inverted else {
                self.refuse("links", format!("no index of {} is keyed by `{far}` ({}'s key): the links of a {} would take a Scan", e.name, eb.name, super::super::words(&eb.name)));
                continue;
            };
            // Read from both sides.
            let reads = |owner: &Entity, from: Option<&str>| {
                owner.connections.values().any(|c| {
                    matches!(patterns.get(&c.pattern).map(|p| &p.request),
                        Some(Request::Query { children, condition, .. })
                            if *children == e.name && condition.index.as_deref() == from)
                })
            };
            if !reads(ea, None) {
                self.refuse("links", format!("{} has no connection of its {} (a Query of its item collection): the link is read from one side only", ea.name, super::super::plural(&e.name)));
            }
            if !reads(eb, Some(index)) {
                self.refuse("links", format!("{} has no connection of its {} (a Query of {index}): the link is read from one side only", eb.name, super::super::plural(&e.name)));
            }
        }
        self.at(None, None);
    }
}
