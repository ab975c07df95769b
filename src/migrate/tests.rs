use super::{alertmanager, promql, rules, templates};
use expect_test::{Expect, expect};

fn am(src: &str, expect: Expect) {
    report(alertmanager::check(src, "am.yml"), expect);
}

fn rule_file(src: &str, expect: Expect) {
    report(rules::check(src, "r.yml"), expect);
}

fn report(checked: Result<Vec<super::Finding>, String>, expect: Expect) {
    let got = match checked {
        Ok(mut found) => {
            super::sort(&mut found);
            found.iter().map(|f| format!("{f}\n")).collect::<String>()
        }
        Err(e) => e,
    };
    expect.assert_eq(&got);
}

/// A route to one webhook that names a proxy: nothing to report.
const QUIET: &str = "route: {receiver: a}\nreceivers:\n- name: a\n  webhook_configs:\n  - url: http://a\n    http_config: {proxy_url: 'http://p:3128'}\n";

#[test]
fn a_file_alertd_runs_as_alertmanager_does_has_no_findings() {
    am(QUIET, expect![[""]]);
    rule_file("groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: gpu_temperature_celsius > 80\n", expect![[""]]);
}

#[test]
fn receivers_and_keys_alertd_lacks_are_refused_where_written() {
    am(
        "global:\n  smtp_auth_secret: x\n  wechat_api_url: http://w\n  http_config: {proxy_url: 'http://p'}\ntracing: {endpoint: x}\nroute: {receiver: a}\nreceivers:\n- name: a\n  msteams_configs: [{webhook_url: http://t}]\n  discord_configs: [{webhook_url: http://d}]\n",
        expect![[r#"
            am.yml:2:3: refused: global.smtp_auth_secret: not supported by alertd — use smtp_auth_username with smtp_auth_password (PLAIN or LOGIN), or keep e-mail on Alertmanager
            am.yml:3:3: refused: global.wechat_api_url: not supported by alertd — keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape
            am.yml:5:1: refused: tracing: not supported by alertd — remove it from alertd's copy
            am.yml:9:3: refused: receivers[0].msteams_configs: alertd has no Microsoft Teams receiver — keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape
            am.yml:10:3: refused: receivers[0].discord_configs: alertd has no Discord receiver — keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape
        "#]],
    );
}

#[test]
fn http_settings() {
    am(
        "route: {receiver: a}\nreceivers:\n- name: a\n  webhook_configs:\n  - url: http://a\n    http_config:\n      oauth2: {client_id: x, client_secret: y, token_url: http://t}\n      proxy_connect_header: {a: [b]}\n      tls_config: {server_name: n}\n      enable_http2: true\n",
        expect![[r#"
            am.yml:6:5: differs: receivers[0].webhook_configs[0].http_config: no proxy_url and no proxy_from_environment: true: alertd still sends through HTTP_PROXY / HTTPS_PROXY when they are set in its environment, where Alertmanager connects directly — unset those variables for argus, or set no_proxy, if the receivers must be reached directly
            am.yml:7:7: refused: receivers[0].webhook_configs[0].http_config.oauth2: not supported by alertd — use authorization with credentials_file holding a token another job refreshes, or keep this receiver on Alertmanager
            am.yml:8:7: refused: receivers[0].webhook_configs[0].http_config.proxy_connect_header: not supported by alertd — remove it, or keep this receiver on Alertmanager
            am.yml:9:20: refused: receivers[0].webhook_configs[0].http_config.tls_config.server_name: not supported by alertd — reach the receiver by the name its certificate carries, or keep it on Alertmanager
            am.yml:10:7: differs: receivers[0].webhook_configs[0].http_config.enable_http2: accepted and has no effect: alertd speaks HTTP/1.1 to receivers — nothing to do unless the receiver accepts only HTTP/2
        "#]],
    );
}

#[test]
fn slack_fields_alertd_lacks_and_defaults_it_renders_its_own_way() {
    am(
        "global: {slack_api_url: 'http://s', http_config: {proxy_from_environment: true}}\nroute: {receiver: a}\nreceivers:\n- name: a\n  slack_configs:\n  - channel: '#x'\n    title: '{{ .Status | date \"15:04\" }}'\n    fields: [{title: a, value: b}]\n    actions: [{type: button, text: x, url: http://u}]\n  - username: u\n    title: t\n    title_link: l\n    text: 'since {{ (index .Alerts 0).StartsAt.Local }}'\n    fallback: f\n",
        expect![[r#"
            am.yml:6:5: differs: receivers[0].slack_configs[0]: username, title_link, text, fallback unset: alertd sends its own text, and no username or title_link where Alertmanager renders its default templates — to get Alertmanager's, set username: '{{ template "slack.default.username" . }}', title_link: '{{ template "slack.default.titlelink" . }}', text: '{{ template "slack.default.text" . }}', fallback: '{{ template "slack.default.fallback" . }}'
            am.yml:7:26: refused: receivers[0].slack_configs[0].title: function "date" came after Alertmanager 0.25; alertd refuses it, as 0.25 does — use 0.25's functions (toUpper, toLower, title, join, match, safeHtml, reReplaceAll, stringSlice) and the times' .Format
            am.yml:8:5: refused: receivers[0].slack_configs[0].fields: not supported by alertd — remove it (alertd sends one attachment without it), or keep this receiver on Alertmanager, or send Slack's JSON through webhook_configs with an argus.body_template
            am.yml:9:5: refused: receivers[0].slack_configs[0].actions: not supported by alertd — remove it (alertd sends one attachment without it), or keep this receiver on Alertmanager, or send Slack's JSON through webhook_configs with an argus.body_template
            am.yml:13:47: differs: receivers[0].slack_configs[1].text: alertd's times are UTC: .Local is .UTC, not the server's zone — write the zone you mean into the text, or accept UTC
        "#]],
    );
}

#[test]
fn email() {
    am(
        "global: {smtp_smarthost: 'm:25', smtp_from: a@b}\nroute: {receiver: a}\nreceivers:\n- name: a\n  email_configs:\n  - to: x@y\n    auth_identity: i\n    headers: {subject: s, Reply-To: r@y}\n  - to: x@y\n    html: '<a href=\"{{ .ExternalURL }}\">x</a>'\n    text: t\n",
        expect![[r#"
            am.yml:6:5: differs: receivers[0].email_configs[0]: html unset: alertd renders its own title and message where Alertmanager renders its default templates; text unset: alertd adds its own plain-text part where Alertmanager sends HTML only — to get Alertmanager's, set html: '{{ template "email.default.html" . }}'
            am.yml:7:5: refused: receivers[0].email_configs[0].auth_identity: not supported by alertd — use auth_username with auth_password, or keep e-mail on Alertmanager
            am.yml:8:27: refused: receivers[0].email_configs[0].headers.Reply-To: alertd sends no headers but Subject — remove it (alertd sets From, To and Subject itself), or keep e-mail on Alertmanager
            am.yml:9:5: differs: receivers[0].email_configs[1]: Subject unset: alertd renders its own title and message where Alertmanager renders its default templates — to get Alertmanager's, set headers: {Subject: '{{ template "email.default.subject" . }}'}
            am.yml:10:5: differs: receivers[0].email_configs[1].html: the template prints into an attribute: alertd escapes every action as HTML text, without html/template's URL, script and style escaping — check the rendered mail where label values may hold characters a URL must percent-encode
        "#]],
    );
}

#[test]
fn paging_services() {
    am(
        "route: {receiver: a}\nreceivers:\n- name: a\n  pagerduty_configs:\n  - routing_key: k\n    description: d\n    client: c\n    group: '{{ .GroupLabels.team }}'\n    images: [{src: x}]\n    links: [{href: '{{ .ExternalURL }}', text: t}]\n    http_config: {proxy_url: 'http://p'}\n  opsgenie_configs:\n  - api_key: k\n    tags: '{{ .CommonLabels.team }}'\n    visible_to: [{type: team, name: t}]\n    http_config: {proxy_url: 'http://p'}\n",
        expect![[r#"
            am.yml:8:5: refused: receivers[0].pagerduty_configs[0].group: a Go template where alertd takes plain text — write plain text, or leave it out for alertd's own
            am.yml:9:5: refused: receivers[0].pagerduty_configs[0].images: not supported by alertd — remove it, or keep this receiver on Alertmanager
            am.yml:10:14: refused: receivers[0].pagerduty_configs[0].links[0].href: a Go template where alertd takes plain text — write plain text, or leave it out for alertd's own
            am.yml:13:5: differs: receivers[0].opsgenie_configs[0]: message, description unset: alertd sends its own title and text where Alertmanager renders its default templates — to get Alertmanager's, set message: '{{ template "opsgenie.default.message" . }}', description: '{{ template "opsgenie.default.description" . }}'
            am.yml:14:5: refused: receivers[0].opsgenie_configs[0].tags: a Go template where alertd takes plain text — write plain text, or leave it out for alertd's own
            am.yml:15:5: refused: receivers[0].opsgenie_configs[0].visible_to: not supported by alertd — remove it, or keep this receiver on Alertmanager
        "#]],
    );
}

#[test]
fn whatever_else_the_loader_refuses_is_reported_once() {
    // The route names no receiver that exists, an inhibit rule's matcher is bad, a webhook has no
    // URL beside a refused receiver kind: alertd's own errors, each once, the refused key left out.
    am(
        "route:\n  receiver: nobody\ninhibit_rules:\n- source_matchers: ['a=~\"(\"']\nreceivers:\n- name: a\n  sns_configs: [{topic_arn: x}]\n  webhook_configs:\n  - http_config: {proxy_url: 'http://p'}\n",
        expect![[r#"
            am.yml:2:3: refused: route.receiver: undefined receiver "nobody" — see docs/alertd.md, "Supported subset"
            am.yml:4:21: refused: inhibit_rules[0].source_matchers[0]: matcher "a=~\"(\"": invalid regex "(" for label a: regex parse error: ^(?s:()$ ^ error: unclosed group — see docs/alertd.md, "Supported subset"
            am.yml:7:3: refused: receivers[0].sns_configs: alertd has no Amazon SNS receiver — keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape
            am.yml:9:5: refused: receivers[0].webhook_configs[0].url: missing — see docs/alertd.md, "Supported subset"
        "#]],
    );
    am(
        "route: {receiver: [a\n",
        expect![
            "am.yml:2:1: not YAML: did not find expected ',' or ']' at line 2 column 1, while parsing a flow sequence at line 1 column 19"
        ],
    );
}

#[test]
fn rule_files_prometheus_runs_and_argus_differs_on() {
    rule_file(
        r#"groups:
- name: g
  limit: 10
  query_offset: 1m
  labels: {team: ml}
  rules:
  - alert: Down
    expr: up == 0 or absent(up)
    annotations:
      summary: '{{ $externalLabels.cluster }} {{ $labels.instance }}'
      empty: ''
      all: '{{ query "up" }}'
  - record: r
    expr: |
      sum by (instance) (rate(node_network_receive_bytes_total[5m]))
        / on (instance) group_left topk(3, node_boot_time_seconds) > exp(2)
  - alert: Hist
    expr: histogram_count(rate(x[5m])) > 0 and DCGM_FI_DEV_FB_USED > 0 and DCGM_FI_PROF_SM_ACTIVE > 0
"#,
        expect![[r#"
            r.yml:3:3: refused: groups[0].limit: group key not supported by Argus — remove it: Argus keeps every alert and series a rule returns
            r.yml:4:3: refused: groups[0].query_offset: group key not supported by Argus — remove it, and write `offset` into each expr that needs one
            r.yml:5:3: refused: groups[0].labels: group key not supported by Argus — move these labels into each rule's labels
            r.yml:8:11: differs: groups[0].rules[0].expr: collectors push to Argus, so there is no scrape and no up series for it — use the built-in HostDown (argus.rules.host_down), or time() - argus_host_last_seen_timestamp_seconds > 300
            r.yml:10:20: differs: groups[0].rules[0].annotations.summary: $externalLabels comes from argus.rules, not from Prometheus' flags and global section: empty until set there — copy global.external_labels and --web.external-url to argus.rules.external_labels and external_url
            r.yml:11:7: differs: groups[0].rules[0].annotations.empty: an empty annotation: Argus drops it where Prometheus keeps it as "" — remove it, or give it a value, if a receiver looks for the key
            r.yml:12:16: differs: groups[0].rules[0].annotations.all: a query result printed whole: Argus prints its samples, Prometheus memory addresses — print what you mean: {{ query "…" | first | value }}
            r.yml:14:5: refused: groups[0].rules[1].expr: 2:68: parse error: expected type vector in call to function 'exp', got scalar — see docs/alerting.md, "Migrating Prometheus rules"
            r.yml:18:11: refused: groups[0].rules[2].expr: Argus' query engine has no histogram_count(): the rule loads but every evaluation fails — rewrite it without this function, or keep the rule on Prometheus
            r.yml:18:48: differs: groups[0].rules[2].expr: DCGM_FI_DEV_FB_USED is not written by Argus' collector — use gpu_memory_used_bytes (bytes, not MiB), or set [collector.gpu] dcgm_names = true
            r.yml:18:76: differs: groups[0].rules[2].expr: DCGM_FI_PROF_SM_ACTIVE is a dcgm-exporter name, written by Argus' collector only with dcgm_names — set [collector.gpu] dcgm_names = true, or use the collector's name (docs/metrics.md)
        "#]],
    );
}

#[test]
fn the_rule_loader_s_own_refusals_are_reported() {
    rule_file(
        "groups:\n- name: g\n  rules:\n  - alert: Bad\n    expr: rate(x[5m]\n",
        expect![[r#"
        r.yml:5:5: refused: groups[0].rules[0].expr: 1:11: parse error: unclosed left parenthesis — see docs/alerting.md, "Migrating Prometheus rules"
    "#]],
    );
    // A refused group key does not hide the rest from the loader, which stops at the first unknown key.
    rule_file(
        "groups:\n- name: g\n  limit: 5\n  rules:\n  - alert: Bad\n    expr: histogram_count(x) > 0 and rate(x[5m]\n",
        expect![[r#"
        r.yml:3:3: refused: groups[0].limit: group key not supported by Argus — remove it: Argus keeps every alert and series a rule returns
        r.yml:6:5: refused: groups[0].rules[0].expr: 1:38: parse error: unclosed left parenthesis — see docs/alerting.md, "Migrating Prometheus rules"
    "#]],
    );
    rule_file(
        "groups:\n- name: g\n  rules:\n  - alert: T\n    expr: x\n    annotations: {a: '{{ define \"x\" }}{{ end }}'}\n",
        expect![[r#"
        r.yml:6:19: refused: groups[0].rules[0].annotations.a: rule "T": template: 1:1: {{define}} is not supported in rule templates — see docs/alerting.md, "Migrating Prometheus rules"
    "#]],
    );
}

#[test]
fn promql_names() {
    let names = |e: &str| -> String {
        promql::names(e)
            .into_iter()
            .map(|n| match n {
                promql::Name::Call(c) => format!("{c}() "),
                promql::Name::Metric(m) => format!("{m} "),
            })
            .collect()
    };
    let got = [
        names(
            r#"sum by (job, le) (rate(node_cpu_seconds_total{mode="idle", x=~"a}b"}[5m] offset -1m)) > on (instance) group_left (x) up"#,
        ),
        names("count without (cpu) (x) + sum(y) by (z) * 1e-3 / 0x1F - Inf + time() @ start()"),
        names("topk(1, a:b:c) # up\n or vector(1) unless bool b"),
    ];
    expect![[r#"
        [
            "sum() rate() node_cpu_seconds_total up ",
            "count() x sum() y time() start() ",
            "topk() a:b:c vector() b ",
        ]
    "#]]
    .assert_debug_eq(&got);
}

#[test]
fn template_names() {
    let got = templates::names(r#"a {{ .StartsAt.Local | date "x}}" }}{{/* up */}} {{- $x := since $externalURL -}}"#);
    expect![[r#"
        [
            Field(
                "StartsAt",
            ),
            Field(
                "Local",
            ),
            Func(
                "date",
            ),
            Var(
                "x",
            ),
            Func(
                "since",
            ),
            Var(
                "externalURL",
            ),
        ]
    "#]]
    .assert_debug_eq(&got);
    assert!(templates::prints_query_whole(r#"v: {{ query "sum(up)" }}"#));
    assert!(!templates::prints_query_whole(r#"{{ query "up" | first | value }}"#));
}
