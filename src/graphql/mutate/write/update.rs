//! A change: one UpdateItem when nothing needs reading, else a read and one write that
//! moves what depends on the changed values (markers, counts), rebuilt when the item
//! changed in between.

use super::*;
use crate::chart::plan::{MutationPlan, Role, Verb};

pub(super) async fn update(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let (vars, place) = target(rc, chart, m, e, input)?;
    let expected = expected_version(input, e.writes.version.is_some())?;
    // The change: `Some(v)` sets, `None` removes (an optional attribute given as null).
    let mut change: Vec<(String, Option<AttributeValue>)> = Vec::new();
    for f in &m.fields {
        match input.get(f.as_str()) {
            None => {}
            Some(Value::Null) if e.attributes[f].optional => change.push((f.clone(), None)),
            Some(Value::Null) => return Err(ApiError::bad_input(f, format!("{f} cannot be null"))),
            Some(v) => change.push((f.clone(), Some(stored(chart, f, &e.attributes[f].ty, v)?))),
        }
    }
    if change.is_empty() {
        return Err(ApiError::BadUserInput {
            message: format!("nothing to change: give {}", either(&m.fields)),
            field: None,
        });
    }
    let changed = |a: &str| change.iter().any(|(f, _)| f == a);
    let plan = &chart.plans[&m.name];
    let needs_read = plan.read_first.when(&changed);
    let versioned = e.writes.version.is_some();
    let place = match (place, &plan.in_place) {
        (Place::Key(key), Some(act)) if !needs_read => {
            let when = conditions::condition(&act.when, &Values::of_caller(rc));
            return update_in_place(rc, chart, e, &vars, key, when, &change).await;
        }
        (place, _) => place,
    };
    let mut current = locate(rc, chart, e, &place, expected).await?;
    if !visible_item(rc, chart, e, &current) {
        return Err(ApiError::Missing {
            field: lower(&e.name).into(),
        });
    }
    for _ in 0..ATTEMPTS {
        let (actions, meanings, sharded, next) =
            changed_item(chart, plan, e, &current, expected, &change).await?;
        within_transaction_limits(chart, e, &actions, &meanings)?;
        let sent = if versioned {
            send_transaction(rc, chart, plan, actions, sharded).await
        } else {
            send(rc, chart, plan, actions, sharded).await
        };
        match sent {
            Ok(Some(item)) => {
                return Ok(Written {
                    item,
                    lists: Vec::new(),
                    replayed: false,
                })
            }
            Ok(None) => {
                return Ok(Written {
                    item: next,
                    lists: Vec::new(),
                    replayed: false,
                })
            }
            Err(err) => match failed(&err) {
                Some((0, found)) if matches!(meanings.first(), Some(Meaning::Own)) => {
                    match (expected, found) {
                        // What the failure returned is read again only as the caller's.
                        (_, None) => {
                            return Err(ApiError::Missing {
                                field: lower(&e.name).into(),
                            })
                        }
                        (_, Some(found)) if !visible_item(rc, chart, e, found) => {
                            return Err(ApiError::Missing {
                                field: lower(&e.name).into(),
                            })
                        }
                        (Some(v), Some(found))
                            if number(found.get(e.writes.version.as_deref().unwrap_or("")))
                                != v =>
                        {
                            return Err(version_mismatch(e, v, Some(found)))
                        }
                        (_, Some(found)) => current = found.clone(),
                    }
                }
                _ => return Err(explain(err, &meanings)),
            },
        }
    }
    Err(ApiError::Contention)
}

