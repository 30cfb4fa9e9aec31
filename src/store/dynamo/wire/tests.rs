//! The items tap read against the SDK's own parse of the same bodies.

use std::sync::Arc;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::query::{QueryError, QueryOutput};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use proptest::prelude::*;

use super::super::convert::from_sdk_item;
use super::{split, tapped, ItemsTap, Member, Tapped};
use crate::store::{AttributeValue, Item};

/// An HTTP client answering every request with `status` and `body`.
#[derive(Debug, Clone)]
struct Canned {
    status: u16,
    body: Arc<String>,
}

impl HttpConnector for Canned {
    fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
        let response = aws_sdk_dynamodb::config::http::HttpResponse::new(
            self.status.try_into().expect("a status"),
            SdkBody::from(self.body.as_str().to_owned()),
        );
        HttpConnectorFuture::ready(Ok(response))
    }
}

impl HttpClient for Canned {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}

fn client(http: SharedHttpClient) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("a", "b", None, None, "test"))
        .endpoint_url("http://127.0.0.1:9")
        .http_client(http)
        .build();
    Client::from_conf(config)
}

fn canned(status: u16, body: &str) -> Canned {
    Canned {
        status,
        body: Arc::new(body.to_owned()),
    }
}

/// A Query answered `status` and `body` through the tap, inside a tapped call.
async fn query_tapped(
    status: u16,
    body: &str,
) -> (
    Result<QueryOutput, SdkError<QueryError, HttpResponse>>,
    Option<Tapped>,
) {
    let tapping = client(SharedHttpClient::new(ItemsTap::new(SharedHttpClient::new(
        canned(status, body),
    ))));
    tapped(
        Member::Items,
        tapping
            .query()
            .table_name("t")
            .key_condition_expression("PK = :p")
            .send(),
    )
    .await
}

/// The SDK's items for a Query answered `body`, and the tap's: (SDK, tap).
async fn query_both(body: &str) -> (Vec<Item>, Option<Tapped>, bool) {
    let plain = client(SharedHttpClient::new(canned(200, body)));
    let sdk = plain
        .query()
        .table_name("t")
        .key_condition_expression("PK = :p")
        .send()
        .await
        .expect("the SDK reads the body");
    let sdk_items: Vec<Item> = sdk
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|i| from_sdk_item(i).expect("known types"))
        .collect();
    let (out, items) = query_tapped(200, body).await;
    let out = out.expect("the SDK reads the rest");
    let rest_same = out.count == sdk.count
        && out.last_evaluated_key == sdk.last_evaluated_key
        && out.consumed_capacity == sdk.consumed_capacity
        && out.items.is_none();
    (sdk_items, items, rest_same)
}

const EVERY_TYPE: &str = r#"{"Count":1,"Items":[{"PK":{"S":"ORG#a\"b\u00e9"},"n":{"N":"-1.50E+3"},
"b":{"B":"aGk="},"t":{"BOOL":true},"z":{"NULL":true},"m":{"M":{"x":{"L":[{"S":"1"},{"N":"2"},
{"M":{}}]}}},"ss":{"SS":["a","b"]},"ns":{"NS":["1","2.5"]},"bs":{"BS":["AA==","AQI="]}}],
"ScannedCount":1,"LastEvaluatedKey":{"PK":{"S":"ORG#a"},"SK":{"S":"USER#b"}},
"ConsumedCapacity":{"TableName":"t","CapacityUnits":0.5,"Table":{"CapacityUnits":0.5}}}"#;

#[tokio::test]
async fn every_type_reads_as_the_sdk_reads_it_and_the_rest_is_the_sdks() {
    let (sdk, tapped, rest_same) = query_both(EVERY_TYPE).await;
    assert_eq!(sdk.len(), 1);
    assert_eq!(tapped, Some(Tapped::Items(sdk)));
    assert!(
        rest_same,
        "count, LastEvaluatedKey and capacity as the SDK read them"
    );
}

#[tokio::test]
async fn a_body_the_tap_cannot_read_goes_to_the_sdk_whole() {
    // A type newer than this code: the SDK's Unknown, which the engine refuses by name.
    let newer = r#"{"Count":1,"Items":[{"PK":{"S":"a"},"v":{"VECTOR":[1,2]}}]}"#;
    let (out, items) = query_tapped(200, newer).await;
    assert_eq!(items, None);
    let items = out.expect("the SDK reads it").items.expect("its items");
    assert!(from_sdk_item(items[0].clone()).is_err());
    // An error's body is the SDK's too.
    let error = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"no table"}"#;
    let (out, items) = query_tapped(400, error).await;
    assert_eq!(items, None);
    let err = out.expect_err("an error");
    assert!(err.into_service_error().is_resource_not_found_exception());
}

