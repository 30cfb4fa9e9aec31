//! Key templates: `CHAIN#{chain}`, `#STORE#{storeId}`, `STORE#{number:04}`, and in key
//! conditions `CHAIN#{chain}#COUNT#~` or `STORE#{country}#{state?}#`.
//!
//! A template is literal text and variables. A variable names an attribute (or, in a key
//! condition, a value the pattern is given); `:0N` pads an integer to N digits, so numbers
//! sort as text in their numeric order; `?` (key conditions only) marks a level a
//! `begins_with` may stop before, or an end of a range a caller may leave open (`SK BETWEEN
//! INV#{from?} AND INV#{to?}#~`: the range then starts at, or runs to the end of, the
//! literal text before it). Every variable is followed by the separator `#` or ends
//! the template, and no value may hold `#`: so a rendered key splits back into its
//! template's segments, and two templates are compared segment by segment.

use std::cmp::Ordering;
use std::fmt;

/// What separates a key's segments; no key value may contain it.
pub const SEPARATOR: char = '#';

/// What an upper end left open is rendered with after the text before it: the highest code
/// point, so the range runs past every key that starts with that text (a key holding this
/// noncharacter itself aside).
pub const HIGHEST: char = '\u{10FFFF}';

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Literal(String),
    Var(Var),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Var {
    pub name: String,
    /// Zero-padded width of an integer.
    pub width: Option<usize>,
    /// A level a `begins_with` may stop before.
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub parts: Vec<Part>,
    source: String,
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Template {
    /// Parses a template; the error says what is wrong with it.
    pub fn parse(source: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        let mut literal = String::new();
        while let Some(c) = rest.chars().next() {
            if c == '}' {
                return Err(format!("`{source}`: a `}}` with no `{{`"));
            }
            if c != '{' {
                if c.is_control() {
                    return Err(format!("`{source}`: a control character"));
                }
                literal.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let Some(end) = rest.find('}') else {
                return Err(format!("`{source}`: a `{{` with no `}}`"));
            };
            let inner = &rest[1..end];
            rest = &rest[end + 1..];
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(Part::Var(parse_var(source, inner)?));
            if !(rest.is_empty() || rest.starts_with(SEPARATOR)) {
                return Err(format!(
                    "`{source}`: `{{{inner}}}` must be followed by `{SEPARATOR}` or end the template, \
                     or its value could not be told from what follows"
                ));
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        if parts.is_empty() {
            return Err("a template must not be empty".into());
        }
        Ok(Template {
            parts,
            source: source.to_owned(),
        })
    }

    /// The sort-key template of a key that has no sort key: no parts, rendering the empty
    /// text every key of such a table or index has there.
    pub fn none() -> Template {
        Template {
            parts: Vec::new(),
            source: String::new(),
        }
    }

    /// Whether it is [`Template::none`].
    pub fn is_none(&self) -> bool {
        self.parts.is_empty()
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn vars(&self) -> impl Iterator<Item = &Var> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v),
            Part::Literal(_) => None,
        })
    }

    /// The template cut before its first optional level: the shortest prefix a
    /// `begins_with` on it can be given.
    pub fn shortest(&self) -> Template {
        let cut = self
            .parts
            .iter()
            .position(|p| matches!(p, Part::Var(v) if v.optional))
            .unwrap_or(self.parts.len());
        Template {
            parts: self.parts[..cut].to_vec(),
            source: self.source.clone(),
        }
    }

    /// Whether rendering it with the values `given` stops at an open level or end: an
    /// optional variable has no value.
    pub fn left_open(&self, given: impl Fn(&str) -> bool) -> bool {
        self.vars().any(|v| v.optional && !given(&v.name))
    }

    /// Whether a variable of it is optional.
    pub fn has_open(&self) -> bool {
        self.vars().any(|v| v.optional)
    }

    /// The literal text before the first variable.
    pub fn literal_prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Literal(l)) => l,
            _ => "",
        }
    }

    /// Renders the template from each variable's value (already validated and, for an
    /// integer, given as its number). `None`: a variable has no value; an optional level
    /// with no value ends the rendering there (a `begins_with` prefix).
    pub fn render(&self, value: impl Fn(&str) -> Option<Value>) -> Result<String, Unrendered> {
        let mut out = String::new();
        let mut stopped: Option<&str> = None;
        for part in &self.parts {
            match part {
                Part::Literal(l) if stopped.is_none() => out.push_str(l),
                Part::Literal(_) => {}
                Part::Var(v) => match (value(&v.name), stopped) {
                    (Some(_), Some(level)) => {
                        return Err(Unrendered::LevelSkipped {
                            given: v.name.clone(),
                            missing: level.to_owned(),
                        })
                    }
                    (Some(Value::Text(t)), None) => out.push_str(&t),
                    (Some(Value::Int(n)), None) => match v.width {
                        Some(w) => out.push_str(&format!("{n:0w$}")),
                        None => out.push_str(&n.to_string()),
                    },
                    (None, _) if v.optional => {
                        stopped.get_or_insert(&v.name);
                    }
                    (None, _) => return Err(Unrendered::Missing(v.name.clone())),
                },
            }
        }
        Ok(out)
    }

    /// The template's segments (split at the separator), each literal text and at most one
    /// variable, which ends it.
    pub fn segments(&self) -> Vec<Segment<'_>> {
        let mut segments = vec![Segment::default()];
        for part in &self.parts {
            match part {
                Part::Literal(l) => {
                    let mut pieces = l.split(SEPARATOR);
                    if let Some(first) = pieces.next() {
                        segments
                            .last_mut()
                            .expect("one segment")
                            .literal
                            .push_str(first);
                    }
                    for piece in pieces {
                        segments.push(Segment {
                            literal: piece.to_owned(),
                            var: None,
                        });
                    }
                }
                Part::Var(v) => segments.last_mut().expect("one segment").var = Some(v),
            }
        }
        segments
    }
}

