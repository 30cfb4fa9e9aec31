//! Expiring items, by chart alone: the second chart with a chain's offers that expire
//! (`[table] time_to_live = "expiresAt"`, an `expiry` attribute with a `lifetime`), on both
//! engines:
//!
//! - the table is created with its Time to Live on (DynamoDB: UpdateTimeToLive, read back
//!   by DescribeTimeToLive; the embedded engine: its table's own);
//! - a create gives now + the lifetime, or the caller's time, refused when it has passed;
//! - an offer whose time has passed and that the service has not deleted yet is left out
//!   of every read (by key, in a page; a page reads on past a run of them) and taken as
//!   absent by every write (`NOT_FOUND`);
//! - an offer's code (a unique marker) expires with it, a new time included;
//! - the embedded engine deletes it when it expires items, the delete reaching the change
//!   stream; DynamoDB's engine leaves that to the service;
//! - `itemgraph check` of the chart is clean throughout.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::graphql::{error_codes, Api};

/// The second chart with a chain's offers that expire.
fn chart_with_offers() -> Arc<itemgraph::chart::Chart> {
    let source = include_str!("../../examples/charts/store-locator.toml");
    let text = source
        .replace(
            "type_attribute = \"Type\"",
            "type_attribute = \"Type\"\ntime_to_live = \"expiresAt\"",
        )
        .replace(
            "storesIn = { pattern = 3,",
            "offers = { pattern = 11, description = \"The chain's offers, newest first; an expired one is gone.\" }\nstoresIn = { pattern = 3,",
        )
        .replace(
            "[query.chain]",
            r#"# An offer of a chain, gone when it expires.
[entities.Offer]
key = ["OFFER#{chain}", "OFFER#{offerId}"]
unique = { code = "OfferCode" }

[entities.Offer.attributes]
chain = { type = "slug", graphql = false }
offerId = { type = "ulid", auto = "ulid" }
text = { type = "string", max_length = 200 }
code = { type = "token", optional = true, description = "A code to redeem it by, unique in the chain while the offer lasts." }
expiresAt = { type = "expiry", lifetime = "7d", description = "When it expires: gone to reads from then." }

[entities.Offer.references]
chain = { entity = "Chain", key = { slug = "chain" } }

# An offer's code, expiring with it.
[entities.OfferCode]
key = ["OFFERCODE#{chain}#{code}", "OFFERCODE#{chain}#{code}"]
graphql = false

[entities.OfferCode.attributes]
chain = "slug"
code = "token"
offerId = "ulid"
expiresAt = "expiry"

[query.chain]"#,
        )
        + r#"
[patterns.11]
name = "A chain's offers"
request = "Query"
key = "PK = OFFER#{slug} AND begins_with(SK, OFFER#)"
forward = false
children = "Offer"
field = "Chain.offers"

[patterns.12]
name = "Make an offer"
request = "TransactWriteItems"
entity = "Offer"
field = "Mutation.createOffer"

[patterns.13]
name = "Change an offer"
request = "TransactWriteItems"
entity = "Offer"
field = "Mutation.updateOffer"

[patterns.14]
name = "Withdraw an offer"
request = "TransactWriteItems"
entity = "Offer"
field = "Mutation.deleteOffer"

[mutations.createOffer]
entity = "Offer"
action = "create"
pattern = 12

[mutations.updateOffer]
entity = "Offer"
action = "update"
pattern = 13

[mutations.deleteOffer]
entity = "Offer"
action = "delete"
pattern = 14
"#;
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

#[tokio::test]
async fn embedded() {
    let api = Api::chart(chart_with_offers(), None)
        .await
        .expect("the embedded engine");
    offers_expire(&api, true).await;
    api.finish().await;
}

#[tokio::test]
async fn dynamodb() {
    let Some(api) = Api::chart(chart_with_offers(), Some("expiry")).await else {
        return;
    };
    offers_expire(&api, false).await;
    api.finish().await;
}

const CREATE: &str = r#"mutation($input: CreateOfferInput!) {
    createOffer(input: $input) { offer { offerId text expiresAt } } }"#;

