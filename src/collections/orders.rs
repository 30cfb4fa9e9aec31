//! The order aggregate: access patterns 7 and 9 (reads), 12 (place), with the
//! client-token marker that makes placing idempotent. An order's moves along its life
//! cycle (pattern 17) are the chart's (`charts/itemgraph.toml`, `updateOrderStatus`).

use backon::Retryable;
use serde::{Deserialize, Serialize};

use super::counters::{transact_counted, OrgBump};
use super::entities::get_record;
use super::error::{RepoError, RepoResult};
use super::page::{read_connection, Connection, Page, MAX_PAGE_SIZE};
use super::write::{bump, explain, put_new, OnFail};
use crate::keys::{ClientToken, Id, ItemKeys, OrderKey, OrderTokenKey, Slug, UserKey, GSI1, PK};
use crate::model::{Order, OrderLine, Organization, Record, Timestamp, User};
use crate::store::validate::MAX_TRANSACT_ACTIONS;
use crate::store::{
    retry_schedule, CancelReason, Condition, PageKey, Put, SortCondition, Store, StoreError,
    TransactAction, UpdateExpr,
};

/// Most lines one order can have: one transaction holds the order, its lines, the
/// organization's counter, the buyer's counter and the client token's marker.
pub const MAX_ORDER_LINES: usize = MAX_TRANSACT_ACTIONS - 4;

/// Access pattern 7, lines by number.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderWithLines {
    pub order: Option<Order>,
    pub lines: Vec<OrderLine>,
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 9: an order by organization and id.
pub async fn get_order(store: &dyn Store, org: &Slug, order_id: Id) -> RepoResult<Option<Order>> {
    get_record(store, OrderKey::new(org, order_id).primary_key()).await
}

/// Access pattern 7: the order and a page of its lines: GSI1 partition `ORDER#id` forward, where
/// the order sorts below its lines.
pub async fn get_order_with_lines(
    store: &dyn Store,
    order_id: Id,
    page: Page,
) -> RepoResult<OrderWithLines> {
    let conn = Connection {
        index: Some(GSI1),
        partition: OrderKey::lines_partition_of(order_id),
        natural_forward: true,
        parent: Some(SortCondition::Ge(OrderKey::lines_boundary_of(order_id))),
        children: OrderKey::lines_prefix(),
        beside_parent: 0,
    };
    let (order, lines, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(OrderWithLines {
        order,
        lines,
        last_evaluated_key,
    })
}

/// The idempotency marker of a client token (`Type` `OrderToken`): which order the first
/// [`place_order`] with this token placed. Its key is [`OrderTokenKey`], a partition of its
/// own. Only [`place_order`] and `crate::check` read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderToken {
    pub org: Slug,
    pub token: ClientToken,
    pub order_id: Id,
    pub created_at: Timestamp,
}

impl Record for OrderToken {
    const TYPE: &'static str = "OrderToken";
    fn keys(&self) -> ItemKeys {
        OrderTokenKey::new(&self.org, &self.token).item_keys()
    }
}

/// What [`place_order`] returns: the order and its lines as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedOrder {
    pub order: Order,
    pub lines: Vec<OrderLine>,
    /// True when the client token had already placed an order: this is that order, read
    /// back, and nothing was written.
    pub replayed: bool,
}

/// How many times a replay reads the order its token names before giving up (on
/// [`retry_schedule`], about 4 s in all): the order and the marker are written together,
/// but the order is read on GSI1, which DynamoDB updates typically within a second of the
/// transaction, sometimes later.
const REPLAY_READ_ATTEMPTS: u32 = 9;

