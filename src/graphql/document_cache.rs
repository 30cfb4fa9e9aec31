//! The document cache: every request's document parsed, measured against the [`Limits`]
//! and validated once per process, then reused by every request that sends the same text
//! (or the hash of an automatic persisted query) for the same operation.
//!
//! async-graphql parses and validates each request again, persisted queries included.
//! Its own hooks are enough to avoid both, without patching it: a request it is handed
//! with its document already parsed (`Request::set_parsed_query`) is not parsed again,
//! and the schema that executes requests validates in `ValidationMode::Fast` (complexity
//! and depth with the request's variables, fragment cycles: cheap walks). The full rules
//! run once per document, on a miss, through a second schema of the same types whose
//! only extension stops each request after validation ([`Check`]). What the full rules
//! check of a request's variables (their values against the types they are declared
//! with) is checked per request here ([`check_variables`]), as those vary between
//! requests of one document.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextExecute, NextParseQuery, NextValidation,
};
use async_graphql::parser::types::{ExecutableDocument, OperationDefinition, OperationType};
use async_graphql::registry::{MetaType, MetaTypeName, Registry};
use async_graphql::Positioned;
use async_graphql::{Name, SchemaEnv, ServerError, ValidationResult, Value, Variables};
use sha2::{Digest, Sha256};

use super::errors::{ApiError, PERSISTED_QUERY_NOT_FOUND};
use super::limits::{check_text, Limits, MAX_PERSISTED_QUERY_BYTES};
use super::operation::{count_aliases, expanded, selected_operation, selects_introspection};

/// Most documents the cache holds.
pub const MAX_CACHED_DOCUMENTS: usize = 1000;
/// Most memory the cached documents may take, estimated as [`PARSED_BYTES_PER_BYTE`]
/// times their text.
pub const MAX_CACHED_BYTES: usize = 32 * 1024 * 1024;
/// What a parsed document takes in memory per byte of its text (measured on the
/// benchmark's documents and GraphiQL's introspection query: 8–12).
pub const PARSED_BYTES_PER_BYTE: usize = 12;
/// See [`weight_of`]: a field's node, its name and its selection set's vector.
pub const PARSED_BYTES_PER_FIELD: usize = 256;
/// Longest document text the cache keeps (a longer one is prepared for each request).
pub const MAX_CACHED_TEXT: usize = MAX_PERSISTED_QUERY_BYTES;

/// The member of a request's `extensions` that carries an automatic persisted query.
const PERSISTED_QUERY: &str = "persistedQuery";

/// A document ready to run: parsed, within the limits, valid for its operation.
#[derive(Debug)]
pub struct Prepared {
    pub doc: ExecutableDocument,
    /// The operation's name, when it has one.
    pub operation: Option<String>,
    pub ty: OperationType,
    /// Estimated memory of the parsed document ([`weight_of`]).
    weight: usize,
    /// Every argument (of a field or a directive) whose value holds a variable, with the
    /// argument's type: what full validation checks again for each request's variables.
    arguments: Vec<VariableArgument>,
}

impl Prepared {
    /// The operation the document runs (preparing made sure there is one).
    pub fn selected(&self) -> Option<&Positioned<OperationDefinition>> {
        selected_operation(&self.doc, self.operation.as_deref()).map(|(_, op)| op)
    }
}

/// An argument whose value holds variables ([`Prepared::arguments`]).
#[derive(Debug)]
struct VariableArgument {
    name: Name,
    ty: String,
    value: async_graphql::Positioned<async_graphql_value::Value>,
}

/// Why a request does not run: its errors (request errors), and its operation's name and
/// type when its document parsed, for its metrics.
#[derive(Debug)]
pub struct Refused {
    pub errors: Vec<ServerError>,
    pub operation: Option<(Option<String>, OperationType)>,
}

impl From<ServerError> for Refused {
    fn from(e: ServerError) -> Self {
        Refused {
            errors: vec![e],
            operation: None,
        }
    }
}

type Key = (String, Option<String>);

struct Cache {
    documents: lru::LruCache<Key, Arc<Prepared>>,
    /// Estimated memory of `documents`.
    bytes: usize,
    /// Automatic persisted queries: the text of each hash.
    persisted: Option<lru::LruCache<String, Arc<str>>>,
}

