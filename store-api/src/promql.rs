//! PromQL as every part of Argus parses it: the store's query endpoints, rule files, the analyzer's
//! configuration. One parser, one set of extra functions, one way to word an error.

mod syntax;

use promql_parser::parser::Expr;

/// Prometheus' stale marker: a NaN with this exact bit pattern ends a series.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Whether `v` is Prometheus' stale marker (not any NaN: the bit pattern).
pub fn is_stale(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

/// A query that does not parse, worded as Prometheus words it: `1:23: parse error: unclosed left
/// parenthesis` (1-based line and byte column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(String);

impl ParseError {
    pub(crate) fn new(message: String) -> ParseError {
        ParseError(message)
    }
}

/// Parses `query`, with the error placed as Prometheus places it.
pub fn parse(query: &str) -> Result<Expr, ParseError> {
    parse_expr(query).map_err(|e| ParseError(syntax::with_position(query, &e)))
}

/// Checks that `query` parses, as the query endpoints would (rule files are validated with it).
pub fn check(query: &str) -> Result<(), ParseError> {
    parse(query).map(|_| ())
}

/// `promql_parser::parser::parse`, refusing first the durations the parser would panic on (an `offset`
/// of 10^60 seconds, `[Inf]`: it converts them with `Duration::from_secs_f64`; found by fuzzing), and
/// turning any other panic inside the parser into an error. Every PromQL string Argus parses goes
/// through here. The error is the parser's message without a position (see [`parse`]).
pub fn parse_expr(query: &str) -> Result<Expr, String> {
    register_extra_functions();
    syntax::check_durations(query)?;
    std::panic::catch_unwind(|| promql_parser::parser::parse(query))
        .unwrap_or_else(|_| Err("a number or duration in the query is out of range".to_string()))
}

/// `promql-parser`'s message for `query` with Prometheus' `line:col: parse error:` prefix.
pub fn parse_error(query: &str, message: &str) -> String {
    syntax::with_position(query, message)
}

/// The longest stretch of the past one evaluation of `expr` reads: the largest range of its range
/// selectors, a subquery's range added to the ranges inside it. Zero for a query of instant
/// selectors only. A series younger than this has its first values computed over a partial window,
/// where engines extrapolate differently (`rate` over the first 40 s of a counter is not the same on
/// Argus' store and on VictoriaMetrics), so the analyzer leaves those values out of its models.
pub fn longest_range(expr: &Expr) -> std::time::Duration {
    let inner = |e: &Expr| longest_range(e);
    match expr {
        Expr::MatrixSelector(m) => m.range,
        Expr::Subquery(s) => s.range + inner(&s.expr),
        Expr::Aggregate(a) => inner(&a.expr).max(a.param.as_deref().map_or(Default::default(), inner)),
        Expr::Unary(u) => inner(&u.expr),
        Expr::Paren(p) => inner(&p.expr),
        Expr::Binary(b) => inner(&b.lhs).max(inner(&b.rhs)),
        Expr::Call(c) => c.args.args.iter().map(|a| inner(a)).max().unwrap_or_default(),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::VectorSelector(_) | Expr::Extension(_) => {
            Default::default()
        }
    }
}

/// Functions Prometheus 2 knows that the parser does not, registered once per process.
fn register_extra_functions() {
    static EXTRA: std::sync::Once = std::sync::Once::new();
    EXTRA.call_once(|| {
        use promql_parser::parser::{Function, value::ValueType};
        // Prometheus 2's name for double_exponential_smoothing, which 2.x dashboards still use; the
        // parser only knows the new name. Registering fails only on a clash with a built-in name.
        let hw = Function::new(
            "holt_winters",
            vec![ValueType::Matrix, ValueType::Scalar, ValueType::Scalar],
            0,
            ValueType::Vector,
            false,
        );
        if let Err(e) = promql_parser::parser::register_extra_functions(vec![hw]) {
            tracing::warn!(error = %e, "holt_winters stays unavailable");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_prometheus_positions() {
        assert_eq!(check("sum(rate(x[5m])").unwrap_err().to_string(), "1:16: parse error: unclosed left parenthesis");
        assert!(check("holt_winters(x[5m], 0.5, 0.5)").is_ok(), "Prometheus 2's name is known");
        assert!(parse_expr("x offset 1e60s").is_err(), "an out-of-range duration is refused, not a panic");
        assert!(is_stale(f64::from_bits(STALE_NAN_BITS)) && !is_stale(f64::NAN));
    }

    #[test]
    fn longest_range_reads_through_every_node() {
        let range = |q: &str| longest_range(&parse(q).unwrap()).as_secs();
        assert_eq!(range("up"), 0);
        assert_eq!(range("rate(x[1m])"), 60);
        assert_eq!(range("sum by (h) (rate(x[1m])) / -(increase(y[5m]) + 1)"), 300);
        assert_eq!(range("max_over_time(rate(x[2m])[10m:1m])"), 720);
        assert_eq!(range("quantile(0.9, avg_over_time(x[3m]))"), 180);
    }
}
