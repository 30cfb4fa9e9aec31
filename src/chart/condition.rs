//! Key conditions as the access-pattern table writes them: `PK = CHAIN#{chain} AND SK >= …`.

use indexmap::IndexMap;

use super::template::Template;
use super::{Index, KeyCondition, SortCondition, Table};

/// `PK = T`, then optionally ` AND SK op T`, ` AND SK BETWEEN T AND T` or
/// ` AND begins_with(SK, T)`; the key attributes name the table or the index.
pub(super) fn parse_condition(
    text: &str,
    table: &Table,
    indexes: &IndexMap<String, Index>,
) -> Result<KeyCondition, String> {
    let (head, rest) = match text.split_once(" AND ") {
        Some((h, r)) => (h.trim(), Some(r.trim())),
        None => (text.trim(), None),
    };
    let (pk_attr, pk_value) = head
        .split_once(" = ")
        .ok_or("a key condition starts `<partition key> = <template>`")?;
    let pk_attr = pk_attr.trim();
    if indexes
        .values()
        .any(|i| i.multi && i.partition_key == pk_attr)
    {
        return parse_multi(text, indexes);
    }
    // The sort key the condition names, if any: it tells a local index (the table's
    // partition key, a sort key of its own) from the table.
    let named_sort = rest.map(|r| {
        let r = r.strip_prefix("begins_with(").unwrap_or(r);
        r.split([' ', ',']).next().unwrap_or("").trim().to_owned()
    });
    let local = named_sort.as_deref().and_then(|sk| {
        indexes
            .values()
            .find(|i| i.local && i.partition_key == pk_attr && i.sort_key.as_deref() == Some(sk))
    });
    let (index, sk_attr) = if let Some(i) = local {
        (Some(i.name.clone()), i.sort_key.clone())
    } else if pk_attr == table.partition_key {
        (None, table.sort_key.clone())
    } else if let Some(i) = indexes
        .values()
        .find(|i| !i.local && i.partition_key == pk_attr)
    {
        (Some(i.name.clone()), i.sort_key.clone())
    } else {
        return Err(format!(
            "`{pk_attr}` is the partition key of neither the table nor an index it declares"
        ));
    };
    let partition = Template::parse(pk_value.trim())?;
    let sort = match rest {
        None => None,
        Some(r) => {
            let sk_attr = sk_attr.ok_or_else(|| {
                format!("`{r}`: the table or index `{pk_attr}` names has no sort key")
            })?;
            Some(parse_sort(r, &sk_attr)?)
        }
    };
    Ok(KeyCondition::new(index, partition, sort))
}

/// A condition on a multi-attribute key: `A = T AND B = T` for each partition attribute,
/// then, for the sort attributes in order, `=` on each but the last given, which may be
/// any sort condition (DynamoDB's rule: no attribute skipped, a range on the last only).
fn parse_multi(text: &str, indexes: &IndexMap<String, Index>) -> Result<KeyCondition, String> {
    let mut terms: Vec<String> = Vec::new();
    for piece in text.split(" AND ") {
        match terms.last_mut() {
            Some(last) if pending_between(last) => {
                last.push_str(" AND ");
                last.push_str(piece.trim());
            }
            _ => terms.push(piece.trim().to_owned()),
        }
    }
    let named = |t: &str| -> String {
        let t = t.strip_prefix("begins_with(").unwrap_or(t);
        t.split([' ', ',']).next().unwrap_or("").trim().to_owned()
    };
    let names: Vec<String> = terms.iter().map(|t| named(t)).collect();
    let index = indexes
        .values()
        .filter(|i| i.multi)
        .find(|i| {
            let keys = i.key_names();
            names.len() <= keys.len() && names.iter().zip(&keys).all(|(n, k)| n == k)
                && names.len() >= i.partition_len()
        })
        .ok_or_else(|| {
            format!("`{text}` names the key attributes of no index in their order: a multi-attribute key's partition attributes all, then its sort attributes from the first, none skipped")
        })?;
    let mut partition = Vec::new();
    for t in &terms[..index.partition_len()] {
        let (_, v) = t
            .split_once(" = ")
            .ok_or_else(|| format!("`{t}`: each partition attribute is given by `=`"))?;
        partition.push(Template::parse(v.trim())?);
    }
    let sorts = index.sort_names();
    let rest = &terms[index.partition_len()..];
    let mut sort_prefix = Vec::new();
    let mut sort = None;
    for (j, t) in rest.iter().enumerate() {
        if j + 1 < rest.len() {
            let (_, v) = t.split_once(" = ").ok_or_else(|| {
                format!("`{t}`: a sort attribute before the last one given is given by `=`")
            })?;
            sort_prefix.push(Template::parse(v.trim())?);
        } else {
            sort = Some(parse_sort(t, sorts[j])?);
        }
    }
    let mut partition = partition.into_iter();
    Ok(KeyCondition {
        index: Some(index.name.clone()),
        partition: partition.next().ok_or("no partition")?,
        partition_more: partition.collect(),
        sort_prefix,
        sort,
    })
}

/// Whether a term is `X BETWEEN a` still waiting for its ` AND b`.
fn pending_between(term: &str) -> bool {
    term.split_once(" BETWEEN ")
        .is_some_and(|(_, bounds)| !bounds.contains(" AND "))
}

fn parse_sort(text: &str, sk_attr: &str) -> Result<SortCondition, String> {
    let named = |attr: &str| attr == sk_attr;
    if let Some(inner) = text
        .strip_prefix("begins_with(")
        .and_then(|t| t.strip_suffix(')'))
    {
        let (attr, t) = inner
            .split_once(',')
            .ok_or("`begins_with(<sort key>, <template>)`")?;
        if !named(attr.trim()) {
            return Err(format!(
                "`{}` is not the sort key of the index the partition key names",
                attr.trim()
            ));
        }
        return Ok(SortCondition::BeginsWith(Template::parse(t.trim())?));
    }
    let mut words = text.splitn(3, ' ');
    let attr = words.next().unwrap_or("");
    let op = words
        .next()
        .ok_or("a sort condition is `<sort key> <op> <template>`")?;
    let value = words
        .next()
        .ok_or("a sort condition is `<sort key> <op> <template>`")?
        .trim();
    if !named(attr) {
        return Err(format!(
            "`{attr}` is not the sort key of the index the partition key names"
        ));
    }
    let t = |s: &str| Template::parse(s.trim());
    Ok(match op {
        "=" => SortCondition::Eq(t(value)?),
        "<" => SortCondition::Lt(t(value)?),
        "<=" => SortCondition::Le(t(value)?),
        ">" => SortCondition::Gt(t(value)?),
        ">=" => SortCondition::Ge(t(value)?),
        "BETWEEN" => {
            let (a, b) = value
                .split_once(" AND ")
                .ok_or("`BETWEEN <template> AND <template>`")?;
            SortCondition::Between(t(a)?, t(b)?)
        }
        other => {
            return Err(format!(
                "`{other}` is none of =, <, <=, >, >=, BETWEEN, begins_with"
            ))
        }
    })
}
