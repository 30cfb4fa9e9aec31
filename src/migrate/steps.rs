//! What a change of chart asks of the table: the steps [`plan`] finds between the chart
//! the table was last migrated to and the one given, each made or refused by name
//! (the table of changes and steps is in [`super::chart`]).

use std::fmt;

use crate::chart::{Chart, Entity};

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The table's Time to Live turned on for the attribute.
    TimeToLive(String),
    /// Another of the chart's tables' Time to Live turned on for the attribute.
    TimeToLiveOf { table: String, attribute: String },
    /// A global secondary index the table does not have, created.
    Index(String),
    /// Every item of the entity given the keys its templates render for the index.
    IndexKeys { entity: String, index: String },
    /// Every value of the attribute given its marker.
    Markers { entity: String, attribute: String },
    /// Every item of the entity without its version given 1.
    Versions { entity: String, attribute: String },
    /// Counters `entity`'s items keep through `reference`, recounted: each set on the item
    /// it counts on where no write has started it yet.
    Counts {
        entity: String,
        reference: String,
        counters: Vec<String>,
    },
    /// Every item of `owner` in the layout from before its counter shards given them, and
    /// its create-time layout (`on_create`), in one transaction.
    Shards { owner: String },
    /// Every item of the entity put at the primary key its templates render and removed
    /// from the one it is at, in one transaction.
    Rekey { entity: String },
    /// A change migrate does not make, and why.
    Refused { what: String, why: String },
}

impl Step {
    pub fn is_refused(&self) -> bool {
        matches!(self, Step::Refused { .. })
    }

    /// The entity whose items it reads or writes, for a step on items.
    pub fn entity(&self) -> Option<&str> {
        match self {
            Step::IndexKeys { entity, .. }
            | Step::Markers { entity, .. }
            | Step::Versions { entity, .. }
            | Step::Counts { entity, .. }
            | Step::Rekey { entity } => Some(entity),
            Step::Shards { owner } => Some(owner),
            _ => None,
        }
    }

    /// Whether it reads every item of its entity's table (a Scan).
    pub fn scans_items(&self) -> bool {
        matches!(
            self,
            Step::IndexKeys { .. }
                | Step::Markers { .. }
                | Step::Versions { .. }
                | Step::Shards { .. }
                | Step::Rekey { .. }
        )
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::TimeToLive(a) => write!(f, "time-to-live: turned on for `{a}`"),
            Step::TimeToLiveOf { table, attribute } => {
                write!(
                    f,
                    "time-to-live of table {table}: turned on for `{attribute}`"
                )
            }
            Step::Index(name) => write!(f, "index {name}: created (UpdateTable)"),
            Step::IndexKeys { entity, index } => {
                write!(
                    f,
                    "index-keys {entity} {index}: the keys its templates render"
                )
            }
            Step::Markers { entity, attribute } => {
                write!(f, "markers {entity}.{attribute}: one for every value")
            }
            Step::Versions { entity, attribute } => {
                write!(f, "versions {entity}.{attribute}: 1 where there is none")
            }
            Step::Counts {
                entity,
                reference,
                counters,
            } => write!(
                f,
                "counts {entity}.{reference}: {} recounted",
                counters.join(", ")
            ),
            Step::Shards { owner } => {
                write!(f, "counter-shards {owner}: for every item without them")
            }
            Step::Rekey { entity } => write!(
                f,
                "rekey {entity}: every item moved to the key its templates render"
            ),
            Step::Refused { what, why } => write!(f, "refused {what}: {why}"),
        }
    }
}

