//! Differential test of PromQL: the same data goes by remote write into a real Prometheus 2.42 (from
//! Debian, started here on loopback) and into `argus serve`; every query of tests/it/promql_diff/corpus.txt runs
//! on both through the HTTP API, and the answers must agree (status, `resultType`, series, timestamps
//! exactly, values within 1e-9 relative), except for the deliberate deviations of docs/promql.md.
//!
//! The corpus is also checked against Prometheus alone, so it cannot rot: every query Prometheus must
//! accept is accepted, every `error` query refused, every `empty` query empty and every other one not.
//!
//! Skipped with a message when `prometheus` is not installed (scripts/install-peers.sh installs it).
//! Environment:
//! - `PROMQL_DIFF_REPORT=FILE` also writes the report to FILE (bench/promql_diff.sh does);
//! - `PROMQL_DIFF_ONLY=TEXT` runs only the queries whose text or area contains TEXT;
//! - `PROMQL_DIFF_DUMP=DIR` writes both raw answers of each differing query to
//!   `DIR/<corpus line>.{prometheus,argus}.json`.

mod answer;
mod corpus;
mod data;
mod prometheus;
mod report;
use crate::support::server;

use answer::Answer;
use corpus::{Case, When, secs};
use prometheus::Prometheus;
use report::Outcome;
use reqwest::blocking::Client;
use std::time::{Duration, Instant};

const CORPUS: &str = include_str!("promql_diff/corpus.txt");
const DOCS: &str = include_str!("../../docs/promql.md");
/// Remote-write requests each carry this much time of every series.
const SLICE_MS: i64 = 10 * data::MINUTE;

#[test]
fn promql_answers_match_prometheus() {
    let Some(version) = Prometheus::version() else {
        argus_testkit::missing_peer(&argus_testkit::Missing(
            "prometheus is not installed (run scripts/install-peers.sh)".into(),
        ));
        return;
    };
    let started = Instant::now();
    let cases = selected(corpus::parse(CORPUS).expect("corpus parses"));
    // A whole hour, data ending 2 to 62 minutes before now: alignment to steps that divide an hour is
    // the same on every run, and both servers take the samples as recent.
    let hour = 3_600_000;
    let base = (server::now_ms() - data::SPAN_MS - 2 * data::MINUTE).div_euclid(hour) * hour;

    let prom = Prometheus::start();
    let argus = server::Server::start();
    let http = Client::builder().no_proxy().timeout(Duration::from_secs(60)).build().expect("http client");

    let series = data::all();
    let loaded = load(&http, &[prom.base(), argus.base()], &series, base);
    check_prometheus_holds(&http, prom.base(), &series, base);
    let load_s = started.elapsed().as_secs_f64();

    let dump = std::env::var_os("PROMQL_DIFF_DUMP").map(std::path::PathBuf::from);
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    }
    let outcomes: Vec<Outcome> = cases
        .into_iter()
        .map(|case| {
            let sent = corpus::resolve(&case.query, base).expect("placeholders checked at parse");
            let (p, p_body) = ask_raw(&http, prom.base(), &sent, case.when, base);
            let (a, a_body) = ask_raw(&http, argus.base(), &sent, case.when, base);
            let outcome = Outcome::new(case, sent, p, a, base);
            if let Some(dir) = &dump
                && !outcome.equal()
            {
                for (who, body) in [("prometheus", p_body), ("argus", a_body)] {
                    let path = dir.join(format!("{}.{who}.json", outcome.case.line));
                    std::fs::write(&path, body).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
                }
            }
            outcome
        })
        .collect();

    let problems = report::corpus_problems(&outcomes, &report::documented_deviations(DOCS), base);
    let mut header = format!(
        "PromQL differential report: {version} against argus {} ({} series, \
         {loaded} samples from T = {} over {} min; load {load_s:.1} s, queries {:.1} s)",
        env!("CARGO_PKG_VERSION"),
        series.len(),
        secs(base),
        data::SPAN_MS / data::MINUTE,
        started.elapsed().as_secs_f64() - load_s,
    );
    if !version.contains(" 2.42.") {
        header.push_str("\nWARNING: the reference is Prometheus 2.42; other versions answer some queries differently");
    }
    let text = report::render(&outcomes, &header, &problems);
    println!("{text}");
    if let Ok(path) = std::env::var("PROMQL_DIFF_REPORT") {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("write {path}: {e}"));
    }

    assert!(problems.is_empty(), "the corpus does not fit Prometheus' answers (see CORPUS PROBLEMS above)");
    let totals = report::totals(&outcomes);
    assert_eq!(totals.differ, 0, "{} (see the DIFF lines above)", report::summary_line(&totals));
}

