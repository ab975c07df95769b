//! The Prometheus text exposition format (0.0.4) and OpenMetrics 1.0 text, read into flat samples:
//! every line keeps its own name, so a histogram stays its `_bucket`/`_sum`/`_count` series and a
//! summary its quantiles, `_sum` and `_count`, exactly as Prometheus stores them.
//!
//! Written here rather than taken from a crate: `prometheus-parse` (0.2.5) splits label pairs on `,`
//! and `=` (a value holding either is corrupted, escapes are not undone), folds histograms into one
//! value and needs chrono; `openmetrics-parser` is LGPL-3.0 (this workspace is Apache-2.0) and reads
//! OpenMetrics only. What is needed is small: lines, labels with escapes, Go float spellings.
//!
//! As in Prometheus, one malformed line fails the whole scrape; comments (`# HELP`, `# TYPE`, `# UNIT`),
//! exemplars and `# EOF` are skipped; timestamps are read but the collector stamps the scrape time.

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// In exposition order.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// Why a body is not a valid exposition: the 1-based line and what is wrong.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    pub line: usize,
    pub reason: String,
}

/// Every sample of a body, or the first malformed line.
pub fn parse(body: &str) -> Result<Vec<Sample>, ParseError> {
    let mut out = Vec::new();
    for (i, raw) in body.lines().enumerate() {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(sample(line).map_err(|reason| ParseError { line: i + 1, reason })?);
    }
    Ok(out)
}

fn sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("no metric name at {:?}", truncate(line)));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = label_pairs(r, &mut labels)?;
    }
    // An OpenMetrics exemplar follows " # "; it is not part of the sample.
    let rest = rest.split_once(" # ").map_or(rest, |(s, _)| s);
    let mut parts = rest.split_ascii_whitespace();
    let value = parts.next().ok_or_else(|| format!("{name}: no value"))?;
    let value = float(value).ok_or_else(|| format!("{name}: {value:?} is not a number"))?;
    if let Some(ts) = parts.next() {
        float(ts).ok_or_else(|| format!("{name}: {ts:?} is not a timestamp"))?;
    }
    if let Some(extra) = parts.next() {
        return Err(format!("{name}: unexpected {extra:?} after the timestamp"));
    }
    Ok(Sample { name: name.to_string(), labels, value })
}

/// Reads `name="value",…}` and returns what follows the closing brace.
fn label_pairs<'a>(mut s: &'a str, out: &mut Vec<(String, String)>) -> Result<&'a str, String> {
    loop {
        s = s.trim_start();
        if let Some(r) = s.strip_prefix('}') {
            return Ok(r);
        }
        let eq = s.find('=').ok_or("label without '='")?;
        let name = s[..eq].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("bad label name {name:?}"));
        }
        let r = s[eq + 1..].trim_start().strip_prefix('"').ok_or_else(|| format!("label {name}: value not quoted"))?;
        let mut value = String::new();
        let mut chars = r.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err(format!("label {name}: unterminated value")),
                },
                Some((_, c)) => value.push(c),
                None => return Err(format!("label {name}: unterminated value")),
            }
        };
        out.push((name.to_string(), value));
        s = r[end + 1..].trim_start();
        s = s.strip_prefix(',').unwrap_or(s);
    }
}

/// Go's float spellings as Prometheus writes them: `+Inf`, `-Inf`, `NaN`, and plain numbers.
fn float(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok().filter(|_| !s.eq_ignore_ascii_case("inf") && !s.eq_ignore_ascii_case("nan")),
    }
}

fn truncate(s: &str) -> &str {
    let end = (0..=s.len().min(40)).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect: expect_test::Expect) {
        let got = match parse(input) {
            Ok(v) => v.iter().map(|s| format!("{} {:?} {}", s.name, s.labels, s.value)).collect::<Vec<_>>().join("\n"),
            Err(e) => format!("error: {e}"),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn samples_labels_and_escapes() {
        check("up 1", expect_test::expect![[r#"up [] 1"#]]);
        check(
            r#"vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0"#,
            expect_test::expect![[
                r#"vllm:num_requests_running [("model_name", "meta-llama/Llama-3.1-8B-Instruct")] 3"#
            ]],
        );
        check(
            r#"x{a="1,b=2", q="say \"hi\"\n", } 2 1700000000000"#,
            expect_test::expect![[r#"x [("a", "1,b=2"), ("q", "say \"hi\"\n")] 2"#]],
        );
        check(
            "h_bucket{le=\"+Inf\"} 7\nh_sum NaN\nh_count +Inf\ng -Inf",
            expect_test::expect![[r#"
                h_bucket [("le", "+Inf")] 7
                h_sum [] NaN
                h_count [] inf
                g [] -inf"#]],
        );
        check(
            "# TYPE c counter\n# HELP c Requests.\nc_total 5 # {trace_id=\"abc\"} 1.0 1700000000.1\nc_created 1.7e9\n# EOF\n",
            expect_test::expect![[r#"
                c_total [] 5
                c_created [] 1700000000"#]],
        );
    }

    #[test]
    fn malformed_lines_fail_the_scrape() {
        check("ok 1\nbad{a=\"1\"}", expect_test::expect!["error: line 2: bad: no value"]);
        check("x{a=1} 2", expect_test::expect!["error: line 1: label a: value not quoted"]);
        check("x{a=\"1} 2", expect_test::expect!["error: line 1: label a: unterminated value"]);
        check("x one", expect_test::expect![[r#"error: line 1: x: "one" is not a number"#]]);
        check("x 1 2 3", expect_test::expect![[r#"error: line 1: x: unexpected "3" after the timestamp"#]]);
        check("{a=\"1\"} 2", expect_test::expect![[r#"error: line 1: no metric name at "{a=\"1\"} 2""#]]);
    }
}
