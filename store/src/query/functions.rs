//! Functions over instant vectors and scalars (`abs`, `clamp`, `label_replace`,
//! `histogram_quantile`, `absent`, date functions, …) and the dispatch of every call.

use super::QueryError;
use super::eval::{Ev, Out, Row, Val, drop_name, unparen};
use argus_model::valid_label_name;
use argus_model::{Labels, METRIC_NAME, MatchOp};
use promql_parser::parser::{Call, Expr};
use std::collections::HashMap;
use std::sync::Arc;

// === impl Ev ===

impl Ev<'_> {
    pub fn call(&self, c: &Call) -> Result<Val, QueryError> {
        if let Some(rows) = self.range_function(c)? {
            return Ok(Val::Vector(rows));
        }
        let name = c.func.name;
        let args = &c.args.args;
        if let Some(f) = math(name) {
            let rows = self.eval_vector(&args[0])?;
            return self.map(rows, true, |_, v| Some(f(v))).map(Val::Vector);
        }
        Ok(match name {
            "time" => Val::Scalar((0..self.n).map(|i| self.t(i) as f64 / 1000.0).collect()),
            "pi" => Val::Scalar(vec![std::f64::consts::PI; self.n]),
            "vector" => {
                let s = self.eval_scalar(&args[0])?;
                Val::Vector(vec![Row { labels: Arc::new(Labels::default()), vals: s.into_iter().map(Some).collect() }])
            }
            "scalar" => {
                let rows = self.eval_vector(&args[0])?;
                Val::Scalar(
                    (0..self.n)
                        .map(|i| {
                            let mut present = rows.iter().filter_map(|r| r.vals[i]);
                            match (present.next(), present.next()) {
                                (Some(v), None) => v,
                                _ => f64::NAN,
                            }
                        })
                        .collect(),
                )
            }
            "timestamp" => {
                let rows = match unparen(&args[0]) {
                    Expr::VectorSelector(vs) => self.selector(vs, true)?,
                    e => {
                        let rows = self.eval_vector(e)?;
                        rows.into_iter()
                            .map(|r| Row {
                                vals: r
                                    .vals
                                    .iter()
                                    .enumerate()
                                    .map(|(i, v)| v.map(|_| self.t(i) as f64 / 1000.0))
                                    .collect(),
                                labels: r.labels,
                            })
                            .collect()
                    }
                };
                Val::Vector(self.map(rows, true, |_, v| Some(v))?)
            }
            "clamp" | "clamp_min" | "clamp_max" => {
                let rows = self.eval_vector(&args[0])?;
                let a = self.eval_scalar(&args[1])?;
                let b = if name == "clamp" { self.eval_scalar(&args[2])? } else { Vec::new() };
                Val::Vector(self.map(rows, true, |i, v| {
                    match name {
                        "clamp" => (b[i].partial_cmp(&a[i]) != Some(std::cmp::Ordering::Less))
                            .then(|| go_max(a[i], go_min(b[i], v))),
                        "clamp_min" => Some(go_max(a[i], v)),
                        _ => Some(go_min(a[i], v)),
                    }
                })?)
            }
            "round" => {
                let rows = self.eval_vector(&args[0])?;
                let to = if args.len() > 1 { self.eval_scalar(&args[1])? } else { vec![1.0; self.n] };
                Val::Vector(self.map(rows, true, |i, v| {
                    let inv = 1.0 / to[i];
                    Some((v * inv + 0.5).floor() / inv)
                })?)
            }
            "sort" | "sort_desc" => {
                let mut rows = self.eval_vector(&args[0])?;
                if self.n == 1 {
                    // NaNs last, as Prometheus' sort puts them.
                    let desc = name == "sort_desc";
                    rows.sort_by(|a, b| {
                        let (x, y) = (a.vals[0].unwrap_or(f64::NAN), b.vals[0].unwrap_or(f64::NAN));
                        match (x.is_nan(), y.is_nan()) {
                            (true, true) => std::cmp::Ordering::Equal,
                            (true, false) => std::cmp::Ordering::Greater,
                            (false, true) => std::cmp::Ordering::Less,
                            _ if desc => y.total_cmp(&x),
                            _ => x.total_cmp(&y),
                        }
                    });
                }
                Val::Vector(rows)
            }
            "absent" => {
                let rows = self.eval_vector(&args[0])?;
                let vals: Vec<Option<f64>> =
                    (0..self.n).map(|i| (!rows.iter().any(|r| r.vals[i].is_some())).then_some(1.0)).collect();
                if vals.iter().all(Option::is_none) {
                    Val::Vector(Vec::new())
                } else {
                    Val::Vector(vec![Row { labels: Arc::new(absent_labels(&args[0])), vals }])
                }
            }
            "label_replace" => {
                let rows = self.eval_vector(&args[0])?;
                let (dst, repl, src, re) = (
                    self.eval_string(&args[1])?,
                    self.eval_string(&args[2])?,
                    self.eval_string(&args[3])?,
                    self.eval_string(&args[4])?,
                );
                let regex = regex::Regex::new(&format!("^(?:{re})$")).map_err(|_| {
                    QueryError::Execution(format!("invalid regular expression in label_replace(): {re}"))
                })?;
                if !valid_label_name(&dst) {
                    return Err(QueryError::Execution(format!(
                        "invalid destination label name in label_replace(): {dst}"
                    )));
                }
                self.relabel(rows, |l| {
                    let v = l.get(&src).unwrap_or("");
                    let caps = regex.captures(v)?;
                    let mut res = String::new();
                    caps.expand(&repl, &mut res);
                    let mut out = l.clone();
                    out.set(&dst, &res);
                    Some(out)
                })?
            }
            "label_join" => {
                let rows = self.eval_vector(&args[0])?;
                let dst = self.eval_string(&args[1])?;
                let sep = self.eval_string(&args[2])?;
                let srcs = args[3..].iter().map(|a| self.eval_string(a)).collect::<Result<Vec<_>, _>>()?;
                if let Some(bad) = srcs.iter().find(|s| !valid_label_name(s)) {
                    return Err(QueryError::Execution(format!("invalid source label name in label_join(): {bad}")));
                }
                if !valid_label_name(&dst) {
                    return Err(QueryError::Execution(format!(
                        "invalid destination label name in label_join(): {dst}"
                    )));
                }
                self.relabel(rows, |l| {
                    let joined = srcs.iter().map(|s| l.get(s).unwrap_or("")).collect::<Vec<_>>().join(&sep);
                    let mut out = l.clone();
                    out.set(&dst, &joined);
                    Some(out)
                })?
            }
            "histogram_quantile" => {
                let q = self.eval_scalar(&args[0])?;
                let rows = self.eval_vector(&args[1])?;
                Val::Vector(self.histogram_quantile(&q, rows)?)
            }
            "days_in_month" | "day_of_month" | "day_of_week" | "day_of_year" | "hour" | "minute" | "month" | "year" => {
                let f = date_part(name);
                if args.is_empty() {
                    let vals = (0..self.n).map(|i| Some(f(self.t(i).div_euclid(1000)))).collect();
                    Val::Vector(vec![Row { labels: Arc::new(Labels::default()), vals }])
                } else {
                    let rows = self.eval_vector(&args[0])?;
                    Val::Vector(self.map(rows, true, |_, v| Some(f(v as i64)))?)
                }
            }
            other => return Err(QueryError::BadData(format!("function {other}() is not supported"))),
        })
    }

    /// Applies `f(step, value)` to every value; with `drop`, the metric name goes.
    fn map(&self, rows: Vec<Row>, drop: bool, f: impl Fn(usize, f64) -> Option<f64>) -> Result<Vec<Row>, QueryError> {
        let mut out = Out::new(self.n);
        for r in rows {
            self.check_time()?;
            let slot = out.slot(if drop { drop_name(&r.labels) } else { r.labels.clone() });
            for (i, v) in r.vals.iter().enumerate() {
                if let Some(v) = v.and_then(|v| f(i, v)) {
                    out.set(slot, i, v)?;
                }
            }
        }
        Ok(out.finish())
    }

    /// New labels for each row (`None`: unchanged); rows that end up alike are merged.
    fn relabel(&self, rows: Vec<Row>, f: impl Fn(&Labels) -> Option<Labels>) -> Result<Val, QueryError> {
        let mut out = Out::new(self.n);
        for r in rows {
            let labels = f(&r.labels).map_or(r.labels.clone(), Arc::new);
            let slot = out.slot(labels);
            for (i, v) in r.vals.iter().enumerate() {
                if let Some(v) = v {
                    out.set(slot, i, *v)?;
                }
            }
        }
        Ok(Val::Vector(out.finish()))
    }

    fn histogram_quantile(&self, q: &[f64], rows: Vec<Row>) -> Result<Vec<Row>, QueryError> {
        // Buckets group by all labels but `le`; the answer drops the name too.
        let mut groups: HashMap<Labels, (usize, Vec<(f64, usize)>)> = HashMap::new();
        let mut out = Out::new(self.n);
        for (j, r) in rows.iter().enumerate() {
            let Some(le) = r.labels.get("le").and_then(parse_go_float) else { continue };
            let key = Labels::from_pairs(
                r.labels.iter().filter(|l| l.name != "le").map(|l| (l.name.clone(), l.value.clone())),
            );
            let slot = out.slot(Arc::new(Labels::from_pairs(
                r.labels
                    .iter()
                    .filter(|l| l.name != "le" && l.name != METRIC_NAME)
                    .map(|l| (l.name.clone(), l.value.clone())),
            )));
            groups.entry(key).or_insert_with(|| (slot, Vec::new())).1.push((le, j));
        }
        let mut buckets: Vec<(f64, f64)> = Vec::new();
        for (i, &q) in q.iter().enumerate() {
            self.check_time()?;
            for (slot, members) in groups.values() {
                buckets.clear();
                buckets.extend(members.iter().filter_map(|&(le, j)| rows[j].vals[i].map(|v| (le, v))));
                if buckets.is_empty() {
                    continue;
                }
                out.set(*slot, i, bucket_quantile(q, &mut buckets))?;
            }
        }
        Ok(out.finish())
    }
}

