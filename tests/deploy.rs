//! deploy/: the Kubernetes manifests against the Kubernetes 1.37 OpenAPI schema (kubernetes-validate
//! from PyPI, installed by scripts/validate-k8s.sh into a virtualenv under the target directory; no
//! cluster runs here), the configuration they carry through `argus check-config`, the systemd units
//! through `systemd-analyze verify` (skipped, saying why, where systemd is absent), and the
//! Dockerfile's shape.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn manifests() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["deploy/kubernetes", "deploy/kubernetes/optional"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}")) {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "yaml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn validate(files: &[PathBuf]) -> Output {
    let out = Command::new(root().join("scripts/validate-k8s.sh"))
        .args(files)
        .current_dir(root())
        .output()
        .expect("run scripts/validate-k8s.sh");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn manifests_validate_against_the_kubernetes_schema_and_an_invalid_one_does_not() {
    let files = manifests();
    assert!(files.len() >= 5, "expected the manifests of deploy/kubernetes, found {files:?}");
    let out = validate(&files);
    let all = text(&out);
    assert!(out.status.success(), "manifests do not validate:\n{all}");
    // Every resource was checked against a schema, except the operator's CRD, which no bundled schema knows.
    for line in all.lines().filter(|l| l.starts_with("WARN") || l.starts_with("ERROR")) {
        assert!(
            line.contains("kind ServiceMonitor with api version monitoring.coreos.com/v1"),
            "unexpected finding: {line}"
        );
    }
    for kind in ["daemonset/argus-collector", "statefulset/argus", "service/argus", "configmap/argus-config"] {
        assert!(all.contains(&format!("passed for resource {kind} ")), "{kind} was not validated:\n{all}");
    }

    // The same validator refuses broken manifests: a misspelt field and a wrong type.
    let dir = tempfile::tempdir().expect("tempdir");
    let collector = std::fs::read_to_string(root().join("deploy/kubernetes/collector.yaml")).expect("collector.yaml");
    let server = std::fs::read_to_string(root().join("deploy/kubernetes/server.yaml")).expect("server.yaml");
    let cases = [
        ("misspelt.yaml", collector.replace("hostPID: true", "hostPid: true"), "hostPid"),
        ("wrong-type.yaml", server.replace("replicas: 1", "replicas: one"), "replicas"),
    ];
    for (name, body, what) in cases {
        assert!(body.contains(what), "{name}: the substitution did not apply");
        let path = dir.path().join(name);
        std::fs::write(&path, body).expect("write");
        let out = validate(std::slice::from_ref(&path));
        assert!(!out.status.success(), "{name} was accepted:\n{}", text(&out));
        assert!(text(&out).contains(what), "{name}: the error does not name {what}:\n{}", text(&out));
    }
}

/// The block scalar `key: |` of a ConfigMap's data, unindented.
fn configmap_value(yaml: &str, key: &str) -> String {
    let head = format!("  {key}: |");
    let mut lines = yaml.lines().skip_while(|l| *l != head);
    assert!(lines.next().is_some(), "configmap has no {key}");
    let mut out = String::new();
    for l in lines {
        if l.is_empty() {
            out.push('\n');
        } else if let Some(rest) = l.strip_prefix("    ") {
            out.push_str(rest);
            out.push('\n');
        } else {
            break;
        }
    }
    out
}

