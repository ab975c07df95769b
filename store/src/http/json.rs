//! Writing query results as JSON straight into one buffer. Building `serde_json::Value`s cost several
//! allocations per point, which dominated a 24-hour read; this writes the bytes Prometheus writes.

use crate::float_text::format_value;
use crate::query::Value;
use argus_model::{Labels, Sample};
use std::fmt::Write;

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
    millis(t % 1000, out);
}

fn millis(f: u64, out: &mut String) {
    if f != 0 {
        out.push('.');
        if f < 100 {
            out.push('0');
        }
        if f < 10 {
            out.push('0');
        }
        out.push_str(itoa::Buffer::new().format(f));
    }
}

/// Writes the increasing timestamps of one series as [`timestamp`] does, adding to the previous one's
/// decimal digits instead of formatting each anew: a range answer's points are one step apart.
#[derive(Default)]
struct Stamps {
    secs: u64,
    /// The seconds' digits, then `.` and three millisecond digits when the time is not whole.
    digits: [u8; 24],
    /// Digits of the seconds.
    len: usize,
    /// Bytes of the whole text.
    end: usize,
}

impl Stamps {
    fn write(&mut self, t: i64, out: &mut String) {
        match self.text(t) {
            // Only ASCII digits and `.` are ever written to `digits`.
            Some(n) => out.push_str(std::str::from_utf8(&self.digits[..n]).unwrap_or_default()),
            None => timestamp(t, out),
        }
    }

    /// Puts the text of `t` at the start of `digits` and returns its length; None for a time before
    /// 1970 (left to [`timestamp`]).
    fn text(&mut self, t: i64) -> Option<usize> {
        if t < 0 {
            self.len = 0;
            return None;
        }
        let (secs, frac) = ((t / 1000) as u64, t % 1000);
        if self.len == 0 || secs < self.secs || !self.advance(secs - self.secs) {
            let mut b = itoa::Buffer::new();
            let s = b.format(secs);
            self.digits[..s.len()].copy_from_slice(s.as_bytes());
            self.len = s.len();
        }
        self.secs = secs;
        self.end = self.len;
        if frac != 0 {
            let f = (t % 1000) as u16;
            let d = [b'.', b'0' + (f / 100) as u8, b'0' + (f / 10 % 10) as u8, b'0' + (f % 10) as u8];
            self.digits[self.len..self.len + 4].copy_from_slice(&d);
            self.end += 4;
        }
        Some(self.end)
    }