/// The cache, shared by every request of a process (one per schema).
pub struct Documents {
    limits: Limits,
    cache: Mutex<Cache>,
}

impl Documents {
    pub fn new(limits: Limits) -> Self {
        let count = NonZeroUsize::new(MAX_CACHED_DOCUMENTS).unwrap_or(NonZeroUsize::MIN);
        Documents {
            limits,
            cache: Mutex::new(Cache {
                documents: lru::LruCache::new(count),
                bytes: 0,
                persisted: NonZeroUsize::new(limits.persisted_queries).map(lru::LruCache::new),
            }),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A std Mutex: held for a lookup or an insert, never across an await.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The request's document from the cache, or prepared now with `checker` (whose full
    /// validation reports what is wrong with it) and cached. Errors are request errors.
    pub async fn prepare(
        &self,
        checker: &super::Runner,
        registry: &Registry,
        request: &mut async_graphql::Request,
        lists: &[(String, String)],
    ) -> Result<Arc<Prepared>, Refused> {
        self.persisted_query(request)?;
        let key = (request.query.clone(), request.operation_name.clone());
        let cached = self.cache().documents.get(&key).cloned();
        if let Some(prepared) = cached {
            let checked = check_variables(registry, &prepared, &request.variables)
                .and_then(|()| self.check_cost(registry, &prepared, &request.variables, lists));
            if let Err(errors) = checked {
                return Err(Refused {
                    errors,
                    operation: Some((prepared.operation.clone(), prepared.ty)),
                });
            }
            return Ok(prepared);
        }
        let prepared = Arc::new(self.check(checker, registry, request).await?);
        if key.0.len() <= MAX_CACHED_TEXT {
            let weight = prepared.weight;
            let mut cache = self.cache();
            // Out goes the same key prepared twice at once, or the least recently used.
            if let Some((_, old)) = cache.documents.push(key, prepared.clone()) {
                cache.bytes = cache.bytes.saturating_sub(old.weight);
            }
            cache.bytes = cache.bytes.saturating_add(weight);
            while cache.bytes > MAX_CACHED_BYTES {
                match cache.documents.pop_lru() {
                    Some((_, old)) => cache.bytes = cache.bytes.saturating_sub(old.weight),
                    None => cache.bytes = 0,
                }
            }
            if cache.documents.is_empty() {
                cache.bytes = 0;
            }
        }
        Ok(prepared)
    }

    /// The dynamic schema has no per-field cost for its runner to enforce: a cached document
    /// whose arguments take variables is costed again with this request's
    /// ([`super::cost`]), as the checker costed it the first time.
    fn check_cost(
        &self,
        registry: &Registry,
        prepared: &Prepared,
        variables: &Variables,
        lists: &[(String, String)],
    ) -> Result<(), Vec<ServerError>> {
        // Only a variable in an `Int` argument (a page size, or one past 32 bits) or a
        // list (`nodes`' ids) changes the cost.
        let costed_by = |ty: &str| matches!(ty, "Int" | "Int!") || ty.starts_with('[');
        if !prepared.arguments.iter().any(|a| costed_by(&a.ty)) {
            return Ok(());
        }
        let costed = super::cost::document_cost(registry, &prepared.doc, variables, lists);
        if let Some(pos) = costed.wide_int {
            return Err(vec![ServerError::new(super::cost::WIDE_INT, Some(pos))]);
        }
        if costed.cost > self.limits.max_complexity {
            return Err(vec![ApiError::QueryTooComplex {
                complexity: costed.cost,
                max: self.limits.max_complexity,
            }
            .server_error()]);
        }
        Ok(())
    }

    /// An automatic persisted query: the text of a known hash put in the request, or the
    /// text given with its hash remembered. A text longer than [`MAX_PERSISTED_QUERY_BYTES`]
    /// still runs, unremembered. With persisted queries off, the member is ignored.
    fn persisted_query(&self, request: &mut async_graphql::Request) -> Result<(), ServerError> {
        if self.limits.persisted_queries == 0 || request.query.len() > MAX_PERSISTED_QUERY_BYTES {
            request.extensions.remove(PERSISTED_QUERY);
            return Ok(());
        }
        let Some(value) = request.extensions.remove(PERSISTED_QUERY) else {
            return Ok(());
        };
        let (version, hash) = match &value {
            Value::Object(o) => (o.get("version"), o.get("sha256Hash")),
            _ => (None, None),
        };
        let (Some(Value::Number(version)), Some(Value::String(hash))) = (version, hash) else {
            return Err(ServerError::new(
                "Invalid \"PersistedQuery\" extension configuration.",
                None,
            ));
        };
        if version.as_u64() != Some(1) {
            return Err(ServerError::new(
                format!(
                    "Only the \"PersistedQuery\" extension of version \"1\" is supported, and the current version is \"{version}\"."
                ),
                None,
            ));
        }
        let mut cache = self.cache();
        let Some(persisted) = cache.persisted.as_mut() else {
            return Ok(());
        };
        if request.query.is_empty() {
            match persisted.get(hash.as_str()) {
                Some(text) => request.query = text.to_string(),
                None => return Err(ServerError::new(PERSISTED_QUERY_NOT_FOUND, None)),
            }
        } else {
            let digest = format!("{:x}", Sha256::digest(request.query.as_bytes()));
            if *hash != digest {
                return Err(ServerError::new("provided sha does not match query", None));
            }
            persisted.put(digest, Arc::from(request.query.as_str()));
        }
        Ok(())
    }

    /// The limits on a parsed document.
    /// The limits on a parsed document; the fields it selects once fragments are expanded.
    fn check_limits(&self, doc: &ExecutableDocument) -> Result<usize, ServerError> {
        let limits = &self.limits;
        // Before anything walks fragment spreads without memoizing: fan-out is refused
        // here.
        let size = expanded(doc);
        if size.nesting > limits.max_nesting {
            return Err(ApiError::NestingTooDeep {
                max: limits.max_nesting,
            }
            .server_error());
        }
        if size.fields > limits.max_fields {
            return Err(ApiError::TooManyFields {
                count: size.fields,
                max: limits.max_fields,
            }
            .server_error());
        }
        // async-graphql's own switch answers `__schema: null` without a word; say why.
        if !limits.introspection && selects_introspection(doc) {
            return Err(ApiError::IntrospectionDisabled.server_error());
        }
        let count = count_aliases(doc);
        if count > limits.max_aliases {
            return Err(ApiError::TooManyAliases {
                count,
                max: limits.max_aliases,
            }
            .server_error());
        }
        Ok(size.fields)
    }

    /// Prepares a document not in the cache: the limits on its text, its parse, the
    /// limits on the parsed document, then the full validation (with the limits on depth
    /// and complexity) by `checker`.
    async fn check(
        &self,
        checker: &super::Runner,
        registry: &Registry,
        request: &mut async_graphql::Request,
    ) -> Result<Prepared, Refused> {
        check_text(&request.query, &self.limits)?;
        let doc = request.parsed_query()?.clone();
        let name = request.operation_name.clone();
        let operation = selected_operation(&doc, name.as_deref())
            .map(|(n, op)| (n.map(|n| n.to_string()), op.node.ty));
        let refused = |errors: Vec<ServerError>| Refused {
            errors,
            operation: operation.clone(),
        };
        let fields = self.check_limits(&doc).map_err(|e| refused(vec![e]))?;
        let mut errors =
            full_validation(checker, &doc, name.clone(), request.variables.clone()).await;
        if errors.is_empty() {
            errors.extend(single_root_field(&doc));
        }
        if !errors.is_empty() {
            return Err(refused(errors));
        }
        let Some((operation, ty)) = operation else {
            return Err(refused(vec![ServerError::new(
                "Operation name required in request.",
                None,
            )]));
        };
        let arguments = variable_arguments(registry, &doc, ty);
        Ok(Prepared {
            doc,
            operation,
            ty,
            weight: weight_of(&request.query, fields),
            arguments,
        })
    }
}

/// The GraphQL spec's "single root field" rule, which async-graphql's validation does not
/// check: a subscription operation selects exactly one field at its root (fragments
/// expanded, fields of one response key counted once), and no introspection field. Each
/// root field is a subscription of its own, so without it one operation could hold many
/// of the server's subscription slots and multiply each change it is sent. Run after full
/// validation, which has refused fragment cycles and unknown fragments. Stricter than the
/// spec in one way: one response key selected twice counts twice (async-graphql would run
/// both).
fn single_root_field(doc: &ExecutableDocument) -> Vec<ServerError> {
    const MAX_ROOT_FRAGMENT_NESTING: usize = 64;
    use async_graphql::parser::types::{Selection, SelectionSet};

    /// The root fields of `set`, fragments expanded; `false` when fragments nest past
    /// what the walk follows (then the operation is refused, never half counted).
    fn keys<'a>(
        doc: &'a ExecutableDocument,
        set: &'a SelectionSet,
        out: &mut Vec<(&'a str, &'a str, async_graphql::Pos)>,
        depth: usize,
    ) -> bool {
        if depth > MAX_ROOT_FRAGMENT_NESTING {
            return false;
        }
        set.items.iter().all(|selection| match &selection.node {
            // Every field counts, one response key twice too: the spec would merge them,
            // but the executor runs each as a subscription of its own.
            Selection::Field(f) => {
                out.push((
                    f.node.response_key().node.as_str(),
                    f.node.name.node.as_str(),
                    f.pos,
                ));
                true
            }
            Selection::FragmentSpread(spread) => doc
                .fragments
                .get(&spread.node.fragment_name.node)
                .is_none_or(|fragment| {
                    keys(doc, &fragment.node.selection_set.node, out, depth + 1)
                }),
            Selection::InlineFragment(inline) => {
                keys(doc, &inline.node.selection_set.node, out, depth + 1)
            }
        })
    }

    let mut errors = Vec::new();
    for (name, operation) in doc.operations.iter() {
        if operation.node.ty != OperationType::Subscription {
            continue;
        }
        let mut fields = Vec::new();
        let walked = keys(doc, &operation.node.selection_set.node, &mut fields, 0);
        let named = name.map_or_else(
            || "Anonymous subscription".to_owned(),
            |n| format!("Subscription \"{n}\""),
        );
        if !walked {
            errors.push(ServerError::new(
                format!(
                    "{named} nests fragments at its root deeper than \
                     {MAX_ROOT_FRAGMENT_NESTING}"
                ),
                Some(operation.pos),
            ));
        } else if fields.len() != 1 {
            errors.push(ServerError::new(
                format!(
                    "{named} must select only one top level field; it selects {}",
                    fields.len()
                ),
                Some(operation.pos),
            ));
        } else if let Some((_, field, pos)) = fields.iter().find(|(_, f, _)| f.starts_with("__")) {
            errors.push(ServerError::new(
                format!("{named} must not select an introspection top level field (`{field}`)"),
                Some(*pos),
            ));
        }
    }
    errors
}

/// What `checker` finds wrong with `doc` for operation `name` and `variables`: every rule
/// of validation, then the limits on depth and complexity with their codes ([`Check`]).
/// Empty when nothing is.
pub(super) async fn full_validation(
    checker: &super::Runner,
    doc: &ExecutableDocument,
    name: Option<String>,
    variables: Variables,
) -> Vec<ServerError> {
    let mut probe = async_graphql::Request::new(String::new()).variables(variables);
    probe.operation_name = name;
    probe.set_parsed_query(doc.clone());
    // The checker stops each request after validation.
    checker.execute(probe).await.errors
}

/// What a parsed document is taken to hold in memory: [`PARSED_BYTES_PER_BYTE`] per byte
/// of its text, plus [`PARSED_BYTES_PER_FIELD`] per field selected (a text dense in short
/// field names parses to more than its bytes suggest).
/// The arguments of `doc` that hold variables, with their types: those of the operation
/// (from its root type) and of every fragment (from its type condition).
fn variable_arguments(
    registry: &Registry,
    doc: &ExecutableDocument,
    ty: OperationType,
) -> Vec<VariableArgument> {
    use async_graphql::parser::types::{Directive, Selection, SelectionSet};
    use async_graphql_value::Value as V;

    fn holds_variable(v: &V) -> bool {
        match v {
            V::Variable(_) => true,
            V::List(items) => items.iter().any(holds_variable),
            V::Object(fields) => fields.values().any(holds_variable),
            _ => false,
        }
    }
    fn arguments(
        args: &[(Positioned<Name>, Positioned<V>)],
        types: &async_graphql::indexmap::IndexMap<String, async_graphql::registry::MetaInputValue>,
        out: &mut Vec<VariableArgument>,
    ) {
        for (name, value) in args {
            if let (Some(arg), true) = (types.get(name.node.as_str()), holds_variable(&value.node))
            {
                out.push(VariableArgument {
                    name: name.node.clone(),
                    ty: arg.ty.clone(),
                    value: value.clone(),
                });
            }
        }
    }
    fn directives(
        registry: &Registry,
        list: &[Positioned<Directive>],
        out: &mut Vec<VariableArgument>,
    ) {
        for d in list {
            if let Some(meta) = registry.directives.get(d.node.name.node.as_str()) {
                arguments(&d.node.arguments, &meta.args, out);
            }
        }
    }
    fn walk(
        registry: &Registry,
        set: &SelectionSet,
        parent: &str,
        out: &mut Vec<VariableArgument>,
    ) {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    directives(registry, &field.directives, out);
                    let meta = registry
                        .types
                        .get(parent)
                        .and_then(|t| t.field_by_name(field.name.node.as_str()));
                    let Some(meta) = meta else { continue };
                    arguments(&field.arguments, &meta.args, out);
                    let child = MetaTypeName::concrete_typename(&meta.ty);
                    walk(registry, &field.selection_set.node, child, out);
                }
                Selection::InlineFragment(frag) => {
                    directives(registry, &frag.node.directives, out);
                    let on = frag
                        .node
                        .type_condition
                        .as_ref()
                        .map_or(parent, |c| c.node.on.node.as_str());
                    walk(registry, &frag.node.selection_set.node, on, out);
                }
                Selection::FragmentSpread(spread) => {
                    directives(registry, &spread.node.directives, out);
                }
            }
        }
    }

    let root = match ty {
        OperationType::Query => Some(registry.query_type.as_str()),
        OperationType::Mutation => registry.mutation_type.as_deref(),
        OperationType::Subscription => registry.subscription_type.as_deref(),
    };
    let mut out = Vec::new();
    if let Some(root) = root {
        for (_, op) in doc.operations.iter() {
            if op.node.ty == ty {
                directives(registry, &op.node.directives, &mut out);
                walk(registry, &op.node.selection_set.node, root, &mut out);
            }
        }
    }
    for frag in doc.fragments.values() {
        let on = frag.node.type_condition.node.on.node.as_str();
        walk(registry, &frag.node.selection_set.node, on, &mut out);
    }
    out
}

