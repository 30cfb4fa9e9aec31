//! `itemgraph migrate`: brings a table written by an earlier version to today's layout,
//! by named, versioned migrations run in order:
//!
//! | Version | Name | What |
//! |---|---|---|
//! | 1 | `email-markers` | email markers move to their organization's key (`past_layouts/email_markers.rs`) |
//! | 2 | `change-stream` | the table's change stream (`NEW_AND_OLD_IMAGES`) turned on |
//! | 3 | `counter-shards` | each organization gets its counter shards (`past_layouts/counter_shards.rs`) |
//!
//! then, for any chart, the plan from the chart recorded in the table to the one given
//! ([`chart`]): its item steps one more migration of the same kind (`1nn`), the chart
//! recorded once it is done.
//!
//! A migration over items reads the table by a parallel Scan (`--segments`, each segment
//! its own task) and writes each change conditioned on what it read, so a concurrent
//! application write is never lost: the write or the migration's change fails its
//! condition and the migration leaves that item as the application wrote it.
//!
//! Its state lives in the table ([`records`]): a `Migration` item per version, and per
//! segment a checkpoint, the Scan's `LastEvaluatedKey` after each page done. A killed run
//! resumes each segment where its checkpoint is, redoing at most one page, which the
//! conditions make harmless. A migration done is recorded so, and no run does it again.
//! Two runs at once are safe for the same reason, only wasteful.
//!
//! `--max-wcu` holds the run's writes under a budget of write units a second
//! ([`budget`]); a progress bar shows items/s and an ETA ([`progress`]). `--dry-run`
//! reads only, checkpoints included, and counts what each migration would change.

pub mod budget;
pub mod chart;
mod ctx;
mod past_layouts;
pub mod progress;
pub mod records;
mod steps;

use std::fmt;

use futures::future::try_join_all;

use crate::store::own::{migration_key, segment_key};
use crate::store::{Scan, ScanSegment, Store, StoreResult};

use budget::WriteBudget;
pub(crate) use ctx::Ctx;
use progress::Progress;
use records::{MigrationRecord, MigrationState, SegmentCheckpoint};

/// One migration of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    pub version: u32,
    pub name: &'static str,
    /// Whether it reads every item (a Scan) or changes the table's settings.
    pub scans_items: bool,
}

/// Every migration, in the order they run.
pub const MIGRATIONS: [Migration; 3] = [
    Migration {
        version: 1,
        name: "email-markers",
        scans_items: true,
    },
    Migration {
        version: 2,
        name: "change-stream",
        scans_items: false,
    },
    Migration {
        version: 3,
        name: "counter-shards",
        scans_items: true,
    },
];

/// How a run goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Read only: count what would change.
    pub dry_run: bool,
    /// Segments of the parallel Scan of a migration started by this run (a resumed one
    /// keeps its own).
    pub segments: u32,
    /// Items per Scan page, so per checkpoint.
    pub page_size: u32,
    /// Write units a second at most, `None` for no limit.
    pub max_wcu: Option<f64>,
    /// Draw a progress bar (or log progress when stderr is no terminal).
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dry_run: false,
            segments: 4,
            page_size: 100,
            max_wcu: None,
            progress: false,
        }
    }
}

/// What a run did with one migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Recorded done by an earlier run: nothing read.
    AlreadyDone,
    /// Done by this run from the start.
    Done,
    /// Started by an earlier run that stopped, finished by this one from its checkpoints.
    Resumed,
    /// A dry run: what it would do is counted in the report.
    WouldRun,
}

/// One migration's line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationOutcome {
    pub migration: Migration,
    pub outcome: Outcome,
    /// Items its Scan read in this run.
    pub scanned: usize,
}

impl fmt::Display for MigrationOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Migration { version, name, .. } = self.migration;
        let what = match self.outcome {
            Outcome::AlreadyDone => "done by an earlier run",
            Outcome::Done => "done",
            Outcome::Resumed => "resumed from its checkpoints and done",
            Outcome::WouldRun => "to do",
        };
        write!(f, "migration {version} {name}: {what}")?;
        if self.migration.scans_items && self.outcome != Outcome::AlreadyDone {
            write!(f, " ({} items read)", self.scanned)?;
        }
        Ok(())
    }
}

