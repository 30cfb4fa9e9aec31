//! The chart explained as a person reads it: the entity chart, the access-pattern table and
//! the write plans, in Markdown (the README's and DATA_MODEL's tables for the built-in
//! chart).

use super::{Cost, Explained};

/// `0.5`, `3`, `0.5–50`: a figure of units as a table shows it.
fn units_text(c: &Cost) -> String {
    let n = |x: f64| {
        if x.fract() == 0.0 {
            format!("{x:.0}")
        } else {
            format!("{x}")
        }
    };
    if c.least == c.most {
        format!("{} {}", n(c.least), c.unit)
    } else {
        format!("{}–{} {}", n(c.least), n(c.most), c.unit)
    }
}

/// The entity chart and the access-pattern table, as Markdown.
pub fn markdown(x: &Explained) -> String {
    format!(
        "### Entity chart\n\n{}\n### Access patterns\n\n{}\n### Write plans\n\n{}",
        entity_table(x),
        pattern_table(x),
        plans_text(x)
    )
}

/// Each write pattern's resolved plan: its steps in the order they are sent, each action
/// with its condition (values a request fills in are `:named`).
pub fn plans_text(x: &Explained) -> String {
    let mut out = String::new();
    for p in &x.patterns {
        let Some(plan) = &p.plan else { continue };
        out += &format!("**{}. {}** (`{}`)", p.number, p.name, plan.mutation);
        match &plan.reads_first {
            Some(r) if r == "always" => out += ", read first\n\n",
            Some(r) => out += &format!(", read first for a change of {r}\n\n"),
            None => out += "\n\n",
        }
        if let Some(i) = &plan.in_place {
            out += &format!("- without a read: {i}\n");
        }
        for s in &plan.steps {
            let items = if s.least == s.most {
                s.most.to_string()
            } else {
                format!("{}–{}", s.least, s.most)
            };
            let of =
                s.of.as_deref()
                    .map(|o| format!(" ({o})"))
                    .unwrap_or_default();
            out += &format!(
                "- {} {}{of}, {items}, tenant {}: {}\n",
                s.role,
                s.entity,
                s.tenant,
                s.actions.join("; ")
            );
            if let Some(c) = &s.on_shard {
                out += &format!("  - on a counter shard: UpdateItem if {c}\n");
            }
        }
        out += "\n";
    }
    out
}

/// The entity chart: a line naming the table and its indexes, then each entity's key
/// templates under the key attributes. The README's and DATA_MODEL's for the built-in
/// chart.
pub fn entity_table(x: &Explained) -> String {
    let mut out = format!(
        "Chart `{}`, table `{}`: partition key `{}`",
        x.chart, x.table, x.key_attributes[0]
    );
    if let Some(sk) = &x.sort_key {
        out.push_str(&format!(", sort key `{sk}`"));
    }
    // Each table, then its indexes.
    let indexes_of = |out: &mut String, table: Option<&str>| {
        for i in x.indexes.iter().filter(|i| i.table.as_deref() == table) {
            out.push_str(&index_text(i));
        }
    };
    indexes_of(&mut out, None);
    for t in &x.other_tables {
        out.push_str(&format!(
            "; table `{}`: partition key `{}`",
            t.name, t.partition_key
        ));
        if let Some(sk) = &t.sort_key {
            out.push_str(&format!(", sort key `{sk}`"));
        }
        indexes_of(&mut out, Some(&t.name));
    }
    out.push_str(".\n\n| Entity |");
    for a in &x.key_attributes {
        out.push_str(&format!(" {a} |"));
    }
    out.push_str("\n|---|");
    for _ in &x.key_attributes {
        out.push_str("---|");
    }
    out.push('\n');
    for e in &x.entities {
        let name = if e.system {
            format!("{} (the server's own)", e.name)
        } else {
            e.name.clone()
        };
        out.push_str(&format!("| {name} |"));
        for a in &x.key_attributes {
            match e.keys.iter().find(|(k, _)| k == a) {
                Some((_, t)) => out.push_str(&format!(" `{t}` |")),
                None => out.push_str(" |"),
            }
        }
        out.push('\n');
    }
    let links: Vec<&str> = x
        .entities
        .iter()
        .filter_map(|e| e.link.as_deref())
        .collect();
    if !links.is_empty() {
        out.push('\n');
        for l in links {
            out.push_str(&format!("{l}.\n"));
        }
    }
    out
}

/// The access-pattern table: a line saying what the costs assume, then a row a pattern.
/// The README's and DATA_MODEL's for the built-in chart.
pub fn pattern_table(x: &Explained) -> String {
    let mut out = format!(
        "Costs for items of {} B, a first page of {} (a client's `first`), reads eventually consistent (0.5 RCU per 4 KB; a strongly consistent read costs twice that), writes 1 WCU per KB of each item, twice that in a transaction (`itemgraph chart explain`).\n\n| # | Access pattern | Request | Key condition | Returns | Cost |\n|---|---|---|---|---|---|\n",
        x.item_bytes, x.page_size
    );
    for p in &x.patterns {
        let direction = |f: bool| if f { "forward" } else { "backward" };
        let request = match (&p.index, p.forward) {
            (Some(i), Some(f)) => format!("{} {i}, {}", p.request, direction(f)),
            (None, Some(f)) => format!("{}, {}", p.request, direction(f)),
            (Some(i), None) => format!("{} {i}", p.request),
            (None, None) => p.request.clone(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} ({}) |\n",
            p.number,
            p.name,
            request,
            p.key_condition
                .as_deref()
                .map(|k| format!("`{k}`"))
                .unwrap_or_else(|| "—".into()),
            p.returns,
            units_text(&p.cost),
            p.cost.how
        ));
    }
    out
}

/// An index as the entity chart's line names it (`; GSI1 (`GSI1PK`, `GSI1SK`, ALL)`).
fn index_text(i: &super::IndexShown) -> String {
    let named = match &i.stored {
        Some(s) => format!("{} (stored `{s}`)", i.name),
        None => i.name.clone(),
    };
    if !i.more_partition_keys.is_empty() || !i.more_sort_keys.is_empty() {
        let list = |first: Option<&String>, more: &[String]| {
            first
                .into_iter()
                .chain(more)
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" + ")
        };
        return format!(
            "; {} (multi-attribute: {} / {}, {})",
            named,
            list(Some(&i.partition_key), &i.more_partition_keys),
            list(i.sort_key.as_ref(), &i.more_sort_keys),
            i.projection
        );
    }
    match &i.sort_key {
        Some(sk) => format!(
            "; {} (`{}`, `{sk}`, {})",
            named, i.partition_key, i.projection
        ),
        None => format!("; {} (`{}`, {})", named, i.partition_key, i.projection),
    }
}
