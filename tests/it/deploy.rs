//! deploy/: the Kubernetes manifests against the Kubernetes 1.37 OpenAPI schema (kubernetes-validate
//! from PyPI, installed by scripts/validate-k8s.sh into a virtualenv under the target directory; no
//! cluster runs here), the configuration they carry through `argus check-config`, the systemd units
//! through `systemd-analyze verify` (skipped, saying why, where systemd is absent), the
//! Dockerfile's shape, and its command run on this checkout (scripts/check-image.sh builds and runs
//! the image itself; it takes minutes, so it is a script, not a test).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn manifests() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["deploy/kubernetes", "deploy/kubernetes/fleet", "deploy/kubernetes/optional"] {
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

#[test]
fn the_fleet_configmap_holds_configuration_argus_accepts() {
    let main = std::fs::read_to_string(root().join("deploy/kubernetes/configmap.yaml")).expect("configmap.yaml");
    let yaml =
        std::fs::read_to_string(root().join("deploy/kubernetes/fleet/configmap.yaml")).expect("fleet/configmap.yaml");
    let dir = tempfile::tempdir().expect("tempdir");
    let alertd = dir.path().join("alertd.yml");
    std::fs::write(&alertd, configmap_value(&main, "alertd.yml")).expect("write");
    // The fleet token's Secret, mounted at /etc/argus-tokens in the pods: a stand-in here.
    let tokens = dir.path().join("tokens");
    std::fs::create_dir_all(&tokens).expect("mkdir");
    std::fs::write(tokens.join("token"), "argus_stand_in_token\n").expect("write");
    let mut args = Vec::new();
    for name in ["store.toml", "workers.toml", "alertd.toml", "collect-pair.toml"] {
        let body = configmap_value(&yaml, name)
            .replace("/etc/argus/alertd.yml", &alertd.display().to_string())
            .replace("/etc/argus-tokens/", &format!("{}/", tokens.display()));
        // Listening on 0.0.0.0, every server has an [auth] section (Auth::resolve refuses to start without one).
        if name != "collect-pair.toml" {
            assert!(body.contains("\n[auth]\n"), "{name} has no [auth] section");
        }
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write");
        args.push(p);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_argus")).arg("check-config").args(&args).output().expect("argus");
    assert!(out.status.success(), "argus check-config refuses the fleet ConfigMap:\n{}", text(&out));
    let workers = configmap_value(&yaml, "workers.toml");
    for key in ["alert_token_file = \"/etc/argus-tokens/token\"", "bearer_token_file = \"/etc/argus-tokens/token\""] {
        assert!(workers.contains(key), "workers.toml lacks {key}:\n{workers}");
    }
    // The token files are read at start: without the Secret, the shards do not start.
    std::fs::remove_file(tokens.join("token")).expect("rm");
    let out = Command::new(env!("CARGO_BIN_EXE_argus")).arg("check-config").arg(&args[1]).output().expect("argus");
    assert!(!out.status.success(), "workers.toml passed check-config without its token file");
    assert!(text(&out).contains("server.alert_token_file"), "{}", text(&out));
    // Every pod that reads the token mounts the Secret there.
    for role in ["rules", "analyzer", "alertd"] {
        let m = std::fs::read_to_string(root().join(format!("deploy/kubernetes/fleet/{role}.yaml"))).expect("manifest");
        assert!(m.contains("secretName: argus-fleet-token") && m.contains("mountPath: /etc/argus-tokens"), "{role}");
    }
    // The shards' N is their replicas.
    for role in ["rules", "analyzer"] {
        let m = std::fs::read_to_string(root().join(format!("deploy/kubernetes/fleet/{role}.yaml"))).expect("manifest");
        let replicas = m.lines().find_map(|l| l.trim().strip_prefix("replicas: ")).expect("replicas");
        assert!(m.contains(&format!("--shard \"${{HOSTNAME##*-}}/{replicas}\"")), "{role}: --shard N is not replicas");
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
    if !crate::support::peers::installed("systemd-analyze", "--version") {
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

/// The image's command (its `CMD` after the `argus` entrypoint), with the image's paths mapped to this
/// checkout: /etc/argus is `config/` (the Dockerfile copies it there), /var/lib/argus `data`, and the
/// port a free one.
fn image_command(data: &Path, port: u16) -> Vec<String> {
    let d = std::fs::read_to_string(root().join("deploy/Dockerfile")).expect("deploy/Dockerfile");
    assert!(d.contains("COPY config/ /etc/argus/"), "the image's /etc/argus is the checkout's config/");
    assert!(d.contains(r#"ENTRYPOINT ["/usr/local/bin/argus"]"#), "the entrypoint is argus");
    let cmd = d.lines().find_map(|l| l.strip_prefix("CMD ")).expect("a CMD line");
    let cmd: Vec<String> = serde_json::from_str(cmd).expect("CMD in exec form");
    let etc = root().join("config").display().to_string();
    cmd.into_iter()
        .map(|a| {
            a.replace("/etc/argus", &etc)
                .replace("/var/lib/argus", &data.display().to_string())
                .replace("0.0.0.0:9700", &format!("0.0.0.0:{port}"))
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Waits up to `secs` for the child to exit; kills it and answers None when it does not.
fn exit_within(child: &mut std::process::Child, secs: u64) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if let Some(s) = child.try_wait().expect("wait") {
            return Some(s);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn the_image_command_refuses_an_open_listener_and_serves_once_given_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let cmd = image_command(&dir.path().join("data"), port);
    assert!(cmd.iter().any(|a| a.ends_with("config/argus.toml")), "the command reads the shipped config: {cmd:?}");
    // As shipped (no token), listening on every interface: refused, saying what to do.
    let mut child = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(&cmd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("argus");
    let status = exit_within(&mut child, 30).expect("the image's command started with no token on 0.0.0.0");
    let out = text(&child.wait_with_output().expect("output"));
    assert!(!status.success());
    assert!(out.contains(&format!("refusing to listen on 0.0.0.0:{port} without authentication")), "{out}");
    assert!(out.contains("argus token new"), "the refusal says how to add a token: {out}");

    // The same command with a token added to a copy of the shipped config starts and checks it.
    let shipped = std::fs::read_to_string(root().join("config/argus.toml")).expect("config/argus.toml");
    let token = "argus_deploy_test_token";
    let mut hash = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["token", "hash"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("argus token hash");
    std::io::Write::write_all(&mut hash.stdin.take().expect("stdin"), format!("{token}\n").as_bytes()).expect("write");
    let out = hash.wait_with_output().expect("argus token hash");
    assert!(out.status.success(), "argus token hash: {}", text(&out));
    let digest = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let conf = shipped.replace(
        "# [[auth.tokens]]\n# name = \"grafana\"\n# scopes = [\"read\"]\n# sha256 = \"…\"",
        &format!("[[auth.tokens]]\nname = \"ops\"\nscopes = [\"read\"]\nsha256 = \"{digest}\""),
    );
    assert_ne!(conf, shipped, "config/argus.toml's commented token entry moved; update this test");
    let conf_path = dir.path().join("argus.toml");
    std::fs::write(&conf_path, conf).expect("write");
    let shipped_path = root().join("config/argus.toml").display().to_string();
    let args: Vec<String> = cmd.iter().map(|a| a.replace(&shipped_path, &conf_path.display().to_string())).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(&args)
        .arg("--no-collector")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("argus");
    let client = reqwest::blocking::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let mut ready = false;
    for _ in 0..300 {
        if client.get(format!("{base}/-/ready")).send().is_ok_and(|r| r.status().is_success()) {
            ready = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let query = format!("{base}/api/v1/query?query=up");
    let without = client.get(&query).send().map(|r| r.status().as_u16());
    let with = client.get(&query).bearer_auth(token).send().map(|r| r.status().as_u16());
    let _ = child.kill();
    let _ = child.wait();
    assert!(ready, "the image's command with a token was not ready in 30 s");
    assert_eq!(without.expect("query"), 401, "a query without the token");
    assert_eq!(with.expect("query"), 200, "a query with the token");
}