    /// Adds `carry` to the digits; false when the number would need another digit.
    fn advance(&mut self, mut carry: u64) -> bool {
        let mut i = self.len;
        while carry > 0 {
            if i == 0 {
                return false;
            }
            i -= 1;
            let d = u64::from(self.digits[i] - b'0') + carry;
            self.digits[i] = b'0' + (d % 10) as u8;
            carry = d / 10;
        }
        true
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

/// The `[t,"v"]` pairs of one series, comma-separated. Each pair is assembled in a small array with
/// copies of fixed size (which compile to a few moves, where copies of each part's own length would
/// each call `memcpy`) and appended once; gauges often repeat a value from step to step, so each
/// distinct value is formatted once.
fn values(samples: &[Sample], out: &mut Vec<u8>) {
    const VAL: usize = 32;
    let mut stamps = Stamps::default();
    let mut text = String::new();
    let mut val = [0u8; VAL];
    let mut bits = None;
    for (j, s) in samples.iter().enumerate() {
        if bits != Some(s.v.to_bits()) {
            text.clear();
            format_value(s.v, &mut text);
            bits = Some(s.v.to_bits());
            if text.len() <= VAL {
                val[..text.len()].copy_from_slice(text.as_bytes());
            }
        }
        match stamps.text(s.t) {
            Some(n) if text.len() <= VAL => {
                let mut buf = [0u8; 2 + 24 + 2 + VAL + 2];
                buf[..2].copy_from_slice(b",[");
                let mut at = if j > 0 { 2 } else { 1 };
                buf[at - 1] = b'[';
                buf[at..at + 24].copy_from_slice(&stamps.digits);
                at += n;
                buf[at..at + 2].copy_from_slice(b",\"");
                at += 2;
                buf[at..at + VAL].copy_from_slice(&val);
                at += text.len();
                buf[at..at + 2].copy_from_slice(b"\"]");
                at += 2;
                out.extend_from_slice(&buf[..at]);
            }
            _ => {
                let mut part = String::with_capacity(text.len() + 32);
                part.push_str(if j > 0 { ",[" } else { "[" });
                stamps.write(s.t, &mut part);
                part.push_str(",\"");
                part.push_str(&text);
                part.push_str("\"]");
                out.extend_from_slice(part.as_bytes());
            }
        }
    }
}

const MATRIX_HEAD: &[u8] = b"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[";
const MATRIX_TAIL: &[u8] = b"]}}";

/// Series `i` of a matrix answer, with the comma before it for all but the first.
fn matrix_series(i: usize, l: &Labels, samples: &[Sample], labels: &mut String, out: &mut Vec<u8>) {
    if i > 0 {
        out.push(b',');
    }
    out.extend_from_slice(b"{\"metric\":");
    labels.clear();
    metric(l, labels);
    out.extend_from_slice(labels.as_bytes());
    out.extend_from_slice(b",\"values\":[");
    values(samples, out);
    out.extend_from_slice(b"]}");
}

/// [`query_result`] as bytes, what the query endpoints send: a matrix's points are written as bytes,
/// so a 24 h answer is never checked for UTF-8 (it holds ASCII only, apart from label text).
pub fn query_result_bytes(v: &Value) -> Vec<u8> {
    let Value::Matrix(m) = v else { return query_result_text(v).into_bytes() };
    let mut out = Vec::with_capacity(m.iter().map(|(_, s)| s.len() * 24 + 128).sum::<usize>() + 64);
    out.extend_from_slice(MATRIX_HEAD);
    let mut labels = String::new();
    for (i, (l, samples)) in m.iter().enumerate() {
        matrix_series(i, l, samples, &mut labels, &mut out);
    }
    out.extend_from_slice(MATRIX_TAIL);
    out
}

/// What the series written into a part held, so that the query's share of the memory budget is
/// given back as they are let go.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LetGo {
    pub series: u64,
    pub points: u64,
}

/// A vector's or matrix's whole success envelope, the same bytes as [`query_result_bytes`], handed to
/// `emit` in parts of about `part` bytes as they fill, each with what the series written into it
/// held; each series is let go once written, so the answer is never whole in memory beside the
/// result. Stops early when `emit` returns false (the client has gone). A scalar or string is one part.
pub fn answer_parts(v: Value, part: usize, mut emit: impl FnMut(Vec<u8>, LetGo) -> bool) {
    let fresh = || Vec::with_capacity(part + part / 8);
    let mut out = fresh();
    let mut gone = LetGo::default();
    let mut labels = String::new();
    let mut flush = |out: &mut Vec<u8>, gone: &mut LetGo, last: bool| {
        if last || out.len() >= part {
            let bytes = std::mem::replace(out, if last { Vec::new() } else { fresh() });
            return emit(bytes, std::mem::take(gone));
        }
        true
    };
    match v {
        Value::Matrix(m) => {
            out.extend_from_slice(MATRIX_HEAD);
            for (i, (l, samples)) in m.into_iter().enumerate() {
                matrix_series(i, &l, &samples, &mut labels, &mut out);
                gone.series += 1;
                gone.points += samples.len() as u64;
                drop((l, samples));
                if !flush(&mut out, &mut gone, false) {
                    return;
                }
            }
            out.extend_from_slice(MATRIX_TAIL);
        }
        Value::Vector(rows) => {
            out.extend_from_slice(VECTOR_HEAD);
            for (i, (l, sample)) in rows.into_iter().enumerate() {
                labels.clear();
                if i > 0 {
                    labels.push(',');
                }
                vector_item(&l, &sample, &mut labels);
                out.extend_from_slice(labels.as_bytes());
                gone.series += 1;
                gone.points += 1;
                drop(l);
                if !flush(&mut out, &mut gone, false) {
                    return;
                }
            }
            out.extend_from_slice(VECTOR_TAIL);
        }
        v => out = query_result_text(&v).into_bytes(),
    }
    flush(&mut out, &mut gone, true);
}

/// About the bytes [`query_result_bytes`] writes for `v`, without writing them: each series' label
/// text and punctuation, and each point's time and value at their usual lengths (a 10-digit time
/// with milliseconds, a value of up to 8 characters).
pub fn estimated_len(v: &Value) -> usize {
    const POINT: usize = 24;
    let metric = |l: &Labels| 16 + l.iter().map(|x| x.name.len() + x.value.len() + 6).sum::<usize>();
    match v {
        Value::Matrix(m) => 64 + m.iter().map(|(l, s)| metric(l) + s.len() * POINT).sum::<usize>(),
        Value::Vector(rows) => 64 + rows.iter().map(|(l, _)| metric(l) + POINT).sum::<usize>(),
        Value::Scalar(_) => 96,
        Value::String(_, text) => 96 + text.len() * 6,
    }
}

const VECTOR_HEAD: &[u8] = b"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[";
const VECTOR_TAIL: &[u8] = b"]}}";

/// One element of a vector answer: `{"metric":{…},"value":[t,"v"]}`.
fn vector_item(l: &Labels, s: &Sample, out: &mut String) {
    out.push_str("{\"metric\":");
    metric(l, out);
    out.push_str(",\"value\":");
    point(s, out);
    out.push('}');
}

/// The whole success envelope of a query result.
pub fn query_result(v: &Value) -> String {
    match v {
        // Every byte written is ASCII or comes from a `str`, so this never copies.
        Value::Matrix(_) => String::from_utf8(query_result_bytes(v))
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        _ => query_result_text(v),
    }
}

/// The envelope of a vector, scalar or string.
fn query_result_text(v: &Value) -> String {
    let mut out = String::with_capacity(256);
    out.push_str("{\"status\":\"success\",\"data\":{\"resultType\":");
    match v {
        Value::Vector(v) => {
            out.push_str("\"vector\",\"result\":[");
            for (i, (l, s)) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                vector_item(l, s, &mut out);
            }
        }
        // Written as bytes by `query_result_bytes`.
        Value::Matrix(_) => return query_result(v),
        Value::Scalar(x) => {
            out.push_str("\"scalar\",\"result\":[");
            timestamp(x.t, &mut out);
            out.push_str(",\"");
            format_value(x.v, &mut out);
            out.push('"');
        }
        Value::String(t, text) => {
            out.push_str("\"string\",\"result\":[");
            timestamp(*t, &mut out);
            out.push(',');
            string(text, &mut out);
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
    fn stamps_written_by_increment_match_each_formatted_alone() {
        let ts = [
            -1_001,
            0,
            999,
            1_000,
            9_990,
            10_000,
            99_999,
            100_000,
            1_795_916_390_000,
            1_795_916_399_990,
            1_795_916_400_005,
            1_800_000_000_000,
            9_999_999_999_000,
            10_000_000_000_000,
            5,
        ];
        let mut stamps = Stamps::default();
        for t in ts {
            let (mut a, mut b) = (String::new(), String::new());
            stamps.write(t, &mut a);
            timestamp(t, &mut b);
            assert_eq!(a, b, "{t}");
        }
    }

    #[test]
    fn matrix_points_match_each_point_formatted_alone() {
        // Times whole and fractional, before and after 1970, across digit-count changes; values
        // repeated, short, long (past the fast path's 32 bytes), special.
        let mut x = 12345u64;
        let mut samples = Vec::new();
        let mut t = -25_003i64;
        for i in 0..3000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            t += [1, 10, 999, 1_000, 10_000, 9_999_999][(x >> 60) as usize % 6];
            let v = match (x >> 33) % 9 {
                0 => f64::NAN,
                1 => 1e40 * (i as f64 + 1.0),
                2 => -(i as f64) / 7.0,
                3 => 1e-9 / (i as f64 + 1.0),
                4 => f64::INFINITY,
                _ => ((x >> 40) % 1000) as f64 / 10.0,
            };
            samples.push(Sample::new(t, v));
            if (x >> 20).is_multiple_of(4) {
                samples.push(Sample::new(t + 1, v));
            }
        }
        let l = Arc::new(Labels::from_pairs([("job", "x")]));
        let got = query_result(&Value::Matrix(vec![(l.clone(), samples.clone())]));
        let mut want = String::from(
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"x"},"values":["#,
        );
        for (i, s) in samples.iter().enumerate() {
            if i > 0 {
                want.push(',');
            }
            point(s, &mut want);
        }
        want.push_str("]}]}}");
        assert_eq!(got, want);
        assert_eq!(query_result_bytes(&Value::Matrix(vec![(l, samples)])), want.into_bytes());
    }

    #[test]
    fn an_answer_sent_in_parts_is_the_same_bytes_and_lets_every_series_go() {
        let m: Vec<(Arc<Labels>, Vec<Sample>)> = (0..50)
            .map(|i| {
                let l = Arc::new(Labels::from_pairs([("host", format!("h{i}")), ("gpu", "0".to_string())]));
                (l, (0..i * 7).map(|k| Sample::new(1_700_000_000_000 + k * 15_000, (k * i) as f64 / 3.0)).collect())
            })
            .collect();
        let v: Vec<(Arc<Labels>, Sample)> = m
            .iter()
            .enumerate()
            .map(|(i, (l, _))| (l.clone(), Sample::new(1_700_000_000_123, i as f64 / 7.0)))
            .collect();
        let matrix = Value::Matrix(m);
        let vector = Value::Vector(v);
        for (value, points) in [(&matrix, (0..50).map(|i| i * 7).sum::<u64>()), (&vector, 50)] {
            let whole = query_result_bytes(value);
            for part in [1, 100, 4096, 1 << 20] {
                let (mut got, mut parts, mut gone) = (Vec::new(), 0, LetGo::default());
                answer_parts(value.clone(), part, |p, g| {
                    got.extend_from_slice(&p);
                    parts += 1;
                    gone.series += g.series;
                    gone.points += g.points;
                    true
                });
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(whole.clone()).unwrap(), "{part}");
                assert_eq!(gone, LetGo { series: 50, points }, "parts of {part} bytes");
                // A part ends after the series that filled it: one per series when parts are tiny, and
                // every part but the last holds at least `part` bytes.
                match part {
                    1 => assert_eq!(parts, 51),
                    p if p >= whole.len() => assert_eq!(parts, 1),
                    p => assert!(parts > 1 && parts <= whole.len() / p + 1, "{parts} parts of {p} bytes"),
                }
            }
            // The estimate, which only decides whether to stream, is within a factor of two.
            let (est, len) = (estimated_len(value), whole.len());
            assert!(est > len / 2 && est < len * 2, "estimated {est} bytes of {len}");
            // A client gone after the first part: nothing more is written.
            let mut parts = 0;
            answer_parts(value.clone(), 100, |_, _| {
                parts += 1;
                false
            });
            assert_eq!(parts, 1);
        }
        // A scalar is one part.
        let mut got = Vec::new();
        answer_parts(Value::Scalar(Sample::new(1_000, 2.0)), 1, |p, g| {
            assert_eq!(g, LetGo::default());
            got.extend_from_slice(&p);
            true
        });
        assert_eq!(
            String::from_utf8(got).unwrap(),
            r#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#
        );
    }

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
