//! Prometheus rule files (`groups:` of `alert:` and `record:` rules): parsed with unknown keys refused,
//! then validated — names, durations, label names, templates, and each `expr` with the store's PromQL
//! parser. Errors are `file:line: field: reason`.

use super::{AlertingRule, DEFAULT_INTERVAL, RecordingRule, Rule, RuleGroup, template};
use crate::alert::valid_label_name;
use crate::config::{ConfigError, duration, from_serde, line_of, read};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    groups: Vec<RawGroup>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: String,
    interval: Option<String>,
    #[serde(default)]
    rules: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    record: Option<String>,
    alert: Option<String>,
    expr: String,
    #[serde(rename = "for")]
    hold: Option<String>,
    keep_firing_for: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Reads and validates one rule file.
pub fn load(path: &Path) -> Result<Vec<RuleGroup>, ConfigError> {
    let (src, file) = read(path)?;
    parse(&src, &file)
}

/// Parses and validates rule file text; `file` names it in errors.
pub fn parse(src: &str, file: &str) -> Result<Vec<RuleGroup>, ConfigError> {
    if src.trim().is_empty() {
        return Ok(Vec::new());
    }
    let raw: RawFile = serde_norway::from_str(src).map_err(|e| from_serde(&e, file))?;
    let err = |field: String, needle: &str, reason: String| ConfigError {
        file: file.to_string(),
        line: line_of(src, needle),
        field,
        reason,
    };
    let mut names = BTreeSet::new();
    let mut groups = Vec::with_capacity(raw.groups.len());
    for (gi, g) in raw.groups.into_iter().enumerate() {
        let at = format!("groups[{gi}]");
        if g.name.is_empty() {
            return Err(err(format!("{at}.name"), "name:", "must not be empty".into()));
        }
        if !names.insert(g.name.clone()) {
            let reason = format!("group {:?} is defined twice", g.name);
            return Err(err(format!("{at}.name"), &format!("name: {}", g.name), reason));
        }
        let interval = match &g.interval {
            None => DEFAULT_INTERVAL,
            Some(s) => match duration::parse(s) {
                Ok(d) if !d.is_zero() => d,
                Ok(_) => return Err(err(format!("{at}.interval"), s, "must be greater than zero".into())),
                Err(e) => return Err(err(format!("{at}.interval"), s, e)),
            },
        };
        let mut rules = Vec::with_capacity(g.rules.len());
        for (ri, r) in g.rules.into_iter().enumerate() {
            rules.push(rule(r, &format!("{at}.rules[{ri}]"), &err)?);
        }
        groups.push(RuleGroup { file: file.to_string(), name: g.name, interval, rules });
    }
    Ok(groups)
}

fn rule(r: RawRule, at: &str, err: &impl Fn(String, &str, String) -> ConfigError) -> Result<Rule, ConfigError> {
    let expr_line = format!("expr: {}", r.expr);
    let name = match (&r.alert, &r.record) {
        (Some(a), None) => a.as_str(),
        (None, Some(rec)) => rec.as_str(),
        (Some(a), Some(_)) => return Err(err(at.to_string(), a, "only one of `alert` and `record` may be set".into())),
        (None, None) => return Err(err(at.to_string(), &expr_line, "one of `alert` or `record` must be set".into())),
    };
    if let Err(e) = argus_store::query::check(&r.expr) {
        // The store words it for its HTTP API; here the field says what was wrong.
        let msg = e.to_string();
        let msg = msg.strip_prefix("invalid parameter \"query\": ").unwrap_or(&msg).to_string();
        return Err(err(format!("{at}.expr"), &expr_line, msg));
    }
    for (k, v) in &r.labels {
        if !valid_label_name(k) || k == "__name__" {
            return Err(err(format!("{at}.labels"), k, format!("invalid label name {k:?}")));
        }
        template::check(v).map_err(|e| err(format!("{at}.labels.{k}"), v, e.to_string()))?;
    }
    let dur = |key: &str, v: &Option<String>| -> Result<Duration, ConfigError> {
        match v {
            None => Ok(Duration::ZERO),
            Some(s) => duration::parse(s).map_err(|e| err(format!("{at}.{key}"), s, e)),
        }
    };
    if r.record.is_some() {
        if !valid_metric_name(name) {
            return Err(err(format!("{at}.record"), name, format!("invalid metric name {name:?}")));
        }
        let extra = [("for", r.hold.is_some()), ("keep_firing_for", r.keep_firing_for.is_some())];
        let extra = extra.into_iter().chain([("annotations", !r.annotations.is_empty())]);
        if let Some((key, _)) = extra.into_iter().find(|(_, set)| *set) {
            return Err(err(format!("{at}.{key}"), key, "not allowed in a recording rule".into()));
        }
        return Ok(Rule::Recording(RecordingRule { record: name.to_string(), expr: r.expr, labels: r.labels }));
    }
    if name.is_empty() {
        return Err(err(format!("{at}.alert"), "alert:", "must not be empty".into()));
    }
    for (k, v) in &r.annotations {
        template::check(v).map_err(|e| err(format!("{at}.annotations.{k}"), v, e.to_string()))?;
    }
    Ok(Rule::Alerting(AlertingRule {
        name: name.to_string(),
        hold: dur("for", &r.hold)?,
        keep_firing_for: dur("keep_firing_for", &r.keep_firing_for)?,
        expr: r.expr,
        labels: r.labels,
        annotations: r.annotations,
    }))
}