/// The corpus, narrowed by `PROMQL_DIFF_ONLY`.
fn selected(cases: Vec<Case>) -> Vec<Case> {
    match std::env::var("PROMQL_DIFF_ONLY") {
        Ok(only) if !only.is_empty() => {
            cases.into_iter().filter(|c| c.query.contains(&only) || c.area.contains(&only)).collect()
        }
        _ => cases,
    }
}

/// Sends every batch to every server in time order; returns the number of samples, stale markers
/// included.
fn load(http: &Client, bases: &[&str], series: &[data::Series], base: i64) -> usize {
    let mut samples = 0;
    for batch in data::batches(series, base, SLICE_MS) {
        samples += batch.iter().map(|s| s.samples.len()).sum::<usize>();
        let body = argus_store::remote_write::encode(&batch).expect("encode remote write");
        for b in bases {
            let r = http
                .post(format!("{b}/api/v1/write"))
                .header("Content-Encoding", "snappy")
                .header("Content-Type", "application/x-protobuf")
                .header("X-Prometheus-Remote-Write-Version", "0.1.0")
                .body(body.clone())
                .send()
                .unwrap_or_else(|e| panic!("remote write to {b}: {e}"));
            let status = r.status().as_u16();
            assert!((200..300).contains(&status), "remote write to {b}: {status} {}", r.text().unwrap_or_default());
        }
    }
    samples
}

/// Proves the harness loaded what it generated: Prometheus answers every series with exactly its
/// samples (stale markers are not samples in a range vector).
fn check_prometheus_holds(http: &Client, prom: &str, series: &[data::Series], base: i64) {
    let window = data::SPAN_MS / data::MINUTE + 1;
    let q = format!("{{__name__=~\".+\"}}[{window}m]");
    let held = match ask(http, prom, &q, When::Instant { t: data::SPAN_MS }, base) {
        Answer::Series { series, .. } => series,
        other => panic!("{q} on Prometheus: {}", other.summary(base)),
    };
    assert_eq!(held.len(), series.len(), "Prometheus holds every generated series");
    for s in series {
        let metric: answer::Metric = s.labels.iter().cloned().collect();
        let expected: Vec<(i64, f64)> =
            s.samples.iter().filter(|(_, v)| v.to_bits() != data::STALE_NAN).map(|&(t, v)| (base + t, v)).collect();
        let got = held.iter().find(|h| h.0 == metric).map(|h| &h.1);
        let got = got.unwrap_or_else(|| panic!("Prometheus lacks {}", answer::fmt_m(&metric)));
        let same = got.len() == expected.len()
            && got.iter().zip(&expected).all(|(g, e)| g.0 == e.0 && answer::same_value(g.1, e.1));
        assert!(
            same,
            "Prometheus holds {} as generated: {} samples, {} expected",
            answer::fmt_m(&metric),
            got.len(),
            expected.len()
        );
    }
}

/// One query against one server.
fn ask(http: &Client, server: &str, query: &str, when: When, base: i64) -> Answer {
    ask_raw(http, server, query, when, base).0
}

/// One query against one server: the answer and the body as received.
fn ask_raw(http: &Client, server: &str, query: &str, when: When, base: i64) -> (Answer, String) {
    let url = match when {
        When::Instant { t } => {
            format!("{server}/api/v1/query?query={}&time={}", server::enc(query), secs(base + t))
        }
        When::Range { start, end, step } => format!(
            "{server}/api/v1/query_range?query={}&start={}&end={}&step={}",
            server::enc(query),
            secs(base + start),
            secs(base + end),
            step as f64 / 1000.0
        ),
    };
    match http.get(&url).send() {
        Ok(r) => {
            let status = r.status().as_u16();
            let body = r.text().unwrap_or_default();
            (Answer::parse(status, &body), body)
        }
        Err(e) => (Answer::Malformed { status: 0, why: format!("request failed: {e}") }, String::new()),
    }
}

// === the harness' own tests ===

