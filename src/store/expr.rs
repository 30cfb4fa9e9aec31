//! Condition and update expressions, as the port takes them: what a write is conditioned
//! on, what an update changes (attributes, and single entries of a map attribute).

use super::AttributeValue;

/// Comparison operators of a condition expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The operator as DynamoDB's expressions write it.
    /// Whether `a <op> b` holds where `a` compares to `b` as `o`.
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        match self {
            CmpOp::Eq => o.is_eq(),
            CmpOp::Ne => o.is_ne(),
            CmpOp::Lt => o.is_lt(),
            CmpOp::Le => o.is_le(),
            CmpOp::Gt => o.is_gt(),
            CmpOp::Ge => o.is_ge(),
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A condition expression over top-level attributes of the item being written.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `attribute_exists(a)`
    Exists(String),
    /// `attribute_not_exists(a)`
    NotExists(String),
    /// `a <op> :v`
    Cmp(String, CmpOp, AttributeValue),
    /// `a BETWEEN :lo AND :hi`
    Between(String, AttributeValue, AttributeValue),
    /// `attribute_exists(map.key)`: the map attribute holds an entry of this key.
    EntryExists(String, String),
    /// `size(a) <op> :n`: the entries of a map or list, the members of a set, the bytes of
    /// a string or binary.
    Size(String, CmpOp, i64),
    /// `begins_with(a, :prefix)` on strings
    BeginsWith(String, String),
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
}

impl Condition {
    /// The attribute a condition that compares one compares.
    pub fn attribute(&self) -> Option<&str> {
        match self {
            Condition::Exists(a)
            | Condition::NotExists(a)
            | Condition::Cmp(a, _, _)
            | Condition::Between(a, _, _)
            | Condition::EntryExists(a, _)
            | Condition::Size(a, _, _)
            | Condition::BeginsWith(a, _) => Some(a),
            Condition::And(_) | Condition::Or(_) | Condition::Not(_) => None,
        }
    }

    pub fn eq(attr: impl Into<String>, v: AttributeValue) -> Self {
        Condition::Cmp(attr.into(), CmpOp::Eq, v)
    }
    pub fn exists(attr: impl Into<String>) -> Self {
        Condition::Exists(attr.into())
    }
    pub fn not_exists(attr: impl Into<String>) -> Self {
        Condition::NotExists(attr.into())
    }
}

/// A condition as DynamoDB's expression reads, with its values in place (the trace's
/// `filter`): `app = "harbor"`.
impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn value(v: &AttributeValue) -> String {
            match v {
                AttributeValue::S(s) => format!("{s:?}"),
                AttributeValue::N(n) => n.clone(),
                other => format!("{other:?}"),
            }
        }
        let all = |f: &mut std::fmt::Formatter<'_>, cs: &[Condition], join: &str| {
            let parts: Vec<String> = cs.iter().map(|c| format!("({c})")).collect();
            f.write_str(&parts.join(join))
        };
        match self {
            Condition::Exists(a) => write!(f, "attribute_exists({a})"),
            Condition::NotExists(a) => write!(f, "attribute_not_exists({a})"),
            Condition::Cmp(a, op, v) => write!(f, "{a} {} {}", op.symbol(), value(v)),
            Condition::Between(a, lo, hi) => {
                write!(f, "{a} BETWEEN {} AND {}", value(lo), value(hi))
            }
            Condition::BeginsWith(a, p) => write!(f, "begins_with({a}, {p:?})"),
            Condition::EntryExists(m, k) => write!(f, "attribute_exists({m}.{k:?})"),
            Condition::Size(a, op, n) => write!(f, "size({a}) {} {n}", op.symbol()),
            Condition::And(cs) => all(f, cs, " AND "),
            Condition::Or(cs) => all(f, cs, " OR "),
            Condition::Not(c) => write!(f, "NOT ({c})"),
        }
    }
}

/// How a SET action computes the new value.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// `SET a = :v`
    Value(AttributeValue),
    /// `SET a = if_not_exists(a, :v)`: keeps the current value when there is one.
    IfNotExists(AttributeValue),
}

/// An update expression over top-level attributes. Key attributes of the table cannot be
/// updated; index key attributes can (that moves the item between index partitions).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UpdateExpr {
    pub set: Vec<(String, SetValue)>,
    pub remove: Vec<String>,
    /// `ADD a :n`: numbers only; a missing attribute counts as 0. Used for counters.
    pub add: Vec<(String, AttributeValue)>,
    /// `SET m.k = :v`: one entry of a map attribute, which must be there.
    pub set_entry: Vec<(String, String, AttributeValue)>,
    /// `REMOVE m.k`: one entry of a map attribute (none there: nothing to remove).
    pub remove_entry: Vec<(String, String)>,
}

impl UpdateExpr {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
            && self.remove.is_empty()
            && self.add.is_empty()
            && self.set_entry.is_empty()
            && self.remove_entry.is_empty()
    }
    pub fn set(mut self, attr: impl Into<String>, v: AttributeValue) -> Self {
        self.set.push((attr.into(), SetValue::Value(v)));
        self
    }
    pub fn add(mut self, attr: impl Into<String>, n: i64) -> Self {
        self.add
            .push((attr.into(), AttributeValue::N(n.to_string())));
        self
    }
    /// `SET map.key = :v`.
    pub fn set_entry(
        mut self,
        map: impl Into<String>,
        key: impl Into<String>,
        v: AttributeValue,
    ) -> Self {
        self.set_entry.push((map.into(), key.into(), v));
        self
    }

    /// `REMOVE map.key`.
    pub fn remove_entry(mut self, map: impl Into<String>, key: impl Into<String>) -> Self {
        self.remove_entry.push((map.into(), key.into()));
        self
    }

    pub fn remove(mut self, attr: impl Into<String>) -> Self {
        self.remove.push(attr.into());
        self
    }
}