/// What [`run`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrateReport {
    /// Each migration, in order.
    pub migrations: Vec<MigrationOutcome>,
    /// Whether the table's stream was turned on (or would be, on a dry run).
    pub stream_enabled: bool,
    /// Items read, over every migration's Scan.
    pub scanned: usize,
    /// Email markers moved to their organization's key (or that would be, on a dry run).
    pub moved: usize,
    /// Old markers whose new key already held the same marker: the old copy removed.
    pub duplicates_removed: usize,
    /// Old markers of a user who no longer has that email (changed or deleted since the
    /// new version took over): removed, not moved.
    pub stale_removed: usize,
    /// Items left where they are, with why (an old marker whose new key holds another
    /// user's marker, an item that changed while being migrated): for `itemgraph check`
    /// to name.
    pub skipped: Vec<String>,
    /// Organizations given their counter shards (or that would be, on a dry run).
    pub sharded: usize,
    /// The chart's plan ([`chart::plan`]), a line a step: empty when the chart recorded in
    /// the table is the one given.
    pub plan: Vec<String>,
    /// The plan has a step migrate does not make: nothing was written.
    pub refused: bool,
    /// The table's Time to Live turned on (or that would be).
    pub time_to_live_enabled: bool,
    /// Global secondary indexes created (or that would be).
    pub indexes_created: usize,
    /// Items given the index keys their templates render.
    pub keys_rewritten: usize,
    /// Unique values given their markers.
    pub markers_put: usize,
    /// Items given their version 1.
    pub versions_set: usize,
    /// Counters set by a recount.
    pub counts_set: usize,
    /// Counter shards put for items from before them.
    pub shards_put: usize,
    /// Items moved to the primary key their templates now render.
    pub items_moved: usize,
    /// Write units spent, counted as DynamoDB bills them (checkpoints included).
    pub write_units: u64,
}

impl MigrateReport {
    /// Adds a segment's counts.
    fn absorb(&mut self, part: MigrateReport) {
        self.scanned += part.scanned;
        self.moved += part.moved;
        self.duplicates_removed += part.duplicates_removed;
        self.stale_removed += part.stale_removed;
        self.skipped.extend(part.skipped);
        self.sharded += part.sharded;
        self.keys_rewritten += part.keys_rewritten;
        self.markers_put += part.markers_put;
        self.versions_set += part.versions_set;
        self.shards_put += part.shards_put;
        self.items_moved += part.items_moved;
    }
}

impl fmt::Display for MigrateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{} items scanned: {} email markers moved, {} old copies removed, {} stale removed, {} left; {} organizations sharded; {} write units",
            if self.stream_enabled {
                "change stream turned on; "
            } else {
                ""
            },
            self.scanned,
            self.moved,
            self.duplicates_removed,
            self.stale_removed,
            self.skipped.len(),
            self.sharded,
            self.write_units
        )?;
        if !self.plan.is_empty() {
            write!(
                f,
                "; the chart's plan, {} steps: {} indexes created, {}{} index keys written, {} markers put, {} versions set, {} counter shards put, {} counters recounted, {} items moved",
                self.plan.len(),
                self.indexes_created,
                if self.time_to_live_enabled {
                    "time to live turned on, "
                } else {
                    ""
                },
                self.keys_rewritten,
                self.markers_put,
                self.versions_set,
                self.shards_put,
                self.counts_set,
                self.items_moved
            )?;
        }
        Ok(())
    }
}

/// Runs every migration not yet done, with the default options but `dry_run`.
pub async fn migrate(store: &dyn Store, dry_run: bool) -> StoreResult<MigrateReport> {
    run(
        store,
        &Options {
            dry_run,
            ..Options::default()
        },
    )
    .await
}

/// Runs every migration not yet recorded done, in order, on a table of the built-in chart.
pub async fn run(store: &dyn Store, options: &Options) -> StoreResult<MigrateReport> {
    run_chart(store, &crate::chart::builtin(), options).await
}

