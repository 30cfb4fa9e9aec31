use super::*;
use std::collections::HashMap;
use std::path::Path;

use redb::{Database, TableDefinition};

use super::codec::{
    decode_item, decode_key, encode_item, encode_key, key_range, table_key, BINARY_ITEM, PROJECTED,
};
use super::upgrade::FORMAT_KEY;
use crate::store::{AttributeValue, PrimaryKey, Put, Query, SortCondition, Store};

fn stored_row(path: &Path, table: &str, key: &[u8]) -> Vec<u8> {
    let db = Database::create(path).expect("the file");
    let tx = db.begin_read().expect("read");
    let def: Bytes<'_> = TableDefinition::new(table);
    let t = tx.open_table(def).expect("table");
    let v = t.get(key).expect("get").expect("a row").value().to_vec();
    v
}

/// A format 1 file (items and index copies as DynamoDB JSON, no format recorded) is
/// rewritten in the binary encoding when opened, and reads the same; a file of a newer
/// format is refused with a message saying so.
#[tokio::test]
async fn a_format_1_file_is_migrated_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("old.redb");
    let item = Item::from([
        ("PK".to_owned(), AttributeValue::S("A".into())),
        ("SK".to_owned(), AttributeValue::S("1".into())),
        ("GSI1PK".to_owned(), AttributeValue::S("G".into())),
        ("GSI1SK".to_owned(), AttributeValue::S("1".into())),
        ("n".to_owned(), AttributeValue::N("1.5".into())),
        (
            "m".to_owned(),
            AttributeValue::M(HashMap::from([(
                "l".to_owned(),
                AttributeValue::L(vec![AttributeValue::Bool(true), AttributeValue::Null(true)]),
            )])),
        ),
        ("ss".to_owned(), AttributeValue::Ss(vec!["x\"y".into()])),
        ("b".to_owned(), AttributeValue::B(vec![0, 1, 255])),
    ]);
    let key = table_key(&PrimaryKey::new("A", "1"));
    {
        let store =
            EmbeddedStore::open(&path, "t", crate::chart::builtin().table_schema()).expect("open");
        store.create_table().await.expect("create");
        store.put_item(Put::new(item.clone())).await.expect("put");
    }
    // Make it what format 1 wrote: JSON, and no format recorded.
    let index = format!(
        "index/t/{}",
        crate::chart::builtin().table_schema().indexes[0].name
    );
    {
        let db = Database::create(&path).expect("the file");
        let tx = db.begin_write().expect("write");
        {
            let mut items = tx.open_table(Bytes::new("items/t")).expect("items");
            let json = serde_json::to_vec(&item).expect("json");
            items
                .insert(key.as_slice(), json.as_slice())
                .expect("insert");
            let mut rows = tx.open_table(Bytes::new(&index)).expect("index");
            let mut projected = PROJECTED.to_vec();
            projected.extend(serde_json::to_vec(&item).expect("json"));
            rows.insert(b"row".as_slice(), projected.as_slice())
                .expect("insert");
            let mut meta = tx.open_table(META).expect("meta");
            meta.remove(format!("{FORMAT_KEY}t").as_str())
                .expect("remove");
        }
        tx.commit().expect("commit");
    }
    assert_eq!(stored_row(&path, "items/t", &key).first(), Some(&b'{'));
    {
        let store = EmbeddedStore::open(&path, "t", crate::chart::builtin().table_schema())
            .expect("migrate");
        let got = store
            .get_item(GetItem {
                key: PrimaryKey::new("A", "1"),
                consistent_read: true,
            })
            .await
            .expect("get");
        assert_eq!(got.as_ref(), Some(&item));
    }
    assert_eq!(
        stored_row(&path, "items/t", &key).first(),
        Some(&BINARY_ITEM)
    );
    let row = stored_row(&path, &index, b"row");
    assert_eq!(
        row.strip_prefix(&PROJECTED).and_then(|r| r.first()),
        Some(&BINARY_ITEM)
    );
    assert_eq!(decode_item(&row[PROJECTED.len()..]).expect("decodes"), item);

    // A newer format: refused, saying so.
    {
        let db = Database::create(&path).expect("the file");
        let tx = db.begin_write().expect("write");
        {
            let mut meta = tx.open_table(META).expect("meta");
            meta.insert(
                format!("{FORMAT_KEY}t").as_str(),
                3u32.to_be_bytes().as_slice(),
            )
            .expect("insert");
        }
        tx.commit().expect("commit");
    }
    let err = EmbeddedStore::open(&path, "t", crate::chart::builtin().table_schema())
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("format 3, written by a newer itemgraph"),
        "{err}"
    );
}

/// The committer lets go of the store before it answers the last group: a store dropped
/// as soon as its write is answered has closed its file, so it opens again at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_dropped_once_its_write_is_answered_opens_again_at_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("t.redb");
    for i in 0..100 {
        let store = EmbeddedStore::open(&path, "t", crate::chart::builtin().table_schema())
            .unwrap_or_else(|e| panic!("open {i}: {e}"));
        if i == 0 {
            store.create_table().await.expect("create");
        }
        store
            .put_item(Put::new(Item::from([
                ("PK".to_owned(), AttributeValue::S("A".into())),
                ("SK".to_owned(), AttributeValue::S(i.to_string())),
            ])))
            .await
            .expect("put");
    }
}

