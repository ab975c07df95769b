//! Engine tests as scripts in Prometheus' test-script notation (`load`, `eval instant at`,
//! `eval_fail`, `eval_ordered`, `clear`), so cases read like the language's own documentation.
//! Our scripts live in `query/testdata/`. Each instant evaluation is also run as a range query
//! around its time, and the two must agree.
//!
//! `ARGUS_PROMQL_SCRIPTS=<dir> cargo test -p argus-store scripts_from_env -- --ignored` runs
//! every `*.test` file of another directory through the same interpreter.

use super::{QueryLimits, Value};
use crate::{Db, Options};
use argus_model::{Labels, MatchOp, Sample};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const STALE: f64 = f64::from_bits(super::STALE_NAN_BITS);

struct Script {
    dir: tempfile::TempDir,
    db: Db,
}

fn open(dir: &Path) -> Db {
    let mut o = Options::new(dir);
    // Scripts load samples from 1970 on: retention must reach back that far.
    o.retention = Duration::from_secs(200 * 365 * 86_400);
    Db::open(o).expect("open db")
}

fn duration_ms(s: &str) -> i64 {
    if s.trim_end_matches(|c: char| c.is_ascii_alphabetic()) == "0" {
        return 0;
    }
    promql_parser::util::parse_duration(s).unwrap_or_else(|e| panic!("bad duration {s:?}: {e}")).as_millis() as i64
}

/// `metric{a="b"}` → labels, through the PromQL parser's selector syntax.
fn labels_of(s: &str) -> Labels {
    if s.trim() == "{}" {
        return Labels::default();
    }
    let e = crate::query::parse_expr(s).unwrap_or_else(|e| panic!("bad series {s:?}: {e}"));
    let promql_parser::parser::Expr::VectorSelector(vs) = e else { panic!("not a series: {s}") };
    let ms = super::matchers_of(&vs).unwrap_or_else(|_| {
        // `{}` (no labels) is a valid expected result though not a valid selector.
        Vec::new()
    });
    assert!(ms.iter().all(|m| m.op == MatchOp::Equal), "series must use = only: {s}");
    Labels::from_pairs(ms.into_iter().map(|m| (m.name, m.value)))
}