fn weight_of(text: &str, fields: usize) -> usize {
    text.len()
        .saturating_mul(PARSED_BYTES_PER_BYTE)
        .saturating_add(fields.saturating_mul(PARSED_BYTES_PER_FIELD))
}

/// The variables' values against the types their operation declares, as validation's
/// rule "arguments of correct type" checks them (it sees them through the arguments they
/// are passed to): the part of validation that differs between requests of one document.
fn check_variables(
    registry: &Registry,
    prepared: &Prepared,
    variables: &Variables,
) -> Result<(), Vec<ServerError>> {
    if variables.is_empty() {
        return Ok(());
    }
    let Some(op) = prepared.selected() else {
        return Ok(());
    };
    for arg in &prepared.arguments {
        // As validation does: an argument whose variables are not all given is left to
        // execution (defaults, or the missing-value error).
        let Ok(value) = arg
            .value
            .node
            .clone()
            .into_const_with(|name| variables.get(&name).cloned().ok_or(()))
        else {
            continue;
        };
        if let Some(reason) = invalid_input(registry, &arg.ty, &value, &mut vec![]) {
            return Err(vec![ServerError::new(
                format!("Invalid value for argument \"{}\", {reason}", arg.name),
                Some(arg.value.pos),
            )]);
        }
    }
    for def in &op.node.variable_definitions {
        let name = &def.node.name.node;
        let Some(value) = variables.get(name) else {
            continue;
        };
        let ty = def.node.var_type.node.to_string();
        if let Some(reason) = invalid_input(registry, &ty, value, &mut vec![]) {
            return Err(vec![ServerError::new(
                format!("Invalid value for variable \"${name}\", {reason}"),
                Some(def.pos),
            )]);
        }
    }
    Ok(())
}

