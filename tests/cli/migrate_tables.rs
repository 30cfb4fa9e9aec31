//! `itemgraph migrate` of a chart of two tables, on both engines: the box office's bookings
//! (the second table, keyed by a number) gain an index (`ByHolder` in its table,
//! `HolderIndex` in the chart), a version, a holder's marker (kept in the first table) and
//! their count on their event (in the first table). The plan names
//! each step; a dry run counts and writes nothing; the run reads the bookings table alone,
//! checkpointed under the second table's segment numbers, writes each step where its item
//! is (a marker and the check of its owner in one TransactWriteItems of both tables), and
//! `check` of the new chart is clean after it; a second run plans nothing.

use std::path::Path;
use std::sync::Arc;

use itemgraph::chart::Chart;
use itemgraph::store::open::{open_tables, Engine};
use itemgraph::store::{AttributeValue as V, Store};

use crate::common::engines::get;
use tokio::process::Command;

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");
const BOX_OFFICE: &str = include_str!("../../examples/charts/box-office.toml");

fn replaced(mut s: String, pairs: &[(&str, &str)]) -> String {
    for (old, new) in pairs {
        assert_eq!(s.matches(old).count(), 1, "{old}");
        s = s.replacen(old, new, 1);
    }
    s
}

/// The box office with holders named by slugs (a marker's key takes no free string).
fn with_slug_holders() -> String {
    replaced(
        BOX_OFFICE.to_owned(),
        &[
            (
                "holder = { type = \"string\", max_length = 100, description",
                "holder = { type = \"slug\", description",
            ),
            (
                "holder = \"Ada L.\"\nseats = 1",
                "holder = \"alan-t\"\nseats = 1",
            ),
            ("holder = \"Ada L.\"", "holder = \"ada-l\""),
            ("holder = \"Grace H.\"", "holder = \"grace-h\""),
        ],
    )
}

/// The chart the tables were made from: bookings not counted on their events, in no
/// holder index, without a version or a holder's marker.
fn then_chart() -> String {
    replaced(
        with_slug_holders(),
        &[
            ("counts = { event = \"bookingCount\" }\n", ""),
            ("bookingCount = { type = \"counter\", referrers = \"bookings\", description = \"How many bookings it has: kept by every booking and cancellation.\" }\n", ""),
            ("bookings = { pattern = 5, total = \"bookingCount\", description", "bookings = { pattern = 5, description"),
            (
                "two tables\"\nrequest = \"TransactWriteItems\"\nentity = \"Booking\"\nfield = \"Mutation.cancelBooking\"",
                "two tables\"\nrequest = \"DeleteItem\"\nentity = \"Booking\"\nfield = \"Mutation.cancelBooking\"",
            ),
            ("bookingCount = 2\n", ""),
            ("bookingCount = 1\n", ""),
        ],
    )
}

/// The chart migrated to: the box office with a holder index, a version and a holder's
/// marker in the first table.
fn now_chart() -> String {
    let mut now = replaced(
        with_slug_holders(),
        &[
            (
                "[entities.Venue]",
                "[indexes.HolderIndex]\ntable = \"box-office-bookings\"\nstored = \"ByHolder\"\npartition_key = \"HolderRef\"\nsort_key = \"HeldSince\"\nprojection = \"ALL\"\n\n[entities.Venue]",
            ),
            (
                "counts = { event = \"bookingCount\" }\n",
                "indexes.HolderIndex = [\"HOLDER#{holder}\", \"{bookedAt}\"]\ncounts = { event = \"bookingCount\" }\nversion = \"version\"\nunique = { holder = \"HolderMark\" }\n",
            ),
            (
                "[query.venue]",
                "[entities.HolderMark]\nkey = [\"HOLDER#{holder}\", \"HOLDER#{holder}\"]\ngraphql = false\n\n[entities.HolderMark.attributes]\nholder = \"slug\"\nbookingNo = { type = \"int\", min = 1 }\n\n[query.venue]",
            ),
            (
                "bookedAt = { type = \"timestamp\"",
                "version = { type = \"int\", min = 1 }\nbookedAt = { type = \"timestamp\"",
            ),
        ],
    );
    for seats in ["2", "4", "1"] {
        now = now.replace(
            &format!("seats = {seats}\nbookedAt"),
            &format!("seats = {seats}\nversion = 1\nbookedAt"),
        );
    }
    now
}