fn math(name: &str) -> Option<fn(f64) -> f64> {
    Some(match name {
        "abs" => f64::abs,
        "ceil" => f64::ceil,
        "floor" => f64::floor,
        "exp" => f64::exp,
        "sqrt" => f64::sqrt,
        "ln" => f64::ln,
        "log2" => f64::log2,
        "log10" => f64::log10,
        "sin" => f64::sin,
        "cos" => f64::cos,
        "tan" => f64::tan,
        "asin" => f64::asin,
        "acos" => f64::acos,
        "atan" => f64::atan,
        "sinh" => f64::sinh,
        "cosh" => f64::cosh,
        "tanh" => f64::tanh,
        "asinh" => f64::asinh,
        "acosh" => f64::acosh,
        "atanh" => f64::atanh,
        "rad" => |v| v * std::f64::consts::PI / 180.0,
        "deg" => |v| v * 180.0 / std::f64::consts::PI,
        "sgn" => |v: f64| {
            if v < 0.0 {
                -1.0
            } else if v > 0.0 {
                1.0
            } else {
                v
            }
        },
        _ => return None,
    })
}

/// The labels `absent(sel)` answers with: those the selector fixes with `=` (a label named twice
/// is left out, as in Prometheus).
pub fn absent_labels(e: &Expr) -> Labels {
    let vs = match unparen(e) {
        Expr::VectorSelector(vs) => vs,
        Expr::MatrixSelector(m) => &m.vs,
        _ => return Labels::default(),
    };
    let Ok(ms) = super::matchers_of(vs) else { return Labels::default() };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for m in ms.iter().filter(|m| m.name != METRIC_NAME) {
        if m.op == MatchOp::Equal && !seen.contains(&m.name.as_str()) {
            out.push((m.name.clone(), m.value.clone()));
            seen.push(&m.name);
        } else {
            out.retain(|(n, _)| *n != m.name);
        }
    }
    Labels::from_pairs(out)
}

