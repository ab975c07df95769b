//! Prometheus rule files (`groups:` of `alert:` and `record:` rules, and Argus' `forecast:` rules):
//! parsed with unknown keys refused, then validated — names, durations, label names, templates, and
//! each `expr` (and forecast `limit`) with the store's PromQL parser. Errors are `file:line: field: reason`.

use super::{AlertingRule, DEFAULT_INTERVAL, RecordingRule, Rule, RuleGroup, template};
use crate::alert::valid_label_name;
use crate::config::{ConfigError, duration, from_serde, locate, read};
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
    /// Argus' forecast-band rule: its alert name.
    forecast: Option<String>,
    #[serde(default)]
    expr: Option<String>,
    metric: Option<String>,
    limit: Option<serde_norway::Value>,
    band: Option<String>,
    direction: Option<String>,
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

/// Reads every rule file in `paths`. A file that is refused is logged with its `file:line`, field and
/// reason, and skipped: one bad file never keeps the others from loading. Returns the groups of the
/// files that loaded, and the refusals, for where rule-load errors are shown.
pub fn load_each(paths: &[std::path::PathBuf]) -> (Vec<RuleGroup>, Vec<ConfigError>) {
    let mut groups = Vec::new();
    let mut refused = Vec::new();
    for p in paths {
        match load(p) {
            Ok(g) => groups.extend(g),
            Err(error) => {
                tracing::warn!(file = %error.file, line = ?error.line, %error, "Rule file refused, skipped");
                refused.push(error);
            }
        }
    }
    (groups, refused)
}

/// Parses and validates rule file text; `file` names it in errors.
pub fn parse(src: &str, file: &str) -> Result<Vec<RuleGroup>, ConfigError> {
    if src.trim().is_empty() {
        return Ok(Vec::new());
    }
    let raw: RawFile = serde_norway::from_str(src).map_err(|e| from_serde(&e, file))?;
    let err = |field: String, needle: &str, reason: String| {
        let line = locate(src, &field, needle);
        ConfigError::new(file, line, field, reason)
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
    if let Some(name) = &r.forecast {
        return forecast_rule(name.clone(), r, at, err);
    }
    for (key, set) in [("metric", r.metric.is_some()), ("limit", r.limit.is_some())]
        .into_iter()
        .chain([("band", r.band.is_some()), ("direction", r.direction.is_some())])
    {
        if set {
            return Err(err(format!("{at}.{key}"), &format!("{key}:"), "only allowed in a forecast rule".into()));
        }
    }
    let expr = r.expr.clone().unwrap_or_default();
    let expr_line = format!("expr: {expr}");
    let name = match (&r.alert, &r.record) {
        (Some(a), None) => a.as_str(),
        (None, Some(rec)) => rec.as_str(),
        (Some(a), Some(_)) => return Err(err(at.to_string(), a, "only one of `alert` and `record` may be set".into())),
        (None, None) => {
            return Err(err(at.to_string(), &expr_line, "one of `alert`, `record` or `forecast` must be set".into()));
        }
    };
    if r.expr.is_none() {
        return Err(err(format!("{at}.expr"), name, "missing field `expr`".into()));
    }
    if let Err(e) = argus_store_api::promql::check(&expr) {
        return Err(err(format!("{at}.expr"), &expr_line, e.to_string()));
    }
    for k in r.labels.keys() {
        if !valid_label_name(k) || k == "__name__" {
            return Err(err(format!("{at}.labels"), k, format!("invalid label name {k:?}")));
        }
    }
    check_templates(&r.labels, &format!("{at}.labels"), name, err)?;
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
        return Ok(Rule::Recording(RecordingRule { record: name.to_string(), expr, labels: r.labels }));
    }
    if name.is_empty() {
        return Err(err(format!("{at}.alert"), "alert:", "must not be empty".into()));
    }
    check_templates(&r.annotations, &format!("{at}.annotations"), name, err)?;
    Ok(Rule::Alerting(AlertingRule {
        name: name.to_string(),
        hold: dur("for", &r.hold)?,
        keep_firing_for: dur("keep_firing_for", &r.keep_firing_for)?,
        expr,
        forecast: None,
        labels: r.labels,
        annotations: r.annotations,
    }))
}