#[tokio::test]
async fn outside_a_tapped_call_the_body_is_untouched() {
    let tapping = client(SharedHttpClient::new(ItemsTap::new(SharedHttpClient::new(
        canned(200, EVERY_TYPE),
    ))));
    let out = tapping
        .query()
        .table_name("t")
        .key_condition_expression("PK = :p")
        .send()
        .await
        .expect("read");
    assert_eq!(out.items.map(|i| i.len()), Some(1));
}

#[test]
fn get_item_and_batch_get_item_members_split() {
    let (tapped, rest) = split(Member::Item, br#"{"Item":{"PK":{"S":"a"}}}"#).expect("read");
    assert_eq!(
        tapped,
        Tapped::Item(Some(Item::from([(
            "PK".into(),
            AttributeValue::S("a".into())
        )])))
    );
    assert_eq!(rest, b"{}");
    let (tapped, _) = split(Member::Item, b"{}").expect("read");
    assert_eq!(tapped, Tapped::Item(None));
    let body = br#"{"Responses":{"t":[{"PK":{"S":"a"}}]},"UnprocessedKeys":{}}"#;
    let (tapped, rest) = split(Member::Responses, body).expect("read");
    let Tapped::Responses(by_table) = tapped else {
        panic!("responses")
    };
    assert_eq!(by_table["t"].len(), 1);
    assert_eq!(rest, br#"{"UnprocessedKeys":{}}"#);
    // Malformed: a value of two types, an attribute twice, trailing text.
    for bad in [
        &br#"{"Item":{"a":{"S":"x","N":"1"}}}"#[..],
        br#"{"Item":{"a":{"S":"x"},"a":{"S":"y"}}}"#,
        br#"{"Item":{}} x"#,
        br#"{"Item":{"a":{}}}"#,
        br#"{"Item":{"a":{"B":"not base64!"}}}"#,
    ] {
        assert!(
            split(Member::Item, bad).is_none(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

/// DynamoDB's JSON for `v` (the test's own writer; the SDK's reading of it is the reference).
fn wire(v: &AttributeValue) -> serde_json::Value {
    use base64::Engine as _;
    use serde_json::json;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    match v {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::B(b) => json!({ "B": b64(b) }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(b) => json!({ "NULL": b }),
        AttributeValue::M(m) => {
            json!({ "M": m.iter().map(|(k, v)| (k.clone(), wire(v))).collect::<serde_json::Map<_, _>>() })
        }
        AttributeValue::L(l) => json!({ "L": l.iter().map(wire).collect::<Vec<_>>() }),
        AttributeValue::Ss(s) => json!({ "SS": s }),
        AttributeValue::Ns(n) => json!({ "NS": n }),
        AttributeValue::Bs(b) => json!({ "BS": b.iter().map(|b| b64(b)).collect::<Vec<_>>() }),
    }
}

fn value() -> impl Strategy<Value = AttributeValue> {
    let leaf = prop_oneof![
        ".*".prop_map(AttributeValue::S),
        "-?[0-9]{1,5}(\\.[0-9]{1,3})?".prop_map(AttributeValue::N),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(AttributeValue::B),
        any::<bool>().prop_map(AttributeValue::Bool),
        Just(AttributeValue::Null(true)),
        proptest::collection::vec(".*", 1..3).prop_map(AttributeValue::Ss),
        proptest::collection::vec("[0-9]{1,3}", 1..3).prop_map(AttributeValue::Ns),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..4), 1..3)
            .prop_map(AttributeValue::Bs),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(AttributeValue::L),
            proptest::collection::hash_map(".{0,6}", inner, 0..4).prop_map(AttributeValue::M),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_page_reads_as_the_sdk_reads_it(
        items in proptest::collection::vec(proptest::collection::hash_map(".{1,8}", value(), 1..6), 0..4)
    ) {
        let body = serde_json::json!({
            "Count": items.len(),
            "Items": items.iter().map(|i| i.iter().map(|(k, v)| (k.clone(), wire(v))).collect::<serde_json::Map<_, _>>()).collect::<Vec<_>>(),
        })
        .to_string();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let (sdk, tapped, rest_same) = runtime.block_on(query_both(&body));
        prop_assert_eq!(tapped, Some(Tapped::Items(sdk)));
        prop_assert!(rest_same);
    }
}