#[test]
fn values_compare_within_tolerance_with_nan_and_infinities() {
    use answer::same_value;
    assert!(same_value(1.0, 1.0 + 1e-12));
    assert!(!same_value(1.0, 1.0 + 1e-6));
    assert!(same_value(f64::NAN, f64::NAN));
    assert!(!same_value(f64::NAN, 0.0));
    assert!(same_value(f64::INFINITY, f64::INFINITY));
    assert!(!same_value(f64::INFINITY, f64::NEG_INFINITY));
    assert!(!same_value(f64::INFINITY, f64::MAX));
    assert!(!same_value(0.0, 1e-17), "no absolute floor");
    assert!(same_value(0.0, -0.0));
    assert_eq!(answer::parse_value("+Inf").expect("+Inf"), f64::INFINITY);
    assert_eq!(answer::parse_value("-Inf").expect("-Inf"), f64::NEG_INFINITY);
    assert!(answer::parse_value("NaN").expect("NaN").is_nan());
    assert_eq!(answer::parse_value("1e-300").expect("tiny"), 1e-300);
}

#[test]
fn answers_differ_where_they_should() {
    let vector = |body: &str| Answer::parse(200, body);
    let a = vector(
        r#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"a":"1"},"value":[100,"1"]},{"metric":{"a":"2"},"value":[100,"NaN"]}]}}"#,
    );
    let swapped = vector(
        r#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"a":"2"},"value":[100,"NaN"]},{"metric":{"a":"1"},"value":[100,"1.0000000000001"]}]}}"#,
    );
    assert!(answer::compare(&a, &swapped, false, 0).is_empty(), "order and tiny errors do not matter");
    assert!(!answer::compare(&a, &swapped, true, 0).is_empty(), "order matters when ordered");
    let other_time = vector(
        r#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"a":"1"},"value":[100.001,"1"]},{"metric":{"a":"2"},"value":[100,"NaN"]}]}}"#,
    );
    assert!(answer::compare(&a, &other_time, false, 0)[0].contains("point 0"), "timestamps exactly");
    let missing = vector(
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[100,"1"]}]}}"#,
    );
    let d = answer::compare(&a, &missing, false, 0);
    assert!(d.iter().any(|l| l.contains("missing in argus (1): {a=\"2\"}")), "{d:?}");
    let matrix = vector(r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#);
    assert!(
        !answer::compare(
            &matrix,
            &vector(r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#),
            false,
            0
        )
        .is_empty()
    );
    let e1 = Answer::parse(400, r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#);
    let e2 = Answer::parse(400, r#"{"status":"error","errorType":"bad_data","error":"other words"}"#);
    let e3 = Answer::parse(422, r#"{"status":"error","errorType":"execution","error":"x"}"#);
    assert!(answer::compare(&e1, &e2, false, 0).is_empty(), "errors agree on errorType, not wording");
    assert!(!answer::compare(&e1, &e3, false, 0).is_empty());
    assert!(!answer::compare(&a, &Answer::parse(200, "not json"), false, 0).is_empty());
    let s1 = Answer::parse(200, r#"{"status":"success","data":{"resultType":"scalar","result":[100,"+Inf"]}}"#);
    let s2 = Answer::parse(200, r#"{"status":"success","data":{"resultType":"scalar","result":[100,"-Inf"]}}"#);
    assert!(answer::compare(&s1, &s1, false, 0).is_empty());
    assert!(!answer::compare(&s1, &s2, false, 0).is_empty());
}

#[test]
fn corpus_lines_parse_with_flags_times_and_placeholders() {
    let cases = corpus::parse(
        "## area one\n# comment\nordered instant 90m sort(x)\n\
         deviation:why error range -1h 2h30m 17s rate(x[5m] @ ${T+60m0s500ms}) + label_replace(y, \"a\", \"${1}\", \"b\", \"(.*)\")\nempty instant 0 y\n",
    )
    .expect("parses");
    assert_eq!(cases.len(), 3);
    assert_eq!(cases[0].area, "area one");
    assert!(cases[0].flags.ordered);
    assert_eq!(cases[0].when, When::Instant { t: 90 * 60_000 });
    assert_eq!(cases[1].flags.deviation.as_deref(), Some("why"));
    assert!(cases[1].flags.error);
    assert_eq!(cases[1].when, When::Range { start: -3_600_000, end: 9_000_000, step: 17_000 });
    assert_eq!(
        corpus::resolve(&cases[1].query, 1_000_000).expect("resolves"),
        "rate(x[5m] @ 4600.500) + label_replace(y, \"a\", \"${1}\", \"b\", \"(.*)\")"
    );
    assert!(cases[2].flags.empty);
    assert!(corpus::parse("instant 5x q").is_err());
    assert!(corpus::parse("instant 5m").is_err());
    assert!(corpus::parse("sorted instant 5m q").is_err());
    assert!(corpus::parse("instant 5m q @ ${T+1h").is_err());
    assert_eq!(corpus::resolve("@ ${T-1s}", 5_000).expect("resolves"), "@ 4.000");
    assert_eq!(corpus::show_offset(-(90 * 60_000 + 1_500)), "-90m1s500ms");
}

#[test]
fn the_corpus_is_large_and_documented() {
    let cases = corpus::parse(CORPUS).expect("corpus parses");
    assert!(cases.len() >= 150, "the issue asks for at least 150 queries, the corpus has {}", cases.len());
    let ranges = cases.iter().filter(|c| matches!(c.when, When::Range { .. })).count();
    assert!(ranges >= 40, "{ranges} range queries");
    let documented = report::documented_deviations(DOCS);
    assert!(documented.len() <= 3, "at most three deliberate deviations: {documented:?}");
    for c in &cases {
        if let Some(id) = &c.flags.deviation {
            assert!(documented.contains(id), "corpus line {}: deviation {id} not in docs/promql.md", c.line);
        }
    }
    assert_eq!(
        report::documented_deviations("## Deviations from Prometheus\n### `a-b`: why\n### TODO\n## Next\n### c\n"),
        vec!["a-b".to_string()]
    );
}

#[test]
fn the_report_shows_each_difference_briefly() {
    let base = 1_700_000_000_000;
    let case = |line: usize, area: &str, when: When, query: &str| Case {
        line,
        area: area.to_string(),
        flags: corpus::Flags::default(),
        when,
        query: query.to_string(),
    };
    let vector = |result: &str| {
        Answer::parse(200, &format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{result}]}}}}"#))
    };
    let matrix = |result: &str| {
        Answer::parse(200, &format!(r#"{{"status":"success","data":{{"resultType":"matrix","result":[{result}]}}}}"#))
    };
    let at90 = When::Instant { t: 90 * 60_000 };
    let one = r#"{"metric":{"host":"a"},"value":[1700005400,"2.5"]}"#;
    let refused = Answer::parse(422, r#"{"status":"error","errorType":"execution","error":"not supported"}"#);
    let series = |host: &str, values: &str| format!(r#"{{"metric":{{"host":"{host}"}},"values":[{values}]}}"#);
    let outcomes = vec![
        Outcome::new(case(10, "rate", at90, "rate(x[5m])"), "rate(x[5m])".into(), vector(one), refused, base),
        Outcome::new(
            case(11, "rate", at90, "x @ ${T+1m}"),
            "x @ 1700000060.000".into(),
            vector(one),
            vector(one),
            base,
        ),
        Outcome::new(
            case(12, "sums", When::Range { start: 0, end: 60_000, step: 30_000 }, "sum by (host) (x)"),
            "sum by (host) (x)".into(),
            matrix(
                &[series("a", r#"[1700000000,"1"],[1700000030,"2"]"#), series("b", r#"[1700000000,"1"]"#)].join(","),
            ),
            matrix(&series("a", r#"[1700000000,"1"],[1700000030,"2.1"]"#)),
            base,
        ),
        Outcome::new(
            Case { flags: corpus::Flags { error: true, ..Default::default() }, ..case(13, "errors", at90, "x > 1") },
            "x > 1".into(),
            vector(""),
            vector(""),
            base,
        ),
    ];
    let problems = report::corpus_problems(&outcomes, &[], base);
    expect_test::expect![[r#"
        header

        | area | queries | equal | differ | of which argus refused |
        |---|---:|---:|---:|---:|
        | rate | 2 | 1 | 1 | 1 |
        | sums | 1 | 0 | 1 | 0 |
        | errors | 1 | 1 | 0 | 0 |

        DIFF corpus.txt:10 [rate] instant 90m  rate(x[5m])
            prometheus: success vector, 1 series, 1 points
            argus:      error 422 execution: not supported
        DIFF corpus.txt:12 [sums] range 0 1m 30s  sum by (host) (x)
            series: prometheus 2, argus 1
              missing in argus (1): {host="b"}
            values: 1 of 1 common series differ; first {host="a"}: at T+30s: prometheus 2, argus 2.1 (rel 5.0e-2)

        CORPUS PROBLEMS (checked against Prometheus alone):
            corpus.txt:13 instant 90m  x > 1: marked error, but Prometheus answered success vector, 0 series, 0 points

        promql_diff: 4 queries, 2 equal, 2 differ (0 allow-listed deviations); 1 empty on Prometheus (25 %)
    "#]]
    .assert_eq(&report::render(&outcomes, "header", &problems));
}
