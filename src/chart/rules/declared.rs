//! What a chart declares, typed and checked: kinds, attribute types, entities and their
//! keys (their indexes: [`super::indexes`]); the server's own items, which every table
//! holds.

use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use regex::Regex;

use super::super::format::{self, File};
use super::super::template::Template;
use super::super::types::{Kind, Type};
use super::super::{Attribute, Auto, Count, Entity, Index, Invariants, Keys, Table};
use super::*;
use crate::store::KeyType;

impl Checker {
    pub(super) fn kinds(&mut self, file: &File) -> HashMap<String, Kind> {
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
                            message: k.message.clone(),
                        },
                    );
                }
                Err(e) => self.refuse("types", format!("kind `{name}`: its pattern: {e}")),
            }
        }
        out
    }

    pub(super) fn ty(
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
                one_line: a.one_line,
            },
            "int" => Type::Int {
                min: a.min,
                max: a.max,
            },
            "boolean" => Type::Boolean,
            "timestamp" => match a.form.as_deref() {
                None => Type::Timestamp(super::super::types::TimeForm::Rfc3339),
                Some(f) => match super::super::types::TimeForm::parse(f) {
                    Some(form) => Type::Timestamp(form),
                    None => {
                        self.refuse(
                            "types",
                            format!(
                                "timestamp form `{f}` is none of {}",
                                super::super::types::TimeForm::NAMES.join(", ")
                            ),
                        );
                        return None;
                    }
                },
            },
            "expiry" => Type::Expiry,
            "cents" => Type::Cents { min: a.min },
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

    pub(super) fn attribute(
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
                    one_line: f.one_line,
                    description: f.description.clone(),
                    graphql: f.graphql,
                    auto: f.auto.clone(),
                    on_create: f.on_create.clone(),
                    computed: f.computed.clone(),
                    referrers: f.referrers.clone(),
                    lifetime: f.lifetime.clone(),
                    stored: f.stored.clone(),
                    key_only: f.key_only,
                    stored_as: f.stored_as.clone(),
                    form: f.form.clone(),
                },
                f.optional,
            ),
        };
        if !is_graphql_name(name) {
            self.refuse("names", format!("attribute `{name}` is not a GraphQL name"));
        }
        let ty = self.ty(&spec.ty, spec.of.as_deref(), &spec, file, kinds)?;
        let auto = match spec.auto.as_deref() {
            None => None,
            Some("ulid") if matches!(ty, Type::Kind(Kind::Ulid)) => Some(Auto::Ulid),
            Some("created") if matches!(ty, Type::Timestamp(_)) => Some(Auto::Created),
            Some("updated") if matches!(ty, Type::Timestamp(_)) => Some(Auto::Updated),
            Some("position") if matches!(ty, Type::Int { .. }) => Some(Auto::Position),
            Some(other) => {
                self.refuse(
                    "writes",
                    format!("attribute `{name}`: `auto = \"{other}\"` is `ulid` on a ulid, `created` or `updated` on a timestamp, `position` on an int"),
                );
                None
            }
        };
        let on_create = spec
            .on_create
            .as_ref()
            .and_then(|c| self.constant(name, &ty, c));
        let computed = spec.computed.as_deref().and_then(|c| {
            let parsed = super::super::Computed::parse(c);
            if parsed.is_none() {
                self.refuse(
                    "writes",
                    format!("attribute `{name}`: `computed = \"{c}\"` is `a * b`, `sum(list.attribute)` or `count(list)`"),
                );
            } else if !matches!(ty, Type::Int { .. } | Type::Cents { .. } | Type::Counter) {
                self.refuse(
                    "writes",
                    format!("attribute `{name}`: only a number (an int, cents or a counter) is computed"),
                );
            }
            parsed
        });
        let lifetime = spec.lifetime.as_deref().and_then(|l| {
            let seconds = lifetime(l);
            if !matches!(ty, Type::Expiry) {
                self.refuse(
                    "time-to-live",
                    format!("attribute `{name}`: `lifetime` is how long an expiry lasts, and `{name}` is no expiry"),
                );
            } else if seconds.is_none() {
                self.refuse(
                    "time-to-live",
                    format!("attribute `{name}`: `lifetime = \"{l}\"` is a whole number of days, hours, minutes or seconds (`30d`, `12h`, `15m`, `90s`)"),
                );
            }
            seconds
        });
        if let Some(r) = &spec.referrers {
            if !matches!(ty, Type::Counter) {
                self.refuse(
                    "writes",
                    format!("attribute `{name}`: `referrers` names what a counter counts, and `{name}` is no counter"),
                );
            } else if !is_graphql_name(r) {
                self.refuse(
                    "names",
                    format!("attribute `{name}`: referrers `{r}` is not a GraphQL name"),
                );
            }
        }
        if let Some(form) = &spec.stored_as {
            if form != "string" {
                self.refuse(
                    "stored",
                    format!(
                        "attribute `{name}`: `stored_as = \"{form}\"`: a number is stored as a \
                         number, or as a `\"string\"` of its digits"
                    ),
                );
            } else if !matches!(ty, Type::Int { .. } | Type::Cents { .. }) {
                self.refuse(
                    "stored",
                    format!(
                        "attribute `{name}`: `stored_as = \"string\"` is for an int or cents, and \
                         `{name}` is a {}",
                        ty.describe()
                    ),
                );
            }
        }
        Some(Attribute {
            ty,
            optional,
            description: spec.description,
            graphql: spec.graphql.unwrap_or(true),
            auto,
            on_create,
            computed,
            referrers: spec.referrers,
            lifetime,
            stored: spec.stored,
            key_only: spec.key_only,
            as_string: spec.stored_as.is_some(),
        })
    }

    /// An attribute's `on_create` constant, as the item stores it, when its type takes it.
    fn constant(
        &mut self,
        name: &str,
        ty: &Type,
        c: &format::Constant,
    ) -> Option<crate::store::AttributeValue> {
        use crate::store::AttributeValue as V;
        let value = match (ty, c) {
            (Type::Int { min, max }, format::Constant::Int(n))
                if min.is_none_or(|m| *n >= m) && max.is_none_or(|m| *n <= m) =>
            {
                Some(V::N(n.to_string()))
            }
            (Type::String { max_length, .. }, format::Constant::Text(t))
                if max_length.is_none_or(|m| t.chars().count() <= m) =>
            {
                Some(V::S(t.clone()))
            }
            (Type::Enum { values, .. }, format::Constant::Text(t)) if values.contains(t) => {
                Some(V::S(t.clone()))
            }
            (Type::Boolean, format::Constant::Bool(b)) => Some(V::Bool(*b)),
            _ => None,
        };
        if value.is_none() {
            self.refuse(
                "writes",
                format!(
                    "attribute `{name}`: `on_create` is a constant the attribute's type takes \
                     (an int within its bounds, a string, an enum value or a boolean)"
                ),
            );
        }
        value
    }

    pub(super) fn entity(
        &mut self,
        name: &str,
        e: &format::Entity,
        file: &File,
        kinds: &HashMap<String, Kind>,
        indexes: &IndexMap<String, Index>,
        tables: &[Table],
    ) -> Entity {
        self.graphql_name("names", name);
        let table = self.table_named(e.table.as_deref(), tables);
        let (table, at) = (&tables[table], table);
        let mut attributes = IndexMap::new();
        for (a, spec) in &e.attributes {
            if [&table.partition_key, &table.type_attribute].contains(&a)
                || table.sort_key.as_ref() == Some(a)
                || indexes.values().any(|i| {
                    i.table == at
                        && !i.multi
                        && (&i.partition_key == a || i.sort_key.as_ref() == Some(a))
                })
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
        let key = self.keys(&e.key, KeyShape::of_table(table), &attributes, true);
        let mut entity_indexes = IndexMap::new();
        let mut multi = IndexMap::new();
        for (index, pair) in &e.indexes {
            if !indexes.contains_key(index) {
                self.refuse(
                    "indexes",
                    format!("joins index `{index}`, which the chart does not declare"),
                );
                continue;
            }
            if indexes[index].table != at {
                self.refuse(
                    "tables",
                    format!(
                        "joins index `{index}`, which is on table {}: an entity's indexes are its own table's",
                        tables[indexes[index].table].name
                    ),
                );
                continue;
            }
            if indexes[index].multi {
                if let Some(attrs) = self.multi_key(&indexes[index], pair, &attributes) {
                    multi.insert(index.clone(), attrs);
                }
                continue;
            }
            if let Some(k) = self.keys(
                pair,
                KeyShape::of_index(&indexes[index]),
                &attributes,
                false,
            ) {
                entity_indexes.insert(index.clone(), k);
            }
        }
        self.multi_members(indexes, &multi, &attributes);
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
            type_value: e.type_value.clone().unwrap_or_else(|| name.to_owned()),
            description: e.description.clone(),
            table: at,
            key: key.unwrap_or_else(placeholder_keys),
            indexes: entity_indexes,
            multi,
            attributes,
            tenant: e.tenant.clone(),
            // Resolved once every entity is read (`Checker::bind`).
            binding: super::super::Binding::Open,
            global: e.global,
            graphql,
            node: e.node.unwrap_or(graphql),
            plain_id: e.plain_id.clone(),
            shards_of,
            references: e.references.clone(),
            link: e.link.clone(),
            connections: e.connections.clone(),
            lists: e.lists.clone(),
            collections: e.collections.clone(),
            writes: Invariants {
                version: e.version.clone(),
                unique: e.unique.clone(),
                counts: e
                    .counts
                    .iter()
                    .map(|(reference, c)| {
                        let parts = match c {
                            format::Counted::One(name) => {
                                vec![format::CountedPart::Name(name.clone())]
                            }
                            format::Counted::Many(parts) => parts.clone(),
                        };
                        let mut count = Count {
                            reference: reference.clone(),
                            counters: Vec::new(),
                            by: Vec::new(),
                        };
                        for part in parts {
                            match part {
                                format::CountedPart::Name(n) => count.counters.push(n),
                                format::CountedPart::By(b) => count.by.push(b),
                            }
                        }
                        count
                    })
                    .collect(),
                lifecycle: e.lifecycle.clone(),
            },
            system: false,
        }
    }

    /// Parses a key pair and checks each variable is a key-safe attribute.
    /// An entity's templates of one key: the table's (`shape` its key attributes' types,
    /// and whether it has a sort key) or an index's.
    pub(super) fn keys(
        &mut self,
        sources: &[String],
        shape: KeyShape,
        attributes: &IndexMap<String, Attribute>,
        primary: bool,
    ) -> Option<Keys> {
        let want = if shape.sorted { 2 } else { 1 };
        if sources.len() != want {
            self.refuse(
                "format",
                if shape.sorted {
                    format!(
                        "`{sources:?}`: a key is two templates, `[partition, sort]`, where the \
                         table or index has a sort key"
                    )
                } else {
                    format!(
                        "`{sources:?}`: a key is one template, `[partition]`, where the table \
                         or index is keyed by its partition key alone"
                    )
                },
            );
            return None;
        }
        let mut parsed = Vec::new();
        for (i, source) in sources.iter().enumerate() {
            let number = [shape.pk_type, shape.sk_type][i] == KeyType::N;
            match Template::parse(source) {
                Ok(t) => {
                    if number
                        && !matches!(t.parts.as_slice(), [super::super::template::Part::Var(v)]
                            if v.width.is_none()
                                && attributes.get(&v.name).is_some_and(|a| matches!(a.ty, Type::Int { .. })))
                    {
                        self.refuse(
                            "key-values",
                            format!(
                                "`{source}`: a number key (`N`) is one int attribute, `{{id}}`, \
                                 with no width: it sorts by value"
                            ),
                        );
                    }
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
                                if !number {
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
        if parsed.len() != want {
            return None;
        }
        let sk = if shape.sorted {
            parsed.pop()?
        } else {
            Template::none()
        };
        let pk = parsed.pop()?;
        Some(Keys { pk, sk })
    }
}

/// What a key is made of: its attributes' types, and whether it has a sort key.
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyShape {
    pub sorted: bool,
    pub pk_type: KeyType,
    pub sk_type: KeyType,
}

impl KeyShape {
    pub fn of_table(t: &Table) -> KeyShape {
        KeyShape {
            sorted: t.sort_key.is_some(),
            pk_type: t.pk_type,
            sk_type: t.sk_type,
        }
    }

    pub fn of_index(i: &Index) -> KeyShape {
        KeyShape {
            sorted: i.sort_key.is_some(),
            pk_type: i.pk_type,
            sk_type: i.sk_type,
        }
    }
}

#[derive(Default)]
pub(super) struct Spec {
    ty: String,
    of: Option<String>,
    min: Option<i64>,
    max: Option<i64>,
    max_length: Option<usize>,
    max_items: Option<usize>,
    one_line: Option<bool>,
    description: Option<String>,
    graphql: Option<bool>,
    auto: Option<String>,
    on_create: Option<format::Constant>,
    computed: Option<String>,
    referrers: Option<String>,
    lifetime: Option<String>,
    stored: Option<String>,
    key_only: bool,
    stored_as: Option<String>,
    form: Option<String>,
}

fn placeholder_keys() -> Keys {
    let t = Template::parse("~").expect("a literal parses");
    Keys {
        pk: t.clone(),
        sk: t,
    }
}

/// The server's own items, in every table whatever the chart: their keys are reserved.
pub(super) fn system_entities() -> Vec<Entity> {
    let e = |name: &str, pk: &str, sk: &str, attrs: &[(&str, Type)]| Entity {
        name: name.to_owned(),
        type_value: name.to_owned(),
        description: None,
        table: 0,
        key: Keys {
            pk: Template::parse(pk).expect("system keys parse"),
            sk: Template::parse(sk).expect("system keys parse"),
        },
        indexes: IndexMap::new(),
        multi: IndexMap::new(),
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
                        auto: None,
                        on_create: None,
                        computed: None,
                        referrers: None,
                        lifetime: None,
                        stored: None,
                        key_only: false,
                        as_string: false,
                    },
                )
            })
            .collect(),
        tenant: None,
        binding: super::super::Binding::Open,
        global: false,
        graphql: false,
        node: false,
        plain_id: None,
        shards_of: None,
        references: IndexMap::new(),
        link: None,
        connections: IndexMap::new(),
        lists: IndexMap::new(),
        collections: IndexMap::new(),
        writes: Invariants::default(),
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
        message: None,
    });
    vec![
        e(
            "Chart",
            "CHART#",
            "CHART#",
            &[
                (
                    "source",
                    Type::String {
                        max_length: None,
                        one_line: Some(false),
                    },
                ),
                ("plans", int(899)),
            ],
        ),
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

/// `30d`, `12h`, `15m`, `90s` as seconds (at least one, at most ten years).
fn lifetime(s: &str) -> Option<i64> {
    let (n, unit) = s.split_at(s.len().checked_sub(1)?);
    let n: i64 = n.parse().ok().filter(|n| *n >= 1)?;
    let seconds = n.checked_mul(match unit {
        "d" => 86_400,
        "h" => 3_600,
        "m" => 60,
        "s" => 1,
        _ => return None,
    })?;
    (seconds <= 10 * 366 * 86_400).then_some(seconds)
}
