//! Orders: the `Order` and `OrderLine` types' fields, `Query.order` with its lines
//! (access pattern 7), and the order mutations (12, 17).

use std::sync::Arc;

use async_graphql::{Context, ErrorExtensions, InputObject, Object, Result, SimpleObject, ID};

use super::context::{prime, rc, RequestContext};
use super::errors::ApiError;
use super::ids::GlobalId;
use super::input::{
    answer, currency, fits, order_id, text, version, visible, ApiResult, MAX_DESCRIPTION_CHARS,
    MAX_SKU_CHARS,
};
use super::objects::{Order, OrderLine, OrderStatus, Organization, User};
use super::prefetch::Prefetched;
use super::scalars::{int, Cents};
use crate::collections::{self, PlacedOrder, MAX_ORDER_LINES};
use crate::keys::{validate_client_token, validate_slug, validate_username, Id, LineNo, Slug};
use crate::model::{self, Entity};

/// Access pattern 7: the order and all its lines (at most [`MAX_ORDER_LINES`]). The order
/// id names no organization, so the order is read, and another organization's answers as
/// a missing one: no order, no lines.
pub async fn fetch_order_lines(
    rc: &RequestContext,
    order_id: Id,
) -> std::result::Result<(Option<model::Order>, Vec<model::OrderLine>), ApiError> {
    let page = collections::Page::first(MAX_ORDER_LINES as u32);
    let out = collections::get_order_with_lines(rc.store.as_ref(), order_id, page).await?;
    match out.order {
        Some(order) if rc.sees(&order.org) => {
            prime(rc, std::slice::from_ref(&order)).await;
            Ok((Some(order), out.lines))
        }
        _ => Ok((None, Vec::new())),
    }
}

#[Object]
impl Order {
    /// Opaque global id, for `node(id)`.
    pub(super) async fn id(&self) -> ID {
        ID(GlobalId::Order(self.rec.org.clone(), self.rec.order_id).encode())
    }
    /// The plain order id (a ULID: sorts by placement time); `order(id)` accepts it too.
    async fn order_id(&self) -> String {
        self.rec.order_id.to_string()
    }
    async fn status(&self) -> OrderStatus {
        self.rec.status.into()
    }
    /// RFC 3339, UTC.
    async fn placed_at(&self) -> &str {
        &self.rec.placed_at
    }
    /// ISO 4217 code.
    async fn currency(&self) -> &str {
        &self.rec.currency
    }
    /// Sum of the lines' `amountCents`.
    async fn total_cents(&self) -> Cents {
        Cents(self.rec.total_cents)
    }
    /// Bumped by every change; send it back as `expectedVersion` when changing the order.
    async fn version(&self) -> i32 {
        int(self.rec.version)
    }
    /// Who placed the order.
    async fn buyer(&self, ctx: &Context<'_>) -> Result<User> {
        User::load(ctx, &self.rec.org, &self.rec.buyer)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("buyer {}", self.rec.buyer)).extend())
    }
    async fn organization(&self, ctx: &Context<'_>) -> Result<Organization> {
        Organization::load(ctx, &self.rec.org).await
    }
    /// The order's lines, by line number. Read together with the order in one Query
    /// (GSI1) by `Query.order`. Costs what the most lines an order can have would.
    #[graphql(
        complexity = "crate::collections::MAX_ORDER_LINES.saturating_mul(child_complexity).saturating_add(1)"
    )]
    async fn lines(&self, ctx: &Context<'_>) -> Result<Vec<OrderLine>> {
        let lines = match &self.pages.lines {
            Some(lines) => lines.clone(),
            None => {
                fetch_order_lines(rc(ctx), self.rec.order_id)
                    .await
                    .map_err(|e| e.extend())?
                    .1
            }
        };
        Ok(lines.into_iter().map(OrderLine).collect())
    }
}

