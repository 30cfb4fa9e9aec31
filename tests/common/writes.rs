//! The built-in design's writes as the tests make them: its chart's mutations, run in
//! process over a store with auth off, as any client of the API writes (one schema for
//! the whole test binary).
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use itemgraph::auth::Access;
use itemgraph::graphql::{self, ItemgraphSchema};
use itemgraph::store::Store;
use serde_json::{json, Value};

use super::records::{Order, OrderLine, Ticket, TicketStatus, User};

fn schema() -> &'static ItemgraphSchema {
    static SCHEMA: OnceLock<ItemgraphSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        graphql::schema_with(&graphql::Limits {
            request_timeout: std::time::Duration::from_secs(120),
            ..graphql::Limits::default()
        })
    })
}

/// A mutation the API refused: its first error's code, field and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: String,
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{} ({field}): {}", self.code, self.message),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

/// Runs `query` with `variables` over `store`; its `data`, or the first error.
pub async fn run(store: Arc<dyn Store>, query: &str, variables: Value) -> Result<Value, Refused> {
    let request = async_graphql::Request::new(query)
        .variables(async_graphql::Variables::from_json(variables));
    let response = graphql::execute(
        schema(),
        store,
        super::graphql::cursors(),
        Access::Unrestricted,
        request,
        false,
    )
    .await;
    let response = serde_json::to_value(&response).expect("a response serializes");
    match response["errors"].as_array().and_then(|e| e.first()) {
        Some(e) => Err(Refused {
            code: e["extensions"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            field: e["extensions"]["field"].as_str().map(str::to_owned),
            message: e["message"].as_str().unwrap_or_default().to_owned(),
        }),
        None => Ok(response["data"].clone()),
    }
}

/// The store as the API takes it.
pub fn shared<S: Store + Clone + 'static>(store: &S) -> Arc<dyn Store> {
    Arc::new(store.clone())
}

/// `createTicket` of `t`'s organization, requester, title, body, priority and assignee:
/// the ticket as created (its id, times and version the server's; `OPEN`).
pub async fn create_ticket(store: Arc<dyn Store>, t: &Ticket) -> Result<Ticket, Refused> {
    assert_eq!(t.status, TicketStatus::Open, "a ticket is created open");
    let data = run(
        store,
        "mutation($input: CreateTicketInput!) { createTicket(input: $input) {
           ticket { ticketId createdAt updatedAt version } } }",
        json!({ "input": {
            "org": t.org.to_string(),
            "requester": t.requester.to_string(),
            "title": t.title,
            "body": t.body,
            "priority": t.priority.as_str(),
            "assignee": t.assignee.as_ref().map(ToString::to_string),
        }}),
    )
    .await?;
    let made = &data["createTicket"]["ticket"];
    Ok(Ticket {
        ticket_id: itemgraph::chart::kinds::Id::parse(made["ticketId"].as_str().unwrap())
            .expect("a ticket id"),
        created_at: made["createdAt"].as_str().unwrap().to_owned(),
        updated_at: made["updatedAt"].as_str().unwrap().to_owned(),
        version: made["version"].as_u64().unwrap() as u32,
        ..t.clone()
    })
}

/// `createUser` of `u` (its counts are the server's: none yet).
pub async fn create_user(store: Arc<dyn Store>, u: &User) -> Result<(), Refused> {
    run(
        store,
        "mutation($input: CreateUserInput!) { createUser(input: $input) { user { username } } }",
        json!({ "input": {
            "org": u.org.to_string(),
            "username": u.username.to_string(),
            "email": u.email.to_string(),
            "name": u.name,
            "role": u.role.as_str(),
        }}),
    )
    .await
    .map(drop)
}

/// `placeOrder` of `order`'s organization, buyer and currency with `lines` (their
/// amounts are the server's), under `client_token` when given: the order id.
pub async fn place_order(
    store: Arc<dyn Store>,
    order: &Order,
    lines: &[OrderLine],
    client_token: Option<&str>,
) -> Result<(itemgraph::chart::kinds::Id, bool), Refused> {
    let lines: Vec<Value> = lines
        .iter()
        .map(|l| {
            json!({
                "sku": l.sku,
                "description": l.description,
                "quantity": l.quantity,
                "unitPriceCents": l.unit_price_cents,
            })
        })
        .collect();
    let data = run(
        store,
        "mutation($input: PlaceOrderInput!) { placeOrder(input: $input) {
           replayed order { orderId } } }",
        json!({ "input": {
            "org": order.org.to_string(),
            "buyer": order.buyer.to_string(),
            "currency": order.currency,
            "lines": lines,
            "clientToken": client_token,
        }}),
    )
    .await?;
    let placed = &data["placeOrder"];
    Ok((
        itemgraph::chart::kinds::Id::parse(placed["order"]["orderId"].as_str().unwrap())
            .expect("an order id"),
        placed["replayed"].as_bool().unwrap_or(false),
    ))
}

/// What an organization counts, as the API reads it (its own item and every counter
/// shard): `userCount`, `orderCount` and `ticketCount`; `None` when there is none.
pub async fn counts(store: Arc<dyn Store>, org: &str) -> Option<(u32, u32, u32)> {
    let data = run(
        store,
        "query($slug: String!) { organization(slug: $slug) { userCount orderCount ticketCount } }",
        json!({ "slug": org }),
    )
    .await
    .expect("an organization read");
    let o = data.get("organization").filter(|o| !o.is_null())?;
    let n = |f: &str| o[f].as_u64().expect("a count") as u32;
    Some((n("userCount"), n("orderCount"), n("ticketCount")))
}
