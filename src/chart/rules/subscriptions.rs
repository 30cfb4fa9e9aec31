//! The subscriptions (rule `writes`, `tenant`): each streams a GraphQL type that names its
//! tenant, narrowed by attributes that hold identifiers, enum values or integers.

use indexmap::IndexMap;

use super::super::format::File;
use super::super::types::Type;
use super::super::Entity;
use super::*;

impl Checker {
    /// Each subscription streams a GraphQL type that names its tenant, narrowed by
    /// attributes that hold identifiers, enum values or integers.
    pub(super) fn subscriptions(&mut self, file: &File, entities: &IndexMap<String, Entity>) {
        for (name, sub) in &file.subscriptions {
            self.at(Some(&sub.entity), None);
            if !is_graphql_name(name) {
                self.refuse(
                    "names",
                    format!("subscription `{name}` is not a GraphQL name"),
                );
            }
            let Some(e) = entities.get(&sub.entity).filter(|e| e.graphql && !e.system) else {
                self.refuse(
                    "writes",
                    format!(
                        "subscription `{name}` streams `{}`, which is no GraphQL type of the chart",
                        sub.entity
                    ),
                );
                continue;
            };
            let tenant = file.tenant.as_ref().and_then(|t| {
                let attr = e.tenant.clone().unwrap_or_else(|| t.attribute.clone());
                e.attributes.contains_key(&attr).then_some(attr)
            });
            match (&file.tenant, tenant) {
                (Some(t), None) => self.refuse("tenant", format!("subscription `{name}` streams {}, which names no {}: a subscriber could not be held to their own", e.name, t.entity)),
                (Some(t), Some(_)) if sub.filters.contains(&t.attribute) => self.refuse("writes", format!("subscription `{name}`: the tenant `{}` is its argument already", t.attribute)),
                (None, _) => self.refuse("tenant", format!("subscription `{name}`: a chart without a tenant has no one to stream changes to")),
                _ => {}
            }
            let by_id = sub
                .arguments
                .values()
                .filter(|a| a.attribute == "id")
                .count();
            let filtered = sub
                .filters
                .iter()
                .chain(sub.arguments.values().map(|a| &a.attribute))
                .filter(|a| *a != "id");
            for f in filtered {
                match e.attributes.get(f).map(|a| &a.ty) {
                    Some(Type::Kind(_) | Type::Enum { .. } | Type::Int { .. }) => {}
                    _ => self.refuse("writes", format!("subscription `{name}` filters by `{f}`, which is no identifier, enum or int attribute of {}", e.name)),
                }
            }
            if by_id > 0 && !e.node {
                self.refuse(
                    "writes",
                    format!(
                        "subscription `{name}` filters by id, and {} is no node",
                        e.name
                    ),
                );
            }
            let tenant_arg = file.tenant.as_ref().map(|t| t.attribute.as_str());
            let mut args: Vec<&str> = sub.filters.iter().map(String::as_str).collect();
            for a in sub.arguments.keys() {
                if !is_graphql_name(a)
                    || args.contains(&a.as_str())
                    || [Some("after"), tenant_arg].contains(&Some(a.as_str()))
                {
                    self.refuse("writes", format!("subscription `{name}`: argument `{a}` is no GraphQL name, or another argument's"));
                }
                args.push(a);
            }
            for p in sub.previous.keys() {
                if !e.attributes.get(p).is_some_and(|a| a.graphql) {
                    self.refuse("writes", format!("subscription `{name}`: `previous` names `{p}`, which is no field of {}", e.name));
                }
            }
        }
        self.at(None, None);
    }
}