/// Migrates a table to `chart`: the built-in chart's named migrations not yet recorded
/// done, in order, then the plan from the chart recorded in the table to `chart`
/// ([`chart::plan`]), which is recorded once done. A plan with a refused step writes
/// nothing ([`MigrateReport::refused`]).
pub async fn run_chart(
    store: &dyn Store,
    given: &crate::chart::Chart,
    options: &Options,
) -> StoreResult<MigrateReport> {
    let builtin = std::ptr::eq(given, &*crate::chart::builtin());
    let budget = WriteBudget::new(options.max_wcu);
    // Every table's store; the first keeps the records.
    let tables = given.stores(store)?;
    let names: Vec<String> = (0..given.tables.len())
        .map(|t| given.table_name_on(store, t))
        .collect();
    let ctx = Ctx {
        store,
        table: 0,
        tables: &tables,
        names: &names,
        dry_run: options.dry_run,
        budget: &budget,
    };
    let mut report = MigrateReport::default();
    if builtin {
        for migration in MIGRATIONS {
            let outcome = run_one(&ctx, migration, options, &mut report, None, &[0]).await?;
            report.migrations.push(outcome);
        }
    }
    let recorded = chart::recorded(store).await?;
    let mut notes = Vec::new();
    let old = match &recorded {
        Some(r) => match crate::chart::parse(&r.source) {
            Ok(c) => Some(c),
            // A rule made stricter since: every step the given chart declares, each
            // finding nothing to do where the table keeps it already.
            Err(e) => {
                notes.push(format!(
                    "the chart recorded in the table no longer passes today's rules ({}): planned from nothing",
                    e.0.first().map(ToString::to_string).unwrap_or_default()
                ));
                None
            }
        },
        None => None,
    };
    // A table without a record of the built-in chart was made from it.
    let old = old.as_ref().or(builtin.then_some(given));
    // Every table's indexes (their names are the chart's, one namespace).
    let mut indexes = Vec::new();
    for (t, one) in tables.iter() {
        if let Some(d) = one.describe_table().await? {
            // Each by the chart's name for it, the given chart's or the recorded one's (an
            // index an entity leaves); one neither declares in this table is no chart's
            // (its name may be another table's index, or one the given chart renames).
            indexes.extend(d.indexes.into_iter().filter_map(|n| {
                given
                    .indexes
                    .values()
                    .chain(old.iter().flat_map(|o| o.indexes.values()))
                    .find(|i| i.table == t && i.stored == n)
                    .map(|i| i.name.clone())
            }));
        }
    }
    let steps = chart::plan(old, given, &indexes);
    report.plan = notes
        .into_iter()
        .chain(steps.iter().map(ToString::to_string))
        .collect();
    if steps.iter().any(chart::Step::is_refused) {
        report.refused = true;
        return Ok(report);
    }
    for step in &steps {
        match step {
            chart::Step::TimeToLive(attribute) => {
                report.time_to_live_enabled |= store
                    .enable_time_to_live(attribute, options.dry_run)
                    .await?;
            }
            chart::Step::TimeToLiveOf { table, attribute } => {
                let t = given
                    .tables
                    .iter()
                    .position(|x| x.name == *table)
                    .unwrap_or(0);
                report.time_to_live_enabled |= tables
                    .get(t)
                    .enable_time_to_live(attribute, options.dry_run)
                    .await?;
            }
            chart::Step::Index(name) => {
                let (t, stored) = given
                    .indexes
                    .get(name)
                    .map_or((0, name), |i| (i.table, &i.stored));
                report.indexes_created +=
                    usize::from(tables.get(t).create_index(stored, options.dry_run).await?);
            }
            _ => {}
        }
    }
    let plans = recorded.as_ref().map_or(0, |r| r.plans);
    let mut after = plans;
    if chart::scans_items(&steps) {
        let migration = Migration {
            version: 100 + plans,
            name: "chart",
            scans_items: true,
        };
        let scanned = chart::tables_scanned(given, &steps);
        let outcome = run_one(
            &ctx,
            migration,
            options,
            &mut report,
            Some((given, &steps)),
            &scanned,
        )
        .await?;
        report.migrations.push(outcome);
        after += 1;
    }
    // Counters after the items they count exist and carry their keys.
    chart::recount(&ctx, given, &steps, &mut report).await?;
    let same = recorded
        .as_ref()
        .is_some_and(|r| r.source == given.source && r.plans == after);
    if !options.dry_run && !same {
        budget.spend(1.0).await;
        chart::record(store, given, after).await?;
    }
    report.write_units = budget.spent().ceil() as u64;
    Ok(report)
}

