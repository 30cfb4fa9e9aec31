//! Expressions, item conversions and the error mapping of the DynamoDB engine.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::CancellationReason;

use super::client;
use super::convert::*;
use super::errors::*;
use super::*;
use crate::store::{
    only_conflicts, AttributeValue, CancelReason, CmpOp, Condition, SetValue, SortCondition,
    UpdateExpr,
};

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: &str) -> AttributeValue {
    AttributeValue::N(v.into())
}

fn names(ex: &Expressions) -> Vec<(&str, &str)> {
    let mut v: Vec<_> = ex
        .names
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    v.sort();
    v
}

#[test]
fn a_condition_reuses_one_placeholder_per_attribute_and_one_per_value() {
    let mut ex = Expressions::default();
    let c = Condition::And(vec![
        Condition::exists("PK"),
        Condition::Or(vec![
            Condition::Cmp("Version".into(), CmpOp::Eq, n("3")),
            Condition::Cmp("Version".into(), CmpOp::Lt, n("1")),
        ]),
        Condition::Not(Box::new(Condition::BeginsWith(
            "Status".into(),
            "CLOSED".into(),
        ))),
    ]);
    assert_eq!(
        ex.condition(&c),
        "attribute_exists(#n0) AND (#n1 = :v0 OR #n1 < :v1) AND NOT begins_with(#n2, :v2)"
    );
    assert_eq!(
        names(&ex),
        [("#n0", "PK"), ("#n1", "Version"), ("#n2", "Status")]
    );
    assert_eq!(ex.values[":v2"], SdkValue::S("CLOSED".into()));
}

#[test]
fn every_comparison_operator_and_between_render() {
    let mut ex = Expressions::default();
    let ops = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
    let c = Condition::Or(
        ops.iter()
            .map(|op| Condition::Cmp("a".into(), *op, n("1")))
            .chain([Condition::Between("b".into(), s("x"), s("y"))])
            .collect(),
    );
    assert_eq!(
        ex.condition(&c),
        "#n0 = :v0 OR #n0 <> :v1 OR #n0 < :v2 OR #n0 <= :v3 OR #n0 > :v4 OR #n0 >= :v5 OR #n1 BETWEEN :v6 AND :v7"
    );
}

#[test]
fn not_parenthesises_a_compound_operand_and_a_single_junction_is_bare() {
    let mut ex = Expressions::default();
    let c = Condition::Not(Box::new(Condition::And(vec![
        Condition::not_exists("a"),
        Condition::exists("b"),
    ])));
    assert_eq!(
        ex.condition(&c),
        "NOT (attribute_not_exists(#n0) AND attribute_exists(#n1))"
    );
    let mut ex = Expressions::default();
    let c = Condition::And(vec![Condition::Or(vec![Condition::exists("a")])]);
    assert_eq!(ex.condition(&c), "attribute_exists(#n0)");
}

#[test]
fn an_update_renders_set_remove_and_add_clauses_in_that_order() {
    let mut ex = Expressions::default();
    let mut u = UpdateExpr::default()
        .set("Status", s("OPEN"))
        .remove("Assignee")
        .add("ticketCount", 1);
    u.set
        .push(("CreatedAt".into(), SetValue::IfNotExists(s("2024"))));
    assert_eq!(
        ex.update(&u).as_deref(),
        Some("SET #n0 = :v0, #n1 = if_not_exists(#n1, :v1) REMOVE #n2 ADD #n3 :v2")
    );
    assert_eq!(
        names(&ex),
        [
            ("#n0", "Status"),
            ("#n1", "CreatedAt"),
            ("#n2", "Assignee"),
            ("#n3", "ticketCount")
        ]
    );
    assert_eq!(ex.values[":v2"], SdkValue::N("1".into()));
}

#[test]
fn an_update_and_its_condition_share_placeholders() {
    let mut ex = Expressions::default();
    let u = UpdateExpr::default().set("Version", n("4"));
    assert_eq!(ex.update(&u).as_deref(), Some("SET #n0 = :v0"));
    let c = Condition::eq("Version", n("3"));
    assert_eq!(ex.condition(&c), "#n0 = :v1");
    let (names, values) = ex.into_maps();
    assert_eq!(names.unwrap().len(), 1);
    assert_eq!(values.unwrap().len(), 2);
}

#[test]
fn an_empty_update_renders_nothing_and_leaves_no_empty_maps() {
    let mut ex = Expressions::default();
    assert_eq!(ex.update(&UpdateExpr::default()), None);
    assert_eq!(ex.into_maps(), (None, None));
    let mut ex = Expressions::default();
    ex.condition(&Condition::not_exists("PK"));
    let (names, values) = ex.into_maps();
    assert!(names.is_some());
    assert_eq!(
        values, None,
        "a condition without operands sends no values map"
    );
}