/// A write whose group committer the runtime refuses to start (it is shutting down) is
/// answered with an error, nothing of it written, and the store's next write commits:
/// no write waits for a committer that will never run.
#[test]
fn a_committer_the_runtime_refuses_answers_its_writes_and_the_next_write_commits() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = EmbeddedStore::open(
        &dir.path().join("t.redb"),
        "t",
        crate::chart::builtin().table_schema(),
    )
    .expect("open");
    let item = |sk: &str| {
        Item::from([
            ("PK".to_owned(), AttributeValue::S("A".into())),
            ("SK".to_owned(), AttributeValue::S(sk.into())),
        ])
    };
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    };
    let first = runtime();
    first.block_on(store.create_table()).expect("create");
    let handle = first.handle().clone();
    first.shutdown_background();

    let (tx, rx) = std::sync::mpsc::channel();
    let writer = store.clone();
    std::thread::spawn(move || {
        let _ = tx.send(handle.block_on(writer.put_item(Put::new(item("1")))));
    });
    let refused = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the write is answered, not left waiting");
    assert!(
        matches!(&refused, Err(StoreError::Internal(m)) if m.contains("without an answer")),
        "{refused:?}"
    );

    let second = runtime();
    second
        .block_on(store.put_item(Put::new(item("2"))))
        .expect("the next write commits");
    let get = |sk: &str| {
        second
            .block_on(store.get_item(GetItem {
                key: PrimaryKey::new("A", sk),
                consistent_read: true,
            }))
            .expect("get")
    };
    assert_eq!(get("2"), Some(item("2")));
    assert_eq!(get("1"), None, "the refused write left nothing");
}

#[test]
fn every_kind_of_value_round_trips_through_the_binary_encoding() {
    let item = Item::from([
        ("s".to_owned(), AttributeValue::S(String::new())),
        ("n".to_owned(), AttributeValue::N("-1e-130".into())),
        ("b".to_owned(), AttributeValue::B(vec![])),
        ("t".to_owned(), AttributeValue::Bool(false)),
        ("z".to_owned(), AttributeValue::Null(true)),
        ("m".to_owned(), AttributeValue::M(HashMap::new())),
        (
            "l".to_owned(),
            AttributeValue::L(vec![AttributeValue::M(HashMap::from([(
                "k".to_owned(),
                AttributeValue::Ns(vec!["1".into(), "2".into()]),
            )]))]),
        ),
        (
            "ss".to_owned(),
            AttributeValue::Ss(vec!["a".into(), "\u{0}".into()]),
        ),
        (
            "bs".to_owned(),
            AttributeValue::Bs(vec![vec![1], vec![2, 3]]),
        ),
    ]);
    let bytes = encode_item(&item).expect("encodes");
    assert_eq!(decode_item(&bytes).expect("decodes"), item);
    let json = serde_json::to_vec(&item).expect("json");
    assert!(
        bytes.len() < json.len(),
        "{} vs {}",
        bytes.len(),
        json.len()
    );
    assert_eq!(decode_item(&json).expect("old items still read"), item);
    assert!(
        decode_item(&bytes[..bytes.len() - 1]).is_err(),
        "a cut item is an error"
    );
}

/// Writes answered by a group commit are on disk: a store opened again on the file
/// finds each of them, and the writes of one moment shared commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_committed_writes_survive_the_file_being_opened_again() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("group.redb");
    {
        let store =
            EmbeddedStore::open(&path, "t", crate::chart::builtin().table_schema()).expect("open");
        store.create_table().await.expect("create");
        let writes = (0..200).map(|i| {
            let item = Item::from([
                ("PK".to_owned(), AttributeValue::S("G".into())),
                ("SK".to_owned(), AttributeValue::S(format!("{i:03}"))),
            ]);
            store.put_item(Put::new(item))
        });
        for r in futures::future::join_all(writes).await {
            r.expect("a put");
        }
    }
    let store =
        EmbeddedStore::open(&path, "t", crate::chart::builtin().table_schema()).expect("reopen");
    let page = store
        .query(Query {
            limit: Some(1000),
            ..Query::partition("G")
        })
        .await
        .expect("query");
    assert_eq!(page.items.len(), 200);
}

#[test]
fn a_projected_row_never_reads_as_a_base_key() {
    for pk in ["\0", "\0\u{1}", "a", "{"] {
        let key = table_key(&PrimaryKey::new(pk, "s"));
        assert!(!key.starts_with(&PROJECTED), "{pk:?}");
    }
}

#[test]
fn encoded_keys_sort_like_utf8_strings() {
    let mut words = vec![
        "",
        "a",
        "a\0",
        "a\0b",
        "ab",
        "a\u{1}",
        "b",
        "#x",
        "\u{FFFF}",
        "\u{10000}",
    ];
    let mut encoded: Vec<(Vec<u8>, &str)> =
        words.iter().map(|w| (encode_key(&[w, "z"]), *w)).collect();
    words.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    encoded.sort();
    let order: Vec<&str> = encoded.into_iter().map(|(_, w)| w).collect();
    assert_eq!(order, words);
}

#[test]
fn encoded_keys_decode_back() {
    let k = encode_key(&["ORG#a\0c", "", "x"]);
    assert_eq!(decode_key(&k).unwrap(), vec!["ORG#a\0c", "", "x"]);
}

#[test]
fn begins_with_range_holds_exactly_the_prefixed_keys() {
    let (lo, hi) = key_range(&["p"], Some(&SortCondition::BeginsWith("ab".into())));
    for (sk, inside) in [
        ("ab", true),
        ("ab\0", true),
        ("abz", true),
        ("aa", false),
        ("ac", false),
        ("a", false),
    ] {
        let k = encode_key(&["p", sk]);
        assert_eq!(k >= lo && k < hi, inside, "{sk:?}");
    }
}
