//! Label scopes: the share of the series a token may read and write, as label matchers
//! (`cluster="a"`, `tenant=~"x|y"`). A scoped read is restricted the way prom-label-proxy restricts
//! it: the scope's matchers are added to every selector of the query (every vector and range
//! selector, inside subqueries and function arguments), so a query can only narrow what the scope
//! allows and no PromQL function can reach a series outside it. A scoped write is accepted only when
//! every series it carries is inside the scope.
//!
//! The same restriction serves the embedded store and a remote one: it is applied to the query text
//! before the store, whichever it is, sees it.

use crate::promql::{self, ParseError};
use argus_model::{Labels, MatchOp, Matcher};
use promql_parser::label::{MatchOp as PMatchOp, Matcher as PMatcher, Matchers};
use promql_parser::parser::Expr;
use std::fmt;

/// Why a scope could not be built from its matchers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScopeError {
    /// A matcher that is not one PromQL label matcher (`name="value"`, `!=`, `=~`, `!~`).
    #[error("matcher {index} ({text:?}) is not a label matcher such as cluster=\"a\": {reason}")]
    Syntax { index: usize, text: String, reason: String },
    /// No matcher that excludes series lacking the label: the scope would select everything unlabelled.
    #[error(
        "the matchers {0} also select series without those labels; give at least one that needs a value, \
         such as cluster=\"a\""
    )]
    Unbounded(String),
    /// No matchers at all.
    #[error("no matchers: a scope needs at least one, such as cluster=\"a\"")]
    Empty,
}

/// A set of label matchers a series must satisfy, all of them.
#[derive(Debug, Clone)]
pub struct LabelScope {
    matchers: Vec<Matcher>,
    /// The same matchers as the parser builds them, for adding to queries.
    parsed: Vec<PMatcher>,
}

impl LabelScope {
    /// The scope of `items`, each one PromQL label matcher (`cluster="a"`, `tenant=~"x|y"`).
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<LabelScope, ScopeError> {
        if items.is_empty() {
            return Err(ScopeError::Empty);
        }
        let mut matchers = Vec::new();
        let mut parsed = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let text = item.as_ref();
            let syntax = |reason: String| ScopeError::Syntax { index: i + 1, text: text.to_string(), reason };
            let one = match promql::parse_expr(&format!("x{{{text}}}")) {
                Ok(Expr::VectorSelector(vs)) if vs.matchers.or_matchers.is_empty() => {
                    vs.matchers.matchers.into_iter().filter(|m| m.name != "__name__").collect::<Vec<_>>()
                }
                Ok(_) => return Err(syntax("not a single matcher".into())),
                Err(e) => return Err(syntax(e)),
            };
            let [m] = <[PMatcher; 1]>::try_from(one).map_err(|_| syntax("not a single matcher".into()))?;
            let op = match &m.op {
                PMatchOp::Equal => MatchOp::Equal,
                PMatchOp::NotEqual => MatchOp::NotEqual,
                PMatchOp::Re(_) => MatchOp::RegexMatch,
                PMatchOp::NotRe(_) => MatchOp::RegexNoMatch,
            };
            matchers.push(Matcher::new(m.name.clone(), op, m.value.clone()).map_err(|e| syntax(e.to_string()))?);
            parsed.push(m);
        }
        let scope = LabelScope { matchers, parsed };
        if scope.matchers.iter().all(Matcher::matches_empty) {
            return Err(ScopeError::Unbounded(scope.to_string()));
        }
        Ok(scope)
    }

    pub fn matchers(&self) -> &[Matcher] {
        &self.matchers
    }

    /// Whether a series with `labels` is inside the scope.
    pub fn contains(&self, labels: &Labels) -> bool {
        self.first_outside(|name| labels.get(name)).is_none()
    }

    /// The first matcher a series fails, its labels read through `get` (`None` for an absent label);
    /// `None` when the series is inside the scope.
    pub fn first_outside<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> Option<&Matcher> {
        self.matchers.iter().find(|m| !m.matches(get(&m.name).unwrap_or("")))
    }

    /// The scope as one selector, `{cluster="a"}`: what a scoped series or label lookup without
    /// `match[]` is answered for.
    pub fn selector(&self) -> String {
        format!("{{{}}}", self.matchers.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
    }

    /// `query` with the scope's matchers added to every selector, as PromQL text. Errors are the
    /// query's own parse errors, placed as Prometheus places them.
    pub fn restrict_query(&self, query: &str) -> Result<String, ParseError> {
        let mut expr = promql::parse(query)?;
        let refused = || {
            ParseError::new(format!(
                "the query cannot be restricted to this token's scope {self}; write it another way"
            ))
        };
        each_selector(&mut expr, &mut |m| self.add_to(m)).map_err(|()| refused())?;
        let text = expr.to_string();
        // The printed form must read back as the restricted query (the printer sorts matchers, so
        // both sides are compared sorted); were it ever not to, the query is refused rather than run
        // unrestricted or changed.
        let mut back = promql::parse(&text).map_err(|_| refused())?;
        each_selector(&mut back, &mut sort)
            .and_then(|()| each_selector(&mut expr, &mut sort))
            .map_err(|()| refused())?;
        if back == expr { Ok(text) } else { Err(refused()) }
    }

    /// A `match[]` series selector restricted to the scope; an error when it is not a selector.
    pub fn restrict_selector(&self, selector: &str) -> Result<String, ParseError> {
        match promql::parse(selector)? {
            Expr::VectorSelector(_) => self.restrict_query(selector),
            _ => Err(ParseError::new(format!("{selector:?} is not a series selector"))),
        }
    }

    fn add_to(&self, m: &mut Matchers) {
        // `{a="1" or b="2"}`: every alternative is narrowed, each on its own.
        for alt in &mut m.or_matchers {
            alt.extend(self.parsed.iter().cloned());
        }
        if m.or_matchers.is_empty() {
            m.matchers.extend(self.parsed.iter().cloned());
        }
    }
}

/// Calls `f` on the matchers of every selector in `expr`, inside subqueries, aggregations, calls and
/// binary operations; `Err` for a node it cannot look into (an extension node), so that a query
/// holding one is refused rather than run unrestricted.
fn each_selector(expr: &mut Expr, f: &mut impl FnMut(&mut Matchers)) -> Result<(), ()> {
    match expr {
        Expr::VectorSelector(vs) => f(&mut vs.matchers),
        Expr::MatrixSelector(ms) => f(&mut ms.vs.matchers),
        Expr::Subquery(s) => return each_selector(&mut s.expr, f),
        Expr::Aggregate(a) => {
            each_selector(&mut a.expr, f)?;
            if let Some(p) = a.param.as_deref_mut() {
                each_selector(p, f)?;
            }
        }
        Expr::Unary(u) => return each_selector(&mut u.expr, f),
        Expr::Paren(p) => return each_selector(&mut p.expr, f),
        Expr::Binary(b) => {
            each_selector(&mut b.lhs, f)?;
            each_selector(&mut b.rhs, f)?;
        }
        Expr::Call(c) => return c.args.args.iter_mut().try_for_each(|a| each_selector(a, f)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) => {}
        Expr::Extension(_) => return Err(()),
    }
    Ok(())
}

fn sort(m: &mut Matchers) {
    let key = |m: &PMatcher| (m.name.clone(), m.op.to_string(), m.value.clone());
    m.matchers.sort_by_key(key);
    m.or_matchers.iter_mut().for_each(|alt| alt.sort_by_key(key));
}

impl fmt::Display for LabelScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.selector())
    }
}

#[cfg(test)]
mod tests;