/// Why `value` is not a valid input of type `ty` (e.g. `[Int!]!`), naming where in it.
fn invalid_input(
    registry: &Registry,
    ty: &str,
    value: &Value,
    path: &mut Vec<String>,
) -> Option<String> {
    let at = |path: &[String], what: String| {
        if path.is_empty() {
            what
        } else {
            format!("{what} at \"{}\"", path.join("."))
        }
    };
    match MetaTypeName::create(ty) {
        MetaTypeName::NonNull(inner) => match value {
            Value::Null => Some(at(path, format!("expected type \"{inner}\""))),
            _ => invalid_input(registry, inner, value, path),
        },
        MetaTypeName::List(inner) => match value {
            Value::List(items) => items.iter().enumerate().find_map(|(i, item)| {
                path.push(i.to_string());
                let r = invalid_input(registry, inner, item, path);
                path.pop();
                r
            }),
            Value::Null => None,
            _ => invalid_input(registry, inner, value, path),
        },
        MetaTypeName::Named(name) => {
            if matches!(value, Value::Null) {
                return None;
            }
            match registry.types.get(name)? {
                MetaType::Scalar {
                    is_valid: Some(is_valid),
                    ..
                } => (!is_valid(value)).then(|| at(path, format!("expected type \"{name}\""))),
                MetaType::Enum { enum_values, .. } => match value {
                    Value::Enum(v) if enum_values.contains_key(v.as_str()) => None,
                    Value::String(v) if enum_values.contains_key(v.as_str()) => None,
                    Value::Enum(_) | Value::String(_) => Some(at(
                        path,
                        format!("enumeration type \"{name}\" does not contain the value {value}"),
                    )),
                    _ => Some(at(path, format!("expected type \"{name}\""))),
                },
                MetaType::InputObject {
                    input_fields,
                    oneof,
                    ..
                } => {
                    let Value::Object(fields) = value else {
                        return Some(at(path, format!("expected type \"{name}\"")));
                    };
                    if *oneof
                        && (fields.len() != 1 || fields.values().any(|v| matches!(v, Value::Null)))
                    {
                        return Some(at(
                            path,
                            "a oneof input object takes exactly one field, not null".to_owned(),
                        ));
                    }
                    for field in input_fields.values() {
                        match fields.get(field.name.as_str()) {
                            Some(v) => {
                                path.push(field.name.clone());
                                let r = invalid_input(registry, &field.ty, v, path);
                                path.pop();
                                if r.is_some() {
                                    return r;
                                }
                            }
                            None if MetaTypeName::create(&field.ty).is_non_null()
                                && field.default_value.is_none() =>
                            {
                                return Some(at(
                                    path,
                                    format!(
                                        "field \"{}\" of type \"{}\" is required but not provided",
                                        field.name, field.ty
                                    ),
                                ));
                            }
                            None => {}
                        }
                    }
                    fields
                        .keys()
                        .find(|k| !input_fields.contains_key(k.as_str()))
                        .map(|k: &Name| {
                            at(path, format!("unknown field \"{k}\" of type \"{name}\""))
                        })
                }
                _ => None,
            }
        }
    }
}

