//! deploy/helm/argus: the Helm chart linted and rendered by real Helm (Helm's Go SDK, through
//! helm-python-sdk from PyPI, installed by scripts/helm.sh into a virtualenv under the target
//! directory; no cluster), with its default values and the value files in its ci/ folder. The rendered
//! manifests are validated against the Kubernetes schema as deploy/kubernetes/ is (scripts/validate-k8s.sh),
//! the configuration they carry goes through `argus check-config`, and values.schema.json refuses bad
//! values before anything renders.

use crate::support::server::token_digest;
use serde::Deserialize;
use serde_norway::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const CHART: &str = "deploy/helm/argus";

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn helm(args: &[&str]) -> Output {
    Command::new(root().join("scripts/helm.sh")).args(args).current_dir(root()).output().expect("run scripts/helm.sh")
}

/// `helm template` with the chart's default values and the given value files (relative to the chart).
fn template(values: &[&str]) -> String {
    let mut args = vec!["template", CHART];
    let files: Vec<String> = values.iter().map(|v| format!("{CHART}/{v}")).collect();
    for f in &files {
        args.extend(["-f", f.as_str()]);
    }
    let out = helm(&args);
    assert!(out.status.success(), "helm template {values:?} failed:\n{}", text(&out));
    String::from_utf8(out.stdout).expect("utf-8 manifests")
}

/// The rendered resources, as YAML values.
fn resources(manifests: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(manifests)
        .map(|d| Value::deserialize(d).expect("rendered YAML parses"))
        .filter(|v| !v.is_null())
        .collect()
}

fn find<'a>(res: &'a [Value], kind: &str, name: &str) -> &'a Value {
    res.iter()
        .find(|r| r["kind"].as_str() == Some(kind) && r["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn str_at<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str().unwrap_or_else(|| panic!("{what} is not a string: {v:?}"))
}

/// The value files the chart is tested with, with what each must render.
const CASES: &[(&str, &[&str])] = &[
    ("default", &["daemonset/argus-collector", "statefulset/argus", "service/argus", "configmap/argus-config"]),
    (
        "ci/all-on-values.yaml",
        &[
            "secret/argus-tokens",
            "networkpolicy/argus-server",
            "service/argus-collector-metrics",
            "statefulset/argus",
            "role/argus-collector-discovery",
            "rolebinding/argus-collector-discovery",
        ],
    ),
    (
        "ci/fleet-values.yaml",
        &[
            "statefulset/argus-store",
            "statefulset/argus-rules",
            "statefulset/argus-analyzer",
            "statefulset/argus-alertd",
            "poddisruptionbudget/argus-alertd",
            "networkpolicy/argus-store",
            "clusterrole/argus-collector-discovery",
        ],
    ),
];

fn render_case(case: &str) -> String {
    if case == "default" { template(&[]) } else { template(&[case]) }
}

#[test]
fn the_chart_passes_helm_lint_strict_and_a_broken_one_does_not() {
    for (case, _) in CASES {
        let mut args = vec!["lint", CHART];
        let file = format!("{CHART}/{case}");
        if *case != "default" {
            args.extend(["-f", file.as_str()]);
        }
        let out = helm(&args);
        assert!(out.status.success(), "helm lint --strict ({case}):\n{}", text(&out));
        assert!(text(&out).contains("1 chart(s) linted, no failures"), "{case}: {}", text(&out));
    }
    // The same lint refuses a chart whose template does not render.
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("argus");
    copy_dir(&root().join(CHART), &copy);
    std::fs::write(copy.join("templates/broken.yaml"), "kind: {{ .Values.collector.nope.deeper }}\n").expect("write");
    let out = helm(&["lint", copy.to_str().expect("path")]);
    assert!(!out.status.success(), "a broken template passed lint:\n{}", text(&out));
    assert!(text(&out).contains("broken.yaml"), "the finding names the template:\n{}", text(&out));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).expect("copy");
        }
    }
}

#[test]
fn rendered_manifests_validate_against_the_kubernetes_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (case, expected) in CASES {
        let path = dir.path().join(format!("{}.yaml", case.replace('/', "-")));
        std::fs::write(&path, render_case(case)).expect("write");
        let out = Command::new(root().join("scripts/validate-k8s.sh"))
            .arg(&path)
            .current_dir(root())
            .output()
            .expect("run scripts/validate-k8s.sh");
        let all = text(&out);
        assert!(out.status.success(), "{case}: the rendered manifests do not validate:\n{all}");
        for line in all.lines().filter(|l| l.starts_with("WARN") || l.starts_with("ERROR")) {
            assert!(
                line.contains("kind ServiceMonitor with api version monitoring.coreos.com/v1"),
                "{case}: unexpected finding: {line}"
            );
        }
        for kind in *expected {
            assert!(all.contains(&format!("passed for resource {kind} ")), "{case}: {kind} was not validated:\n{all}");
        }
    }
}

