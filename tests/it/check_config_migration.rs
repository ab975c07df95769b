//! `argus check-config --from-alertmanager`: the real binary on an Alertmanager 0.25 file and a
//! Prometheus 2.42 rule file (tests/fixtures/alertmanager-migration/), which the real amtool and
//! promtool accept: the exact report, its JSON form and the exit statuses.

use expect_test::expect;
use std::path::Path;
use std::process::{Command, Output};

const AM: &str = "tests/fixtures/alertmanager-migration/alertmanager.yml";
const RULES: &str = "tests/fixtures/alertmanager-migration/rules.yml";

/// Runs `argus check-config` with `args` from the repository root, so paths print as given.
fn argus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_argus"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check-config")
        .args(args)
        .output()
        .expect("argus runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_report_names_each_refusal_and_difference_by_line_and_column() {
    let out = argus(&["--from-alertmanager", AM, RULES]);
    assert_eq!(out.status.code(), Some(1), "something is refused: {}", String::from_utf8_lossy(&out.stderr));
    expect![[r#"
        tests/fixtures/alertmanager-migration/alertmanager.yml:9:3: refused: global.smtp_auth_identity: not supported by alertd — use smtp_auth_username with smtp_auth_password, or keep e-mail on Alertmanager
        tests/fixtures/alertmanager-migration/alertmanager.yml:11:3: refused: global.victorops_api_key: not supported by alertd — keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape
        tests/fixtures/alertmanager-migration/alertmanager.yml:13:5: differs: global.http_config.enable_http2: accepted and has no effect: alertd speaks HTTP/1.1 to receivers — nothing to do unless the receiver accepts only HTTP/2
        tests/fixtures/alertmanager-migration/alertmanager.yml:42:9: differs: receivers[0].slack_configs[0]: username, title_link, fallback unset: alertd sends its own text, and no username or title_link where Alertmanager renders its default templates — to get Alertmanager's, set username: '{{ template "slack.default.username" . }}', title_link: '{{ template "slack.default.titlelink" . }}', fallback: '{{ template "slack.default.fallback" . }}'
        tests/fixtures/alertmanager-migration/alertmanager.yml:45:9: refused: receivers[0].slack_configs[0].fields: not supported by alertd — remove it (alertd sends one attachment without it), or keep this receiver on Alertmanager, or send Slack's JSON through webhook_configs with an argus.body_template
        tests/fixtures/alertmanager-migration/alertmanager.yml:48:9: refused: receivers[0].slack_configs[0].actions: not supported by alertd — remove it (alertd sends one attachment without it), or keep this receiver on Alertmanager, or send Slack's JSON through webhook_configs with an argus.body_template
        tests/fixtures/alertmanager-migration/alertmanager.yml:54:9: differs: receivers[0].webhook_configs[0].http_config: no proxy_url and no proxy_from_environment: true: alertd still sends through HTTP_PROXY / HTTPS_PROXY when they are set in its environment, where Alertmanager connects directly — unset those variables for argus, or set no_proxy, if the receivers must be reached directly
        tests/fixtures/alertmanager-migration/alertmanager.yml:56:13: refused: receivers[0].webhook_configs[0].http_config.tls_config.server_name: not supported by alertd — reach the receiver by the name its certificate carries, or keep it on Alertmanager
        tests/fixtures/alertmanager-migration/alertmanager.yml:59:9: differs: receivers[1].pagerduty_configs[0]: description, client unset: alertd sends its own title and text where Alertmanager renders its default templates — to get Alertmanager's, set description: '{{ template "pagerduty.default.description" . }}', client: '{{ template "pagerduty.default.client" . }}'
        tests/fixtures/alertmanager-migration/alertmanager.yml:60:9: refused: receivers[1].pagerduty_configs[0].class: a Go template where alertd takes plain text — write plain text, or leave it out for alertd's own
        tests/fixtures/alertmanager-migration/alertmanager.yml:61:9: refused: receivers[1].pagerduty_configs[0].images: not supported by alertd — remove it, or keep this receiver on Alertmanager
        tests/fixtures/alertmanager-migration/alertmanager.yml:65:11: refused: receivers[1].pagerduty_configs[0].http_config.oauth2: not supported by alertd — use authorization with credentials_file holding a token another job refreshes, or keep this receiver on Alertmanager
        tests/fixtures/alertmanager-migration/alertmanager.yml:71:84: differs: receivers[1].opsgenie_configs[0].message: alertd's times are UTC: .Local is .UTC, not the server's zone — write the zone you mean into the text, or accept UTC
        tests/fixtures/alertmanager-migration/alertmanager.yml:74:5: refused: receivers[2].telegram_configs: alertd has no Telegram receiver — keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape
        tests/fixtures/alertmanager-migration/alertmanager.yml:77:5: refused: receivers[2].victorops_configs: alertd has no VictorOps receiver — keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape
        tests/fixtures/alertmanager-migration/alertmanager.yml:81:9: differs: receivers[3].email_configs[0]: text unset: alertd adds its own plain-text part where Alertmanager sends HTML only — nothing to do unless readers depend on an HTML-only mail
        tests/fixtures/alertmanager-migration/alertmanager.yml:82:9: differs: receivers[3].email_configs[0].html: email.default.html prints URLs into href attributes: alertd escapes every action as HTML text, without html/template's URL, script and style escaping — check the rendered mail where label values may hold characters a URL must percent-encode
        tests/fixtures/alertmanager-migration/alertmanager.yml:85:11: refused: receivers[3].email_configs[0].headers.Reply-To: alertd sends no headers but Subject — remove it (alertd sets From, To and Subject itself), or keep e-mail on Alertmanager
        tests/fixtures/alertmanager-migration/rules.yml:5:5: refused: groups[0].limit: group key not supported by Argus — remove it: Argus keeps every alert and series a rule returns
        tests/fixtures/alertmanager-migration/rules.yml:8:15: differs: groups[0].rules[0].expr: collectors push to Argus, so there is no scrape and no up series for it — use the built-in HostDown (argus.rules.host_down), or time() - argus_host_last_seen_timestamp_seconds > 300
        tests/fixtures/alertmanager-migration/rules.yml:14:26: differs: groups[0].rules[0].annotations.dashboard: $externalURL comes from argus.rules, not from Prometheus' flags and global section: empty until set there — copy global.external_labels and --web.external-url to argus.rules.external_labels and external_url
        tests/fixtures/alertmanager-migration/rules.yml:15:11: differs: groups[0].rules[0].annotations.runbook_url: an empty annotation: Argus drops it where Prometheus keeps it as "" — remove it, or give it a value, if a receiver looks for the key
        tests/fixtures/alertmanager-migration/rules.yml:18:11: differs: groups[0].rules[1].expr: node_load1 is not written by Argus' collector — use host_load1
        tests/fixtures/alertmanager-migration/rules.yml:19:42: differs: groups[0].rules[1].expr: node_cpu_seconds_total is not written by Argus' collector — use host_cpu_seconds_total{mode} (summed over CPUs, no cpu label)
        tests/fixtures/alertmanager-migration/rules.yml:22:15: differs: groups[0].rules[2].expr: among equal values topk keeps the first series it meets, where Prometheus' choice varies from run to run — nothing to do unless the rule relies on which of several equal series is chosen
        tests/fixtures/alertmanager-migration/rules.yml:22:23: differs: groups[0].rules[2].expr: DCGM_FI_DEV_GPU_UTIL is not written by Argus' collector — use gpu_utilization_ratio (0–1, not %), or set [collector.gpu] dcgm_names = true
        tests/fixtures/alertmanager-migration/rules.yml:26:15: differs: groups[1].rules[0].expr: DCGM_FI_DEV_XID_ERRORS is not written by Argus' collector — use increase(gpu_xid_errors_total[5m]) > 0, per code
        tests/fixtures/alertmanager-migration/rules.yml:28:15: refused: groups[1].rules[1].expr: Argus' query engine has no histogram_count(): the rule loads but every evaluation fails — rewrite it without this function, or keep the rule on Prometheus
        ok: 2 files checked, 13 refused, 15 differ: alertd would refuse these files as they are
    "#]].assert_eq(&stdout(&out));
}

#[test]
fn the_json_report_holds_the_same_findings() {
    let text = stdout(&argus(&["--from-alertmanager", AM, RULES]));
    let out = argus(&["--from-alertmanager", AM, RULES, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("a JSON report");
    let findings = json["findings"].as_array().expect("a list of findings");
    assert_eq!(findings.len() + 1, text.lines().count(), "one line per finding, then the summary");
    let refused = findings.iter().filter(|f| f["kind"] == "refused").count();
    assert_eq!(json["refused"], refused);
    assert_eq!(json["differs"], findings.len() - refused);
    assert_eq!(json["files"], 2);
    let first = &findings[0];
    let line = format!(
        "{}:{}:{}: {}: {}: {}",
        first["file"].as_str().unwrap(),
        first["line"],
        first["column"],
        first["kind"].as_str().unwrap(),
        first["key"].as_str().unwrap(),
        first["what"].as_str().unwrap()
    );
    assert!(text.lines().next().unwrap().starts_with(&line), "{line}\n{text}");
}

#[test]
fn differences_alone_exit_0_and_unreadable_files_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("alertmanager.yml");
    std::fs::write(
        &clean,
        "route:\n  receiver: hook\nreceivers:\n  - name: hook\n    webhook_configs:\n      - url: https://hooks.example.com/a\n        http_config: {enable_http2: false, proxy_url: 'http://proxy:3128'}\n",
    )
    .unwrap();
    let out = argus(&["--from-alertmanager", clean.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = stdout(&out);
    assert!(report.contains(":7:23: differs: receivers[0].webhook_configs[0].http_config.enable_http2: "), "{report}");
    assert!(
        report.ends_with(
            "ok: 1 files checked, 0 refused, 1 differ: alertd loads these files; the differences above are warnings\n"
        ),
        "{report}"
    );

    let out = argus(&["--from-alertmanager", dir.path().join("absent.yml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.yml: cannot read"));

    let broken = dir.path().join("broken.yml");
    std::fs::write(&broken, "route:\n  receiver: [a\n").unwrap();
    let out = argus(&["--from-alertmanager", clean.to_str().unwrap(), broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.yml:3:1: not YAML"), "{out:?}");
}

#[test]
fn files_alertmanager_and_promtool_accept_are_reported_not_rejected() {
    for (program, args, file, install) in [
        ("amtool", &["check-config"][..], AM, "apt-get install prometheus-alertmanager (0.25)"),
        ("promtool", &["check", "rules"], RULES, "apt-get install prometheus (2.42)"),
    ] {
        let bin = match argus_testkit::program(program, install) {
            Ok(p) => p,
            Err(missing) => {
                argus_testkit::missing_peer(&missing);
                continue;
            }
        };
        let out = Command::new(bin).args(args).arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).output().unwrap();
        assert!(out.status.success(), "{program} accepts {file}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Read as Alertmanager reads it: findings, not a parse error.
    let out = argus(&["--from-alertmanager", AM]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stdout(&out).contains("not YAML"));
}

#[test]
fn without_the_flag_check_config_still_only_validates() {
    let out = argus(&[AM]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not supported by alertd yet"), "{err}");
}