/// The checker's extension: the limits on depth and complexity after the full
/// validation, and no execution. It hands out the schema's environment (its type
/// registry) the first time it runs.
pub(super) struct Check {
    pub(super) limits: Limits,
    pub(super) env: Arc<std::sync::OnceLock<SchemaEnv>>,
    /// The chart's lists, by (type, field), for the cost the checker computes itself
    /// ([`super::cost`]): the dynamic schema has no per-field cost.
    pub(super) cost: Arc<Vec<(String, String)>>,
}

impl ExtensionFactory for Check {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(CheckOne {
            check: Check {
                limits: self.limits,
                env: self.env.clone(),
                cost: self.cost.clone(),
            },
            cost: std::sync::Mutex::new(None),
        })
    }
}

/// The checker's extension for one request: the cost of its document, when the checker
/// computes it.
struct CheckOne {
    check: Check,
    cost: std::sync::Mutex<Option<super::cost::Costed>>,
}

#[async_trait::async_trait]
impl Extension for CheckOne {
    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> async_graphql::ServerResult<ExecutableDocument> {
        let doc = next.run(ctx, query, variables).await?;
        let lists = &self.check.cost;
        let cost = super::cost::document_cost(&ctx.schema_env.registry, &doc, variables, lists);
        *self.cost.lock().unwrap_or_else(|p| p.into_inner()) = Some(cost);
        Ok(doc)
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let this = &self.check;
        this.env.get_or_init(|| ctx.schema_env.clone());
        let mut result = next.run(ctx).await?;
        if let Some(costed) = &*self.cost.lock().unwrap_or_else(|p| p.into_inner()) {
            if let Some(pos) = costed.wide_int {
                return Err(vec![ServerError::new(super::cost::WIDE_INT, Some(pos))]);
            }
            result.complexity = costed.cost;
        }
        let this = &self.check;
        if result.depth > this.limits.max_depth {
            return Err(vec![ApiError::QueryTooDeep {
                depth: result.depth,
                max: this.limits.max_depth,
            }
            .server_error()]);
        }
        if result.complexity > this.limits.max_complexity {
            return Err(vec![ApiError::QueryTooComplex {
                complexity: result.complexity,
                max: this.limits.max_complexity,
            }
            .server_error()]);
        }
        Ok(result)
    }

