//! Users: the user mutations (access patterns 10, 15, 16), their inputs and their checks.
//! The `User` type and its reads are the chart's; [`super::builtin`] registers these
//! mutations beside them.

use async_graphql::InputObject;

use super::context::RequestContext;
use super::enums::Role;
use super::errors::ApiError;
use super::input::{fits, name, visible, ApiResult};
use crate::collections::{self, UserChange};
use crate::keys::{validate_email, validate_slug, validate_username};
use crate::model;

/// A new member of an organization.
#[derive(InputObject)]
pub struct CreateUserInput {
    /// The organization's slug.
    pub org: String,
    /// Unique within the organization; same rules as an organization slug. It cannot be
    /// changed later.
    pub username: String,
    /// Unique across all organizations; stored lowercased, at most 254 characters.
    pub email: String,
    /// Display name, at most 100 characters.
    pub name: String,
    pub role: Role,
}

/// A change to a user: give at least one of `name`, `email`, `role`; what is left out
/// stays as it is.
#[derive(InputObject)]
pub struct UpdateUserInput {
    /// The organization's slug.
    pub org: String,
    pub username: String,
    /// New display name, at most 100 characters.
    pub name: Option<String>,
    /// New email address, unique across all organizations.
    pub email: Option<String>,
    pub role: Option<Role>,
}

/// The user to remove from an organization.
#[derive(InputObject)]
pub struct DeleteUserInput {
    /// The organization's slug.
    pub org: String,
    pub username: String,
}

pub(super) async fn create_user(
    rc: &RequestContext,
    input: CreateUserInput,
) -> ApiResult<model::User> {
    let user = model::User {
        org: validate_slug("org", &input.org)?,
        username: validate_username("username", &input.username)?,
        email: validate_email("email", &input.email)?,
        name: name("name", &input.name)?,
        role: input.role.into(),
        created_at: model::now(),
        ticket_count: 0,
        assigned_ticket_count: 0,
        order_count: 0,
    };
    fits("name", &user)?;
    rc.access.require_admin("add users")?;
    visible(rc, &user.org, "organization")?;
    collections::create_user(rc.store.as_ref(), &user).await?;
    rc.after_write(vec![user.clone().into()]).await;
    Ok(user)
}

pub(super) async fn update_user(
    rc: &RequestContext,
    input: UpdateUserInput,
) -> ApiResult<model::User> {
    let org = validate_slug("org", &input.org)?;
    let username = validate_username("username", &input.username)?;
    let change = UserChange {
        name: input.name.as_deref().map(|n| name("name", n)).transpose()?,
        email: input
            .email
            .as_deref()
            .map(|e| validate_email("email", e))
            .transpose()?,
        role: input.role.map(Into::into),
    };
    if change.name.is_none() && change.email.is_none() && change.role.is_none() {
        return Err(ApiError::BadUserInput {
            message: "nothing to change: give name, email or role".into(),
            field: None,
        });
    }
    rc.access.require_admin("change users")?;
    visible(rc, &org, "user")?;
    let user = collections::update_user(rc.store.as_ref(), &org, &username, &change, None).await?;
    rc.after_write(vec![user.clone().into()]).await;
    Ok(user)
}

/// The user as it was just before deletion.
pub(super) async fn delete_user(
    rc: &RequestContext,
    input: DeleteUserInput,
) -> ApiResult<model::User> {
    let org = validate_slug("org", &input.org)?;
    let username = validate_username("username", &input.username)?;
    rc.access.require_admin("remove users")?;
    visible(rc, &org, "user")?;
    let user = collections::delete_user(rc.store.as_ref(), &org, &username).await?;
    rc.after_write(Vec::new()).await;
    Ok(user)
}
