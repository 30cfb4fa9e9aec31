//! The start-up check: a chart file becomes a [`Chart`] only when every rule holds. Each
//! refusal names the entity, the pattern and the rule; every broken rule is reported, not
//! only the first.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use regex::Regex;

use super::condition::parse_condition;
use super::format::{self, File};
use super::reach::{
    condition_binder, condition_vars, entity_binder, reachable, var_type, Included,
};
use super::template::{self, Laid, Template};
use super::types::{Kind, Type};
use super::{
    Attribute, Chart, Entity, Index, KeyCondition, Keys, Pattern, Projection, Refusal, Refused,
    Request, SortCondition, Table,
};

/// Every rule, by the name a refusal gives, and what it asks.
pub const RULES: &[(&str, &str)] = &[
    ("format", "the file is TOML of this format, every table and field known"),
    ("names", "every name is a GraphQL name, unique where it must be"),
    ("types", "every attribute's type is known"),
    ("key-values", "every key value is an attribute of a type that cannot forge a key"),
    ("keys-distinct", "no two entities' primary keys can be equal"),
    ("indexes", "every index an entity joins or a pattern reads is declared, and projects what the pattern returns"),
    ("one-request", "every access pattern is one request that returns only what it declares"),
    ("parent-at-edge", "a parent read with its children sorts at the edge of their range"),
    ("tenant", "every entity holds the tenant, so isolation follows from the chart"),
    ("references", "every reference names an entity and all of its key"),
    ("fields", "every field that uses a pattern uses one that returns what it serves"),
    ("samples", "every sample item is an item of its entity"),
];

pub(super) fn check(file: File) -> Result<Chart, Refused> {
    let mut c = Checker::default();
    let chart = c.build(file);
    if c.refusals.is_empty() {
        Ok(chart)
    } else {
        Err(Refused(c.refusals))
    }
}

#[derive(Default)]
struct Checker {
    refusals: Vec<Refusal>,
    entity: Option<String>,
    pattern: Option<u32>,
}

impl Checker {
    fn refuse(&mut self, rule: &'static str, message: impl Into<String>) {
        debug_assert!(RULES.iter().any(|(r, _)| *r == rule), "{rule}");
        let refusal = Refusal {
            rule,
            entity: self.entity.clone(),
            pattern: self.pattern,
            message: message.into(),
        };
        if !self.refusals.contains(&refusal) {
            self.refusals.push(refusal);
        }
    }

    fn at(&mut self, entity: Option<&str>, pattern: Option<u32>) {
        self.entity = entity.map(str::to_owned);
        self.pattern = pattern;
    }