#[test]
fn key_conditions_render_partition_equality_and_each_sort_condition() {
    let cases = [
        (None, "#n0 = :v0"),
        (
            Some(SortCondition::Eq("a".into())),
            "#n0 = :v0 AND #n1 = :v1",
        ),
        (
            Some(SortCondition::Lt("a".into())),
            "#n0 = :v0 AND #n1 < :v1",
        ),
        (
            Some(SortCondition::Le("a".into())),
            "#n0 = :v0 AND #n1 <= :v1",
        ),
        (
            Some(SortCondition::Gt("a".into())),
            "#n0 = :v0 AND #n1 > :v1",
        ),
        (
            Some(SortCondition::Ge("a".into())),
            "#n0 = :v0 AND #n1 >= :v1",
        ),
        (
            Some(SortCondition::Between("a".into(), "b".into())),
            "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2",
        ),
        (
            Some(SortCondition::BeginsWith("USER#".into())),
            "#n0 = :v0 AND begins_with(#n1, :v1)",
        ),
    ];
    for (sort, want) in cases {
        let mut ex = Expressions::default();
        assert_eq!(
            ex.key_condition(
                &[(("GSI1PK", crate::store::KeyType::S), "ORG#o")],
                &[("GSI1SK", crate::store::KeyType::S)],
                &[],
                sort.as_ref()
            ),
            want
        );
        assert_eq!(ex.names["#n0"], "GSI1PK");
        assert_eq!(ex.values[":v0"], SdkValue::S("ORG#o".into()));
    }
}

#[test]
fn a_multi_attribute_key_condition_names_every_attribute_in_order() {
    use crate::store::KeyType::{N, S};
    let mut ex = Expressions::default();
    let cond = ex.key_condition(
        &[(("Region", S), "eu"), (("Shelf", N), "4")],
        &[("Status", S), ("Placed", S), ("Qty", N)],
        &["OPEN".to_owned()],
        Some(&SortCondition::Ge("2026".into())),
    );
    assert_eq!(cond, "#n0 = :v0 AND #n1 = :v1 AND #n2 = :v2 AND #n3 >= :v3");
    assert_eq!(ex.names["#n3"], "Placed");
    assert_eq!(ex.values[":v1"], SdkValue::N("4".into()));
}

#[test]
fn items_convert_both_ways_without_loss() {
    let item: Item = [
        ("PK".to_string(), s("ORG#o")),
        ("n".to_string(), n("1.5")),
        ("b".to_string(), AttributeValue::B(vec![1, 2])),
        (
            "l".to_string(),
            AttributeValue::L(vec![AttributeValue::Bool(true)]),
        ),
        ("ss".to_string(), AttributeValue::Ss(vec!["x".into()])),
    ]
    .into();
    assert_eq!(from_sdk_item(to_sdk_item(item.clone())).unwrap(), item);
}

mod errors {
    use super::*;
    use aws_sdk_dynamodb::error::{ConnectorError, ErrorMetadata};
    use aws_sdk_dynamodb::operation::put_item::PutItemError;
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
    use aws_sdk_dynamodb::types::error::{
        ConditionalCheckFailedException, TransactionCanceledException,
    };
    use aws_smithy_types::body::SdkBody;

    fn response(status: u16) -> HttpResponse {
        HttpResponse::new(status.try_into().unwrap(), SdkBody::empty())
    }

    fn service<E>(e: E) -> SdkError<E, HttpResponse> {
        SdkError::service_error(e, response(400))
    }

    fn coded(code: &str) -> StoreError {
        let meta = ErrorMetadata::builder().code(code).message("why").build();
        store_error("t", service(PutItemError::generic(meta)))
    }

    #[test]
    fn service_codes_map_to_port_errors() {
        assert_eq!(
            coded("ValidationException"),
            StoreError::Validation("why".into())
        );
        assert_eq!(
            coded("ResourceNotFoundException"),
            StoreError::TableNotFound("t".into())
        );
        for code in [
            "ProvisionedThroughputExceededException",
            "RequestLimitExceeded",
            "ThrottlingException",
        ] {
            assert_eq!(coded(code), StoreError::Throttled("why".into()), "{code}");
        }
        assert!(matches!(
            coded("ServiceUnavailable"),
            StoreError::Unavailable(_)
        ));
        assert!(
            matches!(coded("InternalServerError"), StoreError::Unavailable(m) if m.contains("InternalServerError"))
        );
        assert!(matches!(
            coded("SomethingNew"),
            StoreError::Internal(m) if m.contains("SomethingNew")
        ));
    }

    #[test]
    fn a_server_error_without_a_dynamodb_code_is_unavailable() {
        let uncoded = |status| {
            let e = PutItemError::generic(ErrorMetadata::builder().build());
            store_error("t", SdkError::service_error(e, response(status)))
        };
        assert!(matches!(uncoded(502), StoreError::Unavailable(_)));
        assert!(matches!(uncoded(503), StoreError::Unavailable(_)));
        assert!(
            matches!(uncoded(400), StoreError::Internal(_)),
            "a client error is a bug to look for"
        );
    }