/// The φ-quantile of values, interpolating between neighbours (NaNs sort first, as in Prometheus).
pub fn quantile(q: f64, vals: &mut [f64]) -> f64 {
    if vals.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    vals.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.total_cmp(b),
    });
    let n = vals.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    vals[lower as usize] * (1.0 - weight) + vals[upper as usize] * weight
}

/// The quantile of classic histogram buckets `(le, cumulative count)`.
fn bucket_quantile(q: f64, b: &mut Vec<(f64, f64)>) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    if b[b.len() - 1].0 != f64::INFINITY {
        return f64::NAN;
    }
    // Coalesce equal bounds, then make counts monotonic.
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for &(le, c) in b.iter() {
        match merged.last_mut() {
            Some(last) if last.0 == le => last.1 += c,
            _ => merged.push((le, c)),
        }
    }
    let mut max = merged[0].1;
    for x in merged.iter_mut().skip(1) {
        if x.1 > max {
            max = x.1;
        } else if x.1 < max {
            x.1 = max;
        }
    }
    *b = merged;
    if b.len() < 2 {
        return f64::NAN;
    }
    let observations = b[b.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let idx = b[..b.len() - 1].partition_point(|x| x.1 < rank);
    if idx == b.len() - 1 {
        return b[b.len() - 2].0;
    }
    if idx == 0 && b[0].0 <= 0.0 {
        return b[0].0;
    }
    let (mut start, end, mut count) = (0.0, b[idx].0, b[idx].1);
    if idx > 0 {
        start = b[idx - 1].0;
        count -= b[idx - 1].1;
        rank -= b[idx - 1].1;
    }
    start + (end - start) * (rank / count)
}

