//! `argus test rules` against `promtool test rules` on the same files (tests/fixtures/promtool-tests/:
//! Prometheus' own promtool test files, public monitoring mixins' suites with their rendered rules,
//! and Argus' own): the same exit status and the same failing tests (the same report, byte for byte,
//! where no error is worded by either engine), each file run by both from its own directory.

use expect_test::expect;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each test file, from tests/fixtures/promtool-tests/, and the exit status both tools give it.
const CASES: &[(&str, i32)] = &[
    ("prometheus/unittest.yml", 0),
    ("prometheus/long-period.yml", 0),
    ("prometheus/at-modifier-test.yml", 0),
    ("prometheus/negative-offset-test.yml", 0),
    ("prometheus/failing.yml", 1),
    ("prometheus/bad-input-series.yml", 1),
    ("prometheus/bad-promql.yml", 1),
    ("prometheus/bad-rules-error-test.yml", 1),
    ("prometheus/bad-rules-syntax-test.yml", 1),
    ("argus/passing.yml", 0),
    ("argus/failing.yml", 1),
    ("etcd-mixin/test.yaml", 0),
    ("thanos-mixin/tests.yaml", 0),
    ("cert-manager-mixin/tests.yaml", 0),
    ("sealed-secrets-mixin/tests.yaml", 0),
    // Written for Prometheus 3, whose lookback and range windows leave out their first instant:
    // under 2.42 four `absent()` alerts fire a minute later.
    ("kubernetes-mixin/tests/absent_alert-test.yaml", 1),
    ("kubernetes-mixin/tests/apiserver-availability-test.yaml", 0),
    ("kubernetes-mixin/tests/apps_alerts-test.yaml", 0),
    ("kubernetes-mixin/tests/kube_scheduler-test.yaml", 0),
    ("kubernetes-mixin/tests/kubelet-test.yaml", 0),
    ("kubernetes-mixin/tests/resource_alerts-test.yaml", 0),
    ("kubernetes-mixin/tests/rules-pod-owner-test.yaml", 0),
];

/// Files as [`CASES`], whose long test groups (hours of evaluations at 1m) take minutes unoptimised.
const SLOW_CASES: &[(&str, i32)] = &[
    // Written for Prometheus 3's windows (see above): under 2.42 six alert tests see other alerts.
    ("kubernetes-mixin/tests/tests.yaml", 1),
    ("kubernetes-mixin-2023/tests.yaml", 0),
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/promtool-tests")
}

struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
}

/// Runs `program test rules FILES…` in the directory of the first file, as a user would.
fn run(program: &Path, files: &[&str]) -> Outcome {
    let first = fixtures().join(files[0]);
    let dir = first.parent().expect("fixture directory");
    let names: Vec<&str> = files.iter().map(|f| f.rsplit('/').next().unwrap_or(f)).collect();
    let out = Command::new(program).args(["test", "rules"]).args(&names).current_dir(dir).output().expect("run");
    Outcome {
        status: out.status.code().expect("exit status"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The failing tests a report names, one line each: the test group's name, the alert and time, or
/// the expression and time (without the error's wording, which is each engine's own).
fn failing_tests(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| ["    name: ", "    alertname: ", "    expr: ", "    rule: "].iter().any(|p| l.starts_with(p)))
        .map(|l| match l.find(", err: ") {
            Some(at) => l[..at].to_string(),
            None => l.trim_end().to_string(),
        })
        .collect()
}

fn argus() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_argus"))
}

#[test]
fn every_fixture_passes_or_fails_as_under_promtool() {
    passes_or_fails_as_under_promtool(CASES);
}

#[test]
#[ignore = "minutes in a debug build: cargo test --test it rule_unit_tests -- --ignored"]
fn long_fixtures_pass_or_fail_as_under_promtool() {
    passes_or_fails_as_under_promtool(SLOW_CASES);
}

fn passes_or_fails_as_under_promtool(cases: &[(&str, i32)]) {
    let promtool = argus_testkit::program("promtool", "apt-get install prometheus (2.42)");
    if let Err(missing) = &promtool {
        argus_testkit::missing_peer(missing);
    }
    for (file, want) in cases {
        let got = run(&argus(), &[file]);
        assert_eq!(got.status, *want, "argus test rules {file}:\n{}{}", got.stdout, got.stderr);
        if *want == 0 {
            assert!(got.stdout.contains("  SUCCESS"), "{file}: {}", got.stdout);
        } else {
            assert!(got.stderr.contains("  FAILED:"), "{file}: {}", got.stderr);
        }
        let Ok(promtool) = &promtool else { continue };
        let peer = run(promtool, &[file]);
        assert_eq!(peer.status, got.status, "{file}: promtool says\n{}{}", peer.stdout, peer.stderr);
        assert_eq!(failing_tests(&got.stderr), failing_tests(&peer.stderr), "{file}: failing tests differ");
        // A report made only of failed expectations, without an error worded by either engine, reads
        // the same byte for byte: the alerts expected and got, their annotations' text, the values.
        let engine_worded = peer.stderr.contains(", err: ") || failing_tests(&peer.stderr).is_empty();
        if !engine_worded {
            assert_eq!(got.stderr, peer.stderr, "{file}: the failure reports differ");
        }
    }
}

#[test]
fn failures_read_as_promtool_writes_them() {
    let got = run(&argus(), &["argus/failing.yml"]);
    assert_eq!(got.status, 1);
    expect![[r#"
        Unit Testing:  failing.yml




    "#]]
    .assert_eq(&got.stdout);
    expect![[r#"
        |  FAILED:
        |    expr: "host:gpu_utilization_ratio:avg2m", time: 1m,
        |        exp: {__name__="host:gpu_utilization_ratio:avg2m", host="n1"} 7E-01
        |        got: {__name__="host:gpu_utilization_ratio:avg2m", host="n1"} 6E-01
        |    name: missing alert,
        |    alertname: GpuHot, time: 1m, 
        |        exp:[
        |            0:
        |              Labels:{alertname="GpuHot", gpu="0", host="n1", severity="warning"}
        |              Annotations:{summary="GPU 0 on n1 at 90 C"}
        |            ], 
        |        got:[]
        |    name: wrong annotation,
        |    alertname: GpuHot, time: 3m, 
        |        exp:[
        |            0:
        |              Labels:{alertname="GpuHot", gpu="0", host="n1", severity="warning"}
        |              Annotations:{summary="GPU 0 on n1 at 91 C"}
        |            ], 
        |        got:[
        |            0:
        |              Labels:{alertname="GpuHot", gpu="0", host="n1", severity="warning"}
        |              Annotations:{summary="GPU 0 on n1 at 90 C"}
        |            ]
    "#]]
    .assert_eq(&margin(&got.stderr));
}

/// Each line after a `|`, so that the report's own indentation survives expect-test's.
fn margin(text: &str) -> String {
    text.lines().map(|l| format!("|{l}\n")).collect()
}

#[test]
fn several_files_fail_together_when_one_fails() {
    let got = run(&argus(), &["argus/passing.yml", "failing.yml"]);
    assert_eq!(got.status, 1, "{}{}", got.stdout, got.stderr);
    assert!(
        got.stdout.starts_with("Unit Testing:  passing.yml\n  SUCCESS\n\nUnit Testing:  failing.yml\n"),
        "{}",
        got.stdout
    );
    let got = run(&argus(), &["argus/passing.yml", "passing.yml"]);
    assert_eq!((got.status, got.stderr.as_str()), (0, ""));
}
