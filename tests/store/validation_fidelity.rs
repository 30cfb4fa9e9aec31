//! The shared validator refuses only what DynamoDB refuses: each bad request the port
//! rejects up front is sent raw, through the AWS SDK, to DynamoDB Local, which must answer
//! `ValidationException` too. (The contract suite shows the port's own answer is the same
//! on both engines.)

use crate::common;

use std::collections::HashMap;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeValue as A, KeysAndAttributes, Put, TransactWriteItem, Update,
};
use itemgraph::store::Store;

fn key(pk: &str, sk: &str) -> HashMap<String, A> {
    HashMap::from([
        ("PK".to_string(), A::S(pk.into())),
        ("SK".to_string(), A::S(sk.into())),
    ])
}

fn code<T, E: ProvideErrorMetadata>(r: Result<T, E>) -> String {
    match r {
        Ok(_) => "accepted".into(),
        Err(e) => e.code().unwrap_or("no code").to_string(),
    }
}

#[tokio::test]
async fn dynamodb_local_rejects_what_the_validator_rejects() {
    let Some(store) = common::engines::dynamodb("fidelity").await else {
        return;
    };
    let c = store.client();
    let t = store.table_name().to_string();
    let mut results: Vec<(&str, String)> = Vec::new();

    let mut huge = key("H", "1");
    huge.insert("d".into(), A::S("x".repeat(400 * 1024)));
    results.push((
        "oversized item",
        code(
            c.put_item()
                .table_name(&t)
                .set_item(Some(huge))
                .send()
                .await,
        ),
    ));

    results.push((
        "empty partition key",
        code(
            c.put_item()
                .table_name(&t)
                .set_item(Some(key("", "1")))
                .send()
                .await,
        ),
    ));
    results.push((
        "empty sort key",
        code(
            c.get_item()
                .table_name(&t)
                .set_key(Some(key("P", "")))
                .send()
                .await,
        ),
    ));

    let many: Vec<_> = (0..101).map(|i| key("B", &i.to_string())).collect();
    let ka = KeysAndAttributes::builder()
        .set_keys(Some(many))
        .build()
        .unwrap();
    results.push((
        "101 keys",
        code(c.batch_get_item().request_items(&t, ka).send().await),
    ));

    let dup = KeysAndAttributes::builder()
        .keys(key("B", "1"))
        .keys(key("B", "1"))
        .build()
        .unwrap();
    results.push((
        "duplicate keys",
        code(c.batch_get_item().request_items(&t, dup).send().await),
    ));

    let put = TransactWriteItem::builder()
        .put(
            Put::builder()
                .table_name(&t)
                .set_item(Some(key("X", "1")))
                .build()
                .unwrap(),
        )
        .build();
    let upd = TransactWriteItem::builder()
        .update(
            Update::builder()
                .table_name(&t)
                .set_key(Some(key("X", "1")))
                .update_expression("ADD c :one")
                .expression_attribute_values(":one", A::N("1".into()))
                .build()
                .unwrap(),
        )
        .build();
    results.push((
        "one item twice",
        code(
            c.transact_write_items()
                .transact_items(put)
                .transact_items(upd)
                .send()
                .await,
        ),
    ));

    results.push((
        "update the key",
        code(
            c.update_item()
                .table_name(&t)
                .set_key(Some(key("X", "1")))
                .update_expression("SET SK = :v")
                .expression_attribute_values(":v", A::S("2".into()))
                .send()
                .await,
        ),
    ));

    let mut empty_index = key("X", "1");
    empty_index.insert("GSI1PK".into(), A::S(String::new()));
    empty_index.insert("GSI1SK".into(), A::S("s".into()));
    results.push((
        "empty index key",
        code(
            c.put_item()
                .table_name(&t)
                .set_item(Some(empty_index))
                .send()
                .await,
        ),
    ));

    let mut typed_index = key("X", "1");
    typed_index.insert("GSI2SK".into(), A::N("1".into()));
    results.push((
        "index key type",
        code(
            c.put_item()
                .table_name(&t)
                .set_item(Some(typed_index))
                .send()
                .await,
        ),
    ));

    let query = || {
        c.query()
            .table_name(&t)
            .key_condition_expression("#p = :p")
            .expression_attribute_names("#p", "GSI1PK")
            .expression_attribute_values(":p", A::S("G".into()))
    };
    results.push((
        "consistent gsi",
        code(
            query()
                .index_name("GSI1")
                .consistent_read(true)
                .send()
                .await,
        ),
    ));
    results.push((
        "unknown index",
        code(query().index_name("GSI9").send().await),
    ));
    let base_query = || {
        c.query()
            .table_name(&t)
            .key_condition_expression("PK = :p")
            .expression_attribute_values(":p", A::S("G".into()))
    };
    results.push(("limit 0", code(base_query().limit(0).send().await)));
    results.push((
        "foreign start key",
        code(
            base_query()
                .set_exclusive_start_key(Some(key("OTHER", "1")))
                .send()
                .await,
        ),
    ));

    let mut big_number = key("X", "1");
    big_number.insert("n".into(), A::N("1e200".into()));
    results.push((
        "bad number",
        code(
            c.put_item()
                .table_name(&t)
                .set_item(Some(big_number))
                .send()
                .await,
        ),
    ));

    results.push((
        "ordering a boolean",
        code(
            c.put_item()
                .table_name(&t)
                .set_item(Some(key("X", "1")))
                .condition_expression("n < :b")
                .expression_attribute_values(":b", A::Bool(true))
                .send()
                .await,
        ),
    ));

    let accepted: Vec<_> = results
        .iter()
        .filter(|(_, c)| c != "ValidationException")
        .collect();
    assert!(
        accepted.is_empty(),
        "DynamoDB Local did not reject these as the validator does: {accepted:?}"
    );
    eprintln!(
        "DynamoDB Local rejected all {} bad requests with ValidationException",
        results.len()
    );
    let _ = store.delete_table().await;
}
