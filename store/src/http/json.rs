//! Writing query results as JSON straight into one buffer. Building `serde_json::Value`s cost several
//! allocations per point, which dominated a 24-hour read; this writes the bytes Prometheus writes.

use crate::query::Value;
use argus_model::{Labels, Sample};
use std::fmt::Write;

/// Go's `strconv.FormatFloat(v, 'f', -1, 64)`, as Prometheus formats sample values.
pub fn format_value(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        // ryu is several times faster than `{}`; its output differs from Go's only in a trailing
        // ".0" on whole numbers and in exponents, both handled here.
        let mut b = ryu::Buffer::new();
        let s = b.format_finite(v);
        if s.contains('e') {
            let _ = write!(out, "{v}");
        } else {
            out.push_str(s.strip_suffix(".0").unwrap_or(s));
        }
    }
}

/// Prometheus' `jsonutil.MarshalTimestamp`: seconds, then `.` and three millisecond digits when not whole.
pub fn timestamp(t: i64, out: &mut String) {
    let t = if t < 0 {
        out.push('-');
        t.unsigned_abs()
    } else {
        t as u64
    };
    let mut b = itoa::Buffer::new();
    out.push_str(b.format(t / 1000));
    let f = t % 1000;
    if f != 0 {
        out.push('.');
        if f < 100 {
            out.push('0');
        }
        if f < 10 {
            out.push('0');
        }
        out.push_str(b.format(f));
    }
}

pub fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub fn metric(l: &Labels, out: &mut String) {
    out.push('{');
    for (i, x) in l.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(&x.name, out);
        out.push(':');
        string(&x.value, out);
    }
    out.push('}');
}

fn point(s: &Sample, out: &mut String) {
    out.push('[');
    timestamp(s.t, out);
    out.push_str(",\"");
    format_value(s.v, out);
    out.push_str("\"]");
}

/// The whole success envelope of a query result.
pub fn query_result(v: &Value) -> String {
    let mut out = String::with_capacity(256);
    out.push_str("{\"status\":\"success\",\"data\":{\"resultType\":");
    match v {
        Value::Vector(v) => {
            out.push_str("\"vector\",\"result\":[");
            for (i, (l, s)) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                metric(l, &mut out);
                out.push_str(",\"value\":");
                point(s, &mut out);
                out.push('}');
            }
        }
        Value::Matrix(m) => {
            out.reserve(m.iter().map(|(_, s)| s.len() * 24 + 128).sum());
            out.push_str("\"matrix\",\"result\":[");
            for (i, (l, samples)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                metric(l, &mut out);
                out.push_str(",\"values\":[");
                // Gauges often repeat a value from step to step: format each distinct value once.
                let mut last: Option<(u64, usize, usize)> = None;
                for (j, s) in samples.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    out.push('[');
                    timestamp(s.t, &mut out);
                    out.push_str(",\"");
                    match last {
                        Some((bits, a, b)) if bits == s.v.to_bits() => {
                            let start = out.len();
                            out.extend_from_within(a..b);
                            last = Some((bits, start, out.len()));
                        }
                        _ => {
                            let start = out.len();
                            format_value(s.v, &mut out);
                            last = Some((s.v.to_bits(), start, out.len()));
                        }
                    }
                    out.push_str("\"]");
                }
                out.push_str("]}");
            }
        }
    }
    out.push_str("]}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn matches_prometheus_encoding() {
        let l = Arc::new(Labels::from_pairs([("host", "a\"b"), ("job", "x")]));
        let v = Value::Matrix(vec![(
            l,
            vec![
                Sample::new(1_500, 1.0),
                Sample::new(2_050, f64::NAN),
                Sample::new(-1_001, 1e21),
                Sample::new(3_007, -0.25),
                Sample::new(4_000, 1e-7),
            ],
        )]);
        let s = query_result(&v);
        assert_eq!(
            s,
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"host":"a\"b","job":"x"},"values":[[1.500,"1"],[2.050,"NaN"],[-1.001,"1000000000000000000000"],[3.007,"-0.25"],[4,"0.0000001"]]}]}}"#
        );
        serde_json::from_str::<serde_json::Value>(&s).unwrap();
    }
}