impl Template {
    /// The variables' values a rendered key was rendered from, when `key` fits this
    /// template: its literal text where the template has it, each variable's value up to
    /// the separator that follows it (no value holds one, so the reading is the only one).
    /// An integer with a width is read back as its number.
    pub fn read<'t>(&'t self, key: &str) -> Option<Vec<(&'t Var, Value)>> {
        let segments = self.segments();
        let pieces: Vec<&str> = key.split(SEPARATOR).collect();
        if segments.len() != pieces.len() {
            return None;
        }
        let mut out = Vec::new();
        for (s, piece) in segments.iter().zip(pieces) {
            match s.var {
                None if piece == s.literal => {}
                None => return None,
                Some(var) => {
                    let value = piece.strip_prefix(s.literal.as_str())?;
                    if value.is_empty() {
                        return None;
                    }
                    let v = match var.width {
                        Some(w)
                            if value.len() == w && value.bytes().all(|b| b.is_ascii_digit()) =>
                        {
                            Value::Int(value.parse().ok()?)
                        }
                        Some(_) => return None,
                        None => Value::Text(value.to_owned()),
                    };
                    out.push((var, v));
                }
            }
        }
        Some(out)
    }
}

/// One segment of a template: literal text, then perhaps a variable.
#[derive(Debug, Default, Clone)]
pub struct Segment<'a> {
    pub literal: String,
    pub var: Option<&'a Var>,
}

/// A variable's value for [`Template::render`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    Int(i64),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unrendered {
    #[error("`{0}` is needed")]
    Missing(String),
    #[error("`{given}` is given without `{missing}`, the level above it")]
    LevelSkipped { given: String, missing: String },
}

fn parse_var(source: &str, inner: &str) -> Result<Var, String> {
    let (inner, optional) = match inner.strip_suffix('?') {
        Some(i) => (i, true),
        None => (inner, false),
    };
    let (name, width) = match inner.split_once(':') {
        None => (inner, None),
        Some((name, pad)) => {
            let width = pad
                .strip_prefix('0')
                .and_then(|w| w.parse::<usize>().ok())
                .filter(|w| (1..=19).contains(w))
                .ok_or_else(|| {
                    format!("`{source}`: `{{{inner}}}`: a width is written `:0N`, N from 1 to 19 (`{{lineNo:03}}`)")
                })?;
            (name, Some(width))
        }
    };
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "`{source}`: `{{{inner}}}` must name an attribute (letters, digits, `_`)"
        ));
    }
    Ok(Var {
        name: name.to_owned(),
        width,
        optional,
    })
}

