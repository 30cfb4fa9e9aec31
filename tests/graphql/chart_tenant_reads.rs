//! Items a write finds through an index (named by a plain id their key does not render
//! alone): a design of its own, documents in folders of an organization (`ORG#<org>` /
//! `DOC#<folder>#<docId>`, found by id through GSI1), on both engines. Another tenant's
//! document found there is as missing as one that is not: nothing deleted, nothing told.

use std::sync::Arc;

use itemgraph::auth::{Access, Role};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, Api};

const CHART: &str = r#"
format = 1
name = "docs"
description = "Documents in folders, per organization."

[table]
name = "docs"
partition_key = "PK"
sort_key = "SK"
type_attribute = "Type"

[indexes.GSI1]
partition_key = "GSI1PK"
sort_key = "GSI1SK"
projection = "ALL"

[tenant]
entity = "Org"
attribute = "org"

[entities.Org]
key = ["ORG#{slug}", "ORG#{slug}"]
tenant = "slug"

[entities.Org.attributes]
slug = "slug"
name = { type = "string", max_length = 50 }

[entities.Org.connections]
docs = { pattern = 2 }

[entities.Doc]
key = ["ORG#{org}", "DOC#{folder}#{docId}"]
indexes.GSI1 = ["DOC#{docId}", "DOC#{docId}"]
plain_id = "docId"

[entities.Doc.attributes]
org = { type = "slug", graphql = false }
folder = "slug"
docId = { type = "ulid", auto = "ulid" }
title = { type = "string", max_length = 50 }

[entities.Doc.references]
organization = { entity = "Org", key = { slug = "org" } }

[query.org]
entity = "Org"
pattern = 1

[patterns.1]
name = "Org by slug"
request = "GetItem"
entity = "Org"
field = "Query.org"

[patterns.2]
name = "An org's documents"
request = "Query"
key = "PK = ORG#{slug} AND begins_with(SK, DOC#)"
children = "Doc"
field = "Org.docs"

[patterns.3]
name = "Write a document"
request = "TransactWriteItems"
entity = "Doc"
field = "Mutation.createDoc"

[patterns.4]
name = "Remove a document by id"
request = "DeleteItem"
entity = "Doc"
field = "Mutation.deleteDoc"

[mutations.createDoc]
entity = "Doc"
action = "create"
pattern = 3

[mutations.deleteDoc]
entity = "Doc"
action = "delete"
by = "id"
pattern = 4

[[samples.Org]]
slug = "acme"
name = "Acme"

[[samples.Org]]
slug = "globex"
name = "Globex"

[[samples.Doc]]
org = "globex"
folder = "plans"
docId = "01HZY5G7V0X4W7M5Q2KJ8C9A1B"
title = "Next year"
"#;

fn chart() -> Arc<itemgraph::chart::Chart> {
    Arc::new(itemgraph::chart::parse(CHART).unwrap_or_else(|e| panic!("{e}")))
}

async fn clean(api: &Api) {
    api.assert_clean(&chart()).await;
}

on_both_engines_of!(chart, after = clean;
    another_tenants_item_found_through_an_index_is_missing_to_a_write,
);

fn admin(org: &str) -> Access {
    Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse(org).unwrap(),
        role: Role::Admin,
        subject: None,
    }
}

const DELETE: &str = r#"mutation($input: DeleteDocInput!) {
    deleteDoc(input: $input) { doc { title } } }"#;

async fn docs(api: &Api, org: &str) -> Value {
    api.run(&format!(
        r#"{{ org(slug: "{org}") {{ docs(first: 10) {{ nodes {{ title }} }} }} }}"#
    ))
    .await["data"]["org"]["docs"]["nodes"]
        .clone()
}

async fn another_tenants_item_found_through_an_index_is_missing_to_a_write(api: &Api) {
    let r = api
        .run_as(
            &admin("acme"),
            DELETE,
            json!({"input": {"docId": "01HZY5G7V0X4W7M5Q2KJ8C9A1B"}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(r["data"], Value::Null, "{r:#}");
    assert!(!r.to_string().contains("Next year"), "{r:#}");
    assert_eq!(docs(api, "globex").await, json!([{"title": "Next year"}]));
    // Its own, found the same way, it removes.
    let r = api
        .run_as(
            &admin("acme"),
            r#"mutation { createDoc(input: {org: "acme", folder: "notes", title: "Mine"}) { doc { docId } } }"#,
            Value::Null,
        )
        .await;
    let id = r["data"]["createDoc"]["doc"]["docId"].clone();
    assert!(id.is_string(), "{r:#}");
    let r = api
        .run_as(&admin("acme"), DELETE, json!({"input": {"docId": id}}))
        .await;
    assert_eq!(r["data"]["deleteDoc"]["doc"]["title"], "Mine", "{r:#}");
    assert_eq!(docs(api, "acme").await, json!([]));
}