    fn build(&mut self, file: File) -> Chart {
        if file.format != format::FORMAT {
            self.refuse(
                "format",
                format!(
                    "format {} is not one this server reads (it reads {})",
                    file.format,
                    format::FORMAT
                ),
            );
        }
        let table = Table {
            name: file.table.name.clone(),
            partition_key: file.table.partition_key.clone(),
            sort_key: file.table.sort_key.clone(),
            type_attribute: file.table.type_attribute.clone(),
        };
        let indexes = self.indexes(&file, &table);
        let kinds = self.kinds(&file);
        for (name, e) in &file.enums {
            self.graphql_name("names", name);
            if e.values.is_empty() {
                self.refuse("types", format!("enum {name} has no values"));
            }
            for v in &e.values {
                if !is_enum_value(v) {
                    self.refuse(
                        "names",
                        format!("enum {name}: `{v}` is not an enum value (A-Z, 0-9, `_`)"),
                    );
                }
            }
        }
        let mut shapes = IndexMap::new();
        for (name, shape) in &file.shapes {
            self.graphql_name("names", name);
            let mut fields = IndexMap::new();
            for (a, spec) in &shape.attributes {
                if let Some(attr) = self.attribute(a, spec, &file, &kinds) {
                    fields.insert(a.clone(), attr);
                }
            }
            shapes.insert(name.clone(), fields);
        }
        let mut entities = IndexMap::new();
        for (name, e) in &file.entities {
            self.at(Some(name), None);
            let entity = self.entity(name, e, &file, &kinds, &indexes, &table);
            entities.insert(name.clone(), entity);
        }
        self.at(None, None);
        for system in system_entities() {
            if entities.contains_key(&system.name) {
                self.refuse(
                    "names",
                    format!(
                        "`{}` is the name of one of the server's own items",
                        system.name
                    ),
                );
            } else {
                entities.insert(system.name.clone(), system);
            }
        }
        self.keys_distinct(&entities);
        self.references(&entities);
        let mut patterns = IndexMap::new();
        for (number, p) in &file.patterns {
            let Ok(n) = number.parse::<u32>() else {
                self.at(None, None);
                self.refuse(
                    "format",
                    format!("patterns.{number}: access patterns are numbered (`[patterns.1]`)"),
                );
                continue;
            };
            self.at(None, Some(n));
            if let Some(pattern) = self.pattern(n, p, &table, &entities, &indexes) {
                patterns.insert(n, pattern);
            }
        }
        self.at(None, None);
        self.tenant(&file, &entities, &patterns);
        self.fields(&file, &entities, &patterns);
        let mut samples = Vec::new();
        for (entity, items) in &file.samples {
            self.at(Some(entity), None);
            let Some(e) = entities.get(entity).filter(|e| !e.system) else {
                self.refuse("samples", "samples of an entity the chart does not declare");
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                match super::samples::item(&table, &indexes, e, item) {
                    Ok(item) => samples.push(item),
                    Err(why) => self.refuse("samples", format!("sample {}: {why}", i + 1)),
                }
            }
        }
        self.at(None, None);
        Chart {
            name: file.name,
            description: file.description,
            table,
            indexes,
            tenant: file.tenant,
            viewer: file.viewer,
            enums: file.enums,
            shapes,
            entities,
            query: file.query,
            patterns,
            samples,
        }
    }

    fn indexes(&mut self, file: &File, table: &Table) -> IndexMap<String, Index> {
        let mut out = IndexMap::new();
        let mut key_attrs = vec![table.partition_key.clone(), table.sort_key.clone()];
        for (name, i) in &file.indexes {
            let projection = match &i.projection {
                format::Projection::Named(p) if p == "ALL" => Projection::All,
                format::Projection::Named(p) if p == "KEYS_ONLY" => Projection::KeysOnly,
                format::Projection::Named(p) => {
                    self.refuse(
                        "format",
                        format!("index {name}: projection `{p}` is none of ALL, KEYS_ONLY or a list of attributes (INCLUDE)"),
                    );
                    Projection::All
                }
                format::Projection::Include(a) => Projection::Include(a.clone()),
            };
            for k in [&i.partition_key, &i.sort_key] {
                if key_attrs.contains(k) {
                    self.refuse(
                        "indexes",
                        format!("index {name}: key attribute `{k}` is already another key's"),
                    );
                }
                key_attrs.push(k.clone());
            }
            out.insert(
                name.clone(),
                Index {
                    name: name.clone(),
                    partition_key: i.partition_key.clone(),
                    sort_key: i.sort_key.clone(),
                    projection,
                },
            );
        }
        out
    }

    fn kinds(&mut self, file: &File) -> HashMap<String, Kind> {
        let mut out = HashMap::new();
        for (name, k) in &file.kinds {
            if Kind::builtin(name).is_some() {
                self.refuse("names", format!("kind `{name}` is a built-in kind"));
                continue;
            }
            match Regex::new(&format!("^(?:{})$", k.pattern)) {
                Ok(re) => {
                    out.insert(
                        name.clone(),
                        Kind::Own {
                            name: name.clone(),
                            pattern: Arc::new(re),
                            max_length: k.max_length,
                        },
                    );
                }
                Err(e) => self.refuse("types", format!("kind `{name}`: its pattern: {e}")),
            }
        }
        out
    }