/// Splits `metric{a="b, c"} 1 2` into the series part and the rest.
fn split_series(line: &str) -> (&str, &str) {
    let line = line.trim();
    let end = match line.find('{') {
        Some(open) if line[..open].chars().all(|c| !c.is_whitespace()) => {
            let mut in_str = false;
            let mut esc = false;
            let mut close = line.len();
            for (i, c) in line.char_indices().skip(open) {
                match c {
                    _ if esc => esc = false,
                    '\\' => esc = true,
                    '"' => in_str = !in_str,
                    '}' if !in_str => {
                        close = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            close
        }
        _ => line.find(char::is_whitespace).unwrap_or(line.len()),
    };
    (&line[..end], line[end..].trim())
}

fn number(s: &str) -> f64 {
    match s.to_ascii_lowercase().trim_start_matches('+') {
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        "nan" => f64::NAN,
        "stale" => STALE,
        t => t.parse().unwrap_or_else(|_| panic!("bad number {s:?}")),
    }
}

/// Values of a series description: `1 2 _ stale 0+10x4 1-1x2 _x3 5x2`.
fn expand(desc: &str) -> Vec<Option<f64>> {
    let mut out = Vec::new();
    for item in desc.split_whitespace() {
        let Some((head, times)) = item.split_once('x') else {
            out.push(if item == "_" { None } else { Some(number(item)) });
            continue;
        };
        let n: usize = times.parse().unwrap_or_else(|_| panic!("bad repeat {item:?}"));
        if head == "_" {
            out.extend(std::iter::repeat_n(None, n));
            continue;
        }
        // `a+b` or `a-b`: the sign after the first character splits start and increment.
        let split = head.char_indices().skip(1).find(|(_, c)| *c == '+' || *c == '-').map(|(i, _)| i);
        let (mut v, inc) = match split {
            Some(i) if !head[..i].ends_with(['e', 'E']) => (number(&head[..i]), number(&head[i..])),
            _ => (number(head), 0.0),
        };
        for _ in 0..=n {
            out.push(Some(v));
            v += inc;
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || ((a - b).abs() / a.abs().max(b.abs())) < 1e-9
}

type Expected = Vec<(Labels, f64)>;

fn show(v: &Value) -> String {
    match v {
        Value::Vector(v) => v.iter().map(|(l, s)| format!("{l} {}", s.v)).collect::<Vec<_>>().join("\n"),
        Value::Scalar(s) => format!("scalar {}", s.v),
        other => format!("{other:?}"),
    }
}

fn compare(got: &Value, want: &Expected, ordered: bool) -> Result<(), String> {
    let got: Vec<(Labels, f64)> = match got {
        Value::Vector(v) => v.iter().map(|(l, s)| ((**l).clone(), s.v)).collect(),
        Value::Scalar(s) => vec![(Labels::default(), s.v)],
        other => return Err(format!("unexpected result {other:?}")),
    };
    if got.len() != want.len() {
        return Err(format!("expected {} elements, got {}", want.len(), got.len()));
    }
    if ordered {
        for (g, w) in got.iter().zip(want) {
            if g.0 != w.0 || !close(g.1, w.1) {
                return Err(format!("expected {} {} in order, got {} {}", w.0, w.1, g.0, g.1));
            }
        }
        return Ok(());
    }
    let mut g: BTreeMap<Labels, f64> = got.into_iter().collect();
    for (l, v) in want {
        match g.remove(l) {
            Some(x) if close(x, *v) => {}
            Some(x) => return Err(format!("expected {l} {v}, got {x}")),
            None => return Err(format!("expected {l} {v}, missing")),
        }
    }
    Ok(())
}

// === impl Script ===

impl Script {
    fn new() -> Script {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        Script { dir, db }
    }

    fn clear(&mut self) {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = std::mem::replace(&mut self.db, open(dir.path()));
        old.close();
        self.dir = dir;
    }

    /// Runs a script; returns the failures, each with its line number.
    fn run(&mut self, text: &str) -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let mut failures = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i].trim();
            i += 1;
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line == "clear" {
                self.clear();
            } else if let Some(step) = line.strip_prefix("load ") {
                let step = duration_ms(step.trim());
                let mut batch = Vec::new();
                while i < lines.len() && !lines[i].trim().is_empty() {
                    let (series, values) = split_series(lines[i]);
                    let samples: Vec<Sample> = expand(values)
                        .into_iter()
                        .enumerate()
                        .filter_map(|(k, v)| v.map(|v| Sample::new(k as i64 * step, v)))
                        .collect();
                    batch.push((labels_of(series), samples));
                    i += 1;
                }
                self.db.write_series(&batch).expect("load");
            } else if let Some(rest) = line.strip_prefix("eval") {
                let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                let rest = rest.trim().strip_prefix("instant at ").unwrap_or_else(|| panic!("line {i}: {line}"));
                let (at, query) = rest.split_once(' ').unwrap_or((rest, ""));
                let t = duration_ms(at);
                let mut want = Vec::new();
                while i < lines.len() && !lines[i].trim().is_empty() {
                    let l = lines[i].trim();
                    let (series, value) = split_series(l);
                    if value.is_empty() {
                        want.push((Labels::default(), number(series)));
                    } else {
                        want.push((labels_of(series), number(value)));
                    }
                    i += 1;
                }
                if let Err(e) = self.eval(kind, t, query, &want) {
                    failures.push(format!("line {i}: {query}: {e}"));
                }
            } else {
                panic!("line {i}: unknown command {line:?}");
            }
        }
        failures
    }

    fn eval(&self, kind: &str, t: i64, query: &str, want: &Expected) -> Result<(), String> {
        let limits = QueryLimits::default();
        let got = super::instant(&self.db, query, t, &limits);
        if kind == "_fail" {
            return match got {
                Ok(v) => Err(format!("expected an error, got {}", show(&v))),
                Err(_) => Ok(()),
            };
        }
        let got = got.map_err(|e| format!("error: {e}"))?;
        compare(&got, want, kind == "_ordered")?;
        // The same query as a range query around t must give the same answer at t.
        if matches!(got, Value::Vector(_) | Value::Scalar(_)) {
            let r = super::range(&self.db, query, t - 60_000, t + 60_000, 60_000, &limits)
                .map_err(|e| format!("range query error: {e}"))?;
            let Value::Matrix(m) = r else { return Err("range query gave no matrix".into()) };
            let at_t: Vec<(std::sync::Arc<Labels>, Sample)> =
                m.into_iter().filter_map(|(l, s)| s.into_iter().find(|x| x.t == t).map(|x| (l, x))).collect();
            let as_vector = match got {
                Value::Scalar(_) => Value::Vector(at_t.into_iter().map(|(_, s)| (Default::default(), s)).collect()),
                _ => Value::Vector(at_t),
            };
            compare(&as_vector, want, false).map_err(|e| format!("as a range query: {e}"))?;
        }
        Ok(())
    }
}

fn run_file(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("read script");
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Script::new().run(&text).into_iter().map(|f| format!("{name} {f}")).collect()
}

#[test]
fn scripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/query/testdata");
    let mut failures = Vec::new();
    let mut files = 0;
    for e in std::fs::read_dir(&dir).expect("testdata dir") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "test") {
            files += 1;
            failures.extend(run_file(&p));
        }
    }
    assert!(files > 0, "no scripts in {}", dir.display());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs ARGUS_PROMQL_SCRIPTS pointing at a directory of scripts"]
fn scripts_from_env() {
    let dir = std::env::var("ARGUS_PROMQL_SCRIPTS").expect("ARGUS_PROMQL_SCRIPTS");
    let mut failures = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("dir").map(|e| e.expect("entry").path()).collect();
    paths.sort();
    for p in paths.into_iter().filter(|p| p.extension().is_some_and(|x| x == "test")) {
        failures.extend(run_file(&p));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn series_descriptions_expand() {
    let v = expand("1 _ stale 0+10x2 5-1x1 _x2 7x1 -2+1x1");
    let shown: Vec<String> = v.iter().map(|x| x.map_or("_".into(), |f| f.to_string())).collect();
    assert_eq!(shown.join(" "), "1 _ NaN 0 10 20 5 4 _ _ 7 7 -2 -1");
}

#[test]
fn an_out_of_range_offset_is_an_error_not_a_panic() {
    // Found by fuzzing: the parser's grammar action panics converting this many seconds to a Duration.
    let q = format!("up offset 5{}0", "9".repeat(60));
    let e = crate::query::check(&q).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
    for q in [
        "up[2e50]",
        "up offset Inf",
        "up offset -NaN",
        "up[5m:1e300]",
        "rate(up[999999999999999y])",
        "up offset 1000000000000000000ms",
    ] {
        let e = crate::query::check(q).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{q}: {e}");
    }
    // Numbers elsewhere, strings and ordinary durations are left alone.
    for q in
        ["up > 1e300", "up{a=\"[1e300]\"} offset 5m", "up[5m:30s] offset 1h", "up offset 300", "up[90s]", "x:y:z[5m]"]
    {
        crate::query::check(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}
