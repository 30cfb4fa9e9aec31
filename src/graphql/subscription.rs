//! The subscriptions' streams: live updates of a chart's items, from the table's change
//! stream ([`crate::live`]); [`super::live`] makes them the schema's subscription fields
//! as the chart declares them.
//!
//! Each field subscribes to one tenant's changes (the caller must see it), picks the
//! items it is about, and answers each with an event: the kind of change, the
//! entity as it is after it (as it was, for a deletion), resolvable with the usual fields
//! and references, and an event cursor to resume after it (`after`). Before each event
//! the subscription's DataLoader forgets what it read for the one before, so references
//! are read as they are now. The caller's access is checked again for every event, and a
//! token that expires ends the subscription with `UNAUTHENTICATED`.

use std::sync::Arc;
use std::time::Duration;

use async_graphql::{Context, ErrorExtensions, Result};
use futures::{Stream, StreamExt};

use super::context::{rc, RequestContext};
use super::errors::ApiError;
use crate::chart::kinds::{validate_tenant, Tenant};
use crate::live::{Change, Delivered, Hub, LiveError, Position};

/// When the token a subscription was started with expires (seconds since the Unix
/// epoch); put in each subscription's data by the transport. `None`: no token (auth off).
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenExpiry(pub Option<u64>);

impl TokenExpiry {
    /// Whether the token has expired by now.
    pub fn expired(&self) -> bool {
        self.0.is_some_and(|exp| exp <= now_secs())
    }
}

impl From<LiveError> for ApiError {
    fn from(e: LiveError) -> Self {
        match e {
            LiveError::Expired(why) => ApiError::EventsExpired(why),
            LiveError::TooSlow(n) => ApiError::SubscriberTooSlow(format!(
                "the subscriber fell more than {n} changes behind"
            )),
            LiveError::Unavailable(why) => ApiError::EventsUnavailable(why),
            LiveError::TooMany(why) => ApiError::TooManySubscriptions(why),
            LiveError::ReplaysBusy(why) => ApiError::TooManyReplays(why),
        }
    }
}

/// The context an event cursor is signed for: one organization's events.
fn cursor_context(org: &Tenant) -> String {
    format!("events:{org}")
}

fn now_secs() -> u64 {
    crate::clock::now_ms() / 1000
}

/// A tenant argument named `field`, checked: well-formed, and one the caller sees.
fn tenant_arg(rc: &RequestContext, field: &str, org: &str) -> Result<Tenant> {
    let org = validate_tenant("org", org).map_err(|e| {
        // The rules' messages name the field `org`: they name the chart's here.
        ApiError::bad_input(field, e.to_string().replacen("org", field, 1)).extend()
    })?;
    if !rc.sees(&org) {
        return Err(ApiError::Forbidden(format!(
            "this token may not subscribe to organization {org}'s changes"
        ))
        .extend());
    }
    Ok(org)
}

/// A chart's subscription: the changes of the tenant given as `field` that `wanted`
/// picks, each made into an event by `make`.
pub(super) async fn tenant_events<'a, T: Send + 'static>(
    ctx: &Context<'a>,
    field: &str,
    tenant: &str,
    after: Option<String>,
    wanted: impl Fn(&Change) -> bool + Send + Sync + 'static,
    make: impl Fn(&Change, String) -> Option<T> + Send + Sync + 'a,
) -> Result<impl Stream<Item = Result<T>> + 'a> {
    let org = tenant_arg(rc(ctx), field, tenant)?;
    events(ctx, org, after, wanted, make).await
}

/// Where in the change stream the event being resolved was read (its shard and sequence
/// number): set as the event leaves the resolver, taken with its trace.
#[derive(Clone, Default)]
pub struct EventPosition(Arc<std::sync::Mutex<Option<(String, String)>>>);

impl EventPosition {
    fn set(&self, shard: &str, sequence: &str) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((shard.to_owned(), sequence.to_owned()));
    }

    pub fn take(&self) -> Option<(String, String)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The events of one subscription: the hub's changes of `org` that `wanted` picks, each