/// Writes the rendered ConfigMap's files into `dir`, with the mount paths of the pods (/etc/argus,
/// the tokens' /etc/argus-tokens) pointed there, and a stand-in token file for each key.
fn config_files(manifests: &str, dir: &Path) -> Vec<PathBuf> {
    let res = resources(manifests);
    let data = find(&res, "ConfigMap", "argus-config")["data"].as_mapping().expect("ConfigMap data");
    let etc = format!("{}/", dir.display());
    let tokens = dir.join("tokens");
    std::fs::create_dir_all(&tokens).expect("mkdir");
    for key in ["collector-token", "metrics-token", "store-token"] {
        std::fs::write(tokens.join(key), "argus_stand_in_token\n").expect("write");
    }
    let mut files = Vec::new();
    for (k, v) in data {
        let name = str_at(k, "key");
        let body = str_at(v, name).replace("/etc/argus-tokens/", &format!("{}/", tokens.display()));
        let body = body.replace("/etc/argus/", &etc);
        let p = dir.join(name);
        std::fs::write(&p, body).expect("write");
        files.push(p);
    }
    files
}

fn check_config(files: &[PathBuf]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_argus")).arg("check-config").args(files).output().expect("argus check-config")
}

#[test]
fn the_rendered_configuration_passes_argus_check_config() {
    for (case, _) in CASES {
        let manifests = render_case(case);
        let dir = tempfile::tempdir().expect("tempdir");
        let files = config_files(&manifests, dir.path());
        // alertd.yml's rule files (the other YAML beside it) are checked through it.
        let checked: Vec<PathBuf> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "toml") || p.ends_with("alertd.yml"))
            .cloned()
            .collect();
        let mut names: Vec<String> = checked.iter().map(|p| p.file_name().unwrap().to_string_lossy().into()).collect();
        names.sort();
        let want: &[&str] = if case.contains("fleet") {
            &["alertd.toml", "alertd.yml", "collect.toml", "store.toml", "workers.toml"]
        } else {
            &["alertd.yml", "collect.toml", "serve.toml"]
        };
        assert_eq!(names, want, "{case}: the ConfigMap's files");
        let out = check_config(&checked);
        assert!(out.status.success(), "{case}: argus check-config refuses the rendered ConfigMap:\n{}", text(&out));
    }
    // And the check is real: the collector's token file missing is refused, naming the key.
    let dir = tempfile::tempdir().expect("tempdir");
    let files = config_files(&render_case("ci/fleet-values.yaml"), dir.path());
    std::fs::remove_file(dir.path().join("tokens/collector-token")).expect("rm");
    let collect = files.iter().find(|p| p.ends_with("collect.toml")).expect("collect.toml");
    let out = check_config(std::slice::from_ref(collect));
    assert!(!out.status.success(), "a missing token file passed check-config");
    assert!(text(&out).contains("collector.sink[0].token_file"), "{}", text(&out));
}

