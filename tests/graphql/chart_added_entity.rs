//! A third design, made by editing a chart alone: a copy of the built-in chart with a
//! comment on a ticket, kept in the ticket's item collection (`TICKET#<id>`, sort key
//! `COMMENT#<commentId>`, below the ticket's `TICKET#<id>`: read backward, the ticket comes
//! first, then its newest comments; a sort key under `TICKET#` the check refuses, since a
//! later page's `begins_with` would meet the ticket again), counted on the
//! ticket, read with the ticket in one Query, written with its count in one
//! TransactWriteItems, streamed to a subscription of the ticket's comments, checked by
//! `itemgraph check`. No Rust knows of comments; both engines.

use std::sync::Arc;

use itemgraph::auth::{Access, Role};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, request_count, requests, Api};

/// The built-in chart with comments added.
fn chart_with_comments() -> Arc<itemgraph::chart::Chart> {
    let source = itemgraph::chart::BUILTIN_SOURCE;
    let anchor = "[entities.Ticket.references]";
    assert!(source.contains(anchor));
    let ticket = "commentCount = { type = \"counter\", description = \"Number of comments; the same as `comments.totalCount`.\" }\n\n\
        [entities.Ticket.connections]\n\
        comments = { pattern = 18, total = \"commentCount\", description = \"The ticket's comments, newest first. Read with the ticket in one Query.\" }\n\n";
    let comment = r#"
# A comment on a ticket, in the ticket's item collection, counted on the ticket.
[entities.Comment]
key = ["TICKET#{ticketId}", "COMMENT#{commentId}"]
counts = { ticket = "commentCount" }

[entities.Comment.attributes]
ticketId = { type = "ulid", graphql = false }
commentId = { type = "ulid", auto = "ulid" }
org = { type = "slug", graphql = false }
author = { type = "username", graphql = false }
body = { type = "string", max_length = 2000 }
createdAt = { type = "timestamp", auto = "created" }

[entities.Comment.references]
ticket = { entity = "Ticket", key = { ticketId = "ticketId" } }
author = { entity = "User", key = { org = "org", username = "author" } }

[patterns.18]
name = "Ticket and a page of its comments"
request = "Query"
key = "PK = TICKET#{ticketId} AND SK <= TICKET#{ticketId}"
forward = false
parent = "Ticket"
children = "Comment"
field = "Ticket.comments"

[patterns.19]
name = "Comment on a ticket, counted on it"
request = "TransactWriteItems"
entity = "Comment"
field = "Mutation.addComment"

[patterns.20]
name = "Remove a comment and uncount it"
request = "TransactWriteItems"
entity = "Comment"
field = "Mutation.removeComment"

[mutations.addComment]
entity = "Comment"
action = "create"
pattern = 19

[subscriptions.commentEvents]
entity = "Comment"
filters = ["ticketId"]

[mutations.removeComment]
entity = "Comment"
action = "delete"
by = "id"
pattern = 20
"#;
    let text = source.replace(anchor, &format!("{ticket}{anchor}")) + comment;
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

async fn api(dynamodb: Option<&str>) -> Option<Api> {
    let api = Api::chart(chart_with_comments(), dynamodb).await?;
    crate::common::demo::seed_demo(api.store.as_ref())
        .await
        .expect("the demo data");
    Some(api)
}

#[tokio::test]
async fn embedded() {
    let api = api(None).await.expect("the embedded engine");
    comments_are_written_counted_and_read_with_their_ticket(&api, true).await;
    clean(&api).await;
    api.finish().await;
}

/// On DynamoDB Local without the live part: a stream turned on slows every later request
/// of the run (the second chart's suite follows one on both engines).
#[tokio::test]
async fn dynamodb() {
    let Some(api) = api(Some("added_entity")).await else {
        return;
    };
    comments_are_written_counted_and_read_with_their_ticket(&api, false).await;
    clean(&api).await;
    api.finish().await;
}

/// The comments' counts and references hold (`itemgraph check` of the chart).
async fn clean(api: &Api) {
    let report = itemgraph::check::check_chart(api.store.as_ref(), &chart_with_comments())
        .await
        .unwrap();
    assert!(report.is_clean(), "{report}: {:#?}", report.violations);
}

fn operations(r: &Value) -> Vec<String> {
    requests(r)
        .iter()
        .map(|q| q["operation"].as_str().unwrap().to_owned())
        .collect()
}

const ADD: &str = r#"mutation($input: AddCommentInput!) {
    addComment(input: $input) { comment { id body author { username } ticket { commentCount } } } }"#;