async fn run_one(
    ctx: &Ctx<'_>,
    migration: Migration,
    options: &Options,
    report: &mut MigrateReport,
    plan: Option<(&crate::chart::Chart, &[chart::Step])>,
    scanned: &[usize],
) -> StoreResult<MigrationOutcome> {
    let key = migration_key(migration.version);
    let mut existing: Option<MigrationRecord> = records::read(ctx.home(), key.clone()).await?;
    let mut outcome = MigrationOutcome {
        migration,
        outcome: if ctx.dry_run {
            Outcome::WouldRun
        } else if existing.is_some() {
            Outcome::Resumed
        } else {
            Outcome::Done
        },
        scanned: 0,
    };
    if existing
        .as_ref()
        .is_some_and(|r| r.state == MigrationState::Done)
    {
        outcome.outcome = Outcome::AlreadyDone;
        return Ok(outcome);
    }
    let digest = plan.map(|(_, steps)| chart::digest(steps));
    if let (Some(theirs), Some(ours)) = (&existing, &digest) {
        if theirs.state == MigrationState::Running && theirs.plan.as_ref() != Some(ours) {
            return Err(crate::store::StoreError::Validation(format!(
                "migration {} was started for another plan of the chart, and stopped: run migrate again with the chart it was given, then with this one",
                migration.version
            )));
        }
    }
    let mut record = existing.clone().unwrap_or_else(|| MigrationRecord {
        version: migration.version,
        name: migration.name.to_owned(),
        state: MigrationState::Running,
        segments: options.segments.clamp(1, ScanSegment::MAX_TOTAL),
        started_at: now(),
        done_at: None,
        plan: digest.clone(),
    });
    if !migration.scans_items {
        report.stream_enabled = ctx.store.enable_change_stream(ctx.dry_run).await?;
    } else {
        if !ctx.dry_run && existing.is_none() && !ctx.create(&record).await? {
            // Another run started it in between: this one joins it with its segment
            // count, so every checkpoint names a position of one split of the table.
            existing = records::read(ctx.home(), key.clone()).await?;
            if let Some(theirs) = &existing {
                if theirs.state == MigrationState::Done {
                    outcome.outcome = Outcome::AlreadyDone;
                    return Ok(outcome);
                }
                record = theirs.clone();
                outcome.outcome = Outcome::Resumed;
            }
        }
        // Each table's segments, each from its checkpoint.
        let mut checkpoints = Vec::new();
        let mut total = Some(0);
        for &t in scanned {
            for segment in 0..record.segments {
                let fresh =
                    SegmentCheckpoint::of_table(migration.version, t, segment, record.segments);
                checkpoints.push(match existing {
                    // A dry run counts everything still to do, so it reads from the start.
                    Some(_) if !ctx.dry_run => {
                        records::read(ctx.home(), segment_key(migration.version, fresh.segment))
                            .await?
                            .filter(|c: &SegmentCheckpoint| c.of(record.segments))
                            .unwrap_or(fresh)
                    }
                    _ => fresh,
                });
            }
            let count = ctx
                .on(t)
                .store
                .describe_table()
                .await?
                .and_then(|d| d.item_count);
            total = total.zip(count).map(|(a, b)| a + b);
        }
        let done_before = checkpoints.iter().map(|c| c.scanned).sum();
        let progress = Progress::start(
            &format!("{} {}", migration.version, migration.name),
            total,
            done_before,
            options.progress,
        );
        let parts = try_join_all(checkpoints.into_iter().map(|checkpoint| {
            scan_segment(
                ctx,
                migration,
                checkpoint,
                record.segments,
                options.page_size,
                &progress,
                plan,
            )
        }))
        .await?;
        for part in parts {
            outcome.scanned += part.scanned;
            report.absorb(part);
        }
    }
    if !ctx.dry_run {
        record.state = MigrationState::Done;
        record.done_at = Some(now());
        ctx.record(&record).await?;
    }
    Ok(outcome)
}