    #[test]
    fn transport_failures_are_unavailable() {
        let timeout: SdkError<PutItemError, HttpResponse> = SdkError::timeout_error("slow");
        assert!(matches!(
            store_error("t", timeout),
            StoreError::Unavailable(_)
        ));
        let refused: SdkError<PutItemError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::io("connection refused".into()));
        assert!(
            matches!(store_error("t", refused), StoreError::Unavailable(m) if m.contains("connection refused"))
        );
        let bug: SdkError<PutItemError, HttpResponse> = SdkError::construction_failure("bad");
        assert!(matches!(store_error("t", bug), StoreError::Internal(_)));
    }

    #[test]
    fn a_failed_condition_carries_the_returned_item() {
        let e = ConditionalCheckFailedException::builder()
            .message("The conditional request failed")
            .item("PK", SdkValue::S("a".into()))
            .build();
        let err = store_error(
            "t",
            service(PutItemError::ConditionalCheckFailedException(e)),
        );
        let item: Item = [("PK".to_string(), s("a"))].into();
        assert_eq!(
            err,
            StoreError::ConditionFailed {
                item: Some(Box::new(item))
            }
        );
    }

    #[test]
    fn cancellation_reasons_keep_action_order_and_codes() {
        let reason = |code: &str| {
            CancellationReason::builder()
                .code(code)
                .message("m")
                .build()
        };
        let e = TransactionCanceledException::builder()
            .cancellation_reasons(reason("None"))
            .cancellation_reasons(
                CancellationReason::builder()
                    .code("ConditionalCheckFailed")
                    .item("PK", SdkValue::S("a".into()))
                    .build(),
            )
            .cancellation_reasons(reason("TransactionConflict"))
            .cancellation_reasons(reason("ValidationError"))
            .cancellation_reasons(reason("ThrottlingError"))
            .build();
        let err = store_error(
            "t",
            service(TransactWriteItemsError::TransactionCanceledException(e)),
        );
        let item: Item = [("PK".to_string(), s("a"))].into();
        assert_eq!(
            err,
            StoreError::TransactionCanceled {
                reasons: vec![
                    CancelReason::None,
                    CancelReason::ConditionalCheckFailed { item: Some(item) },
                    CancelReason::TransactionConflict,
                    CancelReason::ValidationError("m".into()),
                    CancelReason::Throttled,
                ]
            }
        );
    }
}

#[test]
fn only_a_cancellation_by_conflicts_alone_is_retried() {
    use CancelReason::{None as Fine, TransactionConflict as Conflict};
    assert!(only_conflicts(&[Fine, Conflict, Fine]));
    assert!(only_conflicts(&[Conflict]));
    assert!(!only_conflicts(&[]));
    assert!(!only_conflicts(&[Fine, Fine]));
    let failed = CancelReason::ConditionalCheckFailed { item: None };
    assert!(
        !only_conflicts(&[Conflict, failed]),
        "a failed condition is an answer"
    );
    assert!(only_conflicts(&[Conflict, CancelReason::Throttled]));
    assert!(only_conflicts(&[Fine, CancelReason::Throttled]));
    let other = CancelReason::Other {
        code: "ItemCollectionSizeLimitExceeded".into(),
        message: String::new(),
    };
    assert!(!only_conflicts(&[Conflict, other]));
}

#[test]
fn an_unknown_attribute_type_is_an_error_not_a_panic() {
    let item = SdkItem::from([("x".to_string(), SdkValue::L(vec![SdkValue::Unknown]))]);
    assert!(matches!(from_sdk_item(item), Err(StoreError::Internal(_))));
}

/// The fixed endpoint answers what the SDK's rules answer beside an endpoint URL, for a
/// single-table call and for a list of tables, and leaves FIPS to the rules' refusal.
#[tokio::test]
async fn the_fixed_endpoint_answers_as_the_endpoint_rules_do() {
    use aws_sdk_dynamodb::config::endpoint::{DefaultResolver, Params, ResolveEndpoint};
    let url = "http://127.0.0.1:8000";
    let fixed = client::FixedEndpoint::new(url);
    let rules = DefaultResolver::new();
    let base = || {
        Params::builder()
            .region("eu-west-1")
            .endpoint(url)
            .use_dual_stack(false)
            .account_id_endpoint_mode("preferred")
    };
    let single = base()
        .use_fips(false)
        .resource_arn("itemgraph")
        .build()
        .unwrap();
    let list = base()
        .use_fips(false)
        .resource_arn_list(vec!["itemgraph".to_owned()])
        .build()
        .unwrap();
    for params in [&single, &list] {
        let ours = fixed.resolve_endpoint(params).await.unwrap();
        let theirs = rules.resolve_endpoint(params).await.unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(ours.url(), url);
    }
    let fips = base()
        .use_fips(true)
        .resource_arn("itemgraph")
        .build()
        .unwrap();
    let ours = fixed.resolve_endpoint(&fips).await.unwrap_err().to_string();
    let theirs = rules.resolve_endpoint(&fips).await.unwrap_err().to_string();
    assert_eq!(ours, theirs);
}
