//! Query: one contiguous key range of the table or of an index, forward or backward, cut
//! at `Limit` or 1 MB with DynamoDB's `LastEvaluatedKey`.

use std::ops::Bound;

use crate::store::validate::MAX_QUERY_PAGE_BYTES;
use crate::store::value::item_size;
use crate::store::{PageKey, Query, QueryOutput, Scan, SortCondition, StoreResult};

use super::codec::{
    decode_item, index_row_key, multi_key_range, row_key, typed_key_range, PROJECTED,
};
use super::expr::eval;
use super::{internal, Inner};

/// BatchGetItem answers at most 16 MB; the rest comes back as unprocessed keys.
pub(super) const MAX_BATCH_GET_BYTES: usize = 16 * 1024 * 1024;

pub(super) fn query(inner: &Inner, req: &Query) -> StoreResult<QueryOutput> {
    let tx = inner.db.begin_read().map_err(internal)?;
    inner.read_exists(&tx)?;
    let items = tx.open_table(inner.items_def()).map_err(internal)?;
    let index = index_position(inner, req.index.as_deref())?;
    let schema = &inner.schema;
    let (mut lo, mut hi) = match index.map(|i| &schema.indexes[i]) {
        Some(i) if i.multi_attribute() => {
            let partition: Vec<&str> = std::iter::once(req.partition.as_str())
                .chain(req.partition_more.iter().map(String::as_str))
                .collect();
            multi_key_range(i, &partition, &req.sort_prefix, req.sort.as_ref())
        }
        Some(i) => typed_key_range(i.pk_type, i.sk_type, &req.partition, req.sort.as_ref()),
        None => typed_key_range(
            schema.pk_type,
            schema.sk_type,
            &req.partition,
            req.sort.as_ref(),
        ),
    };
    let mut lo_bound_excluded = false;
    let mut hi_bound_excluded = true;
    if let Some(start) = &req.start {
        let sk = match (&start.index, index) {
            (Some(ik), Some(i)) => index_row_key(schema, &schema.indexes[i], ik, &start.table),
            _ => row_key(schema, &start.table),
        };
        if req.forward {
            if sk >= lo {
                lo = sk;
                lo_bound_excluded = true;
            }
        } else if sk <= hi {
            hi = sk;
            hi_bound_excluded = true;
        }
    }
    let lower = if lo_bound_excluded {
        Bound::Excluded(lo.as_slice())
    } else {
        Bound::Included(lo.as_slice())
    };
    let upper = if hi_bound_excluded {
        Bound::Excluded(hi.as_slice())
    } else {
        Bound::Included(hi.as_slice())
    };
    if lo > hi || (lo == hi && (lo_bound_excluded || hi_bound_excluded)) {
        return Ok(QueryOutput::default());
    }

    let limit = req.limit.map(|l| l as usize).unwrap_or(usize::MAX);
    let mut out = QueryOutput::default();
    let mut bytes = 0usize;
    let mut last: Option<PageKey> = None;
    let mut stopped = false;

    let mut visit = |row_val: &[u8]| -> StoreResult<bool> {
        let (item, page_key) = match index {
            None => {
                let item = decode_item(row_val)?;
                let table = schema.key_of(&item).ok_or_else(|| internal("bad key"))?;
                (item, PageKey { table, index: None })
            }
            Some(i) => index_row(inner, &items, i, row_val)?,
        };
        bytes += item_size(&item);
        out.items.push(item);
        last = Some(page_key);
        // DynamoDB stops at Limit items, or once it has read 1 MB, and then hands back the
        // key of the last item it returned, whether or not more items follow.
        Ok(out.items.len() >= limit || bytes >= MAX_QUERY_PAGE_BYTES)
    };

    let index_table = match index {
        None => None,
        Some(i) => Some(tx.open_table(inner.index_def(i)).map_err(internal)?),
    };
    let range = index_table
        .as_ref()
        .unwrap_or(&items)
        .range::<&[u8]>((lower, upper))
        .map_err(internal)?;
    let rows: Box<dyn Iterator<Item = _>> = if req.forward {
        Box::new(range)
    } else {
        Box::new(range.rev())
    };
    for row in rows {
        let (_, v) = row.map_err(internal)?;
        if visit(v.value())? {
            stopped = true;
            break;
        }
    }
    if stopped {
        let at_inclusive_end = index.is_none()
            && last
                .as_ref()
                .is_some_and(|k| match (&req.sort, req.forward) {
                    (Some(SortCondition::Le(end) | SortCondition::Between(_, end)), true)
                    | (Some(SortCondition::Ge(end) | SortCondition::Between(end, _)), false) => {
                        k.table.sk == *end
                    }
                    _ => false,
                });
        // A base-table page that ends on the inclusive bound of its key condition cannot
        // be followed by anything (sort keys are unique there), and DynamoDB then returns
        // no LastEvaluatedKey; on an index, equal sort keys may follow, so the key stays.
        if !at_inclusive_end {
            out.last_evaluated_key = last;
        }
    }
    Ok(out)
}

