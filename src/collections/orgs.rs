//! The organization aggregate: access patterns 1, 2, 3 (reads) and 14 (create).

use super::counters::new_shards;
use super::entities::get_record;
use super::error::RepoResult;
use super::page::{read_connection, Connection, Page};
use super::write::{explain, put_new, OnFail};
use crate::keys::{OrgKey, Slug, COUNTER_SHARDS};
use crate::model::{Order, Organization, Record, User};
use crate::store::{PageKey, SortCondition, Store};

/// Access pattern 2. `org` is read only on a first forward page, and is `None` there when
/// the organization does not exist.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgWithUsers {
    pub org: Option<Organization>,
    pub users: Vec<User>,
    /// Set when more users may follow: pass it as the next page's `start`.
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 3, newest orders first.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgWithOrders {
    pub org: Option<Organization>,
    pub orders: Vec<Order>,
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 1: an organization by slug.
pub async fn get_org(store: &dyn Store, org: &Slug) -> RepoResult<Option<Organization>> {
    get_record(store, OrgKey::new(org).primary_key()).await
}

/// Access pattern 2: the organization and a page of its users, by username: `PK = ORG#o AND SK >=
/// ORG#o` forward on a first page (the organization, its counter shards, then users),
/// `begins_with(SK, USER#)` on later ones.
pub async fn get_org_with_users(
    store: &dyn Store,
    org: &Slug,
    page: Page,
) -> RepoResult<OrgWithUsers> {
    let key = OrgKey::new(org);
    let conn = Connection {
        index: None,
        partition: key.partition(),
        natural_forward: true,
        parent: Some(SortCondition::Ge(key.boundary())),
        children: key.users_prefix(),
        beside_parent: COUNTER_SHARDS,
    };
    let (org, users, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(OrgWithUsers {
        org,
        users,
        last_evaluated_key,
    })
}

/// Access pattern 3: the organization and a page of its newest orders: `PK = ORG#o AND SK <=
/// ORG#o#COUNT#~` backward on a first page (the counter shards, the organization, then
/// orders), `begins_with(SK, #ORDER#)` on later ones.
pub async fn get_org_with_orders(
    store: &dyn Store,
    org: &Slug,
    page: Page,
) -> RepoResult<OrgWithOrders> {
    let key = OrgKey::new(org);
    let conn = Connection {
        index: None,
        partition: key.partition(),
        natural_forward: false,
        parent: Some(SortCondition::Le(key.counters_top())),
        children: key.orders_prefix(),
        beside_parent: COUNTER_SHARDS,
    };
    let (org, orders, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(OrgWithOrders {
        org,
        orders,
        last_evaluated_key,
    })
}

/// Access pattern 14: creates an organization, unique on its slug: one TransactWriteItems
/// of one Put `attribute_not_exists(PK)`, no read (a transaction for its client request
/// token, which makes the SDK's retry of an attempt whose reply was lost answer success
/// instead of `AlreadyExists` for the caller's own organization). The counters are
/// written as 0 whatever `org` says: a new organization has no children yet. Its
/// [`COUNTER_SHARDS`] counter shards are put in the same transaction, each
/// `attribute_not_exists(PK)`. `AlreadyExists("slug")`.
pub async fn create_org(store: &dyn Store, org: &Organization) -> RepoResult<()> {
    let org = Organization::new(
        org.slug.clone(),
        org.name.clone(),
        org.plan,
        org.created_at.clone(),
    );
    let mut actions = vec![put_new(org.to_item())];
    actions.extend(new_shards(&org.slug));
    let meanings = vec![OnFail::AlreadyExists("slug"); actions.len()];
    store
        .transact_write(actions)
        .await
        .map_err(|e| explain(e, &meanings))
}
