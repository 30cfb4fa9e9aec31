//! The mutations served by plans of their own: a bulk write of every item a Query finds
//! (`every`), a write of one entry of a map attribute (`put-entry`, `remove-entry`), and
//! the check that a mutation's pattern is the write it makes (rule `one-request`).

use indexmap::IndexMap;

use super::super::format;
use super::super::types::{Kind, Type};
use super::super::{Action, Entity, Mutation, Pattern, Request, WriteRequest};
use super::writes::{in_any_key, key_vars, MAX_ACTIONS};
use super::*;

impl Checker {
    /// A write of one entry of a map attribute (`put-entry`, `remove-entry`): one
    /// UpdateItem of the entry's path, on the item its key (or id) names.
    pub(super) fn entry(
        &mut self,
        name: &str,
        m: &format::Mutation,
        e: &Entity,
        by_id: bool,
        patterns: &IndexMap<u32, Pattern>,
        kinds: &std::collections::HashMap<String, Kind>,
    ) -> Option<Mutation> {
        let refused = self.refusals.len();
        let remove = match m.action.as_str() {
            "put-entry" => false,
            "remove-entry" => true,
            _ => {
                self.refuse("writes", format!("mutation `{name}`: `map` and `key_kind` go with `action = \"put-entry\"` or `\"remove-entry\"`"));
                return None;
            }
        };
        let Some(map) = m.map.clone() else {
            self.refuse(
                "writes",
                format!("mutation `{name}` writes an entry: it names its `map` attribute"),
            );
            return None;
        };
        let (of, max_items) = match e.attributes.get(&map).map(|a| &a.ty) {
            Some(Type::Map { of, max_items }) => ((**of).clone(), *max_items),
            _ => {
                self.refuse("writes", format!("mutation `{name}` writes an entry of `{map}`, which is no map attribute of {}", e.name));
                return None;
            }
        };
        if m.fields.is_some() || m.token.is_some() || !m.with.is_empty() || m.every.is_some() {
            self.refuse("writes", format!("mutation `{name}` writes one entry of `{map}`: `fields`, `token`, `with` and `every` do not apply"));
        }
        let key_kind = match m.key_kind.as_deref() {
            None => None,
            Some(k) => match Kind::builtin(k).or_else(|| kinds.get(k).cloned()) {
                Some(kind) => Some(kind),
                None => {
                    self.refuse(
                        "types",
                        format!("mutation `{name}`: `key_kind` `{k}` is no kind"),
                    );
                    None
                }
            },
        };
        let key = key_vars(e);
        for taken in ["key", "value", "expectedVersion"] {
            if !by_id && key.iter().any(|k| k == taken) {
                self.refuse("names", format!("mutation `{name}` takes the entry's `{taken}`, and `{taken}` is a key attribute of {} too", e.name));
            }
        }
        // The write sets the attributes `updated` gives; one in an index key would move
        // the item in the index, which an entry's write does not render.
        for (a, spec) in &e.attributes {
            if spec.auto == Some(super::super::Auto::Updated) && in_any_key(e, a) {
                self.refuse("writes", format!("mutation `{name}` writes an entry, and `{a}`, which every write sets, is part of a key: the entry's write would leave the key behind"));
            }
        }
        let is = format!("is one UpdateItem (of one entry of `{map}`)");
        self.write_pattern(name, m.pattern, e, WriteRequest::UpdateItem, &is, patterns);
        for f in m.input.keys() {
            let known = (by_id && f == e.plain_id.as_deref().unwrap_or("id"))
                || (!by_id && key.iter().any(|k| k == f))
                || f == "key"
                || (f == "value" && !remove)
                || f == "expectedVersion";
            if !known {
                self.refuse(
                    "writes",
                    format!("mutation `{name}` describes input `{f}`, which it does not take"),
                );
            }
        }
        if self.refusals.len() > refused {
            return None;
        }
        let mut out = special(
            name,
            m,
            e,
            Action::Update,
            WriteRequest::UpdateItem,
            "change",
        );
        out.by_id = by_id;
        out.entry = Some(super::super::Entry {
            map,
            remove,
            key_kind,
            of,
            max_items,
        });
        Some(out)
    }