/// A change that needs nothing read (of an entity without a version): one UpdateItem on
/// its plan's condition `when` (the item there, and the caller's tenant's when its key
/// does not say), its index keys rendered from the key and the change. Sent again after a
/// lost reply, it sets the same values.
pub(super) async fn update_in_place(
    rc: &RequestContext,
    chart: &Chart,
    e: &Entity,
    vars: &Vars,
    key: PrimaryKey,
    when: Option<Condition>,
    change: &[(String, Option<AttributeValue>)],
) -> Result<Written> {
    let mut known = Item::new();
    for (name, v) in vars {
        known.insert(
            name.clone(),
            match v {
                KeyValue::Text(t) => s(t),
                KeyValue::Int(i) => n(*i),
            },
        );
    }
    let mut u = UpdateExpr::default();
    for (f, v) in change {
        match v {
            Some(v) => {
                known.insert(f.clone(), v.clone());
                u = u.set(f.clone(), v.clone());
            }
            None => u = u.remove(f.clone()),
        }
    }
    let now = crate::clock::now();
    for (name, a) in &e.attributes {
        if a.auto == Some(Auto::Updated) {
            u = u.set(name.clone(), a.time(&now));
        }
    }
    let known_vars = vars_of(e, &known);
    for (index, k) in &e.indexes {
        let touched =
            k.pk.vars()
                .chain(k.sk.vars())
                .any(|v| change.iter().any(|(f, _)| *f == v.name));
        if !touched {
            continue;
        }
        let i = &chart.indexes[index];
        match (
            k.pk.render(|n| known_vars.get(n).cloned()),
            k.sk.render(|n| known_vars.get(n).cloned()),
        ) {
            (Ok(pk), Ok(sk)) => {
                for (name, v) in i.key_attributes(&pk, &sk) {
                    u = u.set(name, v);
                }
            }
            _ => {
                for name in i.key_names() {
                    u = u.remove(name);
                }
            }
        }
    }
    let mut update = Update::new(key, u).returning(ReturnValues::AllNew);
    update.condition = when;
    match rc.store_of(chart, e)?.update_item(update).await {
        Ok(Some(item)) => Ok(Written {
            item,
            lists: Vec::new(),
            replayed: false,
        }),
        Ok(None) => Err(ApiError::Internal),
        Err(StoreError::ConditionFailed { .. }) => Err(ApiError::Missing {
            field: lower(&e.name).into(),
        }),
        Err(err) => Err(err.into()),
    }
}

/// The actions of a change to `current`: the item's own update first (conditioned on
/// what was read), then its markers moved and its counts moved.
pub(super) async fn changed_item(
    chart: &Chart,
    plan: &MutationPlan,
    e: &Entity,
    current: &Item,
    expected: Option<i64>,
    change: &[(String, Option<AttributeValue>)],
) -> Result<(Vec<TransactAction>, Vec<Meaning>, Sharded, Item)> {
    let version = e.writes.version.as_deref();
    if let (Some(v), Some(attr)) = (expected, version) {
        if number(current.get(attr)) != v {
            return Err(version_mismatch(e, v, Some(current)));
        }
    }
    if let Some(l) = &e.writes.lifecycle {
        let from = match current.get(&l.attribute) {
            Some(AttributeValue::S(s)) => s.clone(),
            _ => String::new(),
        };
        if let Some((_, Some(AttributeValue::S(to)))) =
            change.iter().find(|(f, _)| *f == l.attribute)
        {
            let allowed = l.transitions.get(&from).is_some_and(|t| t.contains(to));
            if !allowed && (*to != from || !l.stay) {
                return Err(ApiError::InvalidTransition {
                    from,
                    to: to.clone(),
                });
            }
        }
    }
    let mut next = current.clone();
    for (f, v) in change {
        match v {
            Some(v) => next.insert(f.clone(), v.clone()),
            None => next.remove(f),
        };
    }
    let now = crate::clock::now();
    for (name, a) in &e.attributes {
        if a.auto == Some(Auto::Updated) {
            next.insert(name.clone(), a.time(&now));
        }
    }
    if let (Some(v), Some(attr)) = (expected, version) {
        next.insert(attr.to_owned(), n(v + 1));
    }
    let next = with_keys(chart, e, next)?;
    crate::store::validate::item_within_size(&next).map_err(|_| {
        ApiError::bad_input(
            &lower(&e.name),
            "the item would be larger than DynamoDB's 400 KB",
        )
    })?;

    // The item's own write: what changed, index keys included, on its plan's condition
    // (there and not expired, still the tenant's it was read as, what the other actions
    // were built from still so).
    let mut u = UpdateExpr::default();
    for (name, v) in &next {
        if chart.table_of(e).key_names().contains(&name.as_str()) {
            continue;
        }
        if current.get(name) != Some(v) {
            u = u.set(name.clone(), v.clone());
        }
    }
    for name in current.keys() {
        if !next.contains_key(name) {
            u = u.remove(name.clone());
        }
    }
    let as_read = Values {
        read: Some(current),
        next: Some(&next),
        expected,
        ..Values::default()
    };
    let item_step = plan.of(Role::Item).next().ok_or(ApiError::Internal)?;
    let key = chart.key_of(current).ok_or(ApiError::Internal)?;
    let mut own = Update::new(key, u);
    own.condition = of_step(item_step, Verb::Update, &as_read)?;
    own.return_old_on_condition_failure = true;
    let mut own = Some(own);
    let mut actions = Vec::new();
    let mut meanings = Vec::new();
    let expiry = e.expiry(chart.table_of(e));
    let mut touches = Touches::default();
    // The mutation's resolved plan, step by step: the item, then what any change of its
    // fields may move, each written when this change's values move it.
    for step in &plan.steps {
        let of = step.of.as_deref().unwrap_or_default();
        match step.role {
            Role::Item => {
                actions.push(TransactAction::Update(
                    own.take().ok_or(ApiError::Internal)?,
                ));
                meanings.push(Meaning::Own);
            }
            Role::Marker => {
                let marker = &chart.entities[&step.entity];
                if current.get(of) == next.get(of) {
                    // The same value: its marker takes the item's new expiry, if it has one.
                    if let Some(t) = expiry.filter(|t| current.get(*t) != next.get(*t)) {
                        if next.contains_key(of) {
                            actions.push(renew_marker(chart, step, marker, &next, t)?);
                            meanings.push(Meaning::Corrupt("a unique marker names another item"));
                        }
                    }
                    continue;
                }
                if current.contains_key(of) {
                    actions.push(drop_marker(chart, step, marker, current)?);
                    meanings.push(Meaning::Corrupt("a unique marker names another item"));
                }
                if next.contains_key(of) {
                    let mut put = Put::new(marker_item(chart, marker, &next, &[])?);
                    put.condition = of_step(step, Verb::Put, &Values::default())?;
                    actions.push(TransactAction::Put(put));
                    meanings.push(Meaning::Taken(of.to_owned()));
                }
            }
            Role::Counter => {
                let c = count_of(e, of)?;
                let r = &e.references[&c.reference];
                let same = |f: &str| current.get(f) == next.get(f);
                if r.key.values().all(|f| same(f)) && c.by_attributes().all(same) {
                    continue;
                }
                touches.count(chart, e, current, c, -1, step).await?;
                touches.count(chart, e, &next, c, 1, step).await?;
            }
            Role::Check => {
                let from = e.references[of].key.values();
                if from.clone().any(|f| current.get(f) != next.get(f)) {
                    touches.check(chart, e, &next, of, step)?;
                }
            }
            // A change's plan has no other step.
            _ => return Err(ApiError::Internal),
        }
    }
    let sharded = touches.into_actions(&mut actions, &mut meanings);
    Ok((actions, meanings, sharded, next))
}

