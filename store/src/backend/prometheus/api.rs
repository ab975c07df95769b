//! The Prometheus HTTP API from the client's side: selectors written from matchers, answers decoded.
//! Format: <https://prometheus.io/docs/prometheus/latest/querying/api/#expression-query-result-formats>.

use crate::Series;
use crate::backend::{BackendError, QueryValue};
use argus_model::{Labels, MatchOp, Matcher, Sample};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    status: Text<'a>,
    #[serde(borrow)]
    data: Option<Data<'a>>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data<'a> {
    #[serde(borrow)]
    Vector(Vec<InstantSeries<'a>>),
    #[serde(borrow)]
    Matrix(Vec<RangeSeries<'a>>),
    #[serde(borrow)]
    Scalar(Point<'a>),
    #[serde(borrow)]
    String(Point<'a>),
}

#[derive(Deserialize)]
struct InstantSeries<'a> {
    #[serde(borrow)]
    metric: Pairs<'a>,
    #[serde(borrow)]
    value: Point<'a>,
}

#[derive(Deserialize)]
struct RangeSeries<'a> {
    #[serde(borrow)]
    metric: Pairs<'a>,
    #[serde(borrow)]
    values: Vec<Point<'a>>,
}

/// `[<unix seconds>, "<value>"]`.
type Point<'a> = (f64, Text<'a>);

/// A JSON string, borrowed from the answer unless it holds an escape. An answer of 40,000 series is
/// decoded without a string allocated per sample or label (serde's own `Cow` always copies when nested).
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// A series' `metric` object as name–value pairs, in the answer's order.
pub(super) struct Pairs<'a>(Vec<(Text<'a>, Text<'a>)>);

impl Pairs<'_> {
    /// The value of `name` (the last, as in [`Pairs::labels`], should a name repeat).
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(n, _)| n.0 == name).map(|(_, v)| &*v.0)
    }

    fn labels(self) -> Arc<Labels> {
        Arc::new(Labels::from_pairs(self.0.into_iter().map(|(n, v)| (n.0.into_owned(), v.0.into_owned()))))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Pairs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Pairs<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of label names and values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<'a>, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(pair) = map.next_entry()? {
                    pairs.push(pair);
                }
                Ok(Pairs(pairs))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Which series of a matrix to keep, by their labels; every series when `None`.
pub(super) type Keep<'a> = Option<&'a (dyn Fn(&Pairs<'_>) -> bool + Sync)>;

/// Decodes a 2xx answer of `/api/v1/query` or `/api/v1/query_range`, building only the series of a
/// matrix that `keep` accepts (the others are read past).
pub(super) fn decode(body: &[u8], keep: Keep<'_>) -> Result<QueryValue, String> {
    let env: Envelope = serde_json::from_slice(body).map_err(|e| format!("not a prometheus api answer: {e}"))?;
    if env.status.0 != "success" {
        return Err(format!("status {:?}: {}", env.status.0, env.error.unwrap_or_default()));
    }
    Ok(match env.data.ok_or("no data in a successful answer")? {
        Data::Vector(v) => QueryValue::Vector(
            v.into_iter().map(|s| Ok((s.metric.labels(), sample(&s.value)?))).collect::<Result<_, String>>()?,
        ),
        Data::Matrix(m) => QueryValue::Matrix(
            m.into_iter()
                .filter(|s| keep.is_none_or(|keep| keep(&s.metric)))
                .map(|s| {
                    let samples = s.values.iter().map(sample).collect::<Result<_, _>>()?;
                    Ok(Series { labels: s.metric.labels(), samples })
                })
                .collect::<Result<_, String>>()?,
        ),
        Data::Scalar(p) => QueryValue::Scalar(sample(&p)?),
        Data::String((t, s)) => QueryValue::String(millis(t), s.0.into_owned()),
    })
}

fn sample((t, Text(v)): &Point) -> Result<Sample, String> {
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
        if !argus_model::valid_label_name(&m.name) {
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
        want.assert_eq(&match decode(body.as_bytes(), None) {
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

    /// Only the series `keep` accepts are built; escaped strings (Go writes `<` as `\u003c`) decode
    /// as the label values they stand for, in `keep` as in the labels.
    #[test]
    fn matrices_keep_what_is_asked() {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"host":"a","gpu":"0"},"values":[[1,"1"]]},
            {"metric":{"host":"b\u003c","gpu":"1"},"values":[[1,"2"],[2,"3"]]},
            {"metric":{"gpu":"2"},"values":[[1,"4"]]}]}}"#;
        let keep = |m: &Pairs| m.get("host").unwrap_or("") != "a";
        let Ok(QueryValue::Matrix(m)) = decode(body.as_bytes(), Some(&keep)) else { panic!("not a matrix") };
        let got: Vec<String> = m.iter().map(|s| format!("{} {}", s.labels, s.samples.len())).collect();
        assert_eq!(got, [r#"{gpu="1", host="b<"} 2"#, r#"{gpu="2"} 1"#]);
        let keep = |m: &Pairs| m.get("host") == Some("b<");
        let Ok(QueryValue::Matrix(m)) = decode(body.as_bytes(), Some(&keep)) else { panic!("not a matrix") };
        assert_eq!(m.len(), 1);
    }
}