/// Migrates one segment from its checkpoint to its end, checkpointing after each page.
async fn scan_segment(
    ctx: &Ctx<'_>,
    migration: Migration,
    mut checkpoint: SegmentCheckpoint,
    segments: u32,
    page_size: u32,
    progress: &Progress,
    plan: Option<(&crate::chart::Chart, &[chart::Step])>,
) -> StoreResult<MigrateReport> {
    let mut part = MigrateReport::default();
    let ctx = &ctx.on(checkpoint.table());
    while !checkpoint.done {
        let page = ctx
            .store
            .scan(Scan {
                limit: Some(page_size),
                start: checkpoint.start(),
                consistent_read: true,
                segment: Some(ScanSegment {
                    index: checkpoint.scan_segment(),
                    total: segments,
                }),
                ..Default::default()
            })
            .await?;
        part.scanned += page.items.len();
        for item in &page.items {
            match migration.version {
                1 => past_layouts::email_markers::migrate_item(ctx, item, &mut part).await?,
                3 => past_layouts::counter_shards::migrate_item(ctx, item, &mut part).await?,
                _ => {
                    if let Some((c, steps)) = plan {
                        chart::migrate_item(ctx, c, steps, item, &mut part).await?;
                    }
                }
            }
        }
        checkpoint.advance(page.items.len(), page.last_evaluated_key.as_ref());
        progress.advance(page.items.len() as u64);
        if !ctx.dry_run {
            ctx.record(&checkpoint).await?;
        }
    }
    Ok(part)
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::own::OwnRecord;
    use crate::store::{call_stats, AttributeValue, Delete, GetItem, Item, PrimaryKey, Put};
    use std::time::Duration;

    fn text<'a>(item: &'a Item, attribute: &str) -> &'a str {
        match item.get(attribute) {
            Some(AttributeValue::S(s)) => s,
            other => panic!("{attribute} is {other:?}"),
        }
    }

    fn is_a(item: &Item, ty: &str) -> bool {
        item.get("Type") == Some(&AttributeValue::S(ty.to_owned()))
    }

    /// `item` with the keys the built-in chart renders from its values.
    fn rekeyed(mut item: Item) -> Item {
        let chart = crate::chart::builtin();
        let e = &chart.entities[text(&item, "Type")];
        let vars = crate::chart::samples::key_values(e, &item);
        crate::chart::samples::set_keys(chart.table_of(e), &chart.indexes, e, &mut item, &vars)
            .unwrap();
        item
    }

    fn key_of(item: &Item) -> PrimaryKey {
        crate::chart::builtin().table_schema().key_of(item).unwrap()
    }

    /// A demo table whose markers all sit at the old global key, as an earlier version
    /// wrote them: `check` names each one, `migrate` moves them all, and a second run
    /// finds nothing.
    #[tokio::test]
    async fn old_email_markers_move_to_their_organization() {
        let store = EmbeddedStore::in_memory("t", crate::chart::builtin().table_schema()).unwrap();
        let demo = crate::chart::data::builtin_demo();
        crate::chart::data::load_if_absent(&store, &crate::chart::builtin(), demo.clone(), false)
            .await
            .unwrap();
        let markers: Vec<Item> = demo.into_iter().filter(|i| is_a(i, "UserEmail")).collect();
        assert!(markers.len() > 2);
        for m in &markers {
            store.delete_item(Delete::new(key_of(m))).await.unwrap();
            let old = format!("EMAIL#{}", text(m, "email"));
            let mut item = m.clone();
            item.insert("PK".into(), AttributeValue::S(old.clone()));
            item.insert("SK".into(), AttributeValue::S(old));
            store.put_item(Put::new(item)).await.unwrap();
        }
        let before = crate::check::check(&store).await.unwrap();
        assert!(before.violations.len() >= markers.len(), "{before}");

        let dry = migrate(&store, true).await.unwrap();
        assert_eq!(dry.moved, markers.len());
        assert!(!crate::check::check(&store).await.unwrap().is_clean());

        // One old marker whose new key already holds it: only the old copy goes.
        let first = &markers[0];
        store.put_item(Put::new(first.clone())).await.unwrap();
        // One old marker whose user has another email by now: removed, not moved.
        let stale = &markers[1];
        let mut who = Item::new();
        who.insert("Type".into(), AttributeValue::S("User".into()));
        for a in ["org", "username"] {
            who.insert(a.into(), stale[a].clone());
        }
        let mut user = store
            .get_item(GetItem {
                key: key_of(&rekeyed(who)),
                consistent_read: true,
            })
            .await
            .unwrap()
            .unwrap();
        let moved_to = AttributeValue::S("moved-on@elsewhere.example".into());
        user.insert("email".into(), moved_to.clone());
        store.put_item(Put::new(user)).await.unwrap();
        let mut moved_on = stale.clone();
        moved_on.insert("email".into(), moved_to);
        store.put_item(Put::new(rekeyed(moved_on))).await.unwrap();
        let report = migrate(&store, false).await.unwrap();
        assert_eq!(
            (
                report.moved,
                report.duplicates_removed,
                report.stale_removed,
                report.skipped.len()
            ),
            (markers.len() - 2, 1, 1, 0),
            "{report}"
        );
        let gone = store
            .get_item(GetItem {
                key: key_of(stale),
                consistent_read: true,
            })
            .await
            .unwrap();
        assert!(gone.is_none(), "a stale marker is not moved");
        let after = crate::check::check(&store).await.unwrap();
        assert!(after.is_clean(), "{after}");
        let old_key = format!("EMAIL#{}", text(first, "email"));
        let gone = store
            .get_item(GetItem {
                key: PrimaryKey::new(old_key.clone(), old_key),
                consistent_read: true,
            })
            .await
            .unwrap();
        assert!(gone.is_none());
        let again = migrate(&store, false).await.unwrap();
        assert_eq!((again.moved, again.duplicates_removed), (0, 0));
    }

    /// The previous layout's demo data and 60 more organizations of that layout.
    async fn previous_layout() -> (EmbeddedStore, usize) {
        let store = EmbeddedStore::in_memory("t", crate::chart::builtin().table_schema()).unwrap();
        store.create_table().await.unwrap();
        // The demo items without counter shards, their organizations without the
        // schema version that says they have them.
        let mut items: Vec<Item> = crate::chart::data::builtin_demo()
            .into_iter()
            .filter(|i| !is_a(i, "CounterShard"))
            .map(|mut i| {
                if is_a(&i, "Organization") {
                    i.remove("schemaVersion");
                }
                i
            })
            .collect();
        let first = items[0].clone();
        let mut orgs = items.iter().filter(|i| is_a(i, "Organization")).count();
        for i in 0..60 {
            let mut org = first.clone();
            org.insert("slug".into(), AttributeValue::S(format!("old-{i}")));
            for counter in [
                "userCount",
                "orderCount",
                "ticketCount",
                "ticketCountOpen",
                "ticketCountPending",
                "ticketCountSolved",
                "ticketCountClosed",
            ] {
                org.insert(counter.into(), AttributeValue::N("0".into()));
            }
            items.push(rekeyed(org));
            orgs += 1;
        }
        for item in items {
            store.put_item(Put::new(item)).await.unwrap();
        }
        (store, orgs)
    }

    async fn sharded(store: &EmbeddedStore) -> usize {
        let report = migrate(store, true).await.unwrap();
        report.sharded
    }

    /// A run stopped midway (its future dropped, as a killed process stops between two
    /// requests) leaves its checkpoints; the next run resumes from them, reads less than
    /// the whole table, and leaves every organization sharded and the table clean. A dry
    /// run in between counts only what is left and writes nothing.
    #[tokio::test]
    async fn a_stopped_run_resumes_from_its_checkpoints() {
        let (store, orgs) = previous_layout().await;
        assert_eq!(
            sharded(&store).await,
            orgs,
            "a dry run counts every organization"
        );
        let options = Options {
            segments: 3,
            page_size: 10,
            max_wcu: Some(400.0),
            ..Options::default()
        };
        let stopped =
            tokio::time::timeout(Duration::from_millis(1500), run(&store, &options)).await;
        assert!(stopped.is_err(), "stopped before it was done");
        let record: MigrationRecord = records::read(&store, migration_key(3))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.state, MigrationState::Running);
        assert_eq!(record.segments, 3);
        let left = sharded(&store).await;
        assert!(0 < left && left < orgs, "{left} of {orgs} left");
        let before = scan_all(&store).await;
        assert_eq!(before, scan_all(&store).await);
        migrate(&store, true).await.unwrap();
        assert_eq!(before, scan_all(&store).await, "a dry run writes nothing");

        let total = before.len();
        let report = run(
            &store,
            &Options {
                max_wcu: None,
                segments: 7,
                ..options
            },
        )
        .await
        .unwrap();
        let outcomes: Vec<Outcome> = report.migrations.iter().map(|m| m.outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::AlreadyDone, Outcome::AlreadyDone, Outcome::Resumed]
        );
        assert_eq!(report.sharded, left, "{report}");
        assert!(report.migrations[2].scanned < total, "{report}");
        assert_eq!(sharded(&store).await, 0);
        let check = crate::check::check(&store).await.unwrap();
        assert!(check.is_clean(), "{check}");
        let again = migrate(&store, false).await.unwrap();
        assert!(again
            .migrations
            .iter()
            .all(|m| m.outcome == Outcome::AlreadyDone));
        assert_eq!(again.scanned, 0);
    }

    /// Two runs started at once with different `--segments`, both stopped midway, then a
    /// third: the migration's record is created once (the second run joins the first with
    /// its segment count), every checkpoint belongs to that one split, and the third run
    /// leaves every organization sharded.
    #[tokio::test]
    async fn two_runs_at_once_with_different_segments_skip_nothing() {
        let (store, orgs) = previous_layout().await;
        let options = |segments| Options {
            segments,
            page_size: 5,
            max_wcu: Some(300.0),
            ..Options::default()
        };
        let (two, five) = (options(2), options(5));
        // The five-segment run polled first, so without the conditional record the
        // two-segment run's record, written last, would be the one a resume reads.
        let both = futures::future::join(run(&store, &five), run(&store, &two));
        let stopped = tokio::time::timeout(Duration::from_millis(1500), both).await;
        assert!(stopped.is_err(), "stopped before either was done");
        let record: MigrationRecord = records::read(&store, migration_key(3))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.state, MigrationState::Running);
        let checkpoints = store
            .query(crate::store::Query {
                sort: Some(crate::store::SortCondition::BeginsWith(
                    crate::store::own::SEGMENTS_PREFIX.to_owned(),
                )),
                consistent_read: true,
                ..crate::store::Query::partition(crate::store::own::migration_partition(3))
            })
            .await
            .unwrap()
            .items;
        assert!(!checkpoints.is_empty());
        for item in checkpoints {
            let checkpoint = SegmentCheckpoint::from_item(item, store.schema()).unwrap();
            assert!(
                checkpoint.segment < record.segments && checkpoint.of(record.segments),
                "{checkpoint:?} does not belong to the record's {} segments",
                record.segments
            );
        }
        let report = run(
            &store,
            &Options {
                max_wcu: None,
                ..options(3)
            },
        )
        .await
        .unwrap();
        assert_eq!(report.migrations[2].outcome, Outcome::Resumed, "{report}");
        assert_eq!(sharded(&store).await, 0, "of {orgs}");
        let check = crate::check::check(&store).await.unwrap();
        assert!(check.is_clean(), "{check}");
    }

    /// `--max-wcu` is charged for every attempt: a transaction the store sent again after
    /// a conflict costs its units each time.
    #[tokio::test]
    async fn every_attempt_of_a_write_is_charged() {
        let spent = |conflict: f64| async move {
            let (clean, _) = previous_layout().await;
            let store = EmbeddedStore::in_memory_with_faults(
                "t",
                crate::chart::builtin().table_schema(),
                crate::store::faults::Faults {
                    conflict,
                    seed: 7,
                    ..Default::default()
                },
            )
            .unwrap();
            store.create_table().await.unwrap();
            for item in scan_items(&clean).await {
                store.put_item(Put::new(item)).await.unwrap();
            }
            let (report, stats) = call_stats::measured(run(&store, &Options::default())).await;
            let report = report.unwrap();
            assert_eq!(sharded(&store).await, 0);
            (report.write_units, stats.retries)
        };
        let (calm, _) = spent(0.0).await;
        let (contended, retries) = spent(0.1).await;
        assert!(retries > 0, "conflicts were drawn");
        // Each organization's transaction is 33 items, 66 units: every retry of one is
        // charged as much again.
        assert!(
            contended >= calm + 66,
            "{contended} units with {retries} retries, {calm} without"
        );
    }

    async fn scan_items(store: &EmbeddedStore) -> Vec<Item> {
        store
            .scan(Scan {
                consistent_read: true,
                ..Scan::default()
            })
            .await
            .unwrap()
            .items
    }

    async fn scan_all(store: &EmbeddedStore) -> Vec<String> {
        let page = store
            .scan(Scan {
                consistent_read: true,
                ..Scan::default()
            })
            .await
            .unwrap();
        assert!(page.last_evaluated_key.is_none());
        let mut items: Vec<String> = page
            .items
            .iter()
            .map(|i| {
                let mut attrs: Vec<String> = i.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                attrs.sort();
                attrs.join(",")
            })
            .collect();
        items.sort();
        items
    }
}