/// Scan: the base table or an index, in the order of its rows (DynamoDB's is its own, by
/// partition hash: no order is promised), from after `start`; `Limit` and the 1 MB cut
/// count the items read, the filter keeps some of them, and `LastEvaluatedKey` is the
/// last one read.
pub(super) fn scan(inner: &Inner, req: &Scan) -> StoreResult<QueryOutput> {
    let tx = inner.db.begin_read().map_err(internal)?;
    inner.read_exists(&tx)?;
    let items = tx.open_table(inner.items_def()).map_err(internal)?;
    let index = index_position(inner, req.index.as_deref())?;
    let schema = &inner.schema;
    let start = req.start.as_ref().map(|s| match (&s.index, index) {
        (Some(ik), Some(i)) => index_row_key(schema, &schema.indexes[i], ik, &s.table),
        _ => row_key(schema, &s.table),
    });
    let lower = match &start {
        Some(k) => Bound::Excluded(k.as_slice()),
        None => Bound::Unbounded,
    };
    let limit = req.limit.map_or(usize::MAX, |l| l as usize);
    let mut out = QueryOutput::default();
    let (mut read, mut bytes) = (0usize, 0usize);
    let index_table = match index {
        None => None,
        Some(i) => Some(tx.open_table(inner.index_def(i)).map_err(internal)?),
    };
    let rows = index_table
        .as_ref()
        .unwrap_or(&items)
        .range::<&[u8]>((lower, Bound::Unbounded))
        .map_err(internal)?;
    for row in rows {
        let (_, v) = row.map_err(internal)?;
        let (item, page_key) = match index {
            None => {
                let item = decode_item(v.value())?;
                let Some(table) = inner.schema.key_of(&item) else {
                    continue;
                };
                (item, PageKey { table, index: None })
            }
            Some(i) => index_row(inner, &items, i, v.value())?,
        };
        if let Some(segment) = req.segment {
            if !segment.holds(&page_key.table.pk) {
                continue;
            }
        }
        read += 1;
        bytes += item_size(&item);
        if req.filter.as_ref().is_none_or(|c| eval(c, Some(&item))) {
            out.items.push(item);
        }
        if read >= limit || bytes >= MAX_QUERY_PAGE_BYTES {
            out.last_evaluated_key = Some(page_key);
            break;
        }
    }
    out.scanned = Some(read);
    Ok(out)
}

/// The position of index `name` in the table's schema (`None`: the base table).
fn index_position(inner: &Inner, name: Option<&str>) -> StoreResult<Option<usize>> {
    name.map(|name| {
        inner
            .schema
            .indexes
            .iter()
            .position(|i| i.name == name)
            .ok_or_else(|| internal("unknown index"))
    })
    .transpose()
}

/// One row of index `i`: the item as the index answers it (what it projects, as DynamoDB's
/// does, counted so toward the 1 MB a page reads), and its key there.
fn index_row(
    inner: &Inner,
    items: &redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
    i: usize,
    row_val: &[u8],
) -> StoreResult<(crate::store::Item, PageKey)> {
    let item = match row_val.strip_prefix(&PROJECTED) {
        Some(copy) => decode_item(copy)?,
        None => {
            let base = items
                .get(row_val)
                .map_err(internal)?
                .ok_or_else(|| internal("index row without item"))?;
            decode_item(base.value())?
        }
    };
    // Its keys as the item holds them, of their types (the row key holds them as they sort).
    let schema = &inner.schema;
    let index = &schema.indexes[i];
    let (Some(table), Some(ik)) = (schema.key_of(&item), schema.index_key_of(index, &item)) else {
        return Err(internal("bad index key"));
    };
    let item = schema.projected(index, item);
    Ok((
        item,
        PageKey {
            table,
            index: Some(ik),
        },
    ))
}