/// The steps from `old` (the chart recorded, `None`: nothing known) to `new`, on a table
/// whose indexes are `indexes`.
pub fn plan(old: Option<&Chart>, new: &Chart, indexes: &[String]) -> Vec<Step> {
    let mut steps = Vec::new();
    let refuse = |steps: &mut Vec<Step>, what: String, why: &str| {
        steps.push(Step::Refused {
            what,
            why: why.to_owned(),
        })
    };
    // As the table names it: the attribute's stored name.
    let old_ttl = old.and_then(|o| o.table_schema().time_to_live);
    let new_ttl = new.table_schema().time_to_live;
    match (old_ttl.as_deref(), new_ttl.as_deref()) {
        (Some(a), Some(b)) if a != b => refuse(
            &mut steps,
            format!("time to live `{a}` to `{b}`"),
            "DynamoDB turns a table's Time to Live to another attribute only once it is off, and items expiring by the old one would stay: turn it off with UpdateTimeToLive first if that is meant",
        ),
        (a, Some(b)) if old.is_none() || a != Some(b) => steps.push(Step::TimeToLive(b.to_owned())),
        (Some(a), None) => refuse(
            &mut steps,
            format!("time to live `{a}` off"),
            "items already expiring would stay: turn it off with UpdateTimeToLive if that is meant",
        ),
        _ => {}
    }
    // The chart's other tables', each compared with the table of its name before.
    for t in 1..new.tables.len() {
        let table = &new.tables[t];
        let before = old.and_then(|o| o.tables.iter().position(|x| x.name == table.name));
        let old_ttl = before.and_then(|b| old.and_then(|o| o.schema_of(b).time_to_live));
        match (old_ttl.as_deref(), new.schema_of(t).time_to_live.as_deref()) {
            (Some(a), Some(b)) if a != b => refuse(
                &mut steps,
                format!("time to live of table {} `{a}` to `{b}`", table.name),
                "DynamoDB turns a table's Time to Live to another attribute only once it is off, and items expiring by the old one would stay: turn it off with UpdateTimeToLive first if that is meant",
            ),
            (a, Some(b)) if before.is_none() || a != Some(b) => steps.push(Step::TimeToLiveOf {
                table: table.name.clone(),
                attribute: b.to_owned(),
            }),
            (Some(a), None) => refuse(
                &mut steps,
                format!("time to live of table {} `{a}` off", table.name),
                "items already expiring would stay: turn it off with UpdateTimeToLive if that is meant",
            ),
            _ => {}
        }
    }
    let mut created: Vec<&String> = Vec::new();
    for (name, index) in &new.indexes {
        let before = old.and_then(|o| o.indexes.get(name));
        // Every key attribute, of its type, in order, partition from sort (a
        // multi-attribute key's too), and its kind.
        fn shape(i: &crate::chart::Index) -> (usize, Vec<(&str, crate::store::KeyType)>, bool) {
            (i.partition_len(), i.typed_keys(), i.local)
        }
        if before.is_some_and(|b| shape(b) != shape(index)) {
            refuse(
                &mut steps,
                format!("index {name}"),
                "its key attributes change, and DynamoDB cannot change an index: give the new one another name",
            );
        } else if before.is_some_and(|b| (b.table, &b.stored) != (index.table, &index.stored)) {
            refuse(
                &mut steps,
                format!("index {name}"),
                "its table or its stored name changes, and DynamoDB cannot move or rename an index: give the new one another name",
            );
        } else if before.is_some_and(|b| b.projection != index.projection) {
            refuse(
                &mut steps,
                format!("index {name}"),
                "its projection changes, and DynamoDB cannot change an index's projection: give the new one another name",
            );
        } else if !indexes.contains(name) {
            steps.push(Step::Index(name.clone()));
            created.push(name);
        }
    }
    for e in new.declared() {
        let was = old.and_then(|o| o.entities.get(&e.name).filter(|w| !w.system));
        if let Some((owner, n)) = &e.shards_of {
            match was.and_then(|w| w.shards_of.as_ref()) {
                Some(before) if before == &(owner.clone(), *n) => {}
                Some((was_of, m)) => refuse(
                    &mut steps,
                    format!("counter shards {}", e.name),
                    &format!("the shards of {was_of}, {m} of them, become {n} of {owner}: the counts on them would have to move first; migrate does not move them"),
                ),
                None => steps.push(Step::Shards {
                    owner: owner.clone(),
                }),
            }
            continue;
        }
        if old.is_some() && was.is_none() {
            // A new entity: no item of it yet.
            continue;
        }
        if let Some(w) = was {
            if w.key.pk.to_string() != e.key.pk.to_string()
                || w.key.sk.to_string() != e.key.sk.to_string()
            {
                steps.push(Step::Rekey {
                    entity: e.name.clone(),
                });
            }
        }
        let mut joined: Vec<&String> = e.indexes.keys().collect();
        if let Some(w) = was {
            joined.extend(w.indexes.keys().filter(|i| !e.indexes.contains_key(*i)));
        }
        for index in joined {
            let same = was.is_some_and(|w| match (w.indexes.get(index), e.indexes.get(index)) {
                (Some(a), Some(b)) => {
                    a.pk.to_string() == b.pk.to_string() && a.sk.to_string() == b.sk.to_string()
                }
                _ => false,
            });
            if !same && (indexes.contains(index) || created.contains(&index)) {
                steps.push(Step::IndexKeys {
                    entity: e.name.clone(),
                    index: index.clone(),
                });
            }
        }
        for (attr, m) in &e.writes.unique {
            if was.is_none_or(|w| w.writes.unique.get(attr) != Some(m)) {
                steps.push(Step::Markers {
                    entity: e.name.clone(),
                    attribute: attr.clone(),
                });
            }
        }
        if let Some(v) = &e.writes.version {
            if was.is_none_or(|w| w.writes.version.as_ref() != Some(v)) {
                steps.push(Step::Versions {
                    entity: e.name.clone(),
                    attribute: v.clone(),
                });
            }
        }
        let counts = |x: &Entity| {
            let mut c: Vec<String> = x
                .writes
                .counts
                .iter()
                .flat_map(|c| c.all().into_iter().map(|n| format!("{}.{n}", c.reference)))
                .collect();
            c.sort();
            c
        };
        let before = was.map(counts).unwrap_or_default();
        for c in &e.writes.counts {
            let new_counters: Vec<String> = c
                .all()
                .into_iter()
                .filter(|n| !before.contains(&format!("{}.{n}", c.reference)))
                .collect();
            if !new_counters.is_empty() {
                steps.push(Step::Counts {
                    entity: e.name.clone(),
                    reference: c.reference.clone(),
                    counters: new_counters,
                });
            }
        }
        let Some(w) = was else {
            continue;
        };
        for (attr, a) in &e.attributes {
            let given = a.auto.is_some()
                || a.on_create.is_some()
                || a.computed.is_some()
                || a.lifetime.is_some()
                || matches!(a.ty, crate::chart::types::Type::Counter)
                || e.writes.version.as_deref() == Some(attr.as_str());
            if !a.optional && !given && !w.attributes.contains_key(attr) {
                refuse(
                    &mut steps,
                    format!("attribute {}.{attr}", e.name),
                    "items written before it lack it: declare it optional, or give them it first",
                );
            }
        }
    }
    // Each table's Scan keeps its checkpoints under numbers of its own, for the first
    // ten tables: a step on the items of a later one is named, not made.
    for step in &mut steps {
        let Some(e) = step
            .entity()
            .and_then(|n| new.entities.get(n))
            .filter(|e| e.table >= super::records::MAX_TABLES)
        else {
            continue;
        };
        *step = Step::Refused {
            what: step.to_string(),
            why: format!(
                "{} is in the table {}, and migrate reads the items of a chart's first {} tables",
                e.name,
                new.tables[e.table].name,
                super::records::MAX_TABLES
            ),
        };
    }
    steps
}

