//! A chart of two tables served, on both engines: the box office
//! (`examples/charts/box-office.toml`: venues and events in one table, bookings in another)
//! made a tenant's (each venue its own) and followed live. A booking and the count it
//! keeps on its event are one TransactWriteItems across the tables, all or nothing; `nodes`
//! reads both tables in one BatchGetItem; a subscription of the bookings follows the
//! bookings table's change stream, read with the first's as one. An event and a booking
//! store one type value (`row`), each in its table: an item is its table's entity of that
//! value, read alone, in a batch of both tables, or from the stream.

use std::path::Path;
use std::sync::Arc;

use itemgraph::auth::{Access, Role};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, requests, Api, Events};

/// The box office, each venue a tenant, its bookings keyed by the venue and number (a key
/// of the tenant's, rule `tenant`) and streamed.
fn chart() -> Arc<itemgraph::chart::Chart> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/box-office.toml"),
    )
    .unwrap();
    let edits = [
        (
            "[entities.Venue]\ndescription = \"A venue that holds events.\"\nkey = [\"VENUE#{slug}\", \"#VENUE\"]\n",
            "[tenant]\nentity = \"Venue\"\nattribute = \"venue\"\n\n[entities.Venue]\ndescription = \"A venue that holds events.\"\nkey = [\"VENUE#{slug}\", \"#VENUE\"]\ntenant = \"slug\"\n",
        ),
        (
            "partition_key = { name = \"BookingNo\", type = \"N\" }",
            "partition_key = \"BookingKey\"",
        ),
        ("key = [\"{bookingNo}\"]", "key = [\"BOOKING#{venue}#{bookingNo}\"]"),
        (
            "bookingNo = { type = \"int\", min = 1, description",
            "bookingNo = { type = \"int\", min = 1, max = 999999, description",
        ),
        (
            "key = [\"VENUE#{venue}\", \"EVENT#{eventId}\"]\n",
            "key = [\"VENUE#{venue}\", \"EVENT#{eventId}\"]\ntype_value = \"row\"\n",
        ),
        (
            "table = \"box-office-bookings\"\nkey = ",
            "table = \"box-office-bookings\"\ntype_value = \"row\"\nkey = ",
        ),
    ];
    let mut text = text;
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    text.push_str(
        "\n[subscriptions.bookingEvents]\nentity = \"Booking\"\ndescription = \"The venue's bookings as they are made and cancelled.\"\n",
    );
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

async fn clean(api: &Api) {
    api.assert_clean(&chart()).await;
}

on_both_engines_of!(chart, after = clean;
    a_booking_and_its_events_count_are_one_transaction_across_the_tables,
    nodes_of_both_tables_are_one_batch_get,
    a_subscription_follows_the_bookings_table,
);

fn operations(r: &Value) -> Vec<String> {
    requests(r)
        .iter()
        .map(|q| q["operation"].as_str().unwrap().to_owned())
        .collect()
}

const BOOK: &str = r#"mutation($input: BookSeatsInput!) { bookSeats(input: $input) { booking { id bookingNo seats event { title bookingCount } } } }"#;
const COUNT: &str =
    r#"{ venue(slug: "harbour-hall") { events(first: 5) { nodes { eventId bookingCount } } } }"#;

async fn counts(api: &Api) -> Value {
    let r = api.run(COUNT).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"]["venue"]["events"]["nodes"].clone()
}

fn booking(number: u32, event: &str) -> Value {
    json!({ "input": { "bookingNo": number, "venue": "harbour-hall", "eventId": event, "holder": "Edsger D.", "seats": 2 } })
}

async fn a_booking_and_its_events_count_are_one_transaction_across_the_tables(api: &Api) {
    let before = counts(api).await;
    assert_eq!(
        before,
        json!([{ "eventId": "spring-quartet", "bookingCount": 1 }, { "eventId": "winter-gala", "bookingCount": 2 }])
    );
    let r = api.run_with(BOOK, booking(2001, "winter-gala")).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(operations(&r)[0], "TransactWriteItems", "{r:#}");
    assert_eq!(
        r["data"]["bookSeats"]["booking"]["event"],
        json!({ "title": "Winter Gala", "bookingCount": 3 })
    );
    // An event that is not there: refused, and neither table written.
    let r = api.run_with(BOOK, booking(2002, "no-such-event")).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    // The number taken: refused, the count untouched.
    let r = api.run_with(BOOK, booking(2001, "spring-quartet")).await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    assert_eq!(
        counts(api).await,
        json!([{ "eventId": "spring-quartet", "bookingCount": 1 }, { "eventId": "winter-gala", "bookingCount": 3 }])
    );
    let r = api
        .run(r#"{ booking(venue: "harbour-hall", bookingNo: 2002) { holder } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["booking"], Value::Null);
    // Cancelled: the booking gone and uncounted, one read and one transaction.
    let r = api
        .run(r#"mutation { cancelBooking(input: { venue: "harbour-hall", bookingNo: 2001 }) { deletedBookingId } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"], "{r:#}");
    assert_eq!(counts(api).await, before);
}

async fn nodes_of_both_tables_are_one_batch_get(api: &Api) {
    let r = api
        .run(r#"{ venue(slug: "harbour-hall") { id events(first: 1) { nodes { id bookings(first: 1) { nodes { id } } } } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let venue = &r["data"]["venue"];
    let event = &venue["events"]["nodes"][0];
    let ids = json!([
        venue["id"],
        event["id"],
        event["bookings"]["nodes"][0]["id"]
    ]);
    let r = api
        .run_with(
            r#"query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }"#,
            json!({ "ids": ids }),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let types: Vec<&str> = r["data"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["__typename"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["Venue", "Event", "Booking"]);
    assert_eq!(operations(&r), ["BatchGetItem"], "{r:#}");
}

const EVENTS: &str = r#"subscription($venue: String!) {
    bookingEvents(venue: $venue) { kind booking { bookingNo holder } } }"#;

async fn next_event(events: &mut Events) -> Value {
    crate::common::graphql::next_event(events, "bookingEvents").await
}

async fn a_subscription_follows_the_bookings_table(api: &Api) {
    // The suites' DynamoDB Local tables are made without a stream: each table's turned on.
    api.store.enable_change_stream(false).await.unwrap();
    for t in &api.served_tables()[1..] {
        let sibling = api.store.sibling(t).expect("the bookings table");
        sibling.enable_change_stream(false).await.unwrap();
    }
    let venue = Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("harbour-hall").unwrap(),
        role: Role::Member,
        subject: None,
    };
    let mut events: Events =
        Box::new(api.subscribe(&venue, None, EVENTS, json!({ "venue": "harbour-hall" })));
    for _ in 0..2000 {
        if api.hub.listeners() >= 1 {
            break;
        }
        use futures::StreamExt;
        if let Ok(Some(r)) =
            tokio::time::timeout(std::time::Duration::from_millis(5), events.next()).await
        {
            panic!("no event expected yet: {r:#}");
        }
    }
    let r = api.run_with(BOOK, booking(3001, "spring-quartet")).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let e = next_event(&mut events).await;
    assert_eq!(e["kind"], "CREATED");
    assert_eq!(
        e["booking"],
        json!({ "bookingNo": 3001, "holder": "Edsger D." })
    );
    let r = api
        .run(r#"mutation { cancelBooking(input: { venue: "harbour-hall", bookingNo: 3001 }) { deletedBookingId } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let e = next_event(&mut events).await;
    assert_eq!(e["kind"], "DELETED");
}