/// What is known of the values a variable can take, for comparing templates: the byte
/// range of their characters, and the validator every value passes.
#[derive(Clone)]
pub struct Domain {
    pub bytes: (u8, u8),
    pub accepts: std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain")
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Domain {
    /// Whether `text` is a value of this domain (never one holding the separator).
    pub fn admits(&self, text: &str) -> bool {
        !text.is_empty()
            && !text.contains(SEPARATOR)
            && text.bytes().all(|b| in_range(b, self.bytes))
            && (self.accepts)(text)
    }
}

/// A variable in a comparison: who it is (two occurrences with one identity hold one value)
/// and what it can be.
#[derive(Debug, Clone)]
pub struct Bound {
    pub id: String,
    pub domain: Domain,
}

/// A template whose variables are bound for a comparison.
pub struct Laid<'a> {
    pub template: &'a Template,
    pub bind: &'a dyn Fn(&Var) -> Option<Bound>,
}

/// Whether the keys two templates render can be equal: the segment counts agree and each
/// pair of segments can hold the same text. Conservative: `true` unless proven apart.
pub fn may_equal(a: &Laid<'_>, b: &Laid<'_>) -> bool {
    let (sa, sb) = (a.template.segments(), b.template.segments());
    sa.len() == sb.len()
        && sa
            .iter()
            .zip(&sb)
            .all(|(x, y)| segment_may_equal(x, a.bind, y, b.bind))
}

fn segment_may_equal(
    x: &Segment<'_>,
    bx: &dyn Fn(&Var) -> Option<Bound>,
    y: &Segment<'_>,
    by: &dyn Fn(&Var) -> Option<Bound>,
) -> bool {
    let dom = |v: Option<&Var>, b: &dyn Fn(&Var) -> Option<Bound>| v.and_then(b);
    match (x.var, y.var) {
        (None, None) => x.literal == y.literal,
        (None, Some(v)) => literal_fits(&x.literal, &y.literal, dom(Some(v), by)),
        (Some(v), None) => literal_fits(&y.literal, &x.literal, dom(Some(v), bx)),
        (Some(vx), Some(vy)) => {
            let (short, long) = if x.literal.len() <= y.literal.len() {
                (&x.literal, &y.literal)
            } else {
                (&y.literal, &x.literal)
            };
            if !long.starts_with(short.as_str()) {
                return false;
            }
            match (dom(Some(vx), bx), dom(Some(vy), by)) {
                (Some(dx), Some(dy)) if x.literal == y.literal && dx.id == dy.id => true,
                (Some(dx), Some(dy)) => {
                    let (dshort, dlong) = if x.literal.len() <= y.literal.len() {
                        (&dx.domain, &dy.domain)
                    } else {
                        (&dy.domain, &dx.domain)
                    };
                    let rest = &long[short.len()..];
                    // The shorter side's value starts with the longer side's extra literal.
                    rest.bytes().all(|b| in_range(b, dshort.bytes))
                        && byte_ranges_meet(dshort.bytes, dlong.bytes)
                }
                _ => true,
            }
        }
    }
}

/// Whether `literal` can be `prefix` followed by a value of `var`.
fn literal_fits(literal: &str, prefix: &str, var: Option<Bound>) -> bool {
    let Some(rest) = literal.strip_prefix(prefix) else {
        return false;
    };
    var.is_none_or(|b| b.domain.admits(rest))
}

fn in_range(b: u8, r: (u8, u8)) -> bool {
    (r.0..=r.1).contains(&b)
}