/// Whether a plan has item steps (a Scan).
pub fn scans_items(steps: &[Step]) -> bool {
    steps.iter().any(Step::scans_items)
}

/// A digest of a plan's steps: a stopped run resumes only the same plan.
pub(super) fn digest(steps: &[Step]) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    for s in steps {
        h.update(s.to_string().as_bytes());
        h.update(b"\n");
    }
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOX: &str = include_str!("../../examples/charts/box-office.toml");

    /// The box office with `more` tables of nothing between its two, so the bookings'
    /// table is the `more + 2`th.
    fn box_office_after(more: usize) -> Chart {
        let empty: String = (0..more)
            .map(|i| format!("[[tables]]\nname = \"spare-{i}\"\npartition_key = \"PK\"\nsort_key = \"SK\"\ntype_attribute = \"Type\"\n\n"))
            .collect();
        let text = BOX.replacen(
            "[[tables]]\nname = \"box-office-bookings\"",
            &format!("{empty}[[tables]]\nname = \"box-office-bookings\""),
            1,
        );
        crate::chart::parse(&text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn item_steps_are_made_in_every_table_a_migration_can_checkpoint() {
        // Planned from nothing: the bookings' index keys and counts, in the second table.
        let chart = box_office_after(0);
        let steps = plan(None, &chart, &[]);
        assert!(
            steps
                .iter()
                .any(|s| matches!(s, Step::IndexKeys { entity, .. } if entity == "Booking")),
            "{steps:?}"
        );
        assert!(!steps.iter().any(Step::is_refused), "{steps:?}");
        // The tenth table is the last whose checkpoints the key numbers.
        let tenth = box_office_after(super::super::records::MAX_TABLES - 2);
        assert_eq!(tenth.entities["Booking"].table, 9);
        assert!(!plan(None, &tenth, &[]).iter().any(Step::is_refused));
        // An index renamed in its table is another index: named, not made.
        let renamed = crate::chart::parse(&BOX.replace(
            "[indexes.ByEvent]\ntable = \"box-office-bookings\"",
            "[indexes.ByEvent]\ntable = \"box-office-bookings\"\nstored = \"ByEventV2\"",
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let steps = plan(Some(&chart), &renamed, &["ByEvent".to_owned()]);
        assert!(
            steps.iter().any(|s| s.to_string().contains("index ByEvent")
                && s.to_string().contains("stored name changes")),
            "{steps:?}"
        );
        let eleventh = box_office_after(super::super::records::MAX_TABLES - 1);
        let steps = plan(None, &eleventh, &[]);
        let refused: Vec<String> = steps
            .iter()
            .filter(|s| s.is_refused())
            .map(ToString::to_string)
            .collect();
        assert!(!refused.is_empty(), "{steps:?}");
        assert!(
            refused.iter().all(|r| r.contains(
                "Booking is in the table box-office-bookings, and migrate reads the items of a chart's first 10 tables"
            )),
            "{refused:?}"
        );
    }
}
