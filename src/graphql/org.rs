//! Organizations: `Mutation.createOrganization` (access pattern 14), its input and its
//! checks. The `Organization` type and its reads are the chart's (`charts/itemgraph.toml`,
//! served by [`super::charted`]); [`super::builtin`] registers this mutation beside them.

use async_graphql::InputObject;

use super::context::RequestContext;
use super::enums::Plan;
use super::errors::ApiError;
use super::input::{fits, name, ApiResult};
use crate::collections;
use crate::keys::validate_slug;
use crate::model;

/// A new organization.
#[derive(InputObject)]
pub struct CreateOrganizationInput {
    /// Unique, URL-safe name: lowercase letters, digits and `-`, starting with a letter or
    /// digit, at most 40 characters. It cannot be changed later.
    pub slug: String,
    /// Display name, at most 100 characters.
    pub name: String,
    pub plan: Plan,
}

pub(super) async fn create_organization(
    rc: &RequestContext,
    input: CreateOrganizationInput,
) -> ApiResult<model::Organization> {
    let org = model::Organization::new(
        validate_slug("slug", &input.slug)?,
        name("name", &input.name)?,
        input.plan.into(),
        model::now(),
    );
    fits("name", &org)?;
    rc.access.require_admin("create an organization")?;
    if rc.access.org().is_some_and(|own| *own != org.slug) {
        return Err(ApiError::Forbidden(
            "a token may create only its own organization (its `org` claim)".into(),
        ));
    }
    collections::create_org(rc.store.as_ref(), &org).await?;
    rc.after_write(vec![org.clone().into()]).await;
    Ok(org)
}
