//! The built-in design's enums as the mutations' inputs and the events read them: each the
//! GraphQL face of its model enum (the chart declares the same names and values, and the
//! schema has each once, from the chart).

use async_graphql::Enum;

/// The subscription an organization is on.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::Plan")]
pub enum Plan {
    Free,
    Team,
    Enterprise,
}

/// What a user may do in their organization.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::Role")]
pub enum Role {
    Admin,
    Member,
}

/// Where a ticket is in its life. Each status is a queue (`Organization.tickets`).
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::TicketStatus")]
pub enum TicketStatus {
    Open,
    Pending,
    Solved,
    Closed,
}

/// How urgent a ticket is.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::TicketPriority")]
pub enum TicketPriority {
    Low,
    Normal,
    High,
    Urgent,
}

/// Where an order is in fulfilment.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::OrderStatus")]
pub enum OrderStatus {
    Placed,
    Paid,
    Shipped,
    Delivered,
    Cancelled,
}
