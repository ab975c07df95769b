use std::io::Write;

use super::*;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

fn error(text: &str, labelled: bool) -> String {
    let f = file(text);
    let err = read_csv(f.path(), labelled).unwrap_err().to_string();
    err.replace(&f.path().display().to_string(), "FILE")
}

#[test]
fn reads_labelled_csv() {
    let f = file("timestamp,m0,m1,label\n60,0.5,1,0\n120,0.25,2e-1,1\n");
    let table = read_csv(f.path(), true).unwrap();
    assert_eq!(table.metrics, ["m0", "m1"]);
    assert_eq!(table.values, [0.5, 1.0, 0.25, 0.2]);
    assert_eq!(table.labels, Some(vec![false, true]));
    assert_eq!(table.rows(), 2);
}

#[test]
fn malformed_csv_names_file_line_and_column() {
    assert_eq!(error("time,m0\n1,2\n", false), "FILE:1: first column must be `timestamp`, found `time`");
    assert_eq!(error("timestamp,m0\n1,2\n", true), "FILE: needs a label column");
    assert_eq!(error("timestamp,m0,m1\n1,2,3\n2,x,3\n", false), "FILE:3: column 2 (`m0`): `x` is not a number");
    assert_eq!(error("timestamp,m0,m1\n1,2,3\n2,3\n", false), "FILE:3: 2 fields, the header has 3");
    assert_eq!(error("timestamp,m0,label\n1,2,0\n2,3,yes\n", true), "FILE:3: column 3 (`label`): `yes` is not 0 or 1");
    assert_eq!(error("timestamp,m0\n1,inf\n", false), "FILE:2: column 2 (`m0`): `inf` is not finite");
    assert_eq!(error("timestamp,label\n1,0\n", false), "FILE:1: no metric columns");
}

#[test]
fn train_and_test_must_share_metrics() {
    let train = file("timestamp,m0,m1\n1,2,3\n2,3,4\n");
    let test = file("timestamp,m0,m2,label\n1,2,3,0\n");
    let err = run(&Detector::PlainForest(IForestParams::default()), train.path(), test.path()).unwrap_err();
    assert!(err.to_string().ends_with("(column 3: `m1` in training, `m2` in test)"), "{err}");
}

#[test]
fn evaluates_a_detector_end_to_end() {
    // Two metrics that track each other; the test breaks the relation for 20 points.
    let mut train = String::from("timestamp,a,b\n");
    for t in 0..2000 {
        let v = ((t as f64) * 0.05).sin();
        train += &format!("{t},{v},{}\n", v + 0.01 * ((t * 7) % 3) as f64);
    }
    let mut test = String::from("timestamp,a,b,label\n");
    for t in 0..500 {
        let v = ((t as f64) * 0.05).sin();
        let broken = (200..220).contains(&t);
        let b = if broken { -v + 1.0 } else { v + 0.01 * ((t * 7) % 3) as f64 };
        test += &format!("{t},{v},{b},{}\n", u8::from(broken));
    }
    let (train, test) = (file(&train), file(&test));
    let report = run(&Detector::Multivariate(MultivariateParams::default()), train.path(), test.path()).unwrap();
    assert!(report.auc_roc > 0.95, "{report:?}");
    assert!(report.auc_pr > 0.6, "{report:?}");
    assert!(report.f1_at_threshold > 0.5, "{report:?}");
    assert!(report.pa_f1 >= report.f1_at_threshold);
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let mut keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["auc_pr", "auc_roc", "best_f1", "f1_at_threshold", "fit_seconds", "pa_f1", "score_seconds"]);
}