/// Prometheus' metric name rule: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn valid_metric_name(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(src: &str, expect: Expect) {
        let got = match parse(src, "r.yml") {
            Ok(groups) => format!("{groups:?}"),
            Err(e) => e.to_string(),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn rule_files() {
        check(
            "groups:\n- name: g\n  interval: 15s\n  rules:\n  - alert: Hot\n    expr: temp > 80\n    for: 1m\n    keep_firing_for: 30s\n    labels: {severity: page}\n    annotations: {summary: 'hot {{ $labels.host }}'}\n  - record: job:temp:max\n    expr: max by (job) (temp)\n",
            expect![[
                r#"[RuleGroup { file: "r.yml", name: "g", interval: 15s, rules: [Alerting(AlertingRule { name: "Hot", expr: "temp > 80", hold: 60s, keep_firing_for: 30s, labels: {"severity": "page"}, annotations: {"summary": "hot {{ $labels.host }}"} }), Recording(RecordingRule { record: "job:temp:max", expr: "max by (job) (temp)", labels: {} })] }]"#
            ]],
        );
        check("", expect![[r#"[]"#]]);
        check(
            "groups:\n- name: g\n  rules: []\n",
            expect![[r#"[RuleGroup { file: "r.yml", name: "g", interval: 60s, rules: [] }]"#]],
        );
    }

    #[test]
    fn bad_rule_files() {
        check(
            "groups:\n- name: g\n  limit: 3\n",
            expect![[r#"r.yml:3: groups[0]: unknown field `limit`, expected one of `name`, `interval`, `rules`"#]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up ==\n",
            expect!["r.yml:5: groups[0].rules[0].expr: 1:6: parse error: invalid promql query"],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    record: b\n    expr: up\n",
            expect![[r#"r.yml:4: groups[0].rules[0]: only one of `alert` and `record` may be set"#]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - expr: up\n",
            expect!["r.yml:4: groups[0].rules[0]: one of `alert` or `record` must be set"],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - record: a-b\n    expr: up\n",
            expect![[r#"r.yml:4: groups[0].rules[0].record: invalid metric name "a-b""#]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - record: ab\n    expr: up\n    for: 1m\n",
            expect![[r#"r.yml:6: groups[0].rules[0].for: not allowed in a recording rule"#]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    for: soon\n",
            expect![[r#"r.yml:6: groups[0].rules[0].for: invalid duration "soon" (expected e.g. 30s, 5m, 1h30m, 2d)"#]],
        );
        check("groups:\n- name: g\n- name: g\n", expect![[r#"r.yml:2: groups[1].name: group "g" is defined twice"#]]);
        check(
            "groups:\n- name: g\n  interval: 0s\n",
            expect![[r#"r.yml:3: groups[0].interval: must be greater than zero"#]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    annotations: {s: '{{ .Foo }}'}\n",
            expect![[r#"r.yml:6: groups[0].rules[0].annotations.s: unsupported template action "{{ .Foo }}""#]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    labels: {0x: y}\n",
            expect![[r#"r.yml:6: groups[0].rules[0].labels: invalid label name "0x""#]],
        );
    }
}

#[cfg(test)]
mod shipped {
    /// Every rule file in config/rules/ loads.
    #[test]
    fn shipped_rule_files_load() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/rules");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let groups = super::load(&e.unwrap().path()).unwrap_or_else(|e| panic!("{e}"));
            assert!(groups.iter().all(|g| !g.rules.is_empty()));
            n += 1;
        }
        assert!(n >= 1, "config/rules/ is empty");
    }
}