#[Object]
impl OrderLine {
    /// 1-based position in the order.
    async fn line_no(&self) -> i32 {
        i32::from(self.0.line_no.get())
    }
    async fn sku(&self) -> &str {
        &self.0.sku
    }
    async fn description(&self) -> &str {
        &self.0.description
    }
    async fn quantity(&self) -> i32 {
        int(self.0.quantity)
    }
    async fn unit_price_cents(&self) -> Cents {
        Cents(self.0.unit_price_cents)
    }
    /// `quantity × unitPriceCents`.
    async fn amount_cents(&self) -> Cents {
        Cents(self.0.amount_cents)
    }
}
/// An order id given as a global id (which names the organization too) or as the plain
/// ULID; `None` for another type's id.
pub(super) fn order_id_arg(id: &str) -> Result<Option<(Option<Slug>, Id)>> {
    if let Ok(plain) = Id::parse(id) {
        return Ok(Some((None, plain)));
    }
    match GlobalId::decode("id", id).map_err(|e| e.extend())? {
        GlobalId::Order(org, o) => Ok(Some((Some(org), o))),
        _ => Ok(None),
    }
}

/// The root fields of orders.
#[derive(Default)]
pub struct OrderQuery;

#[Object]
impl OrderQuery {
    /// An order by its global `id` or its plain `orderId`, with its lines, in one Query;
    /// null when there is none.
    async fn order(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Order>> {
        let rc = ctx.data_unchecked::<RequestContext>();
        let Some((org, order_id)) = order_id_arg(&id)? else {
            return Ok(None);
        };
        if org.as_ref().is_some_and(|org| !rc.sees(org)) {
            return Ok(None);
        }
        let (order, lines) = fetch_order_lines(rc, order_id)
            .await
            .map_err(|e| e.extend())?;
        Ok(order
            .filter(|o| org.as_ref().is_none_or(|org| *org == o.org))
            .map(|o| Order {
                rec: Arc::new(o),
                pages: Arc::new(Prefetched {
                    lines: Some(lines),
                    ..Default::default()
                }),
            }))
    }
}

/// One line of a new order.
#[derive(InputObject)]
pub struct OrderLineInput {
    /// Stock-keeping unit, at most 64 characters, one line.
    pub sku: String,
    /// At most 500 characters, one line.
    pub description: String,
    /// 1 or more.
    pub quantity: i32,
    /// 0 or more; `amountCents` is `quantity × unitPriceCents`.
    pub unit_price_cents: Cents,
}

/// A new order. Lines are numbered in the order given, from 1; the total is computed.
#[derive(InputObject)]
pub struct PlaceOrderInput {
    /// The organization's slug.
    pub org: String,
    /// Username of who places the order; a member of the organization.
    pub buyer: String,
    /// ISO 4217 code: three uppercase letters, like `USD`.
    pub currency: String,
    /// At least one line, at most 96.
    pub lines: Vec<OrderLineInput>,
    /// An idempotency key of your choosing (1 to 64 letters, digits, `_` or `-`, e.g. a
    /// UUID), the same for every retry of one order: a retry after a lost answer then
    /// returns the order the first attempt placed, with `replayed: true`, instead of
    /// placing it twice. Tokens are per organization and never expire.
    pub client_token: Option<String>,
}

#[derive(SimpleObject)]
pub struct PlaceOrderPayload {
    /// The order, with its lines.
    pub order: Order,
    /// True when `clientToken` named an order placed before: nothing new was placed.
    pub replayed: bool,
}

/// A status change for an order, guarded by the version the client last read.
#[derive(InputObject)]
pub struct UpdateOrderStatusInput {
    /// The order's global `id` or its plain `orderId`.
    pub order_id: ID,
    pub status: OrderStatus,
    /// The `version` the change is based on; `VERSION_MISMATCH` when the order moved on.
    pub expected_version: i32,
}

#[derive(SimpleObject)]
pub struct UpdateOrderStatusPayload {
    /// The order as changed, at its new `version`.
    pub order: Order,
}

/// The mutations of orders.
#[derive(Default)]
pub struct OrderMutation;

#[Object]
impl OrderMutation {
    /// Places an order with its lines, counted on the organization; amounts and the total
    /// are computed here. `NOT_FOUND` when the organization or the buyer does not exist
    /// (`field` says which). With a `clientToken`, retrying is safe: see
    /// `PlaceOrderInput.clientToken`. One request: a TransactWriteItems; a replay is that
    /// refused TransactWriteItems plus one Query on GSI1 reading the order back.
    async fn place_order(
        &self,
        ctx: &Context<'_>,
        input: PlaceOrderInput,
    ) -> Result<PlaceOrderPayload> {
        answer(place_order(rc(ctx), input).await).map(|placed| PlaceOrderPayload {
            order: Order {
                rec: Arc::new(placed.order),
                pages: Arc::new(Prefetched {
                    lines: Some(placed.lines),
                    ..Default::default()
                }),
            },
            replayed: placed.replayed,
        })
    }

