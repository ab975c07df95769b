//! Input series as promtool writes them: a series selector with equality matchers
//! (`up{job="api"}`), and values in the expanding notation of Prometheus' test scripts
//! (`1+2x3` is 1 3 5 7, `0x2` is 0 0 0, `_` a missing sample, `_x3` three, `stale` a stale marker).

use argus_model::{Labels, METRIC_NAME};
use argus_store::remote_write::WriteSeries;

/// Prometheus' stale marker.
const STALE: f64 = f64::from_bits(0x7ff0_0000_0000_0002);

/// `name{label="value", …}`, `{…}` or `name`, into labels; errors carry `line:column` as
/// Prometheus' parser words them.
pub fn parse_metric(text: &str) -> Result<Labels, String> {
    let (pairs, end) = metric_prefix(text)?;
    if end < text.len() {
        return Err(parse_error(end, format!("unexpected character: {:?}", char_at(text, end))));
    }
    if pairs.is_empty() && !text.trim().is_empty() {
        return Err(parse_error(0, "no metric name or labels".into()));
    }
    Ok(Labels::from_pairs(pairs))
}

/// An `input_series` entry: its labels and values. promtool reads the selector and the values as
/// one line, `series values`, so a selector's error is placed by its column in that line (an
/// unclosed `{` meets the first value).
pub fn parse_input(series: &str, values: &str) -> Result<(Labels, Vec<Option<f64>>), String> {
    let line = format!("{series} {values}");
    let (pairs, end) = metric_prefix(&line)?;
    if pairs.is_empty() {
        return Err(parse_error(0, "no metric name or labels".into()));
    }
    let values = expand(&line[end..]).map_err(|e| format!("series {series}: {e}"))?;
    Ok((Labels::from_pairs(pairs), values))
}

fn parse_error(at: usize, msg: String) -> String {
    format!("1:{}: parse error: {msg}", at + 1)
}

/// The label pairs of the selector at the start of `text`, and the index after it and its spaces.
fn metric_prefix(text: &str) -> Result<(Vec<(String, String)>, usize), String> {
    let b = text.as_bytes();
    let err = parse_error;
    let skip_space = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let ident = |i: usize, metric: bool| {
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || (metric && b[j] == b':')) {
            j += 1;
        }
        if j > i && b[i].is_ascii_digit() { i } else { j }
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut i = skip_space(0);
    let end = ident(i, true);
    if end > i {
        pairs.push((METRIC_NAME.to_string(), text[i..end].to_string()));
    }
    i = skip_space(end);
    if i < b.len() && b[i] == b'{' {
        i = skip_space(i + 1);
        loop {
            if i >= b.len() {
                return Err(err(i, "unexpected end of input inside braces".into()));
            }
            if b[i] == b'}' {
                i += 1;
                break;
            }
            let name_end = ident(i, false);
            if name_end == i {
                return Err(err(i, format!("unexpected character inside braces: {:?}", char_at(text, i))));
            }
            let name = text[i..name_end].to_string();
            i = skip_space(name_end);
            if i >= b.len() || b[i] != b'=' || b.get(i + 1) == Some(&b'~') {
                return Err(err(
                    i,
                    format!("expected \"=\" after label name {name:?} (only equality matchers name a series)"),
                ));
            }
            i = skip_space(i + 1);
            let (value, after) = string_literal(text, i).map_err(|m| err(i, m))?;
            pairs.push((name, value));
            i = skip_space(after);
            match b.get(i) {
                Some(b',') => i = skip_space(i + 1),
                Some(b'}') => {}
                Some(_) => return Err(err(i, format!("unexpected character inside braces: {:?}", char_at(text, i)))),
                None => return Err(err(i, "unexpected end of input inside braces".into())),
            }
        }
        i = skip_space(i);
    }
    Ok((pairs, i))
}

fn char_at(text: &str, i: usize) -> char {
    text[i..].chars().next().unwrap_or(' ')
}

