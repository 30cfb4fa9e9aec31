//! `Query.node` and `Query.nodes`: any entity by global id (access patterns 8 and 9), one
//! BatchGetItem for up to 100 ids through the request's DataLoader.

use async_graphql::{Context, ErrorExtensions, Object, Result, ID};

use super::context::{load, RequestContext};
use super::errors::ApiError;
use super::ids::GlobalId;
use super::objects::Node;
use crate::store::validate::MAX_BATCH_GET_KEYS;

/// Most ids `nodes` takes in one call: one BatchGetItem.
pub const MAX_NODES: usize = MAX_BATCH_GET_KEYS;

/// The root fields that fetch any node.
#[derive(Default)]
pub struct NodeQuery;

#[Object]
impl NodeQuery {
    /// Any entity by global id; null when there is none.
    async fn node(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Node>> {
        let id = GlobalId::decode("id", &id).map_err(|e| e.extend())?;
        if id
            .org()
            .is_some_and(|org| !ctx.data_unchecked::<RequestContext>().sees(org))
        {
            return Ok(None);
        }
        Ok(load(ctx, id.key()).await?.and_then(Node::from_entity))
    }

    /// Entities by global id, in the order asked, null where there is none: one
    /// BatchGetItem for up to 100 ids.
    #[graphql(complexity = "ids.len().saturating_mul(child_complexity).saturating_add(1)")]
    async fn nodes(&self, ctx: &Context<'_>, ids: Vec<ID>) -> Result<Vec<Option<Node>>> {
        if ids.len() > MAX_NODES {
            return Err(ApiError::bad_input(
                "ids",
                format!("at most {MAX_NODES} ids per call, got {}", ids.len()),
            )
            .extend());
        }
        let ids = ids
            .iter()
            .map(|id| GlobalId::decode("ids", id))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| e.extend())?;
        let rc = ctx.data_unchecked::<RequestContext>();
        // Ids naming another organization are not read: they answer null like missing ones.
        let found = futures::future::join_all(ids.iter().map(|id| async move {
            match id.org() {
                Some(org) if !rc.sees(org) => Ok(None),
                _ => rc.load(id.key()).await,
            }
        }))
        .await;
        found
            .into_iter()
            .map(|r| {
                r.map(|e| e.and_then(Node::from_entity))
                    .map_err(|e| e.as_ref().extend())
            })
            .collect()
    }
}
