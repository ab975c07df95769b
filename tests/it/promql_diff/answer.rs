//! Answers of `/api/v1/query` and `/api/v1/query_range`, normalised for comparison, and the comparison
//! itself: status, `resultType`, the set of series, timestamps exactly, values within [`REL_TOLERANCE`]
//! (NaN equals NaN, ±Inf equals itself).

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Values are equal when `|a − b| ≤ REL_TOLERANCE × max(|a|, |b|)`. No absolute floor: an engine that
/// computes what Prometheus computes gets the same bits, and 1e-17 against 0 is worth a look.
pub const REL_TOLERANCE: f64 = 1e-9;

pub type Metric = BTreeMap<String, String>;

/// A normalised answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Error {
        status: u16,
        error_type: String,
        message: String,
    },
    /// `vector` and `matrix`: the series in the server's order, points as `(ms, value)`.
    Series {
        result_type: String,
        series: Vec<(Metric, Vec<(i64, f64)>)>,
    },
    Scalar {
        t: i64,
        v: f64,
    },
    String {
        t: i64,
        s: String,
    },
    /// Not a Prometheus envelope at all.
    Malformed {
        status: u16,
        why: String,
    },
}

impl Answer {
    /// Reads an HTTP status and body.
    pub fn parse(status: u16, body: &str) -> Answer {
        match parse_envelope(status, body) {
            Ok(a) => a,
            Err(why) => Answer::Malformed { status, why: format!("{why}; body: {}", clip(body, 200)) },
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Answer::Error { .. } | Answer::Malformed { .. })
    }

    /// True for a vector or matrix without series.
    pub fn is_empty(&self) -> bool {
        matches!(self, Answer::Series { series, .. } if series.is_empty())
    }

    /// One line: `success vector, 16 series` or `error 422 execution: …`.
    pub fn summary(&self, base: i64) -> String {
        match self {
            Answer::Error { status, error_type, message } => {
                format!("error {status} {error_type}: {}", clip(message, 160))
            }
            Answer::Series { result_type, series } => {
                let points: usize = series.iter().map(|s| s.1.len()).sum();
                format!("success {result_type}, {} series, {points} points", series.len())
            }
            Answer::Scalar { t, v } => format!("success scalar {} at {}", fmt_v(*v), fmt_t(base, *t)),
            Answer::String { t, s } => format!("success string {s:?} at {}", fmt_t(base, *t)),
            Answer::Malformed { status, why } => format!("malformed answer ({status}): {why}"),
        }
    }

    fn result_type(&self) -> &str {
        match self {
            Answer::Series { result_type, .. } => result_type,
            Answer::Scalar { .. } => "scalar",
            Answer::String { .. } => "string",
            Answer::Error { .. } | Answer::Malformed { .. } => "",
        }
    }
}

fn parse_envelope(status: u16, body: &str) -> Result<Answer, String> {
    let j: Value = serde_json::from_str(body).map_err(|e| format!("not JSON: {e}"))?;
    match j["status"].as_str() {
        Some("error") => Ok(Answer::Error {
            status,
            error_type: j["errorType"].as_str().ok_or("error without errorType")?.to_string(),
            message: j["error"].as_str().unwrap_or_default().to_string(),
        }),
        Some("success") => {
            let data = &j["data"];
            let result_type = data["resultType"].as_str().ok_or("no resultType")?;
            let result = &data["result"];
            match result_type {
                "vector" | "matrix" => {
                    let series = result
                        .as_array()
                        .ok_or("result is not an array")?
                        .iter()
                        .map(parse_series)
                        .collect::<Result<_, _>>()?;
                    Ok(Answer::Series { result_type: result_type.to_string(), series })
                }
                "scalar" => {
                    let (t, v) = parse_point(result)?;
                    Ok(Answer::Scalar { t, v })
                }
                "string" => {
                    let t = time_ms(&result[0])?;
                    let s = result[1].as_str().ok_or("string result without a string")?.to_string();
                    Ok(Answer::String { t, s })
                }
                other => Err(format!("unknown resultType {other:?}")),
            }
        }
        _ => Err("no status".into()),
    }
}