/// A Go string literal (`"…"` with escapes, `'…'`, or `` `…` `` raw) at `i`: its value and the index after it.
fn string_literal(text: &str, i: usize) -> Result<(String, usize), String> {
    let mut chars = text[i..].char_indices();
    let quote = match chars.next() {
        Some((_, q @ ('"' | '\'' | '`'))) => q,
        _ => return Err("expected a quoted label value".into()),
    };
    let mut out = String::new();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((out, i + at + 1)),
            '\\' if quote != '`' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, e @ ('\\' | '"' | '\''))) => out.push(e),
                Some((_, e)) => return Err(format!("unknown escape sequence \\{e}")),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("unterminated quoted string".into())
}

/// The values of `notation`, one per interval from time 0: `None` where a sample is missing.
pub fn expand(notation: &str) -> Result<Vec<Option<f64>>, String> {
    let mut out = Vec::new();
    for item in notation.split_whitespace() {
        let bad =
            || format!("invalid series value {item:?} (expected a number, \"_\", \"stale\", \"a+bxN\" or \"axN\")");
        let (base, times) = match item.rsplit_once('x') {
            Some((base, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
                (base, Some(n.parse::<u64>().map_err(|_| bad())?))
            }
            _ => (item, None),
        };
        match (base, times) {
            ("_", None) => out.push(None),
            // `_xN` is N missing samples, `axN` N + 1 values.
            ("_", Some(n)) => out.extend((0..n).map(|_| None)),
            ("stale", None) => out.push(Some(STALE)),
            (_, times) => {
                let (start, step) = split_step(base).ok_or_else(bad)?;
                let Some(n) = times else {
                    if step.is_some() {
                        return Err(bad());
                    }
                    out.push(Some(start));
                    continue;
                };
                let step = step.unwrap_or(0.0);
                let mut v = start;
                for _ in 0..=n {
                    out.push(Some(v));
                    v += step;
                }
            }
        }
    }
    Ok(out)
}

/// `a`, `a+b` or `a-b` (each a number, `a` possibly signed): the start and the signed step.
fn split_step(s: &str) -> Option<(f64, Option<f64>)> {
    let b = s.as_bytes();
    let at = (1..b.len()).find(|&i| (b[i] == b'+' || b[i] == b'-') && !matches!(b[i - 1], b'e' | b'E'));
    match at {
        None => Some((number(s)?, None)),
        Some(i) => Some((number(&s[..i])?, Some(number(&s[i..])?))),
    }
}

/// A PromQL number: decimal or exponent form, `Inf`, `NaN`, with an optional sign.
fn number(s: &str) -> Option<f64> {
    let digits = s.trim_start_matches(['+', '-']);
    if digits.eq_ignore_ascii_case("inf") || digits.eq_ignore_ascii_case("nan") {
        return s.to_ascii_lowercase().parse().ok();
    }
    if !digits.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    s.parse().ok()
}

/// The samples of `values` at `interval_ms` spacing from 0, the last value of a time winning.
pub fn samples(labels: Labels, values: &[Option<f64>], interval_ms: i64) -> WriteSeries {
    let mut samples: Vec<argus_model::Sample> = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        let Some(v) = v else { continue };
        let t = i as i64 * interval_ms;
        match samples.last_mut() {
            Some(last) if last.t == t => last.v = *v,
            _ => samples.push(argus_model::Sample::new(t, *v)),
        }
    }
    WriteSeries { labels, samples }
}

