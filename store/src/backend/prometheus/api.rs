//! The Prometheus HTTP API from the client's side: selectors written from matchers, answers decoded.
//! Format: <https://prometheus.io/docs/prometheus/latest/querying/api/#expression-query-result-formats>.

use crate::Series;
use crate::backend::{BackendError, QueryValue};
use argus_model::{Labels, MatchOp, Matcher, Sample};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Deserialize)]
struct Envelope {
    status: String,
    data: Option<Data>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data {
    Vector(Vec<InstantSeries>),
    Matrix(Vec<RangeSeries>),
    Scalar(Point),
    String(Point),
}

#[derive(Deserialize)]
struct InstantSeries {
    metric: HashMap<String, String>,
    value: Point,
}

#[derive(Deserialize)]
struct RangeSeries {
    metric: HashMap<String, String>,
    values: Vec<Point>,
}

/// `[<unix seconds>, "<value>"]`.
type Point = (f64, String);

/// Decodes a 2xx answer of `/api/v1/query` or `/api/v1/query_range`.
pub(super) fn decode(body: &[u8]) -> Result<QueryValue, String> {
    let env: Envelope = serde_json::from_slice(body).map_err(|e| format!("not a prometheus api answer: {e}"))?;
    if env.status != "success" {
        return Err(format!("status {:?}: {}", env.status, env.error.unwrap_or_default()));
    }
    let labels = |m: HashMap<String, String>| Arc::new(Labels::from_pairs(m));
    Ok(match env.data.ok_or("no data in a successful answer")? {
        Data::Vector(v) => QueryValue::Vector(
            v.into_iter().map(|s| Ok((labels(s.metric), sample(&s.value)?))).collect::<Result<_, String>>()?,
        ),
        Data::Matrix(m) => QueryValue::Matrix(
            m.into_iter()
                .map(|s| {
                    let samples = s.values.iter().map(sample).collect::<Result<_, _>>()?;
                    Ok(Series { labels: labels(s.metric), samples })
                })
                .collect::<Result<_, String>>()?,
        ),
        Data::Scalar(p) => QueryValue::Scalar(sample(&p)?),
        Data::String((t, s)) => QueryValue::String(millis(t), s),
    })
}

fn sample((t, v): &Point) -> Result<Sample, String> {
    // Rust reads Prometheus' spellings of the specials: "NaN", "+Inf", "-Inf".
    let v = v.parse::<f64>().map_err(|_| format!("{v:?} is not a number"))?;
    Ok(Sample::new(millis(*t), v))
}

/// Unix seconds with a millisecond fraction, as the API writes them, to milliseconds.
fn millis(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

/// Milliseconds as Unix seconds with a fraction, as the API reads them.
pub(super) fn secs(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// The name of an answer's type, for messages.
pub(super) fn kind(v: &QueryValue) -> &'static str {
    match v {
        QueryValue::Vector(_) => "a vector",
        QueryValue::Matrix(_) => "a matrix",
        QueryValue::Scalar(_) => "a scalar",
        QueryValue::String(..) => "a string",
    }
}

/// A PromQL selector with exactly these matchers, the metric name included: `{__name__="up",job!="x"}`.
pub(super) fn selector(matchers: &[Matcher]) -> Result<String, BackendError> {
    if matchers.iter().all(Matcher::matches_empty) {
        return Err(BackendError::BadQuery("a selector needs a matcher that does not match the empty string".into()));
    }
    let mut out = String::from("{");
    for (i, m) in matchers.iter().enumerate() {
        if !is_label_name(&m.name) {
            return Err(BackendError::BadQuery(format!("label name {:?} cannot be written in promql", m.name)));
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(&m.name);
        out.push_str(match m.op {
            MatchOp::Equal => "=",
            MatchOp::NotEqual => "!=",
            MatchOp::RegexMatch => "=~",
            MatchOp::RegexNoMatch => "!~",
        });
        quote(&m.value, &mut out);
    }
    out.push('}');
    Ok(out)
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`, what every engine's PromQL accepts unquoted.
fn is_label_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// A double-quoted PromQL string (Go's escapes), so any value, regexes included, survives as written.
fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check_selector(matchers: &[(&str, MatchOp, &str)], want: Expect) {
        let ms: Vec<Matcher> = matchers.iter().map(|(n, op, v)| Matcher::new(*n, *op, *v).unwrap()).collect();
        want.assert_eq(&match selector(&ms) {
            Ok(s) => s,
            Err(e) => format!("error: {e}"),
        });
    }

    #[test]
    fn selectors_quote_every_value() {
        use MatchOp::*;
        check_selector(&[("__name__", Equal, "up")], expect![[r#"{__name__="up"}"#]]);
        check_selector(
            &[("__name__", Equal, "gpu_util"), ("host", NotEqual, "a"), ("gpu", RegexMatch, "0|1")],
            expect![[r#"{__name__="gpu_util",host!="a",gpu=~"0|1"}"#]],
        );
        check_selector(&[("job", RegexNoMatch, r"a\.b"), ("x", Equal, "y")], expect![[r#"{job!~"a\\.b",x="y"}"#]]);
        check_selector(&[("path", Equal, "say \"hi\"\n\t\u{1}")], expect![[r#"{path="say \"hi\"\n\t\x01"}"#]]);
        check_selector(
            &[("host", Equal, "")],
            expect!["error: query refused: a selector needs a matcher that does not match the empty string"],
        );
        check_selector(
            &[("a.b", Equal, "x")],
            expect![[r#"error: query refused: label name "a.b" cannot be written in promql"#]],
        );
    }

    #[test]
    fn times_are_seconds_with_milliseconds() {
        assert_eq!(secs(1_700_000_000_123), "1700000000.123");
        assert_eq!(secs(-1), "-1.999");
        assert_eq!(millis(1_700_000_000.123), 1_700_000_000_123);
    }

    fn check_decode(body: &str, want: Expect) {
        want.assert_eq(&match decode(body.as_bytes()) {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("error: {e}"),
        });
    }

    /// The answers are the examples of the Prometheus API docs (URL in the module docs), shortened.
    #[test]
    fn answers_decode_by_result_type() {
        check_decode(
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"prometheus","instance":"localhost:9090"},"value":[1435781451.781,"1"]}]}}"#,
            expect![[
                r#"Vector([(Labels([Label { name: "__name__", value: "up" }, Label { name: "instance", value: "localhost:9090" }, Label { name: "job", value: "prometheus" }]), Sample { t: 1435781451781, v: 1.0 })])"#
            ]],
        );
        check_decode(
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","job":"node"},"values":[[1435781430.781,"1"],[1435781445.781,"+Inf"],[1435781460.781,"NaN"]]}]}}"#,
            expect![[
                r#"Matrix([Series { labels: Labels([Label { name: "__name__", value: "up" }, Label { name: "job", value: "node" }]), samples: [Sample { t: 1435781430781, v: 1.0 }, Sample { t: 1435781445781, v: inf }, Sample { t: 1435781460781, v: NaN }] }])"#
            ]],
        );
        check_decode(
            r#"{"status":"success","data":{"resultType":"scalar","result":[1435781451.781,"-Inf"]}}"#,
            expect!["Scalar(Sample { t: 1435781451781, v: -inf })"],
        );
        check_decode(
            r#"{"status":"success","data":{"resultType":"string","result":[1435781451.781,"hello"]}}"#,
            expect![[r#"String(1435781451781, "hello")"#]],
        );
        check_decode(
            r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#,
            expect![[r#"error: status "error": parse error"#]],
        );
        check_decode(
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#,
            expect![[r#"error: "x" is not a number"#]],
        );
        check_decode("<html>", expect!["error: not a prometheus api answer: expected value at line 1 column 1"]);
    }
}
