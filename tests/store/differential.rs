//! The differential test: thousands of seeded random operations applied to the embedded
//! engine and to DynamoDB Local must give identical results, item for item and page for
//! page. `ITEMGRAPH_DIFF_SEED` and `ITEMGRAPH_DIFF_OPS` replay or lengthen a run.

use crate::common;

use std::collections::HashMap;

use itemgraph::store::{
    AttributeValue as V, BatchGet, CancelReason, CmpOp, Condition, ConditionCheck, Delete, GetItem,
    Item, PrimaryKey, Put, Query, ReturnValues, SetValue, SortCondition, Store, StoreError,
    TransactAction, Update, UpdateExpr,
};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const PARTITIONS: &[&str] = &["p0", "p1", "p2"];
const SORT_KEYS: &[&str] = &[
    "a",
    "ab",
    "abc",
    "b",
    "b#1",
    "b#2",
    "c",
    "USER#x",
    "#O#1",
    "é",
    "\u{10000}",
    "z",
];

struct Gen {
    rng: ChaCha8Rng,
}

impl Gen {
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs.choose(&mut self.rng).expect("non-empty").clone()
    }

    fn key(&mut self) -> PrimaryKey {
        PrimaryKey::new(self.pick(PARTITIONS), self.pick(SORT_KEYS))
    }

    fn number(&mut self) -> V {
        let choices = ["0", "1", "-1", "2", "1.50", "3", "-2.25", "10", "1e2"];
        V::N(self.pick(&choices).to_string())
    }

    fn value(&mut self) -> V {
        match self.rng.random_range(0..7) {
            0 | 1 => self.number(),
            2 => V::S(self.pick(&["", "a", "ab", "b"]).to_string()),
            3 => V::Bool(self.rng.random()),
            4 => V::Ss(vec![self.pick(&["x", "y"]).to_string()]),
            5 => V::L(vec![self.number(), V::S("l".into())]),
            _ => V::M([("k".to_string(), self.number())].into()),
        }
    }

    /// The GSI1 sort key is derived from the base key so no two items tie in an index.
    fn item(&mut self, key: &PrimaryKey) -> Item {
        let mut item = Item::from([
            ("PK".to_string(), V::S(key.pk.clone())),
            ("SK".to_string(), V::S(key.sk.clone())),
        ]);
        for attr in ["n", "s", "x"] {
            if self.rng.random_bool(0.6) {
                let v = if attr == "n" {
                    self.number()
                } else {
                    self.value()
                };
                item.insert(attr.into(), v);
            }
        }
        if self.rng.random_bool(0.6) {
            item.insert("GSI1PK".into(), V::S(self.pick(&["g0", "g1"]).to_string()));
            item.insert("GSI1SK".into(), V::S(format!("{}|{}", key.sk, key.pk)));
        }
        item
    }

    fn condition(&mut self) -> Option<Condition> {
        let c = match self.rng.random_range(0..10) {
            0 | 1 => return None,
            2 => Condition::not_exists("PK"),
            3 => Condition::exists("PK"),
            4 => {
                let op = self.pick(&[
                    CmpOp::Eq,
                    CmpOp::Ne,
                    CmpOp::Lt,
                    CmpOp::Le,
                    CmpOp::Gt,
                    CmpOp::Ge,
                ]);
                Condition::Cmp("n".into(), op, self.number())
            }
            5 => Condition::Between("n".into(), V::N("-1".into()), V::N("2".into())),
            6 => Condition::BeginsWith("s".into(), "a".into()),
            7 => Condition::And(vec![
                Condition::exists("n"),
                Condition::Cmp("s".into(), CmpOp::Ne, V::S("b".into())),
            ]),
            8 => Condition::Or(vec![
                Condition::not_exists("x"),
                Condition::Cmp("n".into(), CmpOp::Ge, V::N("1".into())),
            ]),
            _ => Condition::Not(Box::new(Condition::exists("s"))),
        };
        Some(c)
    }

    fn update_expr(&mut self) -> UpdateExpr {
        let mut e = UpdateExpr::default();
        if self.rng.random_bool(0.5) {
            let v = self.value();
            e.set.push((
                "s".into(),
                if self.rng.random() {
                    SetValue::Value(v)
                } else {
                    SetValue::IfNotExists(v)
                },
            ));
        }
        if self.rng.random_bool(0.5) {
            e.add.push(("n".into(), self.number()));
        }
        if self.rng.random_bool(0.3) {
            e.remove.push("x".into());
        }
        match self.rng.random_range(0..5) {
            0 => e.set.push((
                "GSI1PK".into(),
                SetValue::Value(V::S(self.pick(&["g0", "g1"]).to_string())),
            )),
            1 => e.remove.push("GSI1PK".into()),
            _ => {}
        }
        e
    }

    fn update(&mut self, key: PrimaryKey) -> Update {
        let mut u = Update::new(key.clone(), self.update_expr());
        // Keep the GSI1 sort key tied to the base key whenever an update brings GSI1PK.
        if u.update.set.iter().any(|(a, _)| a == "GSI1PK") {
            u.update.set.push((
                "GSI1SK".into(),
                SetValue::Value(V::S(format!("{}|{}", key.sk, key.pk))),
            ));
        }
        u.condition = self.condition();
        u.returns = self.pick(&[
            ReturnValues::None,
            ReturnValues::AllOld,
            ReturnValues::AllNew,
        ]);
        u.return_old_on_condition_failure = self.rng.random();
        u
    }

    /// On the index, sort conditions use the `<sk>|<pk>` form of GSI1SK.
    fn sort_condition_on(&mut self, index: bool) -> Option<SortCondition> {
        let mut pick = || {
            let sk = self.pick(SORT_KEYS).to_string();
            if index && self.rng.random_bool(0.5) {
                format!("{sk}|{}", self.pick(PARTITIONS))
            } else {
                sk
            }
        };
        let a = pick();
        let b = pick();
        let (lo, hi) = if a.as_bytes() <= b.as_bytes() {
            (a.clone(), b)
        } else {
            (b, a.clone())
        };
        Some(match self.rng.random_range(0..9) {
            0 | 1 => return None,
            2 => SortCondition::Eq(a),
            3 => SortCondition::Lt(a),
            4 => SortCondition::Le(a),
            5 => SortCondition::Gt(a),
            6 => SortCondition::Ge(a),
            7 => SortCondition::Between(lo, hi),
            _ => SortCondition::BeginsWith(a.chars().next().unwrap().to_string()),
        })
    }
}

