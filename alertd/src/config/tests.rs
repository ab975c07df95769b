use super::*;
use argus_model::Labels;
use expect_test::{Expect, expect};

/// Parses `src` as `alertd.yml`; shows the route tree or the error.
fn check(src: &str, expect: Expect) {
    let got = match parse(src, "alertd.yml") {
        Ok(c) => c
            .route
            .walk()
            .iter()
            .map(|r| {
                format!(
                    "{} -> {} by {:?} wait={} interval={} repeat={}",
                    r.key,
                    r.opts.receiver,
                    r.opts.group_by,
                    duration::format(r.opts.group_wait),
                    duration::format(r.opts.group_interval),
                    duration::format(r.opts.repeat_interval)
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => e.to_string(),
    };
    expect.assert_eq(&got);
}

const RECEIVERS: &str = "receivers:\n  - name: r\n    webhook_configs: [{url: 'http://localhost:5001/'}]\n";

#[test]
fn route_tree_inherits() {
    check(
        &format!(
            "route:\n  receiver: r\n  group_by: [alertname]\n  group_wait: 10s\n  routes:\n    - match: {{team: gpu}}\n      group_interval: 1m\n      routes:\n        - matchers: ['severity=~\"crit.*\"']\n          group_by: ['...']\n{RECEIVERS}"
        ),
        expect![[r#"
            {} -> r by Labels(["alertname"]) wait=10s interval=5m repeat=4h
            {}/{team="gpu"} -> r by Labels(["alertname"]) wait=10s interval=1m repeat=4h
            {}/{team="gpu"}/{severity=~"crit.*"} -> r by All wait=10s interval=1m repeat=4h"#]],
    );
}

#[test]
fn bad_input_names_line_and_field() {
    let r = RECEIVERS;
    check(
        &format!("route:\n  receiver: r\n  group_wiat: 10s\n{r}"),
        expect![
            "alertd.yml:3: route: unknown field `group_wiat`, expected one of `receiver`, `group_by`, `matchers`, `match`, `match_re`, `continue`, `group_wait`, `group_interval`, `repeat_interval`, `mute_time_intervals`, `active_time_intervals`, `routes`"
        ],
    );
    check(
        &format!("route:\n  receiver: r\n  routes:\n    - receiver: r\n      group_wait: 10 seconds\n{r}"),
        expect![[
            r#"alertd.yml:5: route.routes[0].group_wait: invalid duration "10 seconds" (expected e.g. 30s, 5m, 1h30m, 2d)"#
        ]],
    );
    check(
        &format!("route:\n  receiver: r\n  routes:\n    - matchers: ['severity']\n{r}"),
        expect![[
            r#"alertd.yml:4: route.routes[0].matchers[0]: matcher "severity": expected one of = != =~ !~ after severity"#
        ]],
    );
    check(
        &format!("route:\n  receiver: nobody\n{r}"),
        expect![[r#"alertd.yml:2: route.receiver: undefined receiver "nobody""#]],
    );
    check(
        "route:\n  receiver: r\nreceivers:\n  - name: r\n    victorops_configs:\n      - routing_key: k\n",
        expect!["alertd.yml:5: receivers[0].victorops_configs: not supported by alertd yet"],
    );
    check(
        &format!("global:\n  wechat_api_secret: s\nroute:\n  receiver: r\n{r}"),
        expect!["alertd.yml:2: global.wechat_api_secret: not supported by alertd yet"],
    );
    check(
        &format!("route:\n  receiver: r\n  mute_time_intervals: [weekends]\n{r}"),
        expect![[r#"alertd.yml:3: route.mute_time_intervals: undefined time interval "weekends""#]],
    );
    check(
        &format!("route:\n  receiver: r\n  group_by: ['...', host]\n{r}"),
        expect!["alertd.yml:3: route.group_by: '...' must be the only element"],
    );
    check(r, expect!["alertd.yml: route: missing: the root route is required"]);
    check(
        &format!("route:\n  receiver: r\n{r}argus:\n  flap:\n    threshold: 1\n"),
        expect!["alertd.yml:8: argus.flap.threshold: must be at least 2 state changes"],
    );
    check(
        &format!("route:\n  receiver: r\n{r}argus:\n  correlation:\n    window: soon\n"),
        expect![[
            r#"alertd.yml:8: argus.correlation.window: invalid duration "soon" (expected e.g. 30s, 5m, 1h30m, 2d)"#
        ]],
    );
    check(
        &format!("route:\n  receiver: r\n{r}argus:\n  correlation:\n    window: 10m\n    recurrence_window: often\n"),
        expect![[
            r#"alertd.yml:9: argus.correlation.recurrence_window: invalid duration "often" (expected e.g. 30s, 5m, 1h30m, 2d)"#
        ]],
    );
    check(
        &format!("route:\n  receiver: r\n{r}argus:\n  storm: {{}}\n"),
        expect![
            "alertd.yml:7: argus: unknown field `storm`, expected one of `external_url`, `flap`, `correlation`, `escalation`, `rules`, `silence_until_resolved_max`, `history_retention`"
        ],
    );
    check(
        &format!("route:\n  receiver: r\n{r}argus:\n  silence_until_resolved_max: 0s\n"),
        expect!["alertd.yml:7: argus.silence_until_resolved_max: must be greater than 0"],
    );
    check(
        "route:\n  receiver: r\n  group_by: host\n",
        expect!["alertd.yml:3: route.group_by: invalid type: string \"host\", expected a sequence"],
    );
}

#[test]
fn inhibit_rules_and_time_intervals() {
    let c = parse(
        &format!(
            "route:\n  receiver: r\n{RECEIVERS}inhibit_rules:\n  - source_matchers: ['severity=critical']\n    target_match: {{severity: warning}}\n    equal: [host]\ntime_intervals:\n  - name: nights\n    time_intervals:\n      - times: [{{start_time: '00:00', end_time: '06:00'}}]\n"
        ),
        "alertd.yml",
    )
    .unwrap();
    assert_eq!(c.inhibit_rules.len(), 1);
    assert_eq!(c.inhibit_rules[0].target[0].to_string(), r#"severity="warning""#);
    assert_eq!(c.time_intervals["nights"][0].times, vec![(0, 360)]);
    let err = parse(
        &format!(
            "route:\n  receiver: r\n{RECEIVERS}time_intervals:\n  - name: x\n    time_intervals:\n      - weekdays: [funday]\n"
        ),
        "alertd.yml",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"alertd.yml:9: time_intervals[0].time_intervals[0].weekdays: invalid value "funday""#
    );
}

/// Every file in config/ that is an alerting configuration loads.
#[test]
fn shipped_configs_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yml" || x == "yaml") {
            let c = load(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(!c.receivers.is_empty());
            n += 1;
        }
    }
    assert!(n >= 1, "config/alertd.yml is missing");
}

#[test]
fn receivers_of_every_kind() {
    let src = "route: {receiver: r}\nreceivers:\n  - name: r\n    webhook_configs: [{url: 'https://h/T0', timeout: 3s, argus: {hmac_secret: k, signature_header: X-Sig}}]\n    slack_configs: [{api_url: 'https://hooks.slack.com/services/T', channel: '#gpu', argus: {language: zh}}]\n    dingtalk_configs: [{url: 'https://oapi.dingtalk.com/robot/send?access_token=t', secret: SEC1, language: zh}]\n    feishu_configs: [{url: 'https://open.feishu.cn/open-apis/bot/v2/hook/t', send_resolved: false}]\n    wecom_configs: [{url: 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k', timeout: 2s}]\n";
    let cfg = parse(src, "alertd.yml").unwrap();
    let r = &cfg.receivers["r"];
    let got: Vec<String> = r
        .integrations()
        .iter()
        .map(|i| format!("{}/{} send_resolved={} max_alerts={}", i.kind, i.index, i.send_resolved, i.max_alerts))
        .collect();
    expect![[r#"
        webhook/0 send_resolved=true max_alerts=0
        slack/0 send_resolved=false max_alerts=0
        dingtalk/0 send_resolved=true max_alerts=0
        feishu/0 send_resolved=false max_alerts=0
        wecom/0 send_resolved=true max_alerts=0"#]]
    .assert_eq(&got.join("\n"));
    let w = &r.webhooks[0];
    assert_eq!(
        (w.timeout, w.signature_header.as_str(), w.hmac_secret.as_ref().map(|s| s.expose())),
        (Duration::from_secs(3), "X-Sig", Some("k"))
    );
    assert_eq!(r.dingtalk[0].secret.as_ref().map(|s| s.expose()), Some("SEC1"));
    assert_eq!(r.slack[0].language, crate::receiver::Language::Zh);
    assert_eq!(r.wecom[0].timeout, Duration::from_secs(2));
}

#[test]
fn bad_receivers_name_the_field() {
    let check = |rx: &str, want: Expect| {
        let src = format!("route: {{receiver: r}}\nreceivers:\n  - name: r\n    {rx}\n");
        want.assert_eq(&parse(&src, "alertd.yml").unwrap_err().to_string());
    };
    check(
        "dingtalk_configs: [{url: 'https://h/', language: fr}]",
        expect![[r#"alertd.yml:4: receivers[0].dingtalk_configs[0].language: "fr" is not en or zh"#]],
    );
    check(
        "wecom_configs: [{url: 'https://h/', secret: s}]",
        expect!["alertd.yml:4: receivers[0].wecom_configs[0].secret: WeCom group robots are not signed"],
    );
    check("feishu_configs: [{secret: s}]", expect!["alertd.yml:4: receivers[0].feishu_configs[0].url: missing"]);
    check(
        "slack_configs: [{api_url: 'https://h/', fields: [{title: x}]}]",
        expect!["alertd.yml:4: receivers[0].slack_configs[0].fields: not supported by alertd yet"],
    );
    check(
        "slack_configs: [{api_url: 'https://h/', title: '{{ .Status'}]",
        expect!["alertd.yml:4: receivers[0].slack_configs[0].title: template: :1:1: unclosed action"],
    );
    check(
        "webhook_configs: [{url: 'https://h/', argus: {body_template: '{\"s\": {{ .State }}}'}}]",
        expect!["alertd.yml:4: receivers[0].webhook_configs[0].argus.body_template: unknown placeholder {{ .State }}"],
    );
    check(
        "webhook_configs: [{url: 'ftp://h/tok'}]",
        expect!["alertd.yml:4: receivers[0].webhook_configs[0].url: not an http(s) URL"],
    );
}

/// An error names the line of the field itself, not the first line in the file that looks like it.
#[test]
fn errors_point_at_the_field_they_name() {
    let src = concat!(
        "route:\n  receiver: a\n  routes:\n    - receiver: b\n      group_wait: 10s\n",
        "    - receiver: b\n      group_wait: soon\n",
        "receivers:\n  - name: a\n    webhook_configs:\n      - url: http://a/\n        timeout: 10s\n",
        "  - name: b\n    webhook_configs:\n      - url: http://b/\n        timeout: 0s\n",
    );
    let e = parse(src, "alertd.yml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "alertd.yml:7: route.routes[1].group_wait: invalid duration \"soon\" (expected e.g. 30s, 5m, 1h30m, 2d)\n\
         alertd.yml:16: receivers[1].webhook_configs[0].timeout: must be greater than 0"
    );
    let fixed = src.replace("timeout: 0s", "timeout: 5s");
    let e = parse(&fixed, "alertd.yml").unwrap_err();
    assert_eq!(e.field, "route.routes[1].group_wait");
    assert_eq!(e.line, Some(7), "{e}");
}

#[test]
fn email_and_rate_limit() {
    let src = "route: {receiver: r}\nreceivers:\n  - name: r\n    argus: {rate_limit: {max: 20, per: 1m}}\n    email_configs:\n      - {to: 'a@x.org, b@x.org', from: alertd@x.org, smarthost: 'smtp.x.org:465', auth_username: u, auth_password: p}\n      - {to: a@x.org, from: alertd@x.org, smarthost: 'smtp.x.org:587', send_resolved: true}\n      - {to: a@x.org, from: alertd@x.org, smarthost: 'localhost:25', require_tls: false}\n";
    let cfg = parse(src, "alertd.yml").unwrap();
    let r = &cfg.receivers["r"];
    assert_eq!(r.rate_limit, Some((20, Duration::from_secs(60))));
    let e: Vec<String> = r
        .email
        .iter()
        .map(|e| {
            format!(
                "{:?} {}:{} {:?} resolved={} auth={:?}",
                e.to, e.host, e.port, e.tls, e.send_resolved, e.auth_username
            )
        })
        .collect();
    expect![[r#"
        ["a@x.org", "b@x.org"] smtp.x.org:465 Implicit resolved=false auth=Some("u")
        ["a@x.org"] smtp.x.org:587 StartTls resolved=true auth=None
        ["a@x.org"] localhost:25 None resolved=false auth=None"#]]
    .assert_eq(&e.join("\n"));
    let bad = |rx: &str| {
        let src = format!("route: {{receiver: r}}\nreceivers:\n  - name: r\n    {rx}\n");
        parse(&src, "alertd.yml").unwrap_err().to_string()
    };
    expect!["alertd.yml:4: receivers[0].email_configs[0].smarthost: \"smtp\" is not host:port"]
        .assert_eq(&bad("email_configs: [{to: a@x.org, from: b@x.org, smarthost: smtp}]"));
    expect!["alertd.yml:4: receivers[0].email_configs[0].from: missing (and no global smtp_from)"]
        .assert_eq(&bad("email_configs: [{to: a@x.org, smarthost: 'smtp:25'}]"));
    expect!["alertd.yml:4: receivers[0].argus.rate_limit: max and per must be greater than 0"]
        .assert_eq(&bad("argus: {rate_limit: {max: 0, per: 1m}}"));
}

/// `argus.rules`: the rule files, Prometheus' flags and the built-ins, or the error.
fn check_rules(rules: &str, expect: Expect) {
    let src = format!("route:\n  receiver: r\n{RECEIVERS}argus:\n  rules:\n{rules}");
    let got = match parse(&src, "alertd.yml") {
        Ok(c) => format!("{:?}", c.rules),
        Err(e) => e.to_string(),
    };
    expect.assert_eq(&got);
}

#[test]
fn rules_section() {
    check_rules(
        "    files: [a.yml]\n",
        expect![[
            r#"Some(RulesConfig { files: ["a.yml"], opts: EvalOptions { resend_delay: 60s, for_grace_period: 600s, outage_tolerance: 3600s, external_labels: Labels([]), external_url: "" }, builtins: Builtins { watchdog: true, host_down_metric: Some("host_cpu_seconds_total"), host_down_after: 120s }, defaults: true })"#
        ]],
    );
    check_rules(
        "    resend_delay: 30s\n    watchdog: false\n    host_down: false\n",
        expect![[
            r#"Some(RulesConfig { files: [], opts: EvalOptions { resend_delay: 30s, for_grace_period: 600s, outage_tolerance: 3600s, external_labels: Labels([]), external_url: "" }, builtins: Builtins { watchdog: false, host_down_metric: None, host_down_after: 120s }, defaults: true })"#
        ]],
    );
    check_rules(
        "    host_down_metric: node_load1\n    host_down_after: 5m\n",
        expect![[
            r#"Some(RulesConfig { files: [], opts: EvalOptions { resend_delay: 60s, for_grace_period: 600s, outage_tolerance: 3600s, external_labels: Labels([]), external_url: "" }, builtins: Builtins { watchdog: true, host_down_metric: Some("node_load1"), host_down_after: 300s }, defaults: true })"#
        ]],
    );
    check_rules(
        "    for_grace_period: later\n",
        expect![[
            r#"alertd.yml:8: argus.rules.for_grace_period: invalid duration "later" (expected e.g. 30s, 5m, 1h30m, 2d)"#
        ]],
    );
    check_rules(
        "    evaluation_interval: 1m\n",
        expect![
            "alertd.yml:8: argus.rules: unknown field `evaluation_interval`, expected one of `files`, `resend_delay`, `for_grace_period`, `for_outage_tolerance`, `external_labels`, `external_url`, `watchdog`, `host_down`, `host_down_metric`, `host_down_after`, `defaults`"
        ],
    );
    check_rules(
        "    external_labels: {cluster: c1, region: eu}\n    external_url: https://argus.example/\n",
        expect![[
            r#"Some(RulesConfig { files: [], opts: EvalOptions { resend_delay: 60s, for_grace_period: 600s, outage_tolerance: 3600s, external_labels: Labels([Label { name: "cluster", value: "c1" }, Label { name: "region", value: "eu" }]), external_url: "https://argus.example" }, builtins: Builtins { watchdog: true, host_down_metric: Some("host_cpu_seconds_total"), host_down_after: 120s }, defaults: true })"#
        ]],
    );
    check_rules(
        "    external_labels: {__tenant: a}\n",
        expect![[
            r#"alertd.yml:8: argus.rules.external_labels.__tenant: "__tenant" is not a valid label name (reserved names start with __)"#
        ]],
    );
    check_rules(
        "    external_labels: {cluster: ''}\n",
        expect![[r#"alertd.yml:8: argus.rules.external_labels.cluster: must not be empty"#]],
    );
    check_rules(
        "    external_url: argus.example:9090\n",
        expect![[
            r#"alertd.yml:8: argus.rules.external_url: invalid URL "argus.example:9090": the scheme must be http or https"#
        ]],
    );
    check_rules(
        "    external_url: /alerts\n",
        expect![[r#"alertd.yml:8: argus.rules.external_url: invalid URL "/alerts": relative URL without a base"#]],
    );
    check_rules(
        "    defaults: false\n",
        expect![[
            r#"Some(RulesConfig { files: [], opts: EvalOptions { resend_delay: 60s, for_grace_period: 600s, outage_tolerance: 3600s, external_labels: Labels([]), external_url: "" }, builtins: Builtins { watchdog: true, host_down_metric: Some("host_cpu_seconds_total"), host_down_after: 120s }, defaults: false })"#
        ]],
    );
}

#[test]
fn escalation_rules() {
    let base = format!("route: {{receiver: r}}\n{RECEIVERS}");
    let ok = parse(
        &format!("{base}argus:\n  correlation: {{labels: [host]}}\n  escalation:\n    - {{after: 15m, receiver: r}}\n    - {{after: 1h, receiver: r, matchers: ['team=\"gpu\"']}}\n"),
        "alertd.yml",
    )
    .unwrap();
    let got: Vec<String> = ok
        .escalation
        .iter()
        .map(|e| {
            format!(
                "{} {} {:?}",
                duration::format(e.after),
                e.receiver,
                e.matchers.iter().map(|m| m.to_string()).collect::<Vec<_>>()
            )
        })
        .collect();
    expect![[r#"["15m r [\"severity=\\\"critical\\\"\"]", "1h r [\"team=\\\"gpu\\\"\"]"]"#]]
        .assert_eq(&format!("{got:?}"));
    let err = |tail: &str| parse(&format!("{base}{tail}"), "alertd.yml").unwrap_err().to_string();
    expect![[r#"alertd.yml:6: argus.escalation: needs argus.correlation: escalation acts on incidents, and only correlation makes them"#]]
        .assert_eq(&err("argus:\n  escalation: [{after: 15m, receiver: r}]\n"));
    expect![[r#"alertd.yml:8: argus.escalation[0].receiver: undefined receiver "lead""#]]
        .assert_eq(&err("argus:\n  correlation: {}\n  escalation:\n    - {after: 15m, receiver: lead}\n"));
    expect!["alertd.yml:8: argus.escalation[0].after: missing: how long unacknowledged"]
        .assert_eq(&err("argus:\n  correlation: {}\n  escalation:\n    - {receiver: r}\n"));
    expect!["alertd.yml:8: argus.escalation[0].after: must be longer than zero"]
        .assert_eq(&err("argus:\n  correlation: {}\n  escalation:\n    - {after: 0s, receiver: r}\n"));
}

#[test]
fn first_match_and_continue() {
    let cfg = parse(
        r#"
route:
  receiver: default
  group_by: [alertname]
  routes:
    - matchers: ['severity="critical"']
      receiver: pager
      continue: true
    - matchers: ['team=~"gpu|net"']
      receiver: gpu-team
      group_by: ['...']
    - matchers: ['team="gpu"']
      receiver: never
receivers: [{name: default}, {name: pager}, {name: gpu-team}, {name: never}]
"#,
        "t.yml",
    )
    .unwrap();
    let show = |pairs: &[(&str, &str)]| {
        cfg.route
            .match_labels(&Labels::from_pairs(pairs.iter().copied()))
            .iter()
            .map(|r| format!("{} ({})", r.opts.receiver, r.key))
            .collect::<Vec<_>>()
            .join(", ")
    };
    expect![[r#"pager ({}/{severity="critical"}), gpu-team ({}/{team=~"gpu|net"})"#]]
        .assert_eq(&show(&[("severity", "critical"), ("team", "gpu")]));
    expect!["default ({})"].assert_eq(&show(&[("team", "db")]));
    expect![[r#"gpu-team ({}/{team=~"gpu|net"})"#]].assert_eq(&show(&[("team", "net")]));
}

#[test]
fn sibling_ids_differ_only_where_keys_collide() {
    let cfg = parse(
        r#"
route:
  receiver: a
  routes:
    - {matchers: ['x="1"'], receiver: a, continue: true}
    - matchers: ['x="1"']
      receiver: b
      routes: [{matchers: ['y="2"'], receiver: b}]
    - {matchers: ['x="2"'], receiver: b}
receivers: [{name: a}, {name: b}]
"#,
        "t.yml",
    )
    .unwrap();
    let ids: Vec<String> = cfg.route.walk().iter().map(|r| format!("{} {}", r.key, r.id)).collect();
    expect![[r#"
        {} {}
        {}/{x="1"} {}/{x="1"}
        {}/{x="1"} {}/{x="1"}/1
        {}/{x="1"}/{y="2"} {}/{x="1"}/1/{y="2"}
        {}/{x="2"} {}/{x="2"}"#]]
    .assert_eq(&ids.join("\n"));
}

#[test]
fn every_error_is_named_in_one_run() {
    // A refused receiver, a duplicated one, a bad time interval, a route naming the refused receiver
    // (not refused again: its name is known), a bad inhibit rule and a bad extension.
    let src = "route:\n  receiver: hook\n  group_interval: 0s\nreceivers:\n  - name: hook\n    webhook_configs: [{url: 'ftp://x/'}]\n  - name: hook\n  - name: ok\ntime_intervals:\n  - name: nights\n    time_intervals: [{times: [{start_time: '25:00', end_time: '06:00'}]}]\ninhibit_rules:\n  - source_matchers: ['severity=\"critical\"']\nargus:\n  history_retention: 0s\n";
    let e = parse(src, "alertd.yml").unwrap_err();
    expect![[r#"
        alertd.yml:3: route.group_interval: must be greater than 0
        alertd.yml:6: receivers[0].webhook_configs[0].url: not an http(s) URL
        alertd.yml:7: receivers[1].name: receiver "hook" is defined twice
        alertd.yml:11: time_intervals[0].time_intervals[0].times.start_time: invalid time "25:00" (expected HH:MM)
        alertd.yml:13: inhibit_rules[0]: needs both source and target matchers
        alertd.yml:15: argus.history_retention: must be greater than 0"#]]
    .assert_eq(&e.to_string());
    assert_eq!((e.line, e.also.len(), e.all().count()), (Some(3), 5, 6));
}

/// `templates:` globs read from the configuration's directory; errors name the template file and
/// its line and column, or the receiver field and its line.
#[test]
fn template_files_load_and_their_errors_have_positions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    std::fs::write(dir.path().join("t/a.tmpl"), "{{ define \"my.title\" }}[{{ .Status | toUpper }}]{{ end }}\n")
        .unwrap();
    std::fs::write(dir.path().join("t/b.txt"), "{{ nope }}").unwrap();
    let file = dir.path().join("alertd.yml").display().to_string();
    let yaml = |title: &str| {
        format!(
            "route: {{receiver: r}}\nreceivers:\n  - name: r\n    slack_configs:\n      - api_url: 'https://h/'\n        title: '{title}'\n    email_configs:\n      - to: a@x.org\n        from: b@x.org\n        smarthost: 'h:25'\n        headers: {{Subject: '{{{{ template \"email.default.subject\" . }}}}'}}\ntemplates: ['t/*.tmpl', 'none/*.tmpl']\n"
        )
    };
    let cfg = parse(&yaml("{{ template \"my.title\" . }}"), &file).unwrap();
    let r = &cfg.receivers["r"];
    assert_eq!(format!("{:?}", r.slack[0].templates.title), "Some(\"{{ template \\\"my.title\\\" . }}\")");
    assert!(r.email[0].subject.is_some());
    // A name no file defines: refused at the field's line.
    let e = parse(&yaml("{{ template \"other\" . }}"), &file).unwrap_err();
    assert_eq!(
        e.to_string(),
        "".to_string() + &file + ":6: receivers[0].slack_configs[0].title: template: :1:1: no such template \"other\""
    );
    // A reload reads the files anew: a file that now fails names itself, its line and column.
    std::fs::write(dir.path().join("t/c.tmpl"), "{{ define \"x\" }}\n  {{ .Status | nope }}{{ end }}").unwrap();
    let e = parse(&yaml("x"), &file).unwrap_err();
    let c = dir.path().join("t/c.tmpl").display().to_string();
    assert_eq!(e.to_string(), format!("{c}:2: template: {c}:2:16: function \"nope\" not defined"));
    // A bad glob names the list entry.
    std::fs::remove_file(dir.path().join("t/c.tmpl")).unwrap();
    let e = parse(&yaml("x").replace("'none/*.tmpl'", "'t/[a'"), &file).unwrap_err();
    assert_eq!(e.to_string(), format!("{file}:12: templates[1]: syntax error in pattern \"[a\""));
    // Email headers other than Subject are refused by name.
    let e = parse(&yaml("x").replace("{Subject:", "{X-Team: a, Subject:"), &file).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{file}:11: receivers[0].email_configs[0].headers.X-Team: header \"X-Team\" is not supported by alertd yet: only Subject is"
        )
    );
}