/// `- forecast: NAME` with `metric`, `limit`, `band` (`upper`, `lower`, `point`; by default the side
/// `direction` looks at), `direction` (`above`, the default, or `below`), `for`, `keep_firing_for`,
/// labels and annotations, as an alerting rule.
fn forecast_rule(
    name: String,
    r: RawRule,
    at: &str,
    err: &impl Fn(String, &str, String) -> ConfigError,
) -> Result<Rule, ConfigError> {
    use super::forecast::{Band, Direction, ForecastSpec};
    let needle = format!("forecast: {name}");
    if r.alert.is_some() || r.record.is_some() || r.expr.is_some() {
        let reason = "`forecast` takes no `alert`, `record` or `expr`: it compares the forecast with `limit`".into();
        return Err(err(at.to_string(), &needle, reason));
    }
    if name.is_empty() {
        return Err(err(format!("{at}.forecast"), "forecast:", "must not be empty".into()));
    }
    let metric = match r.metric {
        Some(m) if !m.is_empty() => m,
        _ => return Err(err(format!("{at}.metric"), &needle, "required: the forecast series' `metric` label".into())),
    };
    let limit = match &r.limit {
        Some(serde_norway::Value::Number(n)) => n.to_string(),
        Some(serde_norway::Value::String(s)) => s.clone(),
        Some(_) => return Err(err(format!("{at}.limit"), "limit:", "must be a number or a PromQL expression".into())),
        None => return Err(err(format!("{at}.limit"), &needle, "required: a number or a PromQL expression".into())),
    };
    if let Err(e) = argus_store_api::promql::check(&limit) {
        return Err(err(format!("{at}.limit"), "limit:", e.to_string()));
    }
    let direction = match r.direction.as_deref() {
        None | Some("above") => Direction::Above,
        Some("below") => Direction::Below,
        Some(d) => return Err(err(format!("{at}.direction"), "direction:", format!("{d:?} is not above or below"))),
    };
    let band = match r.band.as_deref() {
        None if direction == Direction::Above => Band::Upper,
        None => Band::Lower,
        Some("upper") => Band::Upper,
        Some("lower") => Band::Lower,
        Some("point") => Band::Point,
        Some(b) => return Err(err(format!("{at}.band"), "band:", format!("{b:?} is not upper, lower or point"))),
    };
    for k in r.labels.keys() {
        if !valid_label_name(k) || k == "__name__" {
            return Err(err(format!("{at}.labels"), k, format!("invalid label name {k:?}")));
        }
    }
    check_templates(&r.labels, &format!("{at}.labels"), &name, err)?;
    check_templates(&r.annotations, &format!("{at}.annotations"), &name, err)?;
    let dur = |key: &str, v: &Option<String>| -> Result<Duration, ConfigError> {
        match v {
            None => Ok(Duration::ZERO),
            Some(s) => duration::parse(s).map_err(|e| err(format!("{at}.{key}"), s, e)),
        }
    };
    let spec = ForecastSpec { metric, limit, band, direction };
    Ok(Rule::Alerting(AlertingRule {
        name,
        expr: spec.selector(),
        forecast: Some(spec),
        hold: dur("for", &r.hold)?,
        keep_firing_for: dur("keep_firing_for", &r.keep_firing_for)?,
        labels: r.labels,
        annotations: r.annotations,
    }))
}