/// Go's `strconv.ParseFloat`, as Prometheus reads `le`: decimal, `Inf`/`+Inf`/`-Inf`, `NaN`.
fn parse_go_float(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// A value as Prometheus writes it (Go's `strconv.FormatFloat(v, 'f', -1, 64)`): the label
/// `count_values` sets, spelled as the value appears in query answers.
pub fn format_value(v: f64) -> String {
    let mut out = String::new();
    crate::float_text::format_value(v, &mut out);
    out
}

/// A calendar part of a Unix time in seconds (UTC).
fn date_part(name: &str) -> fn(i64) -> f64 {
    match name {
        "days_in_month" => |s| {
            let (y, m, _) = civil(s);
            days_in_month(y, m) as f64
        },
        "day_of_month" => |s| civil(s).2 as f64,
        "day_of_week" => |s| (s.div_euclid(86_400) + 4).rem_euclid(7) as f64,
        "day_of_year" => |s| {
            let (y, m, d) = civil(s);
            ((1..m).map(|mm| days_in_month(y, mm)).sum::<i64>() + d) as f64
        },
        "hour" => |s| s.rem_euclid(86_400).div_euclid(3600) as f64,
        "minute" => |s| s.rem_euclid(3600).div_euclid(60) as f64,
        "month" => |s| civil(s).1 as f64,
        _ => |s| civil(s).0 as f64,
    }
}

/// Year, month, day of a Unix time (Howard Hinnant's days-from-civil inverse).
fn civil(secs: i64) -> (i64, i64, i64) {
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's `math.Max`: +Inf wins over NaN, NaN over everything else, +0 over -0 (Rust's `max` skips NaN).
fn go_max(a: f64, b: f64) -> f64 {
    if a == f64::INFINITY || b == f64::INFINITY {
        f64::INFINITY
    } else if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() { b } else { a }
    } else if a > b {
        a
    } else {
        b
    }
}

/// Go's `math.Min`: -Inf wins over NaN, NaN over everything else, -0 over +0.
fn go_min(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY || b == f64::NEG_INFINITY {
        f64::NEG_INFINITY
    } else if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() { a } else { b }
    } else if a < b {
        a
    } else {
        b
    }
}