/// made into an event by `make`, ended by the first error (a lost position, a slow
/// subscriber, an expired token).
async fn events<'a, T: Send + 'static>(
    ctx: &Context<'a>,
    org: Tenant,
    after: Option<String>,
    wanted: impl Fn(&Change) -> bool + Send + Sync + 'static,
    make: impl Fn(&Change, String) -> Option<T> + Send + Sync + 'a,
) -> Result<impl Stream<Item = Result<T>> + 'a> {
    let rc = rc(ctx);
    let Some(hub) = ctx.data_opt::<Arc<Hub>>().cloned() else {
        return Err(
            ApiError::EventsUnavailable("this server has no change stream".into()).extend(),
        );
    };
    let expiry = ctx.data_opt::<TokenExpiry>().copied().unwrap_or_default();
    let context = cursor_context(&org);
    let from = match after {
        Some(cursor) => Some(
            rc.cursors
                .open(&context, &cursor)
                .ok()
                .and_then(|bytes| Position::from_bytes(&bytes))
                .ok_or_else(|| ApiError::InvalidCursor("after").extend())?,
        ),
        None => None,
    };
    let slot = hub.slot(&org).map_err(|e| ApiError::from(e).extend())?;
    let replay = match &from {
        Some(_) => Some(
            hub.replay_slot(&org)
                .map_err(|e| ApiError::from(e).extend())?,
        ),
        None => None,
    };
    let access = rc.access.clone();
    let in_org = org.clone();
    let changes = hub
        .subscribe_in(Some(org.clone()), from, replay, move |c| {
            c.org() == Some(&in_org) && wanted(c)
        })
        .await
        .map_err(|e| ApiError::from(e).extend())?;
    let cursors = rc.cursors.clone();
    let traced = ctx.data_opt::<crate::graphql::EventSpan>().cloned();
    let at = ctx.data_opt::<EventPosition>().cloned();
    Ok(async_stream::stream! {
        let _slot = slot;
        let changes = changes;
        futures::pin_mut!(changes);
        loop {
            let left = expiry.0.map(|exp| Duration::from_secs(exp.saturating_sub(now_secs())));
            let next = match left {
                Some(left) => tokio::select! {
                    next = changes.next() => next,
                    () = tokio::time::sleep(left) => {
                        yield Err(ApiError::Unauthenticated("the token has expired: subscribe again with a new one".into()).extend());
                        return;
                    }
                },
                None => changes.next().await,
            };
            let Some(next) = next else { return };
            let Delivered { change, position } = match next {
                Ok(d) => d,
                Err(e) => {
                    yield Err(ApiError::from(e).extend());
                    return;
                }
            };
            // The caller's access, for this very event.
            if expiry.expired() {
                yield Err(ApiError::Unauthenticated("the token has expired: subscribe again with a new one".into()).extend());
                return;
            }
            if !sees(&access, change.org()) {
                continue;
            }
            let cursor = cursors.seal(&context, &position.to_bytes());
            if let Some(event) = make(&change, cursor) {
                if let Some(at) = &at {
                    at.set(&change.shard, &change.sequence);
                }
                if let Some(t) = &traced {
                    t.slot.begin(t.name.clone(), || {
                        let mut attributes = t.attributes.clone();
                        attributes.push(opentelemetry::KeyValue::new(
                            "itemgraph.event.kind",
                            match change.kind {
                                crate::live::EventKind::Created => "CREATED",
                                crate::live::EventKind::Updated => "UPDATED",
                                crate::live::EventKind::Deleted => "DELETED",
                            },
                        ));
                        attributes
                    });
                }
                // References resolve as they are now: forget the last event's reads,
                // and know the entity as the change left it.
                rc.after_write_items(vec![change.item().clone()]).await;
                crate::metrics::record_event_delivered();
                yield Ok(event);
            }
        }
    })
}

/// Whether a caller with `access` may see a change of `org`'s (an entity naming no
/// organization: only an unrestricted caller).
fn sees(access: &crate::auth::Access, org: Option<&Tenant>) -> bool {
    match org {
        Some(org) => access.sees(org),
        None => matches!(access, crate::auth::Access::Unrestricted),
    }
}
