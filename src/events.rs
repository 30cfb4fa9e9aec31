//! Domain events: what a successful write changed, for subscribers (GraphQL subscriptions
//! later). Plain model records, serde-serializable, no GraphQL types.
//!
//! A write publishes its event only once the store accepted it, so an event is never
//! about a write that did not happen; a replayed `placeOrder` publishes nothing. Delivery
//! is best effort and in-process: [`EventBus`] is a `tokio::sync::broadcast` channel, so
//! a subscriber that falls more than `capacity` events behind loses the oldest ones (its
//! next `recv` says how many with `RecvError::Lagged`) and re-reads what it needs.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::keys::{Id, Slug};
use crate::model::{Order, OrderLine, OrderStatus, Organization, Ticket, TicketStatus, User};

/// One change to the data, as subscribers see it. Serialized with a `type` tag and
/// camelCase fields: `{"type": "OrderStatusChanged", "org": "acme", "orderId": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum DomainEvent {
    OrganizationCreated(Organization),
    UserCreated(User),
    /// The user as written.
    UserUpdated(User),
    /// The user as it was when deleted.
    UserDeleted(User),
    TicketCreated(Ticket),
    /// A ticket changed: its new status and version up front for filtering, the ticket as
    /// written in `ticket`.
    TicketChanged {
        org: Slug,
        ticket_id: Id,
        status: TicketStatus,
        /// Differs from `status` when the ticket moved to another queue.
        previous_status: TicketStatus,
        version: u32,
        ticket: Ticket,
    },
    /// A new order with its lines (never sent for a replayed client token).
    OrderPlaced {
        order: Order,
        lines: Vec<OrderLine>,
    },
    OrderStatusChanged {
        org: Slug,
        order_id: Id,
        status: OrderStatus,
        version: u32,
    },
}

impl DomainEvent {
    /// `TicketChanged` from the ticket as read and as written.
    pub fn ticket_changed(before: &Ticket, after: &Ticket) -> Self {
        DomainEvent::TicketChanged {
            org: after.org.clone(),
            ticket_id: after.ticket_id,
            status: after.status,
            previous_status: before.status,
            version: after.version,
            ticket: after.clone(),
        }
    }

    /// `OrderStatusChanged` from the order as written.
    pub fn order_status_changed(order: &Order) -> Self {
        DomainEvent::OrderStatusChanged {
            org: order.org.clone(),
            order_id: order.order_id,
            status: order.status,
            version: order.version,
        }
    }

    /// The organization the event happened in: subscriptions filter on it.
    pub fn org(&self) -> &Slug {
        match self {
            DomainEvent::OrganizationCreated(o) => &o.slug,
            DomainEvent::UserCreated(u)
            | DomainEvent::UserUpdated(u)
            | DomainEvent::UserDeleted(u) => &u.org,
            DomainEvent::TicketCreated(t) => &t.org,
            DomainEvent::TicketChanged { org, .. }
            | DomainEvent::OrderStatusChanged { org, .. } => org,
            DomainEvent::OrderPlaced { order, .. } => &order.org,
        }
    }

    /// The event's `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            DomainEvent::OrganizationCreated(_) => "OrganizationCreated",
            DomainEvent::UserCreated(_) => "UserCreated",
            DomainEvent::UserUpdated(_) => "UserUpdated",
            DomainEvent::UserDeleted(_) => "UserDeleted",
            DomainEvent::TicketCreated(_) => "TicketCreated",
            DomainEvent::TicketChanged { .. } => "TicketChanged",
            DomainEvent::OrderPlaced { .. } => "OrderPlaced",
            DomainEvent::OrderStatusChanged { .. } => "OrderStatusChanged",
        }
    }
}

/// How many events a subscriber may fall behind by before it loses the oldest.
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// The in-process event bus: one handle, cheap to clone (a channel sender inside), shared
/// by every request.
#[derive(Clone)]
pub struct EventBus {
    sender: broadcast::Sender<DomainEvent>,
}