/// Values as the notation reads them back, for tests: stale markers as `stale`, missing as `_`.
#[cfg(test)]
fn describe(values: &[Option<f64>]) -> String {
    let mut s = String::new();
    for v in values {
        match v {
            None => s.push_str("_ "),
            Some(v) if v.to_bits() == STALE.to_bits() => s.push_str("stale "),
            Some(v) => {
                s.push_str(&format!("{v} "));
            }
        }
    }
    s.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check_values(notation: &str, expect: Expect) {
        let got = match expand(notation) {
            Ok(v) => describe(&v),
            Err(e) => e,
        };
        expect.assert_eq(&got);
    }

    fn check_metric(text: &str, expect: Expect) {
        let got = match parse_metric(text) {
            Ok(l) => l.to_string(),
            Err(e) => e,
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn expanding_notation() {
        check_values("1+2x3", expect!["1 3 5 7"]);
        check_values("0x2", expect!["0 0 0"]);
        check_values("-1-1x2 _ stale", expect!["-1 -2 -3 _ stale"]);
        check_values("_x3 5", expect!["_ _ _ 5"]);
        check_values("1e3 +Inf NaN 2.5+0.5x1", expect!["1000 inf NaN 2.5 3"]);
        check_values(
            "1 + 2",
            expect![[r#"invalid series value "+" (expected a number, "_", "stale", "a+bxN" or "axN")"#]],
        );
        check_values(
            "1+2",
            expect![[r#"invalid series value "1+2" (expected a number, "_", "stale", "a+bxN" or "axN")"#]],
        );
        check_values(
            "up",
            expect![[r#"invalid series value "up" (expected a number, "_", "stale", "a+bxN" or "axN")"#]],
        );
        check_values("", expect![""]);
    }

    #[test]
    fn series_selectors() {
        check_metric(
            r#"up{job="prometheus", instance="localhost:9090"}"#,
            expect![[r#"up{instance="localhost:9090", job="prometheus"}"#]],
        );
        check_metric("test", expect!["test{}"]);
        check_metric(r#"{alertname="A",alertstate="firing"}"#, expect![[r#"{alertname="A", alertstate="firing"}"#]]);
        check_metric(r#"job:x:rate5m{a='q\'',b=`raw\`}"#, expect![[r#"job:x:rate5m{a="q'", b="raw\\"}"#]]);
        check_metric("requests{}", expect!["requests{}"]);
        check_metric(
            r#"up{job="prometheus", instance="localhost:9090""#,
            expect!["1:47: parse error: unexpected end of input inside braces"],
        );
        check_metric(
            r#"up{job=~"a"}"#,
            expect![[
                r#"1:7: parse error: expected "=" after label name "job" (only equality matchers name a series)"#
            ]],
        );
        check_metric("up down", expect!["1:4: parse error: unexpected character: 'd'"]);
    }

    /// promtool parses `series values` as one line: an unclosed `{` meets the first value there.
    #[test]
    fn input_series_errors_by_column_in_their_line() {
        let check = |series: &str, values: &str, expect: Expect| {
            let got = match parse_input(series, values) {
                Ok((l, v)) => format!("{l} {}", describe(&v)),
                Err(e) => e,
            };
            expect.assert_eq(&got);
        };
        check(r#"up{job="a"}"#, "1+1x2", expect![[r#"up{job="a"} 1 2 3"#]]);
        check("up", "", expect!["up{} "]);
        check(
            r#"up{job="prometheus", instance="localhost:9090""#,
            "0+0x1440",
            expect!["1:48: parse error: unexpected character inside braces: '0'"],
        );
        check("", "1 2", expect!["1:1: parse error: no metric name or labels"]);
        check(
            "up",
            "1 x",
            expect![[r#"series up: invalid series value "x" (expected a number, "_", "stale", "a+bxN" or "axN")"#]],
        );
    }

    #[test]
    fn samples_at_interval() {
        let s = samples(Labels::from_pairs([("__name__", "x")]), &expand("1 _ 3").unwrap(), 60_000);
        let got: Vec<(i64, f64)> = s.samples.iter().map(|s| (s.t, s.v)).collect();
        assert_eq!(got, [(0, 1.0), (120_000, 3.0)]);
        let s = samples(Labels::default(), &expand("1 2").unwrap(), 0);
        assert_eq!(s.samples.iter().map(|s| (s.t, s.v)).collect::<Vec<_>>(), [(0, 2.0)]);
    }
}