    /// Moves an order along its fulfilment: `PLACED` → `PAID` → `SHIPPED` →
    /// `DELIVERED`, or `CANCELLED` before it ships. `INVALID_TRANSITION` for any other
    /// move, `VERSION_MISMATCH` when the order changed since `expectedVersion`,
    /// `NOT_FOUND` (`field: "order"`) when there is no such order. Admins only
    /// (`FORBIDDEN`). Two requests: a Query
    /// on GSI1 reading the order, then a conditional UpdateItem (plus a GetItem between
    /// them in the rare case the index lags behind `expectedVersion`).
    async fn update_order_status(
        &self,
        ctx: &Context<'_>,
        input: UpdateOrderStatusInput,
    ) -> Result<UpdateOrderStatusPayload> {
        answer(update_order_status(rc(ctx), input).await).map(|o| UpdateOrderStatusPayload {
            order: Order::new(o),
        })
    }
}

/// The order and its lines as `input` describes them: lines numbered from 1, amounts and
/// total computed with checked arithmetic.
fn new_order(input: &PlaceOrderInput) -> ApiResult<(model::Order, Vec<model::OrderLine>)> {
    let org = validate_slug("org", &input.org)?;
    let buyer = validate_username("buyer", &input.buyer)?;
    let currency = currency("currency", &input.currency)?;
    if input.lines.is_empty() || input.lines.len() > MAX_ORDER_LINES {
        return Err(ApiError::bad_input(
            "lines",
            format!(
                "an order has 1 to {MAX_ORDER_LINES} lines, got {}",
                input.lines.len()
            ),
        ));
    }
    let order_id = Id::generate();
    let mut lines = Vec::with_capacity(input.lines.len());
    let mut total: i64 = 0;
    for (i, line) in input.lines.iter().enumerate() {
        let field = |f: &str| format!("lines[{i}].{f}");
        let sku = text(&field("sku"), &line.sku, MAX_SKU_CHARS, false)?;
        let description = text(
            &field("description"),
            &line.description,
            MAX_DESCRIPTION_CHARS,
            false,
        )?;
        let quantity = u32::try_from(line.quantity)
            .ok()
            .filter(|q| *q >= 1)
            .ok_or_else(|| ApiError::bad_input(&field("quantity"), "quantity must be 1 or more"))?;
        let Cents(unit_price_cents) = line.unit_price_cents;
        if unit_price_cents < 0 {
            return Err(ApiError::bad_input(
                &field("unitPriceCents"),
                "unitPriceCents must be 0 or more",
            ));
        }
        let amount_cents = i64::from(quantity)
            .checked_mul(unit_price_cents)
            .ok_or_else(|| {
                ApiError::bad_input(
                    &format!("lines[{i}]"),
                    "quantity × unitPriceCents is too large",
                )
            })?;
        total = total
            .checked_add(amount_cents)
            .ok_or_else(|| ApiError::bad_input("lines", "the order total is too large"))?;
        let line_no = u16::try_from(i + 1)
            .ok()
            .and_then(|n| LineNo::new(n).ok())
            .ok_or_else(|| ApiError::bad_input("lines", "too many lines"))?;
        let line = model::OrderLine {
            order_id,
            line_no,
            sku,
            description,
            quantity,
            unit_price_cents,
            amount_cents,
        };
        fits(&format!("lines[{i}]"), &line)?;
        lines.push(line);
    }
    let order = model::Order {
        order_id,
        org,
        buyer,
        status: model::OrderStatus::Placed,
        placed_at: model::now(),
        currency,
        total_cents: total,
        line_count: lines.len() as u32,
        version: 1,
    };
    fits("lines", &order)?;
    Ok((order, lines))
}

pub(super) async fn place_order(
    rc: &RequestContext,
    input: PlaceOrderInput,
) -> ApiResult<PlacedOrder> {
    let (order, lines) = new_order(&input)?;
    visible(rc, &order.org, "organization")?;
    let token = input
        .client_token
        .as_deref()
        .map(|t| validate_client_token("clientToken", t))
        .transpose()?;
    let placed = collections::place_order(
        rc.store.as_ref(),
        &order,
        &lines,
        token.as_ref().map(|t| t.as_str()),
    )
    .await?;
    rc.after_write(vec![placed.order.clone().into()]).await;
    Ok(placed)
}

pub(super) async fn update_order_status(
    rc: &RequestContext,
    input: UpdateOrderStatusInput,
) -> ApiResult<model::Order> {
    let (org, id) = order_id("orderId", &input.order_id)?;
    let expected = version("expectedVersion", input.expected_version)?;
    let status: model::OrderStatus = input.status.into();
    rc.access.require_admin("change orders")?;
    // A plain order id is looked up within the caller's organization; a global id naming
    // another one is as missing as an order that does not exist.
    let org = match (org, rc.access.org()) {
        (Some(named), Some(own)) if named != *own => {
            return Err(ApiError::Missing { field: "order" })
        }
        (named, own) => named.or_else(|| own.cloned()),
    };
    let order =
        collections::update_org_order_status(rc.store.as_ref(), org.as_ref(), id, status, expected)
            .await?;
    rc.after_write(vec![Entity::Order(order.clone())]).await;
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graphql::input::bad_input_field as field;

    fn line(quantity: i32, unit_price_cents: i64) -> OrderLineInput {
        OrderLineInput {
            sku: "ANVIL".into(),
            description: "Anvil, 100 kg".into(),
            quantity,
            unit_price_cents: Cents(unit_price_cents),
        }
    }

    fn order_input(lines: Vec<OrderLineInput>) -> PlaceOrderInput {
        PlaceOrderInput {
            org: "acme".into(),
            buyer: "wile-e-coyote".into(),
            currency: "USD".into(),
            lines,
            client_token: None,
        }
    }

    #[test]
    fn orders_are_numbered_and_totalled() {
        let (order, lines) = new_order(&order_input(vec![line(2, 1999), line(1, 0)])).unwrap();
        assert_eq!(order.total_cents, 3998);
        assert_eq!(order.line_count, 2);
        assert_eq!(
            lines.iter().map(|l| l.line_no.get()).collect::<Vec<_>>(),
            [1, 2]
        );
        assert!(lines.iter().all(|l| l.order_id == order.order_id));
        collections::check_order(&order, &lines).unwrap();
    }

    #[test]
    fn bad_orders_name_the_field() {
        let cases = [
            (vec![], "lines"),
            (vec![line(1, 1), line(0, 1)], "lines[1].quantity"),
            (vec![line(-1, 1)], "lines[0].quantity"),
            (vec![line(1, -1)], "lines[0].unitPriceCents"),
            (vec![line(2, i64::MAX / 2 + 1)], "lines[0]"),
            (vec![line(1, i64::MAX), line(1, 1)], "lines"),
        ];
        for (lines, expected) in cases {
            let e = new_order(&order_input(lines)).unwrap_err();
            assert_eq!(field(e).as_deref(), Some(expected));
        }
        let too_many = (0..=MAX_ORDER_LINES).map(|_| line(1, 1)).collect();
        assert_eq!(
            field(new_order(&order_input(too_many)).unwrap_err()).as_deref(),
            Some("lines")
        );
    }

    #[test]
    fn the_schema_states_the_line_limit_the_code_enforces() {
        let sdl = crate::graphql::sdl();
        assert!(
            sdl.contains(&format!("At least one line, at most {MAX_ORDER_LINES}.")),
            "update PlaceOrderInput.lines' doc to MAX_ORDER_LINES = {MAX_ORDER_LINES}"
        );
    }

    #[test]
    fn records_over_400_kb_are_refused() {
        let (order, mut lines) = new_order(&order_input(vec![line(1, 1)])).unwrap();
        assert!(fits("lines", &order).is_ok());
        lines[0].description = "x".repeat(410 * 1024);
        let e = fits("lines[0]", &lines[0]).unwrap_err();
        assert_eq!(field(e).as_deref(), Some("lines[0]"));
    }
}
