//! `Query.viewer`: who the bearer token names, as every Relay client expects to ask it.
//! The role costs nothing (the token holds it); the organization and the member the token's
//! subject names are read through the request's DataLoader, so asking both is one request
//! (a BatchGetItem of the two keys), and asking neither is none.

use async_graphql::{Context, Object, Result};

use super::context::{load, rc};
use super::objects::{Organization, Role, User};
use crate::auth::{self, Access};
use crate::keys::{OrgKey, Slug, Username};
use crate::model::{self, Entity};

#[derive(Default)]
pub struct ViewerQuery;

#[Object]
impl ViewerQuery {
    /// The caller: the organization, member and role their token names. Every field is
    /// null with authentication off (the caller is nobody in particular).
    async fn viewer(&self, ctx: &Context<'_>) -> Viewer {
        match &rc(ctx).access {
            Access::Unrestricted => Viewer::default(),
            Access::Tenant { org, role, subject } => Viewer {
                org: Some(org.clone()),
                role: Some(match role {
                    auth::Role::Admin => model::Role::Admin,
                    auth::Role::Member => model::Role::Member,
                }),
                // Only a subject that can be a username can name a member.
                username: subject.as_deref().and_then(|s| Username::parse(s).ok()),
            },
        }
    }
}

/// Who is asking.
#[derive(Default)]
pub struct Viewer {
    org: Option<Slug>,
    role: Option<model::Role>,
    username: Option<Username>,
}

#[Object]
impl Viewer {
    /// The caller's organization (the token's organization claim).
    async fn organization(&self, ctx: &Context<'_>) -> Result<Option<Organization>> {
        let Some(org) = &self.org else {
            return Ok(None);
        };
        Ok(match load(ctx, OrgKey::new(org).primary_key()).await? {
            Some(Entity::Organization(o)) => Some(Organization::new(o)),
            _ => None,
        })
    }

    /// The member of that organization whose username is the token's subject (`sub`);
    /// null when the subject names none (a provider's opaque subject, for one).
    async fn user(&self, ctx: &Context<'_>) -> Result<Option<User>> {
        let (Some(org), Some(username)) = (&self.org, &self.username) else {
            return Ok(None);
        };
        User::load(ctx, org, username).await
    }

    /// What the caller may do there.
    async fn role(&self) -> Option<Role> {
        self.role.map(Into::into)
    }
}