    /// Mutation `name`'s pattern `number`: a write of its entity, by the request it `is`
    /// (rule `one-request`), serving its field.
    pub(super) fn write_pattern(
        &mut self,
        name: &str,
        number: u32,
        e: &Entity,
        request: WriteRequest,
        is: &str,
        patterns: &IndexMap<u32, Pattern>,
    ) {
        match patterns.get(&number).map(|p| (p, &p.request)) {
            Some((p, Request::Write { request: declared, entity })) => {
                if *entity != e.name {
                    self.refuse("writes", format!("mutation `{name}` writes {}, and its pattern writes {entity}", e.name));
                }
                if *declared != request {
                    self.refuse("one-request", format!("mutation `{name}` {is}, and its pattern says {}", declared.name()));
                }
                if p.field != format!("Mutation.{name}") {
                    self.refuse("fields", format!("mutation `{name}` uses pattern {number}, whose field is `{}`", p.field));
                }
            }
            Some(_) => self.refuse("writes", format!("mutation `{name}` uses pattern {number}, which is no write")),
            None => self.refuse("fields", format!("mutation `{name}` uses pattern {number}, which the chart does not declare (or refused)")),
        }
    }

    /// A bulk delete (`every`): of the children a Query pattern finds, at most `max` a
    /// call, by BatchWriteItems of 25 (each item's key holding its tenant: a batch takes no
    /// condition) or one TransactWriteItems (`atomic`, at most 100, each delete held to the
    /// item as found). What a delete of one item keeps (markers, counts, its children) a
    /// batch cannot: such an entity is refused.
    pub(super) fn bulk(
        &mut self,
        name: &str,
        m: &format::Mutation,
        e: &Entity,
        action: Action,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
    ) -> Option<Mutation> {
        let refused = self.refusals.len();
        let Some(every) = m.every else {
            self.refuse("writes", format!("mutation `{name}`: `max` and `atomic` go with `every`, the Query pattern whose items it deletes"));
            return None;
        };
        if action == Action::Create {
            self.refuse("writes", format!("mutation `{name}` has `every`: a bulk mutation updates or deletes what a Query finds"));
        }
        if m.by.is_some() || m.token.is_some() || !m.with.is_empty() {
            self.refuse("writes", format!("mutation `{name}` writes every item pattern {every} finds: its input is that pattern's key values, so `by`, `token` and `with` do not apply"));
        }
        // A bulk update sets `fields` on each item: what no other item, key or count
        // depends on (a batch renders no key again, moves no marker or count).
        let fields = match (action, &m.fields) {
            (Action::Update, Some(fields)) if !fields.is_empty() => {
                for f in fields {
                    let Some(a) = e.attributes.get(f) else {
                        self.refuse(
                            "writes",
                            format!(
                                "mutation `{name}` sets `{f}`, which is no attribute of {}",
                                e.name
                            ),
                        );
                        continue;
                    };
                    let kept = in_any_key(e, f)
                        || e.writes.unique.contains_key(f)
                        || e.references
                            .values()
                            .any(|r| r.key.values().any(|x| x == f))
                        || e.writes
                            .counts
                            .iter()
                            .any(|c| c.by_attributes().any(|b| b == f))
                        || e.writes
                            .lifecycle
                            .as_ref()
                            .is_some_and(|l| l.attribute == *f)
                        || e.writes.version.as_deref() == Some(f.as_str())
                        || matches!(a.ty, Type::Counter)
                        || a.auto.is_some()
                        || a.on_create.is_some()
                        || a.computed.is_some();
                    if kept {
                        self.refuse("writes", format!("mutation `{name}` sets `{f}` on many {} at once, and `{f}` is part of a key, a reference, a count, a unique value, the life cycle, the version or what the writes give: change it one item at a time", super::super::plural(&e.name)));
                    }
                }
                fields.clone()
            }
            (Action::Update, _) => {
                self.refuse("writes", format!("mutation `{name}` updates every item pattern {every} finds: it names the `fields` it sets"));
                Vec::new()
            }
            (_, Some(_)) => {
                self.refuse("writes", format!("mutation `{name}` deletes every item pattern {every} finds: `fields` are what a bulk update sets"));
                Vec::new()
            }
            (_, None) => Vec::new(),
        };
        let limit = if m.atomic {
            MAX_ACTIONS as u32
        } else {
            MAX_BULK
        };
        let max = match m.max {
            Some(n) if (1..=limit).contains(&n) => n,
            Some(n) => {
                self.refuse(
                    "writes",
                    format!(
                        "mutation `{name}` deletes at most {n} items a call; {}",
                        if m.atomic {
                            format!("one TransactWriteItems takes 1 to {MAX_ACTIONS}")
                        } else {
                            format!("a bulk delete takes 1 to {MAX_BULK}")
                        }
                    ),
                );
                1
            }
            None => {
                self.refuse("writes", format!("mutation `{name}` needs `max`, the most items one call deletes: it bounds the requests the call sends"));
                1
            }
        };
        let condition = match patterns.get(&every).map(|p| &p.request) {
            Some(Request::Query {
                condition,
                children,
                ..
            }) if *children == e.name => condition,
            Some(Request::Query { children, .. }) => {
                self.refuse(
                    "writes",
                    format!(
                        "mutation `{name}` deletes {}, and pattern {every} finds {children}",
                        e.name
                    ),
                );
                return None;
            }
            Some(_) => {
                self.refuse("writes", format!("mutation `{name}` deletes every item pattern {every} finds, and pattern {every} is no Query"));
                return None;
            }
            None => {
                self.refuse("fields", format!("mutation `{name}` deletes every item pattern {every} finds, which the chart does not declare (or refused)"));
                return None;
            }
        };
        if !e.lists.is_empty() {
            self.refuse("writes", format!("mutation `{name}` deletes every {} a Query finds, and each holds lists that would be left behind, orphaned", e.name));
        }
        if !e.writes.unique.is_empty() {
            self.refuse("writes", format!("mutation `{name}` deletes many {} at once, whose unique markers a bulk delete does not free: delete them one at a time", super::super::plural(&e.name)));
        }
        if !e.writes.counts.is_empty() {
            self.refuse("writes", format!("mutation `{name}` deletes many {} at once, whose counts on what they reference a bulk delete does not keep: delete them one at a time", super::super::plural(&e.name)));
        }
        let counted = entities.values().any(|o| {
            o.writes.counts.iter().any(|c| {
                o.references
                    .get(&c.reference)
                    .is_some_and(|r| r.entity == e.name)
            })
        });
        if counted {
            self.refuse("writes", format!("mutation `{name}` deletes many {} at once, which others count on: a bulk delete cannot hold each to its counts being 0", super::super::plural(&e.name)));
        }
        if entities
            .values()
            .any(|s| s.shards_of.as_ref().is_some_and(|(of, _)| *of == e.name))
        {
            self.refuse("writes", format!("mutation `{name}` deletes many {} at once, whose counter shards it would leave behind", super::super::plural(&e.name)));
        }
        match (&e.binding, m.atomic) {
            (super::super::Binding::Open | super::super::Binding::Key(_), _) => {}
            (super::super::Binding::Condition(_), true) => {}
            (super::super::Binding::Condition(a), false) => {
                self.refuse("tenant", format!("mutation `{name}` deletes {} by BatchWriteItem, which takes no condition, and their keys do not hold the tenant (`{a}` is held by a condition): make it `atomic`, one TransactWriteItems whose deletes are each held to the caller's tenant", super::super::plural(&e.name)));
            }
            (_, _) => {
                self.refuse("tenant", format!("mutation `{name}` deletes many {}, whose items hold no tenant of their own to be held to: a bulk delete is not served for them", super::super::plural(&e.name)));
            }
        }
        let inputs: Vec<(String, Type, bool)> = {
            let mut out: Vec<(String, Type, bool)> = Vec::new();
            for t in condition.templates() {
                for v in t.vars() {
                    if out.iter().any(|(n, ..)| *n == v.name) {
                        continue;
                    }
                    match super::super::reach::var_type(condition, entities, &v.name) {
                        Some(ty) => out.push((v.name.clone(), ty, v.optional)),
                        None => self.refuse("writes", format!("mutation `{name}`: pattern {every}'s key value `{}` meets no attribute of what it reads, so its input has no type", v.name)),
                    }
                }
            }
            out
        };
        // The tenant: the Query's partition holds it, as the caller gives it.
        let tenant_input = match &e.binding {
            super::super::Binding::Key(attr) | super::super::Binding::Condition(attr) => {
                let held = super::super::reach::alignments(condition, e)
                    .into_iter()
                    .find(|(cv, a)| a == attr && condition.partition.vars().any(|v| v.name == *cv))
                    .map(|(cv, _)| cv);
                if held.is_none() {
                    self.refuse("tenant", format!("mutation `{name}` deletes what pattern {every} finds, and its partition `{}` holds no `{attr}` of theirs: the Query would cross tenants", condition.partition.source()));
                }
                held
            }
            _ => None,
        };
        // BatchWriteItem takes puts and deletes only: an update is TransactWriteItems of
        // up to 100 items at a time.
        let request = if m.atomic || action == Action::Update {
            WriteRequest::TransactWriteItems
        } else {
            WriteRequest::BatchWriteItem
        };
        let is = format!(
            "{} by {}",
            if action == Action::Update {
                "updates"
            } else {
                "deletes"
            },
            request.name()
        );
        self.write_pattern(name, m.pattern, e, request, &is, patterns);
        for f in m.input.keys() {
            if !inputs.iter().any(|(n, ..)| n == f) {
                self.refuse(
                    "writes",
                    format!("mutation `{name}` describes input `{f}`, which it does not take"),
                );
            }
        }
        if self.refusals.len() > refused {
            return None;
        }
        let verb = if action == Action::Update {
            "change"
        } else {
            "remove"
        };
        let mut out = special(name, m, e, action, request, verb);
        out.fields = fields;
        out.every = Some(super::super::Every {
            pattern: every,
            max,
            atomic: m.atomic,
            inputs,
            tenant_input,
        });
        Some(out)
    }
}

/// A mutation served by a plan of its own (a bulk delete, a map entry's write): what it
/// shares with every mutation, `verb` what its refusal says only its role may do.
fn special(
    name: &str,
    m: &format::Mutation,
    e: &Entity,
    action: Action,
    request: WriteRequest,
    verb: &str,
) -> Mutation {
    Mutation {
        name: name.to_owned(),
        entity: e.name.clone(),
        action,
        pattern: m.pattern,
        by_id: false,
        fields: Vec::new(),
        required: Vec::new(),
        token: None,
        role: m.role.clone(),
        may: m
            .may
            .clone()
            .unwrap_or_else(|| format!("{verb} {}", super::super::plural(&e.name))),
        description: m.description.clone(),
        input_description: m.input_description.clone(),
        payload: m.payload.clone(),
        with: IndexMap::new(),
        input: m.input.clone(),
        request,
        every: None,
        entry: None,
    }
}

/// The most items one call of a bulk delete deletes: 40 BatchWriteItems of 25.
pub const MAX_BULK: u32 = 1000;
