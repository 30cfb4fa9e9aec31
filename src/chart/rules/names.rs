//! The names the GraphQL schema gives what a chart declares (rule `names`): no two of its
//! types share one ([`crate::chart::schema_names::types`] lists them), nor two fields of a
//! type the schema makes of its own: the Query root, a mutation's input and payload, an
//! entity's events. async-graphql keeps only the later of two types of a name, and will
//! not build an object with two fields of one. An entity's own fields are checked with
//! its fields (`Checker::fields`); the viewer's are the tenant's, the viewer's (one field
//! when they are one entity) and `role`, which no entity can take (`Role` is a type).

use super::super::{Action, Chart};
use super::*;
use crate::chart::schema_names::{lower_first, upper_first};

/// The Query root's fields the schema gives it whatever the chart.
const ROOT_FIELDS: [&str; 3] = ["node", "nodes", "viewer"];

impl Checker {
    pub(super) fn schema_names(&mut self, chart: &Chart) {
        let types = crate::chart::schema_names::types(chart);
        for (i, t) in types.iter().enumerate() {
            let Some(first) = types[..i].iter().find(|o| o.name == t.name) else {
                continue;
            };
            self.at(t.entity.as_deref().or(first.entity.as_deref()), None);
            self.refuse(
                "names",
                format!(
                    "two types of the schema are named `{}`: {} and {}",
                    t.name, first.what, t.what
                ),
            );
        }
        self.at(None, None);
        for name in chart.query.keys() {
            if ROOT_FIELDS.contains(&name.as_str()) {
                self.refuse(
                    "names",
                    format!("root field `{name}` has the name of one the schema gives the Query itself (`node`, `nodes`, `viewer`)"),
                );
            }
        }
        for m in chart.mutations.values() {
            let Some(e) = chart.entities.get(&m.entity) else {
                continue;
            };
            self.at(Some(&e.name), Some(m.pattern));
            // Its input's fields: every attribute for a create (a hidden one is an input
            // too), the lists it writes and its token; for a change or a delete, the key
            // (or the id), the expected version and what it changes.
            let mut input: Vec<&str> = Vec::new();
            match m.action {
                Action::Create => {
                    input.extend(e.attributes.keys().map(String::as_str));
                    input.extend(m.with.keys().map(String::as_str));
                    if m.token.is_some() {
                        input.push("clientToken");
                    }
                }
                Action::Update | Action::Delete => {
                    if m.by_id {
                        input.push(e.plain_id.as_deref().unwrap_or("id"));
                    } else {
                        for v in e.key.pk.vars().chain(e.key.sk.vars()) {
                            if !input.contains(&v.name.as_str()) {
                                input.push(v.name.as_str());
                            }
                        }
                    }
                    if e.writes.version.is_some() {
                        input.push("expectedVersion");
                    }
                    input.extend(m.fields.iter().map(String::as_str));
                }
            }
            for f in duplicates(&input) {
                self.refuse(
                    "names",
                    format!(
                        "mutation `{}`: two fields of its input would be named `{f}`",
                        m.name
                    ),
                );
            }
            if m.token.is_some() && lower_first(&e.name) == "replayed" {
                self.refuse(
                    "names",
                    format!(
                        "mutation `{}`: its payload's `replayed` and its {} would be one field",
                        m.name, e.name
                    ),
                );
            }
        }
        let mut streamed: Vec<&str> = Vec::new();
        for sub in chart.subscriptions.values() {
            if streamed.contains(&sub.entity.as_str()) {
                continue;
            }
            streamed.push(sub.entity.as_str());
            let Some(e) = chart.entities.get(&sub.entity) else {
                continue;
            };
            self.at(Some(&e.name), None);
            // An event's fields: `kind`, the entity, each `previous…`, `changed`, `cursor`.
            let subs: Vec<_> = chart
                .subscriptions
                .values()
                .filter(|s| s.entity == e.name)
                .collect();
            let mut previous: Vec<&str> = Vec::new();
            for p in subs.iter().copied().flat_map(|s| s.previous.keys()) {
                if !previous.contains(&p.as_str()) {
                    previous.push(p.as_str());
                }
            }
            let mut fields = vec!["kind".to_owned(), lower_first(&e.name)];
            fields.extend(
                previous
                    .iter()
                    .map(|p| format!("previous{}", upper_first(p))),
            );
            if subs.iter().any(|s| s.changed) {
                fields.push("changed".to_owned());
            }
            fields.push("cursor".to_owned());
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            for f in duplicates(&fields) {
                self.refuse(
                    "names",
                    format!(
                        "two fields of the events of {} would be named `{f}`",
                        e.name
                    ),
                );
            }
        }
        self.at(None, None);
    }
}

/// The names given more than once, each once.
fn duplicates<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) && !out.contains(n) {
            out.push(*n);
        }
    }
    out
}
