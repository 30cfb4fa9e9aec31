//! What every migration's writes go through ([`Ctx`]): the store of the table whose items
//! are migrated, the chart's other tables (the first keeps the records), the write budget,
//! the dry run.

use crate::store::own::OwnRecord;
use crate::store::{call_stats, Delete, Item, Store, StoreResult, TransactAction};

use super::budget::{self, WriteBudget};
use super::records;

/// What every migration's writes go through: the store of the table whose items are
/// migrated, the chart's other tables, the budget, the dry run.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    /// The store of the table whose items are migrated.
    pub store: &'a dyn Store,
    /// That table's place in the chart's tables.
    pub table: usize,
    /// Every table's store: the first keeps the migrations' records.
    pub(super) tables: &'a crate::chart::TableStores<'a>,
    /// Every table's name as a TransactWriteItems of several names it (the first's as its
    /// store was opened, the others' as the chart names them).
    pub(super) names: &'a [String],
    pub dry_run: bool,
    pub(super) budget: &'a WriteBudget,
}

impl<'a> Ctx<'a> {
    /// The same run, migrating table `t`'s items.
    pub fn on(&self, t: usize) -> Ctx<'a> {
        Ctx {
            store: self.tables.get(t),
            table: t,
            ..*self
        }
    }

    /// The store that keeps the records: the first table's.
    pub(super) fn home(&self) -> &'a dyn Store {
        self.tables.get(0)
    }

    /// A TransactWriteItems of actions each in its table (its place in the chart's
    /// tables), once its units fit in the budget: over one table as [`Self::transact`],
    /// over several one call naming each.
    pub(super) async fn transact_in(
        &self,
        actions: Vec<(usize, TransactAction)>,
    ) -> StoreResult<()> {
        let first = actions.first().map_or(self.table, |(t, _)| *t);
        if actions.iter().all(|(t, _)| *t == first) {
            return self
                .on(first)
                .transact(actions.into_iter().map(|(_, a)| a).collect())
                .await;
        }
        let units: f64 = actions
            .iter()
            .map(|(t, a)| {
                budget::units(self.tables.get(*t).schema(), std::slice::from_ref(a), true)
            })
            .sum();
        self.budget.spend(units).await;
        let named = actions
            .into_iter()
            .map(|(t, action)| crate::store::TableAction {
                table: self.names[t].clone(),
                action,
            })
            .collect();
        let (result, stats) = call_stats::measured(self.home().transact_write_tables(named)).await;
        self.budget.charge(units * f64::from(stats.retries));
        result
    }

    /// A TransactWriteItems, once its units fit in the budget. Every attempt is charged:
    /// one the store sent again (a conflict, a throttle) cost units too, so those are
    /// taken from the budget after it, before the next write goes.
    pub(super) async fn transact(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        let units = budget::units(self.store.schema(), &actions, true);
        self.budget.spend(units).await;
        let (result, stats) = call_stats::measured(self.store.transact_write(actions)).await;
        self.budget.charge(units * f64::from(stats.retries));
        result
    }

    /// An UpdateItem, once its unit fits in the budget (and its attempts charged).
    pub(super) async fn update(&self, update: crate::store::Update) -> StoreResult<Option<Item>> {
        self.budget.spend(1.0).await;
        let (result, stats) = call_stats::measured(self.store.update_item(update)).await;
        self.budget.charge(f64::from(stats.retries));
        result
    }

    /// A PutItem, once its unit fits in the budget (and its attempts charged).
    pub(super) async fn put(&self, put: crate::store::Put) -> StoreResult<Option<Item>> {
        self.budget.spend(1.0).await;
        let (result, stats) = call_stats::measured(self.store.put_item(put)).await;
        self.budget.charge(f64::from(stats.retries));
        result
    }

    /// A DeleteItem, once its unit fits in the budget (and its attempts charged).
    pub(super) async fn delete(&self, delete: Delete) -> StoreResult<Option<Item>> {
        self.budget.spend(1.0).await;
        let (result, stats) = call_stats::measured(self.store.delete_item(delete)).await;
        self.budget.charge(f64::from(stats.retries));
        result
    }

    /// A checkpoint or a migration's record, once its unit fits in the budget.
    pub(super) async fn record<R: OwnRecord>(&self, record: &R) -> StoreResult<()> {
        self.budget.spend(1.0).await;
        records::write(self.home(), record).await
    }

    /// A migration's record where none is yet; false when another run wrote it first.
    pub(super) async fn create<R: OwnRecord>(&self, record: &R) -> StoreResult<bool> {
        self.budget.spend(1.0).await;
        records::create(self.home(), record).await
    }
}
