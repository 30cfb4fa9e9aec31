//! Key templates inferred from sample keys: split at `#`, a segment every sample holds alike
//! literal text, one that varies a variable after the literal text its values share, named
//! after the key alias, the key attribute or another entity's key, and checked against
//! every sample.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::names::{attribute_name, lower_first};
use super::{Draft, Inferred};

impl Draft {
    /// The template of one key attribute's values, each segment literal or a variable.
    pub(super) fn infer(
        &mut self,
        entity: &str,
        values: &[Option<String>],
        number: bool,
        alias: Option<&str>,
        names: &mut VarNames,
        known: &[Inferred],
    ) -> Option<Inferred> {
        let others = self.keys_seen.clone();
        let others = others.as_slice();
        let Some(values): Option<Vec<&String>> = values.iter().map(Option::as_ref).collect() else {
            let line = self.todo(format!("entity {entity}: a sample lacks a key attribute"));
            self.pending.push_str(&line);
            return None;
        };
        // A variable whose values another key already has: that variable again.
        let reuse = |vals: &[String]| -> Option<String> {
            known
                .iter()
                .flat_map(|k| k.vars.iter())
                .find(|(_, v)| v.as_slice() == vals)
                .map(|(n, _)| n.clone())
        };
        if number {
            let vals: Vec<String> = values.iter().map(|v| (*v).clone()).collect();
            let name = reuse(&vals).unwrap_or_else(|| {
                names
                    .take(alias_name(alias).unwrap_or_else(|| format!("{}Id", lower_first(entity))))
            });
            self.ints.insert(name.clone());
            return Some(Inferred {
                template: format!("{{{name}}}"),
                vars: vec![(name, vals)],
            });
        }
        let split: Vec<Vec<&str>> = values.iter().map(|v| v.split('#').collect()).collect();
        let count = split[0].len();
        if split.iter().any(|s| s.len() != count) {
            let line = self.todo(format!(
                "entity {entity}: its keys ({}) have different numbers of `#`-separated parts: one template cannot render them all",
                values.iter().take(3).map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
            ));
            self.pending.push_str(&line);
            return None;
        }
        let alias_parts: Option<Vec<&str>> = alias
            .map(|a| a.split('#').collect())
            .filter(|p: &Vec<&str>| p.len() == count);
        let mut template = String::new();
        let mut vars = Vec::new();
        for j in 0..count {
            if j > 0 {
                template.push('#');
            }
            let column: Vec<&str> = split.iter().map(|s| s[j]).collect();
            if column.iter().all(|c| *c == column[0]) && split.len() > 1 {
                template.push_str(column[0]);
                continue;
            }
            if column.iter().all(|c| *c == column[0]) {
                // One sample: a segment is literal unless the alias names a variable there,
                // or it reads as a value (digits, an id) rather than a word.
                let named = alias_parts.as_ref().and_then(|p| placeholder(p[j]));
                if named.is_none() && !looks_like_value(column[0]) {
                    template.push_str(column[0]);
                    continue;
                }
            }
            let prefix = shared_prefix(&column);
            let vals: Vec<String> = column
                .iter()
                .map(|c| c[prefix.len()..].to_owned())
                .collect();
            let name = match reuse(&vals) {
                Some(n) => n,
                None => {
                    let base = alias_parts
                        .as_ref()
                        .and_then(|p| placeholder(p[j]).or_else(|| word(p[j])))
                        // Another entity's key it renders the same (a patient's key in a
                        // visit's index), before the key attribute's own name.
                        .or_else(|| own_key(others, &split[0][..j]))
                        .or_else(|| {
                            (vars.is_empty() && var_segments(&split) == 1)
                                .then(|| alias_name(alias))
                                .flatten()
                        })
                        .or_else(|| {
                            (j > 0
                                && split[0][j - 1].chars().all(|c| c.is_ascii_alphabetic())
                                && split[0][j - 1].len() > 1)
                                .then(|| attribute_name(&split[0][j - 1].to_lowercase()))
                        })
                        .unwrap_or_else(|| format!("{}Id", lower_first(entity)));
                    names.take(base)
                }
            };
            let _ = write!(template, "{prefix}{{{name}}}");
            vars.push((name, vals));
        }
        // Checked against every sample: the template reads each key back, and renders it.
        let parsed = crate::chart::template::Template::parse(&template).ok();
        let renders_all = parsed.as_ref().is_some_and(|t| {
            values.iter().all(|v| {
                t.read(v).is_some_and(|read| {
                    t.render(|n| {
                        read.iter()
                            .find(|(var, _)| var.name == n)
                            .map(|(_, x)| x.clone())
                    })
                    .is_ok_and(|back| back == **v)
                })
            })
        });
        if !renders_all {
            let line = self.todo(format!(
                "entity {entity}: `{template}` does not render every sample's key back: declare its key by hand"
            ));
            self.pending.push_str(&line);
            return None;
        }
        Some(Inferred { template, vars })
    }