async fn run(args: &[String]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("ITEMGRAPH_JWT_SECRET")
        .output()
        .await
        .unwrap()
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The two tables as `engine` opens them, with the new chart's keys.
async fn open(engine: &Engine, now: &Chart, bookings: &str) -> (Arc<dyn Store>, Arc<dyn Store>) {
    let store = open_tables(
        engine,
        now.table_schema(),
        vec![(bookings.to_owned(), now.schema_of(1))],
    )
    .await
    .unwrap();
    let sibling = store.sibling(bookings).expect("the bookings table");
    (store, sibling)
}

#[tokio::test]
async fn a_change_of_the_second_tables_entities_is_migrated_on_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    let then_path = dir.path().join("then.toml");
    let now_path = dir.path().join("now.toml");
    std::fs::write(&then_path, then_chart()).unwrap();
    std::fs::write(&now_path, now_chart()).unwrap();
    let now = itemgraph::config::load_chart(Some(&now_path)).unwrap();
    let engines = common::engines::box_office_tables(dir.path()).await;
    for (store_args, engine, bookings) in engines {
        let with = |cmd: &str, chart: &Path, more: &[&str]| -> Vec<String> {
            let mut v = vec![
                cmd.to_owned(),
                "--chart".to_owned(),
                chart.to_str().unwrap().to_owned(),
            ];
            v.extend(store_args.iter().cloned());
            v.extend(more.iter().map(|s| (*s).to_owned()));
            v
        };
        stdout(&run(&with("create-table", &then_path, &[])).await);
        stdout(&run(&with("seed", &then_path, &[])).await);

        // The plan, counted by a dry run that writes nothing.
        let planned = stdout(&run(&with("migrate", &now_path, &["--dry-run"])).await);
        for line in [
            "plan: index HolderIndex: created (UpdateTable)",
            "plan: index-keys Booking HolderIndex: the keys its templates render",
            "plan: markers Booking.holder: one for every value",
            "plan: versions Booking.version: 1 where there is none",
            "plan: counts Booking.event: bookingCount recounted",
            "migration 100 chart: to do (3 items read)",
            "1 indexes created, 3 index keys written, 3 markers put, 3 versions set, 0 counter shards put, 2 counters recounted",
        ] {
            assert!(planned.contains(line), "{line}\n{planned}");
        }
        assert!(!planned.contains("refused"), "{planned}");
        {
            let (store, sibling) = open(&engine, &now, &bookings).await;
            let booking = get(sibling.as_ref(), "1001", "").await.unwrap();
            assert!(!booking.contains_key("version"), "{booking:?}");
            assert!(get(store.as_ref(), "HOLDER#ada-l", "HOLDER#ada-l")
                .await
                .is_none());
        }

        // The run: a page an item, two segments, so each checkpoint is written.
        let done = stdout(
            &run(&with(
                "migrate",
                &now_path,
                &["--segments", "2", "--page-size", "1"],
            ))
            .await,
        );
        for line in [
            "migration 100 chart: done (3 items read)",
            "1 indexes created, 3 index keys written, 3 markers put, 3 versions set, 0 counter shards put, 2 counters recounted, 0 items moved",
        ] {
            assert!(done.contains(line), "{line}\n{done}");
        }
        assert!(!done.contains("left:"), "{done}");
        {
            let (store, sibling) = open(&engine, &now, &bookings).await;
            // Created under the table's name for it.
            let described = sibling.describe_table().await.unwrap().unwrap();
            assert!(
                described.indexes.contains(&"ByHolder".to_owned()),
                "{:?}",
                described.indexes
            );
            for (no, holder) in [("1001", "ada-l"), ("1002", "grace-h"), ("1003", "alan-t")] {
                let booking = get(sibling.as_ref(), no, "").await.unwrap();
                assert_eq!(
                    booking.get("version"),
                    Some(&V::N("1".into())),
                    "{booking:?}"
                );
                assert_eq!(
                    booking.get("HolderRef"),
                    Some(&V::S(format!("HOLDER#{holder}"))),
                    "{booking:?}"
                );
                let key = format!("HOLDER#{holder}");
                let marker = get(store.as_ref(), &key, &key).await.unwrap();
                assert_eq!(
                    marker.get("bookingNo"),
                    Some(&V::N(no.into())),
                    "{marker:?}"
                );
            }
            for (event, count) in [("winter-gala", "2"), ("spring-quartet", "1")] {
                let e = get(
                    store.as_ref(),
                    "VENUE#harbour-hall",
                    &format!("EVENT#{event}"),
                )
                .await
                .unwrap();
                assert_eq!(e.get("bookingCount"), Some(&V::N(count.into())), "{e:?}");
            }
            // The bookings table's checkpoints, under its own segment numbers, in the first
            // table; none of the first table's, whose items the plan does not touch.
            for segment in ["SEGMENT#1000000", "SEGMENT#1000001"] {
                let c = get(store.as_ref(), "MIGRATION#100", segment)
                    .await
                    .unwrap_or_else(|| panic!("{segment}"));
                assert_eq!(c.get("done"), Some(&V::Bool(true)), "{c:?}");
            }
            assert!(get(store.as_ref(), "MIGRATION#100", "SEGMENT#0000000")
                .await
                .is_none());
        }
        let checked = stdout(&run(&with("check", &now_path, &[])).await);
        assert!(checked.contains("no violations"), "{checked}");
        let again = stdout(&run(&with("migrate", &now_path, &[])).await);
        assert!(!again.contains("plan:"), "{again}");

        common::engines::drop_box_office_tables(&engine, &bookings, &now).await;
    }
}