/// Access pattern 12: places an order with its lines and counts it on the organization and
/// on the buyer, who must exist. Lines are numbered 1..=n, `amountCents = quantity × unitPriceCents`,
/// and the order's `lineCount` and `totalCents` agree with them (else `Invalid`).
///
/// One TransactWriteItems, no read: Put the order and each line `attribute_not_exists`
/// (`AlreadyExists("order")`, `AlreadyExists("order line")`), `ADD orderCount 1` on one of
/// the organization's counter shards (`NotFound("organization")`; see [`transact_counted`]) and `ADD orderCount 1` on the buyer
/// (`NotFound("buyer")`), each conditioned on its item existing. At most
/// [`MAX_ORDER_LINES`] lines.
///
/// With a `client_token` (1 to 64 of `[A-Za-z0-9_-]`, else `Invalid`), the same
/// transaction puts the token's marker `attribute_not_exists`. When the marker is there
/// already, the token placed an order before: nothing is written, and the order it names
/// is read back (access pattern 7, one Query on GSI1; again with backoff while the index
/// has not caught up) and returned with `replayed: true`. A retried call thus places one
/// order, whatever `order` it carries the second time.
pub async fn place_order(
    store: &dyn Store,
    order: &Order,
    lines: &[OrderLine],
    client_token: Option<&str>,
) -> RepoResult<PlacedOrder> {
    let token = client_token
        .map(|t| ClientToken::parse(t).map_err(|e| RepoError::Invalid(e.to_string())))
        .transpose()?;
    check_order(order, lines)?;
    let mut actions: Vec<TransactAction> = Vec::with_capacity(lines.len() + 4);
    let mut meanings = Vec::with_capacity(lines.len() + 4);
    if let Some(token) = &token {
        let marker = OrderToken {
            org: order.org.clone(),
            token: token.clone(),
            order_id: order.order_id,
            created_at: crate::model::now(),
        };
        let mut put = Put::new(marker.to_item()).when(Condition::not_exists(PK));
        put.return_old_on_condition_failure = true;
        actions.push(TransactAction::Put(put));
        meanings.push(OnFail::AlreadyExists("clientToken"));
    }
    actions.push(put_new(order.to_item()));
    meanings.push(OnFail::AlreadyExists("order"));
    actions.extend(lines.iter().map(|l| put_new(l.to_item())));
    meanings.extend(lines.iter().map(|_| OnFail::AlreadyExists("order line")));
    let counted = OrgBump::new(
        &order.org,
        UpdateExpr::default().add(Organization::ORDER_COUNT, 1),
    );
    let at = actions.len();
    meanings.push(counted.legacy_meaning);
    actions.push(bump(
        UserKey::new(&order.org, &order.buyer).primary_key(),
        UpdateExpr::default().add(User::ORDER_COUNT, 1),
    ));
    meanings.push(OnFail::NotFound("buyer"));

    let err = match transact_counted(store, actions, at, &counted).await {
        Ok(()) => {
            return Ok(PlacedOrder {
                order: order.clone(),
                lines: lines.to_vec(),
                replayed: false,
            })
        }
        Err(err) => err,
    };
    // The marker is the first action: whatever else failed, a used token is a replay.
    let replay_of = match (&token, &err) {
        (Some(_), StoreError::TransactionCanceled { reasons }) => match reasons.first() {
            Some(CancelReason::ConditionalCheckFailed { item: Some(item) }) => {
                Some(OrderToken::from_item(item.clone())?)
            }
            _ => None,
        },
        _ => None,
    };
    match replay_of {
        Some(marker) => replay_order(store, &marker).await,
        None => Err(explain(err, &meanings)),
    }
}

/// Reads back the order a client token placed: access pattern 7, every page of lines;
/// again on [`retry_schedule`] while GSI1 has not caught up with the order.
async fn replay_order(store: &dyn Store, marker: &OrderToken) -> RepoResult<PlacedOrder> {
    // `Err(None)`: the order is not on the index yet, try again; `Err(Some(e))`: the
    // read failed, give up.
    let read = || async {
        match read_placed_order(store, marker.order_id).await {
            Ok(Some(lines)) => Ok(lines),
            Ok(None) => Err(None),
            Err(e) => Err(Some(e)),
        }
    };
    read.retry(retry_schedule(REPLAY_READ_ATTEMPTS - 1))
        .when(Option::is_none)
        .await
        .map_err(|e| {
            e.unwrap_or_else(|| {
                RepoError::Store(StoreError::Unavailable(format!(
                    "client token {} placed order {}, which cannot be read yet; try again",
                    marker.token, marker.order_id
                )))
            })
        })
}

/// The order and all its lines, as a replay returns them; `None` while the order is not
/// on GSI1.
async fn read_placed_order(store: &dyn Store, order_id: Id) -> RepoResult<Option<PlacedOrder>> {
    let first = get_order_with_lines(store, order_id, Page::first(MAX_PAGE_SIZE)).await?;
    let Some(order) = first.order else {
        return Ok(None);
    };
    let mut lines = first.lines;
    let mut next = first.last_evaluated_key;
    while let Some(start) = next {
        let page = get_order_with_lines(store, order_id, Page::after(MAX_PAGE_SIZE, start)).await?;
        lines.extend(page.lines);
        next = page.last_evaluated_key;
    }
    Ok(Some(PlacedOrder {
        order,
        lines,
        replayed: true,
    }))
}

/// The invariants [`place_order`] keeps; also used to check the demo data.
pub fn check_order(order: &Order, lines: &[OrderLine]) -> RepoResult<()> {
    let invalid = |m: String| Err(RepoError::Invalid(m));
    if lines.is_empty() || lines.len() > MAX_ORDER_LINES {
        return invalid(format!(
            "an order has 1 to {MAX_ORDER_LINES} lines, got {}",
            lines.len()
        ));
    }
    if order.line_count as usize != lines.len() {
        return invalid(format!(
            "lineCount is {} but there are {} lines",
            order.line_count,
            lines.len()
        ));
    }
    let mut total: i64 = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.order_id != order.order_id {
            return invalid(format!(
                "line {} belongs to order {}",
                line.line_no, line.order_id
            ));
        }
        if usize::from(line.line_no.get()) != i + 1 {
            return invalid(format!("line {} is numbered {}", i + 1, line.line_no));
        }
        if i64::from(line.quantity).checked_mul(line.unit_price_cents) != Some(line.amount_cents) {
            return invalid(format!(
                "line {}: amount is not quantity × unit price",
                line.line_no
            ));
        }
        total = total
            .checked_add(line.amount_cents)
            .ok_or_else(|| RepoError::Invalid("order total overflows".into()))?;
    }
    if total != order.total_cents {
        return invalid(format!(
            "totalCents is {} but the lines add up to {total}",
            order.total_cents
        ));
    }
    Ok(())
}