    /// The kind a variable's values are of: a ULID, digits, or a kind of the chart's own.
    pub(super) fn kind_for(&mut self, values: &[String]) -> String {
        let max = values.iter().map(|v| v.chars().count()).max().unwrap_or(1);
        if values
            .iter()
            .all(|v| crate::chart::kinds::validate_id("v", v).is_ok_and(|x| x.to_string() == *v))
        {
            return "ulid".into();
        }
        if values
            .iter()
            .all(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        {
            self.kinds
                .insert("digits".into(), ("[0-9]+".into(), 40.max(max)));
            return "digits".into();
        }
        let name = "text".to_owned();
        let entry = self
            .kinds
            .entry(name.clone())
            .or_insert(("[^#\\s]+".into(), 64));
        entry.1 = entry.1.max(max.next_power_of_two().max(64));
        name
    }
}

/// Variable names taken so far in one entity.
#[derive(Default)]
pub(super) struct VarNames(HashSet<String>, HashSet<String>);

impl VarNames {
    /// Names no variable may take (the table's key attributes, its type attribute): a
    /// variable that would is named `…Value`.
    pub(super) fn reserving<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        VarNames(
            HashSet::new(),
            names.into_iter().map(str::to_owned).collect(),
        )
    }

    pub(super) fn take(&mut self, base: String) -> String {
        let base = if self.1.contains(&base) {
            format!("{base}Value")
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 2;
        while !self.0.insert(name.clone()) {
            name = format!("{base}{n}");
            n += 1;
        }
        name
    }
}

/// A variable's name from a key alias's part: `<id>`, `{id}`, `[id]`.
pub(super) fn placeholder(part: &str) -> Option<String> {
    let inner = part
        .rsplit_once('<')
        .and_then(|(_, r)| r.strip_suffix('>'))
        .or_else(|| part.rsplit_once('{').and_then(|(_, r)| r.strip_suffix('}')))
        .or_else(|| part.rsplit_once('[').and_then(|(_, r)| r.strip_suffix(']')))?;
    let name = attribute_name(inner);
    (!name.is_empty()).then_some(name)
}

/// A key alias's part that is a plain name (`State` of `State#Date`).
pub(super) fn word(part: &str) -> Option<String> {
    (!part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| attribute_name(part))
}

/// A whole key's alias that names one value (`AccountId`).
pub(super) fn alias_name(alias: Option<&str>) -> Option<String> {
    let a = alias?;
    placeholder(a).or_else(|| {
        (a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !a.is_empty())
            .then(|| attribute_name(a))
    })
}

/// How many segments of a key's values vary (are variables).
pub(super) fn var_segments(split: &[Vec<&str>]) -> usize {
    (0..split[0].len())
        .filter(|j| split.iter().any(|s| s[*j] != split[0][*j]) || looks_like_value(split[0][*j]))
        .count()
}

/// A variable named after another entity's key it renders the same as (`p#{sku}`, the
/// product's key, in an order's index key): that key's variable.
pub(super) fn own_key(others: &[(String, String)], before: &[&str]) -> Option<String> {
    let literal: String = before.iter().map(|s| format!("{s}#")).collect();
    others.iter().find_map(|(template, var)| {
        (template == &format!("{literal}{{{var}}}")).then(|| var.clone())
    })
}

pub(super) fn looks_like_value(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// The literal text the values share before what varies, cut after its last character
/// that is no letter or digit (`c-` of `c-10001` and `c-10002`, not `c-1000`).
pub(super) fn shared_prefix(column: &[&str]) -> String {
    let first = column[0];
    let mut len = first.len();
    for c in &column[1..] {
        len = len.min(
            first
                .bytes()
                .zip(c.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let shared = &first[..len];
    let cut = shared
        .char_indices()
        .filter(|(_, c)| !c.is_alphanumeric())
        .map(|(i, c)| i + c.len_utf8())
        .next_back();
    let prefix = match cut {
        Some(i) => &shared[..i],
        // A letter prefix before digits (`c12345`): the letters.
        None => &shared[..shared.find(|c: char| c.is_ascii_digit()).unwrap_or(0)],
    };
    // Digits are the value's own (`2026-` of two dates is no prefix).
    if prefix.chars().any(|c| c.is_ascii_digit()) {
        return String::new();
    }
    // Every value keeps something after it.
    if column.iter().any(|c| c.len() <= prefix.len()) {
        return String::new();
    }
    prefix.to_owned()
}

/// The constant text a template starts with, up to its first variable.
pub(super) fn literal_prefix(template: &str) -> String {
    template.split('{').next().unwrap_or("").to_owned()
}