    fn ty(
        &mut self,
        spec: &str,
        of: Option<&str>,
        a: &Spec,
        file: &File,
        kinds: &HashMap<String, Kind>,
    ) -> Option<Type> {
        Some(match spec {
            "string" => Type::String {
                max_length: a.max_length,
            },
            "int" => Type::Int {
                min: a.min,
                max: a.max,
            },
            "boolean" => Type::Boolean,
            "timestamp" => Type::Timestamp,
            "cents" => Type::Cents,
            "counter" => Type::Counter,
            "list" | "map" => {
                let Some(of) = of else {
                    self.refuse(
                        "types",
                        format!("a {spec} needs `of`, the type of its elements"),
                    );
                    return None;
                };
                let inner = self.ty(of, None, &Spec::default(), file, kinds)?;
                let of = Box::new(inner);
                if spec == "list" {
                    Type::List {
                        of,
                        max_items: a.max_items,
                    }
                } else {
                    Type::Map {
                        of,
                        max_items: a.max_items,
                    }
                }
            }
            other => {
                if let Some(k) = Kind::builtin(other).or_else(|| kinds.get(other).cloned()) {
                    Type::Kind(k)
                } else if let Some(e) = file.enums.get(other) {
                    Type::Enum {
                        name: other.to_owned(),
                        values: e.values.clone(),
                    }
                } else if file.shapes.contains_key(other) {
                    Type::Shape(other.to_owned())
                } else {
                    self.refuse(
                        "types",
                        format!(
                            "`{other}` is no type: neither a scalar, a kind, an enum nor a shape"
                        ),
                    );
                    return None;
                }
            }
        })
    }

    fn attribute(
        &mut self,
        name: &str,
        a: &format::Attribute,
        file: &File,
        kinds: &HashMap<String, Kind>,
    ) -> Option<Attribute> {
        let (spec, optional) = match a {
            format::Attribute::Short(s) => {
                let (t, opt) = match s.strip_suffix('?') {
                    Some(t) => (t, true),
                    None => (s.as_str(), false),
                };
                (
                    Spec {
                        ty: t.to_owned(),
                        ..Spec::default()
                    },
                    opt,
                )
            }
            format::Attribute::Full(f) => (
                Spec {
                    ty: f.ty.clone(),
                    of: f.of.clone(),
                    min: f.min,
                    max: f.max,
                    max_length: f.max_length,
                    max_items: f.max_items,
                    description: f.description.clone(),
                    graphql: f.graphql,
                },
                f.optional,
            ),
        };
        if !is_graphql_name(name) {
            self.refuse("names", format!("attribute `{name}` is not a GraphQL name"));
        }
        let ty = self.ty(&spec.ty, spec.of.as_deref(), &spec, file, kinds)?;
        Some(Attribute {
            ty,
            optional,
            description: spec.description,
            graphql: spec.graphql.unwrap_or(true),
        })
    }

