//! Matchers and a time range as a Flux query.
//!
//! Names: a series `{measurement}_{field}` (as our ingest and VictoriaMetrics name line-protocol
//! fields). `__name__="a_b_c"` becomes the splits it could come from, `(m == "a" and f == "b_c") or
//! (m == "a_b" and f == "c")`, which InfluxDB can push down to its index; the other name matchers
//! compare `r._measurement + "_" + r._field`. Labels are tags. PromQL semantics are kept: regexes are
//! anchored, and a matcher that matches the empty string also selects series without the tag.

use argus_model::{METRIC_NAME, MatchOp, Matcher};
use std::time::{Duration, UNIX_EPOCH};

/// The latest instant Flux time literals here are written for: 9999-12-31T23:59:59.999Z.
const MAX_MS: i64 = 253_402_300_799_999;

/// `from |> range |> filter`: the samples in `[start, end]` of the series the matchers select.
pub(super) fn select(bucket: &str, matchers: &[Matcher], start: i64, end: i64) -> String {
    format!(
        "from(bucket: {})\n  |> range(start: {}, stop: {})\n  |> filter(fn: (r) => {})\n  |> drop(columns: [\"_start\", \"_stop\"])",
        string(bucket),
        time(start),
        // `stop` is exclusive.
        time(end.saturating_add(1)),
        filter(matchers)
    )
}

/// The predicate of `filter`: every matcher's condition, joined by `and`.
pub(super) fn filter(matchers: &[Matcher]) -> String {
    if matchers.is_empty() {
        return "true".into();
    }
    matchers.iter().map(condition).collect::<Vec<_>>().join(" and ")
}

fn condition(m: &Matcher) -> String {
    if m.name == METRIC_NAME {
        return match m.op {
            MatchOp::Equal => name_equals(&m.value),
            MatchOp::NotEqual => format!("{NAME} != {}", string(&m.value)),
            MatchOp::RegexMatch => format!("{NAME} =~ {}", regex(&m.value)),
            MatchOp::RegexNoMatch => format!("{NAME} !~ {}", regex(&m.value)),
        };
    }
    let key = format!("r[{}]", string(&m.name));
    let cond = match m.op {
        MatchOp::Equal => format!("{key} == {}", string(&m.value)),
        MatchOp::NotEqual => format!("{key} != {}", string(&m.value)),
        MatchOp::RegexMatch => format!("{key} =~ {}", regex(&m.value)),
        MatchOp::RegexNoMatch => format!("{key} !~ {}", regex(&m.value)),
    };
    // A missing tag reads as "" in PromQL, as null in Flux; say what PromQL means.
    if m.matches_empty() { format!("(not exists {key} or {cond})") } else { cond }
}

/// A series name in Flux: measurement and field joined as the name mapping joins them.
const NAME: &str = r#"(r._measurement + "_" + r._field)"#;

fn name_equals(name: &str) -> String {
    let b = name.as_bytes();
    let splits: Vec<String> = (1..b.len().saturating_sub(1))
        .filter(|&i| b[i] == b'_')
        // `_` is ASCII, so `i` and `i + 1` are char boundaries.
        .map(|i| format!("(r._measurement == {} and r._field == {})", string(&name[..i]), string(&name[i + 1..])))
        .collect();
    match splits.len() {
        // No measurement and field join to this name.
        0 => "false".into(),
        1 => splits.concat(),
        _ => format!("({})", splits.join(" or ")),
    }
}