fn epoch(rfc3339: &Value) -> i64 {
    time::OffsetDateTime::parse(
        rfc3339.as_str().expect("a time"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("RFC 3339")
    .unix_timestamp()
}

/// An RFC 3339 time `d` from now, whole seconds.
fn from_now(d: time::Duration) -> String {
    (time::OffsetDateTime::now_utc() + d)
        .replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

async fn offers(api: &Api) -> Vec<String> {
    let r = api
        .run(r#"{ chain(slug: "bean-there") { offers(first: 10) { nodes { text } } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"]["chain"]["offers"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap().to_owned())
        .collect()
}

async fn clean(api: &Api) {
    let report = itemgraph::check::check_chart(api.store.as_ref(), &chart_with_offers())
        .await
        .unwrap();
    assert!(report.is_clean(), "{report}: {:#?}", report.violations);
}

async fn offers_expire(api: &Api, embedded: bool) {
    use itemgraph::store::{AttributeValue, PrimaryKey, UpdateExpr};
    assert_eq!(
        api.store.time_to_live().await.unwrap().as_deref(),
        Some("expiresAt"),
        "the table's Time to Live is on"
    );

    // Now + the lifetime when the create gives no time; the caller's when it does, and
    // refused when it has passed.
    let r = api
        .run_with(
            CREATE,
            json!({"input": {"chain": "bean-there", "text": "Two for one"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let week = &r["data"]["createOffer"]["offer"];
    let at = epoch(&week["expiresAt"]);
    assert!(
        (now() + 7 * 86_400 - at).abs() < 120,
        "{week:#}: a week from now"
    );
    let soon = from_now(time::Duration::hours(1));
    let r = api
        .run_with(
            CREATE,
            json!({"input": {"chain": "bean-there", "text": "Happy hour", "expiresAt": soon}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let hour = r["data"]["createOffer"]["offer"].clone();
    assert_eq!(hour["expiresAt"], json!(soon));
    let r = api
        .run_with(
            CREATE,
            json!({"input": {"chain": "bean-there", "text": "Yesterday", "expiresAt": "2020-01-01T00:00:00Z"}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
    assert_eq!(r["errors"][0]["message"], "expiresAt must be in the future");
    let mut both = offers(api).await;
    both.sort();
    assert_eq!(both, ["Happy hour", "Two for one"]);
    clean(api).await;

    // The hour passes (the item's time moved back, as the clock would move on): the offer
    // is gone to reads and writes while the service has not deleted it yet.
    let id = hour["offerId"].as_str().unwrap().to_owned();
    let key = PrimaryKey::new("OFFER#bean-there", format!("OFFER#{id}"));
    api.store
        .update_item(itemgraph::store::Update::new(
            key.clone(),
            UpdateExpr::default().set("expiresAt", AttributeValue::N((now() - 60).to_string())),
        ))
        .await
        .unwrap();
    assert_eq!(offers(api).await, ["Two for one"]);
    let r = api
        .run_with(
            r#"mutation($input: UpdateOfferInput!) { updateOffer(input: $input) { offer { text } } }"#,
            json!({"input": {"chain": "bean-there", "offerId": id, "text": "Happier hour"}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    let r = api
        .run_with(
            r#"mutation($input: DeleteOfferInput!) { deleteOffer(input: $input) { deletedOfferId } }"#,
            json!({"input": {"chain": "bean-there", "offerId": id}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    let still = api
        .store
        .get_item(itemgraph::store::GetItem {
            key: key.clone(),
            consistent_read: true,
        })
        .await
        .unwrap();
    // Nothing wrote to it. DynamoDB may delete an expired item at any moment (DynamoDB
    // Local sweeps them too), so there it is either gone or as it was; the embedded engine
    // deletes only when asked.
    match still {
        Some(item) => assert_eq!(
            item.get("text"),
            Some(&AttributeValue::S("Happy hour".into())),
            "nothing wrote to the expired offer"
        ),
        None => assert!(!embedded, "the embedded engine deleted an item unasked"),
    }
    clean(api).await;

    // A run of expired offers longer than a page: the page reads on past it.
    let mut ids = Vec::new();
    for text in ["Gone 1", "Gone 2"] {
        let r = api
            .run_with(
                CREATE,
                json!({"input": {"chain": "bean-there", "text": text}}),
            )
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
        ids.push(
            r["data"]["createOffer"]["offer"]["offerId"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    for id in &ids {
        api.store
            .update_item(itemgraph::store::Update::new(
                PrimaryKey::new("OFFER#bean-there", format!("OFFER#{id}")),
                UpdateExpr::default().set("expiresAt", AttributeValue::N((now() - 60).to_string())),
            ))
            .await
            .unwrap();
    }
    let r = api
        .run(r#"{ chain(slug: "bean-there") { offers(first: 1) { nodes { text } pageInfo { hasNextPage } } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["chain"]["offers"]["nodes"],
        json!([{"text": "Two for one"}]),
        "{r:#}"
    );

    // A code expires with its offer: a new time for the offer is its code's too.
    let r = api
        .run_with(
            CREATE,
            json!({"input": {"chain": "bean-there", "text": "Spring", "code": "SPRING"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let spring = r["data"]["createOffer"]["offer"]["offerId"]
        .as_str()
        .unwrap()
        .to_owned();
    let later = from_now(time::Duration::days(30));
    let r = api
        .run_with(
            r#"mutation($input: UpdateOfferInput!) { updateOffer(input: $input) { offer { expiresAt } } }"#,
            json!({"input": {"chain": "bean-there", "offerId": spring, "expiresAt": later}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let code = api
        .store
        .get_item(itemgraph::store::GetItem {
            key: PrimaryKey::new("OFFERCODE#bean-there#SPRING", "OFFERCODE#bean-there#SPRING"),
            consistent_read: true,
        })
        .await
        .unwrap()
        .expect("the code's marker");
    assert_eq!(
        code.get("expiresAt"),
        Some(&AttributeValue::N(epoch(&json!(later)).to_string()))
    );
    clean(api).await;

    // The service's delete: the embedded engine's when asked; DynamoDB's on its own.
    let deleted = api.store.expire_items().await.unwrap();
    if embedded {
        assert_eq!(deleted, 3);
        let gone = api
            .store
            .get_item(itemgraph::store::GetItem {
                key,
                consistent_read: true,
            })
            .await
            .unwrap();
        assert_eq!(gone, None);
    } else {
        assert_eq!(deleted, 0, "DynamoDB deletes expired items itself");
    }
    assert_eq!(offers(api).await, ["Spring", "Two for one"]);
    clean(api).await;
}