    fn entity(
        &mut self,
        name: &str,
        e: &format::Entity,
        file: &File,
        kinds: &HashMap<String, Kind>,
        indexes: &IndexMap<String, Index>,
        table: &Table,
    ) -> Entity {
        self.graphql_name("names", name);
        let mut attributes = IndexMap::new();
        for (a, spec) in &e.attributes {
            if [&table.partition_key, &table.sort_key, &table.type_attribute].contains(&a)
                || indexes
                    .values()
                    .any(|i| &i.partition_key == a || &i.sort_key == a)
            {
                self.refuse(
                    "names",
                    format!(
                        "attribute `{a}` has the name of a key attribute or of `{}`",
                        table.type_attribute
                    ),
                );
            }
            if let Some(attr) = self.attribute(a, spec, file, kinds) {
                attributes.insert(a.clone(), attr);
            }
        }
        let key = self.keys(&e.key, &attributes, true);
        let mut entity_indexes = IndexMap::new();
        for (index, pair) in &e.indexes {
            if !indexes.contains_key(index) {
                self.refuse(
                    "indexes",
                    format!("joins index `{index}`, which the chart does not declare"),
                );
                continue;
            }
            if let Some(k) = self.keys(pair, &attributes, false) {
                entity_indexes.insert(index.clone(), k);
            }
        }
        let shards_of = match (&e.shards_of, e.shards) {
            (Some(of), Some(n)) if (1..=1000).contains(&n) => Some((of.clone(), n)),
            (None, None) => None,
            _ => {
                self.refuse("format", "`shards_of` and `shards` (1 to 1000) go together");
                None
            }
        };
        let graphql = e.graphql.unwrap_or(shards_of.is_none());
        if let Some(p) = &e.plain_id {
            if !attributes.contains_key(p) {
                self.refuse(
                    "fields",
                    format!("`plain_id` names `{p}`, which is no attribute"),
                );
            }
        }
        Entity {
            name: name.to_owned(),
            description: e.description.clone(),
            key: key.unwrap_or_else(placeholder_keys),
            indexes: entity_indexes,
            attributes,
            tenant: e.tenant.clone(),
            graphql,
            node: e.node.unwrap_or(graphql),
            plain_id: e.plain_id.clone(),
            shards_of,
            references: e
                .references
                .iter()
                .map(|(k, r)| (k.clone(), clone_ref(r)))
                .collect(),
            connections: e
                .connections
                .iter()
                .map(|(k, c)| {
                    (
                        k.clone(),
                        format::Connection {
                            pattern: c.pattern,
                            cursor: c.cursor.clone(),
                            total: c.total.as_ref().map(clone_total),
                            description: c.description.clone(),
                        },
                    )
                })
                .collect(),
            lists: e
                .lists
                .iter()
                .map(|(k, l)| {
                    (
                        k.clone(),
                        format::List {
                            pattern: l.pattern,
                            max: l.max,
                            description: l.description.clone(),
                        },
                    )
                })
                .collect(),
            system: false,
        }
    }

    /// Parses a key pair and checks each variable is a key-safe attribute.
    fn keys(
        &mut self,
        pair: &[String; 2],
        attributes: &IndexMap<String, Attribute>,
        primary: bool,
    ) -> Option<Keys> {
        let mut parsed = Vec::new();
        for (i, source) in pair.iter().enumerate() {
            match Template::parse(source) {
                Ok(t) => {
                    for v in t.vars() {
                        if v.optional {
                            self.refuse("format", format!("`{source}`: `?` marks a level of a key condition, not of an entity's key"));
                        }
                        match attributes.get(&v.name) {
                            None => self.refuse(
                                "key-values",
                                format!(
                                    "`{source}`: `{{{}}}` names no attribute of the entity",
                                    v.name
                                ),
                            ),
                            Some(a) => {
                                if let Err(why) = a.ty.key_domain(v.width, i == 1) {
                                    self.refuse(
                                        "key-values",
                                        format!(
                                            "`{source}`: `{{{}}}` is a {}: {why}",
                                            v.name,
                                            a.ty.describe()
                                        ),
                                    );
                                }
                                if primary && a.optional {
                                    self.refuse("key-values", format!("`{source}`: `{{{}}}` is optional, and a primary key needs every part", v.name));
                                }
                            }
                        }
                    }
                    parsed.push(t);
                }
                Err(e) => self.refuse("format", e),
            }
        }
        let sk = parsed.pop()?;
        let pk = parsed.pop()?;
        Some(Keys { pk, sk })
    }

