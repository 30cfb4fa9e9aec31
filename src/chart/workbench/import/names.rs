//! Names and TOML text in a draft: attribute, entity and chart names from the model's, and
//! strings and keys as TOML writes them.

pub(super) fn key_attr(name: &str, ty: &str) -> String {
    match ty {
        "N" => format!("{{ name = {}, type = \"N\" }}", quote(name)),
        _ => quote(name),
    }
}

/// A TOML basic string (a JSON string is one: the same escapes).
pub(super) fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// A TOML key as written: bare where it can be.
pub(super) fn bare(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        s.to_owned()
    } else {
        quote(s)
    }
}

/// `EntityType` → `entityType`, `GSI1-PK` → `gsi1Pk`, `user_name` → `userName`.
pub(super) fn attribute_name(stored: &str) -> String {
    let words: Vec<&str> = stored
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        let w = if w
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        {
            w.to_lowercase()
        } else {
            w.to_string()
        };
        if i == 0 {
            out.push_str(&lower_first(&w));
        } else {
            out.push_str(&upper_first(&w));
        }
    }
    if out.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        out.insert(0, 'a');
    }
    out
}

pub(super) fn entity_name(s: &str) -> String {
    upper_first(&attribute_name(s))
}

pub(super) fn chart_name(s: &str) -> String {
    let words: Vec<String> = s
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        "imported".into()
    } else {
        words.join("-")
    }
}

pub(super) fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
        .unwrap_or_default()
}

pub(super) fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

pub(super) fn plural(s: &str) -> String {
    if s.ends_with('s') {
        format!("{s}es")
    } else if let Some(stem) = s.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{s}s")
    }
}

pub(super) fn singular(s: &str) -> String {
    s.strip_suffix("ies")
        .map(|x| format!("{x}y"))
        .or_else(|| s.strip_suffix('s').map(str::to_owned))
        .unwrap_or_else(|| s.to_owned())
}

/// `name` where nothing has it, else `prefix` before it, then a number after that
/// (`Order`, `ArchiveOrder`, `ArchiveOrder2`): a later table's name for what an earlier
/// one named so already.
pub(super) fn free_name(name: &str, prefix: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(name) {
        return name.to_owned();
    }
    let base = format!("{prefix}{name}");
    let mut free = base.clone();
    let mut n = 2;
    while taken(&free) {
        free = format!("{base}{n}");
        n += 1;
    }
    free
}
