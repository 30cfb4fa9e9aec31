//! Null propagation as the GraphQL spec requires it.
//!
//! async-graphql 7 leaves a field that failed out of its parent object instead of setting
//! it to `null`, and never nulls the parent of a failed non-null field. Clients (Relay,
//! Apollo) rely on the spec's rule, so this extension restores it: a failed nullable field
//! becomes `null`; a failed non-null field nulls its parent object, and so on up to the
//! nearest nullable position (ultimately `data` itself). The error is reported once, by
//! the executor, as before.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextResolve, ResolveInfo,
};
use async_graphql::{QueryPathNode, QueryPathSegment, ServerResult, Value};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Seg {
    Key(String),
    Index(usize),
}

type Path = Vec<Seg>;

/// What one request's resolution found; read by [`NullState::apply`] afterwards.
/// A std Mutex is fine: held only to update the sets, never across an await.
#[derive(Debug, Default)]
pub struct NullState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Objects (by path) that hold a failed non-null field, not yet nulled.
    poisoned: HashSet<Path>,
    /// Failed nullable fields, to be written as `null`.
    null_at: Vec<Path>,
}

fn path_of(node: &QueryPathNode<'_>) -> Path {
    let mut segs = Vec::new();
    let mut cur = Some(node);
    while let Some(n) = cur {
        segs.push(match n.segment {
            QueryPathSegment::Index(i) => Seg::Index(i),
            QueryPathSegment::Name(name) => Seg::Key(name.to_owned()),
        });
        cur = n.parent;
    }
    segs.reverse();
    segs
}

/// The path of the object a field belongs to.
fn object_of(field: &Path) -> Path {
    field[..field.len().saturating_sub(1)].to_vec()
}

impl NullState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the `null`s into one response of a subscription, and forgets them for the
    /// next (a subscription's events are resolved one after the other).
    pub fn apply_and_reset(&self, data: &mut Value) {
        self.apply(data);
        *self.lock() = Inner::default();
    }

    /// Writes the `null`s into the response data.
    pub fn apply(&self, data: &mut Value) {
        let inner = self.lock();
        if inner.poisoned.contains(&Vec::new()) {
            *data = Value::Null;
            return;
        }
        for path in &inner.null_at {
            set_null(data, path);
        }
    }
}

fn set_null(data: &mut Value, path: &[Seg]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    if parents.is_empty() && matches!(data, Value::Null) {
        *data = Value::Object(Default::default());
    }
    let mut cur = data;
    for seg in parents {
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Object(map)) => match map.get_mut(k.as_str()) {
                Some(v) => v,
                None => return,
            },
            (Seg::Index(i), Value::List(items)) => match items.get_mut(*i) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    if let (Seg::Key(k), Value::Object(map)) = (last, cur) {
        map.entry(async_graphql::Name::new(k))
            .or_insert(Value::Null);
    }
}

/// The extension; register once on the schema, put an `Arc<NullState>` in each request.
pub struct NullPropagation;

impl ExtensionFactory for NullPropagation {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(NullPropagationExtension)
    }
}

struct NullPropagationExtension;

#[async_trait::async_trait]
impl Extension for NullPropagationExtension {
    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<Value>> {
        let Some(state) = ctx.data_opt::<Arc<NullState>>() else {
            return next.run(ctx, info).await;
        };
        let path = path_of(info.path_node);
        let return_type = info.return_type.to_owned();
        let nullable = !return_type.ends_with('!');
        let result = next.run(ctx, info).await;
        let mut inner = state.lock();
        match result {
            Err(e) => {
                if nullable {
                    inner.null_at.push(path);
                } else {
                    inner.poisoned.insert(object_of(&path));
                }
                Err(e)
            }
            Ok(mut value) => {
                // The field's own object lost a non-null field: the value is null.
                let mut null_here = inner.poisoned.remove(&path);
                // A list item lost a non-null field: the item is null, and so is the list
                // when its items are non-null.
                let item_non_null = return_type
                    .trim_end_matches('!')
                    .strip_prefix('[')
                    .is_some_and(|t| t.trim_end_matches(']').ends_with('!'));
                if let Some(Value::List(items)) = value.as_mut() {
                    for (i, item) in items.iter_mut().enumerate() {
                        let mut item_path = path.clone();
                        item_path.push(Seg::Index(i));
                        if inner.poisoned.remove(&item_path) {
                            if item_non_null {
                                null_here = true;
                            } else {
                                *item = Value::Null;
                            }
                        }
                    }
                }
                if !null_here {
                    return Ok(value);
                }
                if !nullable {
                    inner.poisoned.insert(object_of(&path));
                }
                Ok(Some(Value::Null))
            }
        }
    }
}