    async fn execute(
        &self,
        _ctx: &ExtensionContext<'_>,
        _operation_name: Option<&str>,
        _next: NextExecute<'_>,
    ) -> async_graphql::Response {
        async_graphql::Response::new(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn prepare(schema: &crate::graphql::ItemgraphSchema, text: String) {
        let parts = &schema.0;
        let mut request = async_graphql::Request::new(text);
        parts
            .documents
            .prepare(
                &parts.checker,
                schema.registry(),
                &mut request,
                &parts.lists,
            )
            .await
            .expect("a valid document");
    }

    fn counted(schema: &crate::graphql::ItemgraphSchema) -> (usize, usize, usize) {
        let cache = schema.0.documents.cache();
        let weights = cache.documents.iter().map(|(_, p)| p.weight).sum();
        (cache.documents.len(), cache.bytes, weights)
    }

    #[tokio::test]
    async fn the_cache_holds_at_most_its_count_of_documents() {
        let schema = crate::graphql::schema();
        for i in 0..MAX_CACHED_DOCUMENTS + 40 {
            prepare(&schema, format!("{{ a{i}: __typename }}")).await;
        }
        let (count, bytes, weights) = counted(&schema);
        assert_eq!(count, MAX_CACHED_DOCUMENTS);
        assert_eq!(bytes, weights, "the byte count follows evictions");
        // The same text again is a hit: nothing grows.
        prepare(
            &schema,
            format!("{{ a{}: __typename }}", MAX_CACHED_DOCUMENTS),
        )
        .await;
        assert_eq!(counted(&schema), (count, bytes, weights));
    }

    #[tokio::test]
    async fn the_cache_holds_at_most_its_bytes_of_documents() {
        let schema = crate::graphql::schema();
        let padding = "#".repeat(MAX_CACHED_TEXT - 64);
        let fit = MAX_CACHED_BYTES / weight_of(&format!("{{ a0: __typename }}\n{padding}"), 1);
        for i in 0..fit + 20 {
            prepare(&schema, format!("{{ a{i}: __typename }}\n{padding}")).await;
        }
        let (count, bytes, weights) = counted(&schema);
        assert!(bytes <= MAX_CACHED_BYTES, "{bytes}");
        assert_eq!(bytes, weights);
        assert!(count >= fit - 1 && count <= fit, "{count} of {fit}");
        // Longer than any cached text: runs, and is not kept.
        prepare(
            &schema,
            format!("{{ __typename }}\n{}", "#".repeat(MAX_CACHED_TEXT)),
        )
        .await;
        assert_eq!(counted(&schema).0, count);
    }
}