    fn keys_distinct(&mut self, entities: &IndexMap<String, Entity>) {
        let list: Vec<&Entity> = entities.values().collect();
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                let (ba, bb) = (entity_binder(a, "a"), entity_binder(b, "b"));
                let la = |t| Laid {
                    template: t,
                    bind: &ba,
                };
                let lb = |t| Laid {
                    template: t,
                    bind: &bb,
                };
                if template::may_equal(&la(&a.key.pk), &lb(&b.key.pk))
                    && template::may_equal(&la(&a.key.sk), &lb(&b.key.sk))
                {
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

    fn tenant(
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

    /// An entity without the tenant is served only as the children of a parent that holds
    /// it (an order's lines): never by key, as a node, or as a reference.
    fn reached_only_through_a_tenant(
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
            })
    }

    fn references(&mut self, entities: &IndexMap<String, Entity>) {
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

    fn pattern(
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
                    self.projected(e, entities, indexes, index);
                }
                let mut expected: Vec<String> = beside.clone();
                expected.push(children.clone());
                expected.extend(parent.clone());
                let edge: Vec<&str> = parent.iter().map(String::as_str).collect();
                self.reads_only(&condition, entities, &expected, &edge);
                let children_prefix = self.later_pages(&condition, entities, &children);
                if let Some(parent) = &parent {
                    self.parent_at_edge(&condition, entities, parent, &beside, &children, forward);
                }
                Request::Query {
                    condition,
                    forward,
                    parent,
                    beside,
                    children,
                    children_prefix,
                }
            }
            other => {
                self.refuse(
                    "one-request",
                    format!("request `{other}` is none of GetItem, Query, BatchGetItem"),
                );
                return None;
            }
        };
        Some(Pattern {
            number: n,
            name: p.name.clone(),
            request,
            field: p.field.clone(),
        })
    }

    /// Parses `PK = … [AND <sort condition>]`, naming the index by its key attributes.
    fn condition(
        &mut self,
        text: &str,
        table: &Table,
        indexes: &IndexMap<String, Index>,
    ) -> Option<KeyCondition> {
        match parse_condition(text, table, indexes) {
            Ok(c) => Some(c),
            Err(e) => {
                self.refuse("indexes", format!("`{text}`: {e}"));
                None
            }
        }
    }

    /// The items a condition can return must be those the pattern declares.
    fn reads_only(
        &mut self,
        cond: &KeyCondition,
        entities: &IndexMap<String, Entity>,
        expected: &[String],
        must: &[&str],
    ) {
        let reads = reachable(cond, entities);
        for (e, inc) in &reads {
            if *inc == Included::Maybe && !expected.iter().any(|x| x == e) {
                let keys = entities[e]
                    .keys_in(cond.index.as_deref())
                    .expect("reachable entities have keys");
                self.refuse(
                    "one-request",
                    format!(
                        "its key condition can also return {e} (`{}` / `{}`), which the pattern does not declare: one request would not return only what it serves",
                        keys.pk, keys.sk
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
    fn later_pages(
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
        let later = KeyCondition {
            index: cond.index.clone(),
            partition: cond.partition.clone(),
            sort: (!prefix.is_empty()).then(|| SortCondition::BeginsWith(prefix_t.clone())),
        };
        for (e, inc) in reachable(&later, entities) {
            if inc == Included::Maybe && e != children {
                self.refuse(
                    "one-request",
                    format!("a later page reads `begins_with({}, \"{prefix}\")`, which can also return {e}: give {children}'s sort key a prefix of its own", sort_attr(cond)),
                );
            }
        }
        prefix_t
    }

    fn parent_at_edge(
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

    /// An index that does not project everything must carry what the pattern decodes.
    fn projected(
        &mut self,
        e: &str,
        entities: &IndexMap<String, Entity>,
        indexes: &IndexMap<String, Index>,
        index: Option<&str>,
    ) {
        let Some(index) = index.and_then(|i| indexes.get(i)) else {
            return;
        };
        let carried: Vec<String> = match &index.projection {
            Projection::All => return,
            Projection::KeysOnly => Vec::new(),
            Projection::Include(a) => a.clone(),
        };
        let entity = &entities[e];
        let key_vars: Vec<&str> = entity
            .key
            .pk
            .vars()
            .chain(entity.key.sk.vars())
            .map(|v| v.name.as_str())
            .collect();
        for (name, a) in &entity.attributes {
            if !a.optional && !carried.contains(name) && !key_vars.contains(&name.as_str()) {
                self.refuse(
                    "indexes",
                    format!("index {} does not project `{name}`, which {e} needs: project it (INCLUDE) or read {e} by key", index.name),
                );
            }
        }
    }

    fn fields(
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
            for (name, l) in &e.lists {
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
                Request::Query { parent, .. } => parent.as_deref() == Some(e.name.as_str()),
                Request::BatchGetItem => true,
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

    fn field_pattern<'p>(
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

    fn counter(&mut self, e: &Entity, counter: &str, field: &str) {
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
    fn arguments(
        &mut self,
        owner: &Entity,
        cond: &KeyCondition,
        entities: &IndexMap<String, Entity>,
        p: &Pattern,
    ) -> Vec<(String, Type)> {
        let mut out = Vec::new();
        for v in condition_vars(cond) {
            if owner.attributes.contains_key(&v.name) {
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

    fn graphql_name(&mut self, rule: &'static str, name: &str) {
        if !is_graphql_name(name) || name.starts_with("__") {
            self.refuse(rule, format!("`{name}` is not a GraphQL name"));
        }
    }
}

#[derive(Default)]
struct Spec {
    ty: String,
    of: Option<String>,
    min: Option<i64>,
    max: Option<i64>,
    max_length: Option<usize>,
    max_items: Option<usize>,
    description: Option<String>,
    graphql: Option<bool>,
}

fn clone_ref(r: &format::Reference) -> format::Reference {
    format::Reference {
        entity: r.entity.clone(),
        key: r.key.clone(),
        description: r.description.clone(),
    }
}

fn clone_total(t: &format::Total) -> format::Total {
    match t {
        format::Total::Counter(c) => format::Total::Counter(c.clone()),
        format::Total::ByArgument(b) => format::Total::ByArgument(b.clone()),
    }
}

fn placeholder_keys() -> Keys {
    let t = Template::parse("~").expect("a literal parses");
    Keys {
        pk: t.clone(),
        sk: t,
    }
}

fn is_graphql_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_enum_value(s: &str) -> bool {
    is_graphql_name(s) && !matches!(s, "true" | "false" | "null")
}

fn sort_attr(cond: &KeyCondition) -> &str {
    match &cond.index {
        None => "SK",
        Some(_) => "the index's sort key",
    }
}

/// The server's own items, in every table whatever the chart: their keys are reserved.
fn system_entities() -> Vec<Entity> {
    let e = |name: &str, pk: &str, sk: &str, attrs: &[(&str, Type)]| Entity {
        name: name.to_owned(),
        description: None,
        key: Keys {
            pk: Template::parse(pk).expect("system keys parse"),
            sk: Template::parse(sk).expect("system keys parse"),
        },
        indexes: IndexMap::new(),
        attributes: attrs
            .iter()
            .map(|(n, t)| {
                (
                    (*n).to_owned(),
                    Attribute {
                        ty: t.clone(),
                        optional: false,
                        description: None,
                        graphql: false,
                    },
                )
            })
            .collect(),
        tenant: None,
        graphql: false,
        node: false,
        plain_id: None,
        shards_of: None,
        references: IndexMap::new(),
        connections: IndexMap::new(),
        lists: IndexMap::new(),
        system: true,
    };
    let int = |max| Type::Int {
        min: Some(0),
        max: Some(max),
    };
    let name = Type::Kind(Kind::Own {
        name: "lease name".into(),
        pattern: Arc::new(Regex::new("^.+$").expect("a pattern")),
        max_length: 1024,
    });
    vec![
        e(
            "Migration",
            "MIGRATION#{version:03}",
            "MIGRATION#{version:03}",
            &[("version", int(999))],
        ),
        e(
            "MigrationSegment",
            "MIGRATION#{version:03}",
            "SEGMENT#{segment:07}",
            &[("version", int(999)), ("segment", int(9_999_999))],
        ),
        e("Lease", "LEASE#{name}", "LEASE#{name}", &[("name", name)]),
    ]
}