#[test]
fn the_chart_wires_secrets_shards_and_replicas_together() {
    // A Secret made from values: each token's SHA-256 is accepted by the server, and the clients read
    // the token from the mounted Secret.
    let values = std::fs::read_to_string(root().join(CHART).join("ci/all-on-values.yaml")).expect("values");
    let values: Value = serde_norway::from_str(&values).expect("values YAML");
    let res = resources(&render_case("ci/all-on-values.yaml"));
    let serve = str_at(&find(&res, "ConfigMap", "argus-config")["data"]["serve.toml"], "serve.toml");
    for key in ["collectorToken", "metricsToken"] {
        let token = str_at(&values["secrets"][key], key);
        let digest = token_digest(token);
        assert!(serve.contains(&format!("sha256 = \"{digest}\"")), "serve.toml lacks the digest of {key}:\n{serve}");
        assert!(!serve.contains(token), "serve.toml holds the token {key} itself");
    }
    let collect = str_at(&find(&res, "ConfigMap", "argus-config")["data"]["collect.toml"], "collect.toml");
    assert!(collect.contains("token_file = \"/etc/argus-tokens/collector-token\""), "{collect}");
    assert!(collect.contains("kernel_log = \"\""), "unprivileged: no kernel log\n{collect}");
    let ds = &find(&res, "DaemonSet", "argus-collector")["spec"]["template"]["spec"];
    let mounts = serde_norway::to_string(&ds["containers"][0]["volumeMounts"]).expect("yaml");
    assert!(mounts.contains("/etc/argus-tokens") && !mounts.contains("/dev/kmsg"), "{mounts}");
    assert_eq!(ds["containers"][0]["securityContext"]["privileged"], Value::Null, "unprivileged collector");
    let sm = find(&res, "ServiceMonitor", "argus");
    let auth = &sm["spec"]["endpoints"][0]["authorization"]["credentials"];
    assert_eq!((auth["name"].as_str(), auth["key"].as_str()), (Some("argus-tokens"), Some("metrics-token")));

    // Fleet: N of every shard's --shard is its replicas, each store has a sink, every alertd replica
    // is a peer and an alert URL.
    let res = resources(&render_case("ci/fleet-values.yaml"));
    for role in ["rules", "analyzer"] {
        let sts = &find(&res, "StatefulSet", &format!("argus-{role}"))["spec"];
        let n = sts["replicas"].as_u64().expect("replicas");
        let pod = &sts["template"]["spec"];
        let cmd = str_at(&pod["containers"][0]["args"][0], "args");
        assert!(cmd.contains(&format!("--shard \"${{HOSTNAME##*-}}/{n}\"")), "{role}: {cmd}");
        assert!(cmd.starts_with("exec /usr/local/bin/argus serve --config /etc/argus/workers.toml "), "{role}: {cmd}");
        let mounts = serde_norway::to_string(&pod["containers"][0]["volumeMounts"]).expect("yaml");
        assert!(mounts.contains("/etc/argus-tokens"), "{role} mounts the tokens' Secret: {mounts}");
    }
    let data = &find(&res, "ConfigMap", "argus-config")["data"];
    // The fleet roles read their token from the Secret's file: to the stores and, from rules and
    // analyzer, to alertd, which takes alerts with that token only.
    let (workers, alertd_toml) =
        (str_at(&data["workers.toml"], "workers.toml"), str_at(&data["alertd.toml"], "alertd.toml"));
    for (file, text) in [("workers.toml", workers), ("alertd.toml", alertd_toml)] {
        assert!(text.contains("bearer_token_file = \"/etc/argus-tokens/store-token\""), "{file}:\n{text}");
        assert!(!text.contains("anonymous = "), "{file} takes nothing without a token:\n{text}");
    }
    assert!(workers.contains("alert_token_file = \"/etc/argus-tokens/store-token\""), "{workers}");
    let collect = str_at(&data["collect.toml"], "collect.toml");
    assert_eq!(collect.matches("[[collector.sink]]").count(), 3, "one sink per store:\n{collect}");
    let alertd = &find(&res, "StatefulSet", "argus-alertd")["spec"];
    let cmd = str_at(&alertd["template"]["spec"]["containers"][0]["args"][0], "args");
    for i in 0..alertd["replicas"].as_u64().expect("replicas") {
        let host = format!("argus-alertd-{i}.argus-alertd-headless.argus.svc");
        assert!(cmd.contains(&format!("--cluster.peer={host}:9094")), "{cmd}");
        assert!(workers.contains(&format!("\"http://{host}:9700\"")), "{workers}");
    }
}

#[test]
fn a_secret_made_by_the_chart_in_fleet_mode_lets_the_shards_post_alerts_to_alertd() {
    let dir = tempfile::tempdir().expect("tempdir");
    let values = dir.path().join("fleet-create.yaml");
    let store_token = "argus_fleet_roles_token";
    std::fs::write(
        &values,
        format!(
            "mode: fleet\nsecrets:\n  create: true\n  collectorToken: argus_collectors\n  storeToken: {store_token}\n\
             fleet:\n  alertd:\n    clusterSecret:\n      create: true\n      value: 0123456789abcdef0123\n"
        ),
    )
    .expect("write");
    let out = helm(&["template", CHART, "-f", values.to_str().expect("path")]);
    assert!(out.status.success(), "{}", text(&out));
    let res = resources(&String::from_utf8_lossy(&out.stdout));
    let data = &find(&res, "ConfigMap", "argus-config")["data"];
    let digest = token_digest(store_token);
    for file in ["store.toml", "alertd.toml"] {
        let t = str_at(&data[file], file);
        assert!(t.contains(&format!("sha256 = \"{digest}\"")), "{file} does not accept the fleet roles' token:\n{t}");
    }
    let secret = find(&res, "Secret", "argus-tokens");
    assert!(secret["data"]["store-token"].as_str().is_some(), "the Secret holds the fleet roles' token");
}