fn byte_ranges_meet(a: (u8, u8), b: (u8, u8)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// Where two templates' renderings first may differ, walking both from the start: bytes
/// equal on both sides and one variable met on both sides are passed.
enum Parting {
    /// Both end together.
    BothEnd,
    /// The left one ends first (it is a prefix of the right one).
    LeftEnds,
    RightEnds,
    Bytes(u8, u8),
    /// Two different variables (or one unbound).
    Vars(Option<Bound>, Option<Bound>),
    /// A variable against a byte; `true` when the variable is on the left.
    VarByte(Option<Bound>, u8, bool),
}

fn part(a: &Laid<'_>, b: &Laid<'_>) -> Parting {
    let mut x = Cursor::new(a);
    let mut y = Cursor::new(b);
    loop {
        match (x.peek(), y.peek()) {
            (Tok::End, Tok::End) => return Parting::BothEnd,
            (Tok::End, _) => return Parting::LeftEnds,
            (_, Tok::End) => return Parting::RightEnds,
            (Tok::Byte(p), Tok::Byte(q)) if p == q => {
                x.advance_byte();
                y.advance_byte();
            }
            (Tok::Byte(p), Tok::Byte(q)) => return Parting::Bytes(p, q),
            (Tok::Var(Some(v)), Tok::Var(Some(w))) if v.id == w.id => {
                x.advance_var();
                y.advance_var();
            }
            (Tok::Var(v), Tok::Var(w)) => return Parting::Vars(v, w),
            (Tok::Var(v), Tok::Byte(q)) => return Parting::VarByte(v, q, true),
            (Tok::Byte(p), Tok::Var(w)) => return Parting::VarByte(w, p, false),
        }
    }
}

/// How two rendered keys compare as UTF-8 bytes, where the templates decide it; `None`
/// where it depends on the values.
pub fn compare(a: &Laid<'_>, b: &Laid<'_>) -> Option<Ordering> {
    match part(a, b) {
        Parting::BothEnd => Some(Ordering::Equal),
        Parting::LeftEnds => Some(Ordering::Less),
        Parting::RightEnds => Some(Ordering::Greater),
        Parting::Bytes(p, q) => Some(p.cmp(&q)),
        Parting::Vars(Some(v), Some(w)) => var_order(v.domain.bytes, w.domain.bytes),
        Parting::Vars(..) => None,
        Parting::VarByte(v, q, left) => {
            let o = v.and_then(|v| var_vs_byte(v.domain.bytes, q))?;
            Some(if left { o } else { o.reverse() })
        }
    }
}

/// A variable (non-empty, its bytes in `r`) against a byte: decided where the byte lies
/// outside the range.
fn var_vs_byte(r: (u8, u8), b: u8) -> Option<Ordering> {
    if b < r.0 {
        Some(Ordering::Greater)
    } else if b > r.1 {
        Some(Ordering::Less)
    } else {
        None
    }
}

fn var_order(a: (u8, u8), b: (u8, u8)) -> Option<Ordering> {
    if a.1 < b.0 {
        Some(Ordering::Less)
    } else if b.1 < a.0 {
        Some(Ordering::Greater)
    } else {
        None
    }
}

/// Whether a key rendered from `a` can start with the text rendered from `prefix`.
pub fn may_begin_with(a: &Laid<'_>, prefix: &Laid<'_>) -> bool {
    match part(a, prefix) {
        Parting::BothEnd | Parting::RightEnds => true,
        Parting::LeftEnds | Parting::Bytes(..) => false,
        Parting::Vars(Some(v), Some(w)) => byte_ranges_meet(v.domain.bytes, w.domain.bytes),
        Parting::Vars(..) => true,
        Parting::VarByte(v, q, _) => v.is_none_or(|v| in_range(q, v.domain.bytes)),
    }
}

enum Tok {
    Byte(u8),
    Var(Option<Bound>),
    End,
}

struct Cursor<'l, 'a> {
    laid: &'l Laid<'a>,
    part: usize,
    byte: usize,
}

impl<'l, 'a> Cursor<'l, 'a> {
    fn new(laid: &'l Laid<'a>) -> Self {
        Cursor {
            laid,
            part: 0,
            byte: 0,
        }
    }
    fn peek(&self) -> Tok {
        match self.laid.template.parts.get(self.part) {
            None => Tok::End,
            Some(Part::Literal(l)) => Tok::Byte(l.as_bytes()[self.byte]),
            Some(Part::Var(v)) => Tok::Var((self.laid.bind)(v)),
        }
    }
    fn advance_byte(&mut self) {
        if let Some(Part::Literal(l)) = self.laid.template.parts.get(self.part) {
            self.byte += 1;
            if self.byte == l.len() {
                self.part += 1;
                self.byte = 0;
            }
        }
    }
    fn advance_var(&mut self) {
        self.part += 1;
        self.byte = 0;
    }
}