fn parse_series(s: &Value) -> Result<(Metric, Vec<(i64, f64)>), String> {
    let metric = s["metric"]
        .as_object()
        .ok_or("series without metric")?
        .iter()
        .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or("label value is not a string")?.to_string())))
        .collect::<Result<Metric, String>>()?;
    let points = match (s.get("values"), s.get("value")) {
        (Some(vs), _) => {
            vs.as_array().ok_or("values is not an array")?.iter().map(parse_point).collect::<Result<_, _>>()?
        }
        (None, Some(v)) => vec![parse_point(v)?],
        (None, None) => return Err("series without value(s)".into()),
    };
    Ok((metric, points))
}

fn parse_point(p: &Value) -> Result<(i64, f64), String> {
    let t = time_ms(&p[0])?;
    let v = parse_value(p[1].as_str().ok_or("value is not a string")?)?;
    Ok((t, v))
}

fn time_ms(v: &Value) -> Result<i64, String> {
    let secs = v.as_f64().ok_or("time is not a number")?;
    Ok((secs * 1000.0).round() as i64)
}

/// A value as the API writes it: Go's `FormatFloat`, or `NaN`, `+Inf`, `-Inf`.
pub fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "NaN" => Ok(f64::NAN),
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => s.parse().map_err(|_| format!("bad value {s:?}")),
    }
}

/// Equal within [`REL_TOLERANCE`]; NaN equals NaN, infinities equal themselves.
pub fn same_value(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a == b {
        return true;
    }
    if a.is_infinite() || b.is_infinite() {
        return false;
    }
    (a - b).abs() <= REL_TOLERANCE * a.abs().max(b.abs())
}

/// Why `argus` differs from `prom` (the reference), as short report lines; empty when they agree.
/// `base` is the data's base time, for showing times as corpus offsets.
pub fn compare(prom: &Answer, argus: &Answer, ordered: bool, base: i64) -> Vec<String> {
    match (prom, argus) {
        (Answer::Error { error_type: a, .. }, Answer::Error { error_type: b, .. }) if a == b => Vec::new(),
        (p, a) if p.is_error() || a.is_error() || p.result_type() != a.result_type() => {
            vec![format!("prometheus: {}", p.summary(base)), format!("argus:      {}", a.summary(base))]
        }
        (Answer::Scalar { t: t1, v: v1 }, Answer::Scalar { t: t2, v: v2 }) => {
            if t1 == t2 && same_value(*v1, *v2) {
                Vec::new()
            } else {
                vec![format!(
                    "scalar: prometheus {} at {}, argus {} at {}",
                    fmt_v(*v1),
                    fmt_t(base, *t1),
                    fmt_v(*v2),
                    fmt_t(base, *t2)
                )]
            }
        }
        (Answer::String { t: t1, s: s1 }, Answer::String { t: t2, s: s2 }) => {
            if t1 == t2 && s1 == s2 {
                Vec::new()
            } else {
                vec![format!("string: prometheus {s1:?} at {}, argus {s2:?} at {}", fmt_t(base, *t1), fmt_t(base, *t2))]
            }
        }
        (Answer::Series { series: p, .. }, Answer::Series { series: a, .. }) => compare_series(p, a, ordered, base),
        _ => vec![format!("prometheus: {}", prom.summary(base)), format!("argus:      {}", argus.summary(base))],
    }
}

type Points = Vec<(i64, f64)>;

