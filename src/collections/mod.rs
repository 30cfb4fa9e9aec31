//! The repository layer: one function per access pattern of `docs/DATA_MODEL.md`, named
//! verb–noun: a read is exactly one call on the [`Store`](crate::store::Store) port, a
//! write one write request plus the reads its validation needs.
//!
//! One file per aggregate holds its access patterns: [`orgs`], [`users`], [`tickets`],
//! [`orders`]; [`entities`] reads any entity by key (references, `node`) and writes seed
//! items. What they share: [`page`] (a parent and a page of its children in one Query,
//! from the last-seen key, both directions), `write` (what a failed condition means,
//! counter bumps), [`error`] (what a caller sees).
//!
//! | # | Access pattern | Function | Request |
//! |---|---|---|---|
//! | 1 | Organization by slug | [`get_org`] | GetItem |
//! | 2 | Organization and a page of its users | [`get_org_with_users`] | Query base table, forward |
//! | 3 | Organization and a page of its newest orders | [`get_org_with_orders`] | Query base table, backward |
//! | 4 | User and a page of their newest tickets | [`get_user_with_tickets`] | Query GSI1, backward |
//! | 5 | Ticket by id | [`get_ticket`] | GetItem |
//! | 6 | A page of an organization's tickets in one status | [`list_org_tickets_by_status`] | Query GSI2, backward |
//! | 7 | Order and its lines | [`get_order_with_lines`] | Query GSI1, forward |
//! | 8, 9 | Any entities by key (`node`, `nodes`, references) | [`batch_get_entities`] | BatchGetItem |
//! | 9 | User, order by key | [`get_user`], [`get_order`] | GetItem |
//! | 10 | Create user, unique on username and email | [`create_user`] | TransactWriteItems |
//! | 11 | Create ticket, bump counters | [`create_ticket`] | TransactWriteItems |
//! | 12 | Place order with its lines, bump counters, at most once per client token | [`place_order`] | TransactWriteItems |
//! | 13 | Change a ticket (status, assignee, priority, title, body) | [`update_ticket`] | TransactWriteItems: the Put with a version condition, and the counters' Updates when the status or assignee changes |
//! | 14 | Create organization, unique on slug (the server's is the chart's) | [`create_org`] | TransactWriteItems of the organization and its counter shards, each Put `attribute_not_exists` |
//! | 15 | Change a user (name, role, email) | [`update_user`] | UpdateItem; TransactWriteItems swapping the email markers on an email change |
//! | 16 | Delete a user no ticket or order references | [`delete_user`] | GetItem, then TransactWriteItems |
//!
//! Every write is one store write request (a conditional PutItem, UpdateItem or one
//! TransactWriteItems) plus at most the reads its validation needs; each function's doc
//! says which. Every write keeps the counters of `docs/DATA_MODEL.md` equal to the children
//! they count, which `crate::check` verifies over a whole table.
//!
//! Identifiers arrive as the validated types of [`crate::keys`], so a key-forging value
//! cannot reach a request. Paging: see [`Page`].

pub mod counters;
pub mod entities;
pub mod error;
pub mod orders;
pub mod orgs;
pub mod page;
pub mod tickets;
pub mod users;
mod write;

#[cfg(test)]
mod tests;

pub use crate::store::failed_condition;
pub use counters::get_org_counted;
pub use entities::{batch_get_entities, get_entity, put_entities, put_new_entities};
pub use error::{RepoError, RepoResult};
pub use orders::{
    check_order, get_order, get_order_with_lines, place_order, OrderToken, OrderWithLines,
    PlacedOrder, MAX_ORDER_LINES,
};
pub use orgs::{
    create_org, get_org, get_org_with_orders, get_org_with_users, OrgWithOrders, OrgWithUsers,
};
pub use page::{Page, MAX_PAGE_SIZE};
pub use tickets::{
    create_ticket, get_ticket, get_ticket_for_update, list_org_tickets_by_status, update_ticket,
    TicketChange, TicketPage,
};
pub use users::{
    create_user, delete_user, get_user, get_user_with_tickets, update_user, UserChange,
    UserWithTickets,
};
pub use write::MAX_VERSION;