/// Parses each template of `map` (labels or annotations at `at` of the rule `rule`), as
/// Prometheus does when it loads a rule file; the error names the rule, where in the template, and why.
fn check_templates(
    map: &BTreeMap<String, String>,
    at: &str,
    rule: &str,
    err: &impl Fn(String, &str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    for (k, v) in map {
        if let Err(e) = template::check(v) {
            // The template's first line finds it in the file; a quoted or folded one may not.
            let needle = v.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(k);
            return Err(err(format!("{at}.{k}"), needle, format!("rule {rule:?}: {e}")));
        }
    }
    Ok(())
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
                r#"[RuleGroup { file: "r.yml", name: "g", interval: 15s, rules: [Alerting(AlertingRule { name: "Hot", expr: "temp > 80", forecast: None, hold: 60s, keep_firing_for: 30s, labels: {"severity": "page"}, annotations: {"summary": "hot {{ $labels.host }}"} }), Recording(RecordingRule { record: "job:temp:max", expr: "max by (job) (temp)", labels: {} })] }]"#
            ]],
        );
        check("", expect![[r#"[]"#]]);
        check(
            "groups:\n- name: g\n  rules: []\n",
            expect![[r#"[RuleGroup { file: "r.yml", name: "g", interval: 60s, rules: [] }]"#]],
        );
    }

    #[test]
    fn forecast_rules() {
        let ok = "groups:\n- name: capacity\n  rules:\n  - forecast: GpuDemandOverCapacity\n    metric: gpu_demand\n    limit: sum(gpu_capacity)\n    for: 10m\n    labels: {severity: warning}\n";
        let got = match &parse(ok, "r.yml").unwrap()[0].rules[0] {
            Rule::Alerting(a) => format!("{} {:?} {:?}", a.expr, a.forecast, a.hold),
            r => format!("{r:?}"),
        };
        expect![[r#"argus_yhat_upper{metric="gpu_demand"} Some(ForecastSpec { metric: "gpu_demand", limit: "sum(gpu_capacity)", band: Upper, direction: Above }) 600s"#]]
            .assert_eq(&got);
        let rule = |body: &str| format!("groups:\n- name: g\n  rules:\n  - forecast: Low\n{body}");
        check(
            &rule("    metric: m\n    limit: 3\n    direction: below\n    band: point\n"),
            expect![[
                r#"[RuleGroup { file: "r.yml", name: "g", interval: 60s, rules: [Alerting(AlertingRule { name: "Low", expr: "argus_yhat{metric=\"m\"}", forecast: Some(ForecastSpec { metric: "m", limit: "3", band: Point, direction: Below }), hold: 0ns, keep_firing_for: 0ns, labels: {}, annotations: {} })] }]"#
            ]],
        );
        check(
            &rule("    limit: 3\n"),
            expect!["r.yml:4: groups[0].rules[0].metric: required: the forecast series' `metric` label"],
        );
        check(
            &rule("    metric: m\n"),
            expect!["r.yml:4: groups[0].rules[0].limit: required: a number or a PromQL expression"],
        );
        check(
            &rule("    metric: m\n    limit: 'sum(('\n"),
            expect!["r.yml:6: groups[0].rules[0].limit: 1:6: parse error: unclosed left parenthesis"],
        );
        check(
            &rule("    metric: m\n    limit: 3\n    band: middle\n"),
            expect![[r#"r.yml:7: groups[0].rules[0].band: "middle" is not upper, lower or point"#]],
        );
        check(
            &rule("    metric: m\n    limit: 3\n    direction: sideways\n"),
            expect![[r#"r.yml:7: groups[0].rules[0].direction: "sideways" is not above or below"#]],
        );
        check(
            &rule("    metric: m\n    limit: 3\n    expr: up\n"),
            expect![
                "r.yml:4: groups[0].rules[0]: `forecast` takes no `alert`, `record` or `expr`: it compares the forecast with `limit`"
            ],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    limit: 3\n",
            expect!["r.yml:6: groups[0].rules[0].limit: only allowed in a forecast rule"],
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
            expect!["r.yml:4: groups[0].rules[0]: one of `alert`, `record` or `forecast` must be set"],
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
        check("groups:\n- name: g\n- name: g\n", expect![[r#"r.yml:3: groups[1].name: group "g" is defined twice"#]]);
        check(
            "groups:\n- name: g\n  interval: 0s\n",
            expect![[r#"r.yml:3: groups[0].interval: must be greater than zero"#]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    annotations: {s: '{{ humanise $value }}'}\n",
            expect![[
                r#"r.yml:6: groups[0].rules[0].annotations.s: rule "A": template: 1:4: function "humanise" not defined"#
            ]],
        );
        check(
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    labels:\n      s: |\n        {{ if $value }}\n        hot\n",
            expect![[r#"r.yml:8: groups[0].rules[0].labels.s: rule "A": template: 3:1: unexpected EOF in if"#]],
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

    /// A refused file is skipped and reported; the files beside it load.
    #[test]
    fn a_bad_file_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.yml");
        let bad = dir.path().join("bad.yml");
        std::fs::write(&good, "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n").unwrap();
        std::fs::write(
            &bad,
            "groups:\n- name: h\n  rules:\n  - alert: B\n    expr: up\n    annotations: {s: '{{ humanise 1 }}'}\n",
        )
        .unwrap();
        let missing = dir.path().join("missing.yml");
        let (groups, refused) = super::load_each(&[bad.clone(), good, missing]);
        assert_eq!(groups.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["g"]);
        let refused: Vec<String> =
            refused.iter().map(|e| e.to_string().replace(&*dir.path().to_string_lossy(), "DIR")).collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert_eq!(
            refused[0],
            r#"DIR/bad.yml:6: groups[0].rules[0].annotations.s: rule "B": template: 1:4: function "humanise" not defined"#
        );
        assert!(refused[1].starts_with("DIR/missing.yml"), "{}", refused[1]);
    }

    /// Every file of the rule corpus (kube-prometheus, awesome-prometheus-alerts) loads unchanged.
    #[test]
    fn corpus_rule_files_load() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/rules-corpus");
        let (mut files, mut rules) = (0, 0);
        let mut refused = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if !matches!(path.extension().and_then(|x| x.to_str()), Some("yml" | "yaml")) {
                continue;
            }
            files += 1;
            match super::load(&path) {
                Ok(groups) => rules += groups.iter().map(|g| g.rules.len()).sum::<usize>(),
                Err(e) => refused.push(e.to_string()),
            }
        }
        assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
        assert!(files >= 10 && rules >= 300, "{files} files, {rules} rules");
    }
}
