use super::*;
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
        "route:\n  receiver: r\nreceivers:\n  - name: r\n    email_configs:\n      - to: a@b.c\n",
        expect!["alertd.yml:5: receivers[0].email_configs: not supported by alertd yet"],
    );
    check(
        &format!("global:\n  smtp_smarthost: 'localhost:25'\nroute:\n  receiver: r\n{r}"),
        expect!["alertd.yml:2: global.smtp_smarthost: not supported by alertd yet"],
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
        &format!("route:\n  receiver: r\n{r}argus:\n  storm: {{}}\n"),
        expect!["alertd.yml:7: argus: unknown field `storm`, expected one of `external_url`, `flap`, `correlation`"],
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
