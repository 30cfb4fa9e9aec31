//! The chart's tables as the commands meet them: created (every table of a chart of
//! several), seeded from a NoSQL Workbench model's items, looked into before seeding.

use anyhow::Context;

/// Creates every table of the chart that is not there (the first, then the others on its
/// connection); answers whether the first was created.
pub(crate) async fn create_tables(
    store: &dyn itemgraph::store::Store,
    chart: &itemgraph::chart::Chart,
) -> anyhow::Result<bool> {
    let tables = chart.stores(store)?;
    let created = store.create_table().await.context("creating the table")?;
    for (_, one) in tables.iter().skip(1) {
        one.create_table()
            .await
            .with_context(|| format!("creating the table {}", one.table_name()))?;
    }
    Ok(created)
}

/// Creates the chart's tables where they are missing; one of another chart than the
/// built-in is recorded in the first, for `itemgraph migrate` to plan from. Whether the
/// first was missing.
pub(crate) async fn create_table(
    store: &dyn itemgraph::store::Store,
    chart: &itemgraph::chart::Chart,
) -> anyhow::Result<bool> {
    let created = create_tables(store, chart).await?;
    if created && !itemgraph::store::own::holds_own_items(store.schema()) {
        tracing::info!(
            "the table's keys cannot hold the server's own items: the chart is not recorded \
             in it (`itemgraph migrate` needs a table keyed by two strings)"
        );
    } else if created && !std::ptr::eq(chart, &*itemgraph::chart::builtin()) {
        itemgraph::migrate::chart::record(store, chart, 0)
            .await
            .context("recording the chart in the table")?;
    }
    Ok(created)
}

/// `seed --workbench`: the model's sample items of the chart's table, each put where its key
/// is free; how many were written, of how many.
pub(crate) async fn seed_workbench(
    store: &dyn itemgraph::store::Store,
    chart: &itemgraph::chart::Chart,
    path: &std::path::Path,
) -> anyhow::Result<(usize, usize)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let model = itemgraph::chart::workbench::Model::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let tables = chart.stores(store)?;
    let mut written = 0;
    let mut of = 0;
    for t in 0..chart.tables.len() {
        // The model's table of the chart table's name; a model of one table is the
        // chart's first, whatever its name.
        let name = &chart.tables[t].name;
        let table = model
            .data_model
            .iter()
            .find(|m| m.table_name == *name)
            .or_else(|| (t == 0 && model.data_model.len() == 1).then(|| &model.data_model[0]));
        let Some(table) = table else {
            anyhow::ensure!(
                t > 0,
                "{}: no table `{}` in the model (it has {})",
                path.display(),
                chart.table.name,
                model.table_names()
            );
            continue;
        };
        let store = tables.get(t);
        let items = table.items();
        of += items.len();
        for (_, item) in items {
            let put = itemgraph::store::Put::new(item).when(
                itemgraph::store::Condition::not_exists(store.schema().pk.clone()),
            );
            match store.put_item(put).await {
                Ok(_) => written += 1,
                Err(itemgraph::store::StoreError::ConditionFailed { .. }) => {}
                Err(e) => return Err(e).context("writing the model's items"),
            }
        }
    }
    Ok((written, of))
}

/// Whether the table holds an item that is not one of the server's own: a look at its
/// first page (one Scan of at most 100 items).
pub(crate) async fn holds_items(
    store: &dyn itemgraph::store::Store,
    chart: &itemgraph::chart::Chart,
) -> anyhow::Result<bool> {
    let own = |item: &itemgraph::store::Item| {
        matches!(item.get(&chart.table.type_attribute), Some(itemgraph::store::AttributeValue::S(t))
            if chart.entities.get(t).is_some_and(|e| e.system))
    };
    // Each table of the chart: one that holds items is enough.
    for (_, one) in chart.stores(store)?.iter() {
        let page = one
            .scan(itemgraph::store::Scan {
                limit: Some(100),
                ..Default::default()
            })
            .await
            .context("looking into the table")?;
        if page.items.iter().any(|i| !own(i)) || page.last_evaluated_key.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}