#[test]
fn the_configmap_holds_configuration_argus_accepts() {
    let yaml = std::fs::read_to_string(root().join("deploy/kubernetes/configmap.yaml")).expect("configmap.yaml");
    let dir = tempfile::tempdir().expect("tempdir");
    let alertd = dir.path().join("alertd.yml");
    std::fs::write(&alertd, configmap_value(&yaml, "alertd.yml")).expect("write");
    let serve = configmap_value(&yaml, "serve.toml");
    assert!(
        serve.contains("config_file = \"/etc/argus/alertd.yml\""),
        "serve.toml names alertd.yml where it is mounted"
    );
    let serve = serve.replace("/etc/argus/alertd.yml", &alertd.display().to_string());
    let files = [("serve.toml", serve), ("collect.toml", configmap_value(&yaml, "collect.toml"))];
    let mut args = vec![alertd.clone()];
    for (name, body) in files {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write");
        args.push(p);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_argus")).arg("check-config").args(&args).output().expect("argus");
    assert!(out.status.success(), "argus check-config refuses the ConfigMap:\n{}", text(&out));
    // And the check is real: a misspelt key is refused.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, configmap_value(&yaml, "collect.toml").replace("procfs_root", "procfs_rot")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_argus")).arg("check-config").arg(&bad).output().expect("argus");
    assert!(!out.status.success(), "a misspelt key passed check-config");
}

fn systemd_verify(units: &[PathBuf]) -> Output {
    Command::new("systemd-analyze").arg("verify").args(units).output().expect("systemd-analyze")
}

/// Findings of `systemd-analyze verify` about our own files (it may also talk about the host's units).
fn unit_findings(o: &Output, dir: &Path) -> Vec<String> {
    let d = dir.display().to_string();
    text(o)
        .lines()
        .filter(|l| l.contains(&d) || l.contains("argus-serve.service") || l.contains("argus-collect.service"))
        .map(String::from)
        .collect()
}

#[test]
fn systemd_units_verify() {
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        println!("skipped: systemd-analyze is not installed (Debian: apt-get install systemd)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // verify checks that ExecStart's binary exists: point the units at the one cargo built.
    let exe = env!("CARGO_BIN_EXE_argus");
    let mut units = Vec::new();
    for name in ["argus-serve.service", "argus-collect.service"] {
        let body = std::fs::read_to_string(root().join("deploy/systemd").join(name)).expect(name);
        assert!(body.contains("ExecStart=/usr/local/bin/argus "), "{name}: ExecStart is /usr/local/bin/argus");
        for hardening in ["DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory="] {
            assert!(body.lines().any(|l| l.starts_with(hardening)), "{name} lacks {hardening}");
        }
        let p = dir.path().join(name);
        std::fs::write(&p, body.replace("/usr/local/bin/argus", exe)).expect("write");
        units.push(p);
    }
    let out = systemd_verify(&units);
    let findings = unit_findings(&out, dir.path());
    assert!(out.status.success() && findings.is_empty(), "systemd-analyze verify:\n{}", text(&out));

    // A misspelt directive is reported.
    let bad = dir.path().join("argus-bad.service");
    let body = std::fs::read_to_string(&units[0]).expect("read").replace("ProtectSystem=strict", "ProtectSytem=strict");
    std::fs::write(&bad, body).expect("write");
    let out = systemd_verify(std::slice::from_ref(&bad));
    assert!(text(&out).contains("ProtectSytem"), "a misspelt directive passed verify:\n{}", text(&out));
}

#[test]
fn dockerfile_builds_in_rust_and_runs_on_debian_slim() {
    let d = std::fs::read_to_string(root().join("deploy/Dockerfile")).expect("deploy/Dockerfile");
    let froms: Vec<&str> = d.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "two stages: {froms:?}");
    assert!(froms[0].starts_with("FROM rust:") && froms[0].ends_with(" AS build"), "{}", froms[0]);
    assert!(froms[1].starts_with("FROM debian:") && froms[1].ends_with("-slim"), "{}", froms[1]);
    // Builder and runtime share a Debian release, so the binary's glibc is there at run time.
    let release = froms[0].split([':', ' ']).nth(2).and_then(|tag| tag.rsplit('-').next()).expect("builder tag");
    assert!(froms[1].contains(&format!(":{release}-slim")), "runtime on {release} too: {}", froms[1]);
    assert!(d.contains("cargo build --release --locked"), "release build from the lock file");
    assert!(d.contains("COPY --from=build "), "the runtime takes only the binary");
    assert!(d.lines().any(|l| l.starts_with("USER ") && !l.contains("root")), "runs as a non-root user");
    assert!(root().join("deploy/Dockerfile.dockerignore").exists(), "the build context leaves out target/");
}
