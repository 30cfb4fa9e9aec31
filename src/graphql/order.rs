//! Orders: `Mutation.placeOrder` (access pattern 12), its input and its checks.
//! The `Order` and `OrderLine` types and their reads are the chart's; [`super::builtin`]
//! registers these mutations beside them.

use async_graphql::InputObject;

use super::context::RequestContext;
use super::errors::ApiError;
use super::input::{
    currency, fits, text, visible, ApiResult, MAX_DESCRIPTION_CHARS, MAX_SKU_CHARS,
};
use super::scalars::Cents;
use crate::collections::{self, PlacedOrder, MAX_ORDER_LINES};
use crate::keys::{validate_client_token, validate_slug, validate_username, Id, LineNo};
use crate::model;

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