fn compare_series(prom: &[(Metric, Points)], argus: &[(Metric, Points)], ordered: bool, base: i64) -> Vec<String> {
    let mut out = Vec::new();
    let (p, p_dup) = by_metric(prom);
    let (a, a_dup) = by_metric(argus);
    if let Some(m) = a_dup {
        out.push(format!("argus answers {} more than once", fmt_m(m)));
    }
    if let Some(m) = p_dup {
        out.push(format!("(prometheus answers {} more than once)", fmt_m(m)));
    }
    let missing: Vec<&Metric> = p.keys().filter(|m| !a.contains_key(*m)).copied().collect();
    let extra: Vec<&Metric> = a.keys().filter(|m| !p.contains_key(*m)).copied().collect();
    if !missing.is_empty() || !extra.is_empty() {
        out.push(format!("series: prometheus {}, argus {}", p.len(), a.len()));
    }
    if !missing.is_empty() {
        out.push(format!("  missing in argus ({}): {}", missing.len(), list(&missing)));
    }
    if !extra.is_empty() {
        out.push(format!("  extra in argus ({}): {}", extra.len(), list(&extra)));
    }
    let mut differing = 0;
    let mut first = None;
    for (m, pp) in &p {
        let Some(ap) = a.get(m) else { continue };
        if let Some(d) = first_point_diff(pp, ap, base) {
            differing += 1;
            first.get_or_insert((*m, d));
        }
    }
    if let Some((m, d)) = first {
        let common = p.keys().filter(|m| a.contains_key(*m)).count();
        out.push(format!("values: {differing} of {common} common series differ; first {}: {d}", fmt_m(m)));
    }
    if ordered && out.is_empty() {
        let pv: Vec<f64> = prom.iter().map(|s| s.1.first().map_or(f64::NAN, |p| p.1)).collect();
        let av: Vec<f64> = argus.iter().map(|s| s.1.first().map_or(f64::NAN, |p| p.1)).collect();
        if let Some(i) = pv.iter().zip(&av).position(|(x, y)| !same_value(*x, *y)) {
            out.push(format!(
                "order: position {i}: prometheus {} {}, argus {} {}",
                fmt_m(&prom[i].0),
                fmt_v(pv[i]),
                fmt_m(&argus[i].0),
                fmt_v(av[i])
            ));
        }
    }
    out
}

/// The series by labels, and one label set that occurs twice, if any.
fn by_metric(s: &[(Metric, Points)]) -> (BTreeMap<&Metric, &Points>, Option<&Metric>) {
    let mut map = BTreeMap::new();
    let mut dup = None;
    for (m, p) in s {
        if map.insert(m, p).is_some() {
            dup.get_or_insert(m);
        }
    }
    (map, dup)
}

fn first_point_diff(p: &Points, a: &Points, base: i64) -> Option<String> {
    for (i, (x, y)) in p.iter().zip(a).enumerate() {
        if x.0 != y.0 {
            return Some(format!(
                "point {i}: prometheus at {}, argus at {} ({} vs {} points)",
                fmt_t(base, x.0),
                fmt_t(base, y.0),
                p.len(),
                a.len()
            ));
        }
        if !same_value(x.1, y.1) {
            return Some(format!(
                "at {}: prometheus {}, argus {}{}",
                fmt_t(base, x.0),
                fmt_v(x.1),
                fmt_v(y.1),
                rel(x.1, y.1)
            ));
        }
    }
    if p.len() != a.len() {
        let (longer, who) = if p.len() > a.len() { (p, "prometheus") } else { (a, "argus") };
        let n = p.len().min(a.len());
        return Some(format!(
            "prometheus {} points, argus {}; only {who} has t={}",
            p.len(),
            a.len(),
            fmt_t(base, longer[n].0)
        ));
    }
    None
}

fn rel(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() && a != 0.0 {
        format!(" (rel {:.1e})", ((a - b) / a).abs())
    } else {
        String::new()
    }
}

fn list(ms: &[&Metric]) -> String {
    let shown: Vec<String> = ms.iter().take(2).map(|m| fmt_m(m)).collect();
    let more = if ms.len() > 2 { format!(" and {} more", ms.len() - 2) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

/// `name{a="b"}` or `{}`.
pub fn fmt_m(m: &Metric) -> String {
    let mut s = m.get("__name__").cloned().unwrap_or_default();
    s.push('{');
    let mut first = true;
    for (k, v) in m.iter().filter(|(k, _)| *k != "__name__") {
        if !first {
            s.push(',');
        }
        first = false;
        let _ = write!(s, "{k}={v:?}");
    }
    s.push('}');
    s
}

/// A time as the report shows it: the corpus' offset from the base time, `T+90m15s`.
pub fn fmt_t(base: i64, ms: i64) -> String {
    let off = super::corpus::show_offset(ms - base);
    if off.starts_with('-') { format!("T{off}") } else { format!("T+{off}") }
}

pub fn fmt_v(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

fn clip(s: &str, n: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