/// What one operation produced, in a form both engines can be compared on.
#[derive(Debug, PartialEq)]
enum Outcome {
    Item(Option<Item>),
    Items(Vec<Item>),
    Pages(Vec<(Vec<Item>, Option<itemgraph::store::PageKey>)>),
    Done,
    ConditionFailed(Option<Item>),
    /// Per action: the reason's kind and the item it reported.
    Canceled(Vec<(String, Option<Item>)>),
    /// Other errors compare by kind; validation messages come from DynamoDB itself for runtime
    /// checks, so only the kind is compared there.
    Error(String),
}

/// Numbers compared by value: DynamoDB Local keeps the text of numbers written by
/// UpdateItem or nested in lists and maps as sent (`1.50`), where DynamoDB and the
/// embedded engine store the canonical `1.5`.
fn canonical(item: Item) -> Item {
    itemgraph::store::value::canonicalize_item(item)
}

fn canonical_all(items: Vec<Item>) -> Vec<Item> {
    items.into_iter().map(canonical).collect()
}

fn outcome<T>(r: Result<T, StoreError>, ok: impl FnOnce(T) -> Outcome) -> Outcome {
    match r {
        Ok(v) => ok(v),
        Err(StoreError::Validation(_)) => Outcome::Error("Validation".into()),
        Err(StoreError::ConditionFailed { item }) => {
            Outcome::ConditionFailed(item.map(|i| canonical(*i)))
        }
        Err(StoreError::TransactionCanceled { reasons }) => Outcome::Canceled(
            reasons
                .into_iter()
                .map(|r| match r {
                    CancelReason::ValidationError(_) => ("ValidationError".into(), None),
                    CancelReason::ConditionalCheckFailed { item } => {
                        ("ConditionalCheckFailed".into(), item.map(canonical))
                    }
                    other => (format!("{other:?}"), None),
                })
                .collect(),
        ),
        Err(other) => Outcome::Error(format!("{other}")),
    }
}

fn sorted(mut items: Vec<Item>) -> Vec<Item> {
    items.sort_by_key(|i| format!("{:?}{:?}", i.get("PK"), i.get("SK")));
    canonical_all(items)
}

async fn walk(store: &dyn Store, mut q: Query) -> Outcome {
    let mut pages = Vec::new();
    loop {
        match store.query(q.clone()).await {
            Ok(page) => {
                pages.push((canonical_all(page.items), page.last_evaluated_key.clone()));
                match page.last_evaluated_key {
                    Some(k) if pages.len() < 50 => q.start = Some(k),
                    _ => return Outcome::Pages(pages),
                }
            }
            Err(e) => return outcome::<()>(Err(e), |_| Outcome::Done),
        }
    }
}

#[derive(Debug)]
enum Op {
    Get(GetItem),
    BatchGet(BatchGet),
    Query(Query),
    Put(Put),
    Update(Update),
    Delete(Delete),
    Transact(Vec<TransactAction>),
}