/// A Flux string literal.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // `${` starts an interpolation in Flux strings.
            '$' if chars.peek() == Some(&'{') => out.push_str("\\$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Flux regex literal, anchored as PromQL anchors matchers (both are RE2 syntax).
fn regex(re: &str) -> String {
    let mut out = String::with_capacity(re.len() + 10);
    out.push_str("/^(?s:");
    let mut chars = re.chars();
    while let Some(c) = chars.next() {
        match c {
            // An escape stays as it is, `\/` included.
            '\\' => {
                out.push('\\');
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '/' => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push_str(")$/");
    out
}

/// A Flux time literal in UTC with milliseconds, clamped to years 1970–9999.
fn time(ms: i64) -> String {
    // In range, so humantime neither panics (before 1970) nor fails (after 9999).
    let ms = ms.clamp(0, MAX_MS) as u64;
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(matchers: &[(&str, MatchOp, &str)], want: Expect) {
        let ms: Vec<Matcher> = matchers.iter().map(|(n, op, v)| Matcher::new(*n, *op, *v).unwrap()).collect();
        want.assert_eq(&filter(&ms));
    }

    #[test]
    fn matchers_become_flux_predicates() {
        use MatchOp::*;
        check(&[("__name__", Equal, "gpu_util")], expect![[r#"(r._measurement == "gpu" and r._field == "util")"#]]);
        check(
            &[("__name__", Equal, "gpu_power_watts")],
            expect![[
                r#"((r._measurement == "gpu" and r._field == "power_watts") or (r._measurement == "gpu_power" and r._field == "watts"))"#
            ]],
        );
        check(&[("__name__", Equal, "up")], expect!["false"]);
        check(&[("__name__", NotEqual, "gpu_util")], expect![[r#"(r._measurement + "_" + r._field) != "gpu_util""#]]);
        check(
            &[("__name__", RegexMatch, "gpu_.*")],
            expect![[r#"(r._measurement + "_" + r._field) =~ /^(?s:gpu_.*)$/"#]],
        );
        check(
            &[("__name__", RegexNoMatch, "gpu_.*")],
            expect![[r#"(r._measurement + "_" + r._field) !~ /^(?s:gpu_.*)$/"#]],
        );
        check(&[("host", Equal, "a")], expect![[r#"r["host"] == "a""#]]);
        check(&[("host", Equal, "")], expect![[r#"(not exists r["host"] or r["host"] == "")"#]]);
        check(&[("host", NotEqual, "a")], expect![[r#"(not exists r["host"] or r["host"] != "a")"#]]);
        check(&[("host", NotEqual, "")], expect![[r#"r["host"] != """#]]);
        check(&[("host", RegexMatch, "a|b")], expect![[r#"r["host"] =~ /^(?s:a|b)$/"#]]);
        check(&[("host", RegexMatch, "a|")], expect![[r#"(not exists r["host"] or r["host"] =~ /^(?s:a|)$/)"#]]);
        check(&[("host", RegexNoMatch, "a.*")], expect![[r#"(not exists r["host"] or r["host"] !~ /^(?s:a.*)$/)"#]]);
        check(&[("host", RegexNoMatch, ".*")], expect![[r#"r["host"] !~ /^(?s:.*)$/"#]]);
        check(&[("path", RegexMatch, r"/a\/b\.c/")], expect![[r#"r["path"] =~ /^(?s:\/a\/b\.c\/)$/"#]]);
        check(&[("q", Equal, "say \"${x}\" \\ \n")], expect![[r#"r["q"] == "say \"\${x}\" \\ \n""#]]);
        check(
            &[("__name__", Equal, "gpu_util"), ("host", Equal, "a"), ("gpu", RegexMatch, "0|1")],
            expect![[
                r#"(r._measurement == "gpu" and r._field == "util") and r["host"] == "a" and r["gpu"] =~ /^(?s:0|1)$/"#
            ]],
        );
        check(&[], expect!["true"]);
    }

    #[test]
    fn a_select_is_from_range_filter() {
        let ms = [Matcher::eq("__name__", "gpu_util"), Matcher::eq("host", "a")];
        expect![[r#"
            from(bucket: "metrics")
              |> range(start: 2023-11-14T22:13:20.000Z, stop: 2023-11-14T22:13:30.001Z)
              |> filter(fn: (r) => (r._measurement == "gpu" and r._field == "util") and r["host"] == "a")
              |> drop(columns: ["_start", "_stop"])"#]]
        .assert_eq(&select("metrics", &ms, 1_700_000_000_000, 1_700_000_010_000));
    }

    #[test]
    fn times_are_clamped_to_what_flux_can_spell() {
        assert_eq!(time(-5), "1970-01-01T00:00:00.000Z");
        assert_eq!(time(i64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(time(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