#[test]
fn the_training_endpoint_takes_its_token_from_the_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let values = dir.path().join("push-token.yaml");
    std::fs::write(
        &values,
        "secrets:\n  existingSecret: argus-tokens\ncollector:\n  training:\n    tokenKey: push-token\n",
    )
    .expect("write");
    let out = helm(&["template", CHART, "-f", values.to_str().expect("path")]);
    assert!(out.status.success(), "{}", text(&out));
    let res = resources(&String::from_utf8_lossy(&out.stdout));
    let collect = str_at(&find(&res, "ConfigMap", "argus-config")["data"]["collect.toml"], "collect.toml");
    let training = collect.split("[collector.training]").nth(1).expect("a training section");
    let training = training.split("\n[").next().unwrap_or(training);
    assert!(training.contains("token_file = \"/etc/argus-tokens/push-token\""), "{collect}");
}

#[test]
fn bad_values_are_refused_before_anything_renders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("mode: cluster\n", "mode"),
        ("auth:\n  tokens:\n    - {name: ops, scopes: [read], sha256: argus_plain_token}\n", "sha256"),
        ("auth:\n  anonymous: [everything]\n", "anonymous"),
        ("collector:\n  interval: often\n", "interval"),
        ("colector:\n  enabled: false\n", "colector"),
        ("networkPolicy:\n  enabled: true\n", "networkPolicy.nodeCIDRs: required"),
        ("mode: fleet\n", "fleet.alertd.clusterSecret"),
        ("secrets:\n  create: true\n  existingSecret: mine\n", "set either existingSecret or create"),
        ("secrets:\n  create: true\n", "secrets.collectorToken: required"),
        ("collector:\n  training:\n    tokenKey: push-token\n", "collector.training.tokenKey"),
    ];
    for (i, (values, named)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("bad-{i}.yaml"));
        std::fs::write(&f, values).expect("write");
        let out = helm(&["template", CHART, "-f", f.to_str().expect("path")]);
        assert!(!out.status.success(), "{values:?} rendered:\n{}", text(&out));
        assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty(), "{values:?}: nothing renders");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{values:?}: the error does not name {named:?}:\n{err}");
    }
}

#[test]
fn app_version_is_the_workspace_version_and_the_default_image_tag() {
    let cargo: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml")).expect("toml");
    let version = cargo["workspace"]["package"]["version"].as_str().expect("workspace version");
    let chart: Value =
        serde_norway::from_str(&std::fs::read_to_string(root().join(CHART).join("Chart.yaml")).expect("Chart.yaml"))
            .expect("Chart.yaml");
    assert_eq!(chart["appVersion"].as_str(), Some(version), "Chart.yaml appVersion is the workspace version");
    let res = resources(&render_case("default"));
    let image = &find(&res, "StatefulSet", "argus")["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(image.as_str(), Some(format!("argus:{version}").as_str()));
}

/// `collector.kubernetesDiscovery.endpoints` (on in all-on-values, off in fleet-values) adds the
/// endpoints role to collect.toml and `list` on services and endpointslices to the collector's Role;
/// off, the ClusterRole may list pods only.
#[test]
fn the_endpoints_value_adds_the_role_and_its_rbac_only_when_on() {
    let rules = |res: &[Value], kind: &str| {
        serde_norway::to_string(&find(res, kind, "argus-collector-discovery")["rules"]).expect("yaml")
    };
    let res = resources(&render_case("ci/all-on-values.yaml"));
    let collect = str_at(&find(&res, "ConfigMap", "argus-config")["data"]["collect.toml"], "collect.toml");
    assert!(collect.contains("roles = [\"pod\", \"endpoints\"]"), "{collect}");
    let on = rules(&res, "Role");
    assert!(on.contains("services") && on.contains("endpointslices") && on.contains("discovery.k8s.io"), "{on}");
    let res = resources(&render_case("ci/fleet-values.yaml"));
    let collect = str_at(&find(&res, "ConfigMap", "argus-config")["data"]["collect.toml"], "collect.toml");
    assert!(!collect.contains("roles ="), "{collect}");
    let off = rules(&res, "ClusterRole");
    assert!(off.contains("pods") && !off.contains("services") && !off.contains("endpointslices"), "{off}");
}
