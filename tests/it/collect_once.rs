//! `argus collect --once --format lp`: one collection as line protocol on stdout, with the sources that
//! work even when the GPU source cannot (no NVIDIA library here, or on CI).

use std::path::Path;
use std::process::Command;

#[test]
fn once_prints_one_collection_as_line_protocol() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("collector/tests/fixtures");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("argus.toml");
    std::fs::write(
        &config,
        format!(
            "[collector]\nprocfs_root = \"{f}/node/proc\"\nsysfs_root = \"{f}/infiniband/sys\"\n\
             [collector.labels]\ncluster = \"c1\"\nhost = \"n1\"\n\
             [collector.gpu]\nbackend = \"fake\"\nfake_fixture = \"{f}/gpu/does-not-exist.json\"\n",
            f = fixtures.display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["collect", "--once", "--format", "lp", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let parsed = argus_model::lineprotocol::parse(&stdout).expect("valid line protocol");
    assert_eq!(parsed.len(), lines.len());
    for m in ["host", "disk", "net", "ib"] {
        assert!(parsed.iter().any(|l| l.measurement == m), "no {m} point in:\n{stdout}");
    }
    assert!(
        parsed.iter().all(|l| l.tags.iter().any(|(k, v)| k == "cluster" && v == "c1")),
        "global labels on every point"
    );
    // The GPU source failed (its fixture is missing) and said so, the others were not affected.
    assert!(stdout.contains("argus_collector,cluster=c1,host=n1,source=gpu source_duration_seconds="), "{stdout}");
    assert!(stdout.contains(",source=gpu source_duration_seconds=") && stdout.contains("source_success=0"), "{stdout}");
    assert!(stderr.contains("unavailable"), "{stderr}");
}

#[test]
fn a_bad_config_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("argus.toml");
    std::fs::write(&config, "[collector]\ninterval = \"10s\"\nbogus = true\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["collect", "--once", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{}:3:1: unknown field `bogus`", config.display())), "{stderr}");
}