impl EventBus {
    /// A bus that keeps the last `capacity` events for slow subscribers (at least 1).
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        EventBus { sender }
    }

    /// Sends `event` to every current subscriber. Never blocks and never fails: with no
    /// subscriber the event is dropped, and a full buffer overwrites the oldest event.
    pub fn publish(&self, event: DomainEvent) {
        // `send` errs only when nobody listens, which is not an error for a publisher.
        let _ = self.sender.send(event);
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<DomainEvent> {
        self.sender.subscribe()
    }

    /// How many subscribers are listening.
    pub fn subscriber_count(&self) -> usize {
        self.sender.receiver_count()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(DEFAULT_EVENT_CAPACITY)
    }
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.sender.receiver_count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Username;
    use crate::model::{timestamp_from_ms, TicketPriority};
    use tokio::sync::broadcast::error::{RecvError, TryRecvError};

    fn ticket(version: u32, status: TicketStatus) -> Ticket {
        Ticket {
            ticket_id: Id::from_parts(1_700_000_000_000, 1),
            org: Slug::parse("acme").unwrap(),
            title: "Anvil".into(),
            body: String::new(),
            status,
            priority: TicketPriority::High,
            requester: Username::parse("wile").unwrap(),
            assignee: None,
            created_at: timestamp_from_ms(0),
            updated_at: timestamp_from_ms(0),
            version,
        }
    }

    fn e_id() -> Id {
        ticket(1, TicketStatus::Open).ticket_id
    }

    #[test]
    fn publishing_without_subscribers_neither_fails_nor_blocks() {
        let bus = EventBus::new(2);
        for v in 0..10 {
            bus.publish(DomainEvent::TicketCreated(ticket(v, TicketStatus::Open)));
        }
        assert_eq!(bus.subscriber_count(), 0);
    }

    #[tokio::test]
    async fn every_subscriber_gets_each_event_published_after_it_subscribed() {
        let bus = EventBus::new(8);
        bus.publish(DomainEvent::TicketCreated(ticket(1, TicketStatus::Open)));
        let mut a = bus.subscribe();
        let mut b = bus.clone().subscribe();
        let changed = DomainEvent::ticket_changed(
            &ticket(1, TicketStatus::Open),
            &ticket(2, TicketStatus::Solved),
        );
        bus.publish(changed.clone());
        assert_eq!(a.recv().await.unwrap(), changed);
        assert_eq!(b.recv().await.unwrap(), changed);
        assert_eq!(a.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(changed.org(), "acme");
    }

    #[tokio::test]
    async fn a_slow_subscriber_loses_the_oldest_events_and_is_told() {
        let bus = EventBus::new(2);
        let mut rx = bus.subscribe();
        for v in 1..=3 {
            bus.publish(DomainEvent::TicketCreated(ticket(v, TicketStatus::Open)));
        }
        assert_eq!(rx.recv().await, Err(RecvError::Lagged(1)));
        let DomainEvent::TicketCreated(t) = rx.recv().await.unwrap() else {
            panic!("a ticket event")
        };
        assert_eq!(t.version, 2);
    }

    #[test]
    fn events_serialize_with_a_type_tag_and_camel_case_fields() {
        let e = DomainEvent::ticket_changed(
            &ticket(1, TicketStatus::Open),
            &ticket(2, TicketStatus::Pending),
        );
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["type"], "TicketChanged");
        assert_eq!(json["org"], "acme");
        assert_eq!(json["ticketId"], e_id().to_string());
        assert_eq!(json["status"], "PENDING");
        assert_eq!(json["previousStatus"], "OPEN");
        assert_eq!(json["version"], 2);
        assert_eq!(json["ticket"]["requester"], "wile");
        assert_eq!(e.kind(), "TicketChanged");

        let created =
            serde_json::to_value(DomainEvent::TicketCreated(ticket(1, TicketStatus::Open)))
                .unwrap();
        assert_eq!(created["type"], "TicketCreated");
        assert_eq!(created["title"], "Anvil");
    }
}