fn random_op(g: &mut Gen) -> Op {
    match g.rng.random_range(0..100) {
        0..=9 => Op::Get(GetItem {
            key: g.key(),
            consistent_read: true,
        }),
        10..=17 => {
            let count = g.rng.random_range(1..=8);
            let mut keys: Vec<PrimaryKey> = (0..count).map(|_| g.key()).collect();
            keys.sort();
            keys.dedup();
            Op::BatchGet(BatchGet {
                keys,
                consistent_read: true,
            })
        }
        18..=31 => {
            let on_index = g.rng.random_bool(0.35);
            let (partition, index) = if on_index {
                (g.pick(&["g0", "g1"]).to_string(), Some("GSI1".to_string()))
            } else {
                (g.pick(PARTITIONS).to_string(), None)
            };
            let mut q = Query::partition(partition);
            q.index = index;
            q.sort = g.sort_condition_on(on_index);
            q.forward = g.rng.random();
            q.limit = if g.rng.random_bool(0.8) {
                Some(g.rng.random_range(1..=4))
            } else {
                None
            };
            q.consistent_read = !on_index && g.rng.random();
            Op::Query(q)
        }
        32..=54 => {
            let key = g.key();
            let mut p = Put::new(g.item(&key));
            p.condition = g.condition();
            p.return_old_on_condition_failure = g.rng.random();
            Op::Put(p)
        }
        55..=79 => {
            let key = g.key();
            Op::Update(g.update(key))
        }
        80..=87 => {
            let mut d = Delete::new(g.key());
            d.condition = g.condition();
            d.returns = g.pick(&[ReturnValues::None, ReturnValues::AllOld]);
            Op::Delete(d)
        }
        _ => {
            let count = g.rng.random_range(1..=4);
            let mut seen = Vec::new();
            let mut actions = Vec::new();
            for _ in 0..count {
                let key = g.key();
                if seen.contains(&key) {
                    continue;
                }
                seen.push(key.clone());
                actions.push(match g.rng.random_range(0..4) {
                    0 => {
                        let mut p = Put::new(g.item(&key));
                        p.condition = g.condition();
                        TransactAction::Put(p)
                    }
                    1 => TransactAction::Update(g.update(key)),
                    2 => {
                        let mut d = Delete::new(key);
                        d.condition = g.condition();
                        TransactAction::Delete(d)
                    }
                    _ => TransactAction::ConditionCheck(ConditionCheck {
                        key,
                        condition: g.condition().unwrap_or(Condition::exists("PK")),
                        return_old_on_condition_failure: g.rng.random(),
                    }),
                });
            }
            Op::Transact(actions)
        }
    }
}

async fn run(store: &dyn Store, op: &Op) -> Outcome {
    match op {
        Op::Get(r) => outcome(store.get_item(r.clone()).await, |i| {
            Outcome::Item(i.map(canonical))
        }),
        Op::BatchGet(r) => outcome(store.batch_get_item(r.clone()).await, |i| {
            Outcome::Items(sorted(i))
        }),
        Op::Query(q) => walk(store, q.clone()).await,
        Op::Put(r) => outcome(store.put_item(r.clone()).await, |_| Outcome::Done),
        Op::Update(r) => outcome(store.update_item(r.clone()).await, |i| {
            Outcome::Item(i.map(canonical))
        }),
        Op::Delete(r) => outcome(store.delete_item(r.clone()).await, |i| {
            Outcome::Item(i.map(canonical))
        }),
        Op::Transact(a) => outcome(store.transact_write(a.clone()).await, |_| Outcome::Done),
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Seeded random operations give identical results on the embedded engine and on
/// DynamoDB Local; at the end both tables hold the same items.
#[tokio::test]
async fn embedded_engine_matches_dynamodb_local() {
    let Some(dynamo) = common::engines::dynamodb("differential").await else {
        return;
    };
    let embedded = common::engines::embedded().await;
    let seed = env_u64("ITEMGRAPH_DIFF_SEED", 0x17E6_6A9F);
    let ops = env_u64("ITEMGRAPH_DIFF_OPS", 3000);
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
    };
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for i in 0..ops {
        let op = random_op(&mut g);
        let want = run(&dynamo, &op).await;
        let got = run(&embedded, &op).await;
        let kind = match (&op, &want) {
            (_, Outcome::Error(e)) => e.split(' ').next().unwrap_or("Error").to_string(),
            (_, Outcome::ConditionFailed(_)) => "ConditionFailed".to_string(),
            (_, Outcome::Canceled(_)) => "TransactionCanceled".to_string(),
            (Op::Get(_), _) => "Get".to_string(),
            (Op::BatchGet(_), _) => "BatchGet".to_string(),
            (Op::Query(_), _) => "Query".to_string(),
            (Op::Put(_), _) => "Put".to_string(),
            (Op::Update(_), _) => "Update".to_string(),
            (Op::Delete(_), _) => "Delete".to_string(),
            (Op::Transact(_), _) => "Transact".to_string(),
        };
        *kinds.entry(kind).or_default() += 1;
        assert_eq!(
            got, want,
            "operation #{i} (seed {seed:#x}) differs: embedded vs DynamoDB Local: {op:?}"
        );
    }
    // Final state: every partition, every page size.
    for p in PARTITIONS {
        let q = Query::partition(*p);
        assert_eq!(
            walk(&embedded, q.clone()).await,
            walk(&dynamo, q).await,
            "final state of {p}"
        );
    }
    let mut sorted_kinds: Vec<_> = kinds.into_iter().collect();
    sorted_kinds.sort();
    eprintln!("differential: {ops} operations (seed {seed:#x}) identical on both engines: {sorted_kinds:?}");
    let _ = dynamo.delete_table().await;
}