/// `a`, `a or b`, `a, b or c`.
fn either(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conditions of a change's own update of `current`.
    async fn own_conditions(
        chart: &Chart,
        entity: &str,
        current: &Item,
        expected: Option<i64>,
        change: &[(&str, &str)],
    ) -> Vec<Condition> {
        let e = &chart.entities[entity];
        let change: Vec<(String, Option<AttributeValue>)> = change
            .iter()
            .map(|(f, v)| ((*f).to_owned(), Some(s(v))))
            .collect();
        // The item's own update is all these tests look at: the plan of a change that
        // writes only it.
        let plan = MutationPlan {
            mutation: format!("update{entity}"),
            entity: entity.to_owned(),
            action: crate::chart::Action::Update,
            steps: vec![crate::chart::plan::Step {
                role: Role::Item,
                entity: entity.to_owned(),
                of: None,
                least: 1,
                most: 1,
                acts: vec![crate::chart::plan::change_of_item(chart, e)],
                on_shard: None,
                binding: e.binding.clone(),
            }],
            read_first: Default::default(),
            in_place: None,
        };
        let (actions, ..) = changed_item(chart, &plan, e, current, expected, &change)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        match actions.into_iter().next() {
            Some(TransactAction::Update(Update {
                condition: Some(Condition::And(all)),
                ..
            })) => all,
            _ => panic!("the change's first action is its own conditioned update"),
        }
    }

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    /// Without a version, two changes at once of the two parts of one index key must not
    /// both land from the same read: each is conditioned on every part as it read it.
    #[tokio::test]
    async fn a_change_without_a_version_holds_what_each_rewritten_index_key_is_made_of() {
        let text = include_str!("../../../../examples/charts/store-locator.toml")
            .replace(
                "version = \"version\"\nunique = { phone = \"StorePhone\" }",
                "indexes.GSI1 = [\"CHAIN#{chain}#ZONE#{zone}\", \"STATUS#{status}#{country}#{state}#{city}#{number}\"]\nunique = { phone = \"StorePhone\" }",
            )
            .replace(
                "version = { type = \"int\", min = 1, description = \"Bumped by every change; send it back as `expectedVersion` when changing the store.\" }",
                "zone = \"region\"",
            )
            .replace(
                "[tenant]",
                "[indexes.GSI1]\npartition_key = \"GSI1PK\"\nsort_key = \"GSI1SK\"\nprojection = \"ALL\"\n\n[tenant]",
            )
            .replace("version = 1\n", "zone = \"N\"\n");
        let chart = crate::chart::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let chart = crate::graphql::served::served(Arc::new(chart));
        let current = item(&[
            ("PK", s("CHAIN#bean-there")),
            ("SK", s("STORE#US#WA#SEATTLE#1001")),
            ("chain", s("bean-there")),
            ("country", s("US")),
            ("state", s("WA")),
            ("city", s("SEATTLE")),
            ("number", s("1001")),
            ("name", s("Pike Place")),
            ("address", s("102 Pike St")),
            ("hours", AttributeValue::L(Vec::new())),
            ("status", s("OPEN")),
            ("zone", s("N")),
            ("GSI1PK", s("CHAIN#bean-there#ZONE#N")),
            ("GSI1SK", s("STATUS#OPEN#US#WA#SEATTLE#1001")),
        ]);
        let when = own_conditions(&chart, "Store", &current, None, &[("zone", "S")]).await;
        for held in [
            Condition::eq("zone", s("N")),
            Condition::eq("status", s("OPEN")),
        ] {
            assert!(when.contains(&held), "{held:?} not in {when:#?}");
        }
        // A change that rewrites no index key holds nothing more than before.
        let when = own_conditions(&chart, "Store", &current, None, &[("name", "Pike")]).await;
        assert!(!when.contains(&Condition::eq("zone", s("N"))), "{when:#?}");
    }

    /// An expiring item's change, read first (its unique code moves), lands only while it
    /// has not expired: the read found it alive, DynamoDB may not have deleted it yet.
    #[tokio::test]
    async fn a_change_read_first_is_conditioned_on_the_item_not_having_expired() {
        let text = include_str!("../../../../examples/charts/store-locator.toml")
            .replace(
                "type_attribute = \"Type\"",
                "type_attribute = \"Type\"\ntime_to_live = \"expiresAt\"",
            )
            .replace(
                "[query.chain]",
                "[entities.Offer]\nkey = [\"OFFER#{chain}\", \"OFFER#{offerId}\"]\nunique = { code = \"OfferCode\" }\n\
                 [entities.Offer.attributes]\nchain = { type = \"slug\", graphql = false }\nofferId = { type = \"ulid\", auto = \"ulid\" }\n\
                 code = { type = \"token\", optional = true }\nexpiresAt = { type = \"expiry\", lifetime = \"7d\" }\n\
                 [entities.OfferCode]\nkey = [\"OFFERCODE#{chain}#{code}\", \"OFFERCODE#{chain}#{code}\"]\ngraphql = false\n\
                 [entities.OfferCode.attributes]\nchain = \"slug\"\ncode = \"token\"\nofferId = \"ulid\"\nexpiresAt = \"expiry\"\n\n[query.chain]",
            );
        let chart = crate::chart::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let current = item(&[
            ("PK", s("OFFER#bean-there")),
            ("SK", s("OFFER#01HZY5G7V0X4W7M5Q2KJ8C9A1B")),
            ("chain", s("bean-there")),
            ("offerId", s("01HZY5G7V0X4W7M5Q2KJ8C9A1B")),
            ("code", s("SPRING")),
            ("expiresAt", n(crate::chart::epoch_now() + 3600)),
        ]);
        let when = own_conditions(&chart, "Offer", &current, None, &[("code", "SUMMER")]).await;
        let alive = |c: &Condition| {
            matches!(c, Condition::And(parts) if parts.iter().any(|p| matches!(p,
                Condition::Or(o) if o.iter().any(|x| matches!(x,
                    Condition::Cmp(a, crate::store::CmpOp::Gt, _) if a == "expiresAt")))))
        };
        assert!(when.iter().any(alive), "{when:#?}");
    }

    /// A ticket's key names no organization: its change lands only while the ticket is
    /// the organization's it was read as.
    #[tokio::test]
    async fn a_change_of_an_item_whose_key_names_no_tenant_holds_the_tenant_it_read() {
        let chart = crate::chart::builtin();
        let current = item(&[
            ("PK", s("TICKET#01HZY5G7V0X4W7M5Q2KJ8C9A1B")),
            ("SK", s("TICKET#01HZY5G7V0X4W7M5Q2KJ8C9A1B")),
            ("ticketId", s("01HZY5G7V0X4W7M5Q2KJ8C9A1B")),
            ("org", s("acme")),
            ("title", s("t")),
            ("body", s("b")),
            ("status", s("OPEN")),
            ("priority", s("LOW")),
            ("requester", s("alice")),
            ("version", n(3)),
        ]);
        let when = own_conditions(&chart, "Ticket", &current, Some(3), &[("title", "u")]).await;
        assert!(when.contains(&Condition::eq("org", s("acme"))), "{when:#?}");
    }
}