async fn comments_are_written_counted_and_read_with_their_ticket(api: &Api, live: bool) {
    use futures::StreamExt;
    let r = api
        .run(r#"{ organization(slug: "acme") { tickets(status: OPEN, first: 1) { nodes { id ticketId requester { username } } } } }"#)
        .await;
    let t = &r["data"]["organization"]["tickets"]["nodes"][0];
    let (id, ticket_id, requester) = (
        t["id"].clone(),
        t["ticketId"].clone(),
        t["requester"]["username"].clone(),
    );
    let add = |author: &Value, org: &str, body: &str| json!({"input": {"ticketId": ticket_id, "org": org, "author": author, "body": body}});

    // The ticket's comments, followed live.
    let mut events = live.then(|| {
        Box::pin(api.subscribe(
            &Access::Unrestricted,
            None,
            r#"subscription($t: String) { commentEvents(org: "acme", ticketId: $t) { kind comment { body ticket { commentCount } } } }"#,
            json!({"t": ticket_id}),
        ))
    });
    if let Some(events) = events.as_mut() {
        for _ in 0..2000 {
            if api.hub.listeners() >= 1 {
                break;
            }
            let _ = tokio::time::timeout(std::time::Duration::from_millis(5), events.next()).await;
        }
    }

    // One TransactWriteItems: the comment, the ticket's count, the author's existence.
    let r = api
        .run_with(ADD, add(&requester, "acme", "Looking into it."))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(operations(&r)[0], "TransactWriteItems", "{r:#}");
    let c = &r["data"]["addComment"]["comment"];
    assert_eq!(c["body"], "Looking into it.");
    assert_eq!(c["author"]["username"], requester);
    assert_eq!(c["ticket"]["commentCount"], 1);
    let first = c["id"].clone();
    if let Some(events) = events.as_mut() {
        let e = tokio::time::timeout(std::time::Duration::from_secs(20), events.next())
            .await
            .expect("an event in time")
            .unwrap();
        assert_eq!(
            e["data"]["commentEvents"],
            json!({"kind": "CREATED", "comment": {"body": "Looking into it.", "ticket": {"commentCount": 1}}}),
            "{e:#}"
        );
    }
    let r = api.run_with(ADD, add(&requester, "acme", "Fixed.")).await;
    assert!(r.get("errors").is_none(), "{r:#}");

    // The ticket and its comments: one Query of its item collection.
    let read = r#"query($id: ID!) { ticket(id: $id) { id commentCount
        comments(first: 10) { totalCount nodes { body } } } }"#;
    let r = api.run_with(read, json!({"id": id})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["ticket"]["id"], id);
    assert_eq!(r["data"]["ticket"]["commentCount"], 2);
    let comments = &r["data"]["ticket"]["comments"];
    assert_eq!(comments["totalCount"], 2);
    let mut bodies: Vec<&str> = comments["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["body"].as_str().unwrap())
        .collect();
    bodies.sort();
    assert_eq!(bodies, ["Fixed.", "Looking into it."]);
    assert_eq!(request_count(&r), 1, "{r:#}");
    assert_eq!(operations(&r), ["Query"]);

    // An author who does not exist; another organization's ticket: NOT_FOUND, nothing
    // written, whatever organization the comment says it is of.
    let r = api.run_with(ADD, add(&json!("nobody"), "acme", "x")).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "author");
    let globex = Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("globex").unwrap(),
        role: Role::Member,
        subject: None,
    };
    let r = api
        .run_as(
            &globex,
            ADD,
            add(&json!("homer-simpson"), "globex", "Mine now"),
        )
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "ticket");
    let r = api
        .run_as(
            &globex,
            ADD,
            add(&json!("homer-simpson"), "acme", "Mine now"),
        )
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(
        request_count(&r),
        0,
        "another tenant's write reads nothing: {r:#}"
    );

    // Removing one uncounts it.
    let r = api
        .run_with(
            r#"mutation($id: ID!) { removeComment(input: {id: $id}) { deletedCommentId } }"#,
            json!({"id": first}),
        )
        .await;
    assert_eq!(
        r["data"]["removeComment"]["deletedCommentId"], first,
        "{r:#}"
    );
    let r = api.run_with(read, json!({"id": id})).await;
    assert_eq!(r["data"]["ticket"]["commentCount"], 1, "{r:#}");
    assert_eq!(r["data"]["ticket"]["comments"]["totalCount"], 1);
}
