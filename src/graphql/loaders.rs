//! The per-request DataLoader: every reference (`requester`, `assignee`, `buyer`,
//! `organization`, `node`, `nodes`) asks it for a key; within one tick of the executor it
//! gathers the keys, drops repeats, and makes one GetItem (one key) or one BatchGetItem (up
//! to 100 keys). Items a request already read are fed into its cache, so never read twice.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dataloader::Loader;

use super::errors::ApiError;
use crate::collections::{batch_get_entities, get_entity};
use crate::model::Entity;
use crate::store::{PrimaryKey, Store};

pub struct EntityLoader {
    pub store: Arc<dyn Store>,
}

impl Loader<PrimaryKey> for EntityLoader {
    type Value = Entity;
    type Error = Arc<ApiError>;

    async fn load(&self, keys: &[PrimaryKey]) -> Result<HashMap<PrimaryKey, Entity>, Self::Error> {
        let found = if let [key] = keys {
            get_entity(self.store.as_ref(), key.clone())
                .await
                .map(|e| e.into_iter().map(|e| (e.primary_key(), e)).collect())
        } else {
            batch_get_entities(self.store.as_ref(), keys).await
        };
        found.map_err(|e| Arc::new(ApiError::from(e)))
    }
}
