//! The unit test file, as promtool reads it (unknown keys refused), its durations (Prometheus'
//! `model.Duration`: `1d`, `5m`, `1h30m`, `0`) and the globbing of `rule_files`.

use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestFile {
    #[serde(default, deserialize_with = "or_default")]
    pub rule_files: Vec<String>,
    #[serde(default)]
    pub evaluation_interval: Option<PromDuration>,
    #[serde(default, deserialize_with = "or_default")]
    pub group_eval_order: Vec<String>,
    #[serde(default, deserialize_with = "or_default")]
    pub tests: Vec<TestGroup>,
}

/// One entry of `tests:`: input series and the checks made on them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestGroup {
    /// The spacing of the input series' samples (0: every sample at time 0, as promtool loads them).
    #[serde(default)]
    pub interval: PromDuration,
    #[serde(default, deserialize_with = "or_default")]
    pub input_series: Vec<InputSeries>,
    #[serde(default, deserialize_with = "or_default")]
    pub alert_rule_test: Vec<AlertTest>,
    #[serde(default, deserialize_with = "or_default")]
    pub promql_expr_test: Vec<ExprTest>,
    /// `$externalLabels` in templates; never part of an alert's labels during evaluation.
    #[serde(default, deserialize_with = "or_default")]
    pub external_labels: BTreeMap<String, String>,
    /// `$externalURL` in templates.
    #[serde(default, deserialize_with = "or_default")]
    pub external_url: String,
    #[serde(default, deserialize_with = "or_default")]
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSeries {
    /// A series selector with equality matchers only: `up{job="x"}`.
    #[serde(deserialize_with = "text")]
    pub series: String,
    /// Expanding notation: `1+2x10 _ stale 3-1x5`.
    #[serde(default, deserialize_with = "text")]
    pub values: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertTest {
    #[serde(default)]
    pub eval_time: PromDuration,
    #[serde(default, deserialize_with = "or_default")]
    pub alertname: String,
    #[serde(default, deserialize_with = "or_default")]
    pub exp_alerts: Vec<ExpAlert>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpAlert {
    #[serde(default, deserialize_with = "or_default")]
    pub exp_labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "or_default")]
    pub exp_annotations: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExprTest {
    #[serde(default, deserialize_with = "or_default")]
    pub expr: String,
    #[serde(default)]
    pub eval_time: PromDuration,
    #[serde(default, deserialize_with = "or_default")]
    pub exp_samples: Vec<ExpSample>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpSample {
    /// A series selector as in `input_series`; empty for a sample without labels.
    #[serde(default, deserialize_with = "text")]
    pub labels: String,
    #[serde(default)]
    pub value: f64,
}

/// A null value read as the field's default, as Go's YAML decoder leaves a field at its zero value.
fn or_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A scalar as the text written in the file, whatever it looks like (`values: 1`, `values: 0x10`).
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

// === impl PromDuration ===

/// Prometheus' duration: milliseconds, written with the units y, w, d, h, m, s and ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PromDuration(pub i64);

const UNITS: [(&str, i64); 7] = [
    ("y", 365 * 86_400_000),
    ("w", 7 * 86_400_000),
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

impl PromDuration {
    /// Each unit at most once, largest first (`1h30m`); a bare `0` is zero.
    pub fn parse(s: &str) -> Result<PromDuration, String> {
        let invalid = || format!("not a valid duration string: {s:?}");
        if s == "0" {
            return Ok(PromDuration(0));
        }
        if s.is_empty() {
            return Err("empty duration string".into());
        }
        let mut rest = s;
        let mut next_unit = 0;
        let mut total: i64 = 0;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(invalid());
            }
            let n: i64 = rest[..digits].parse().map_err(|_| invalid())?;
            rest = &rest[digits..];
            // `ms` before `m`: the longer suffix first.
            let unit =
                ["ms", "y", "w", "d", "h", "m", "s"].into_iter().find(|u| rest.starts_with(u)).ok_or_else(invalid)?;
            let at = UNITS.iter().position(|(u, _)| *u == unit).ok_or_else(invalid)?;
            if at < next_unit {
                return Err(invalid());
            }
            next_unit = at + 1;
            rest = &rest[unit.len()..];
            total = n
                .checked_mul(UNITS[at].1)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(|| format!("duration out of range: {s:?}"))?;
        }
        Ok(PromDuration(total))
    }
}

impl std::fmt::Display for PromDuration {
    /// As Prometheus prints it: `0s`, `5m`, `1d`, `1m10s`; years and weeks only when exact.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ms = self.0;
        if ms == 0 {
            return f.write_str("0s");
        }
        for (i, (unit, mult)) in UNITS.iter().enumerate() {
            let exact_only = i < 3;
            if exact_only && ms % mult != 0 {
                continue;
            }
            let v = ms / mult;
            if v > 0 {
                write!(f, "{v}{unit}")?;
                ms -= v * mult;
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for PromDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(PromDuration(0)),
            Some(s) => PromDuration::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

// === globbing ===

/// The files `pattern` names, as Go's `filepath.Glob`: `*`, `?` and `[…]` in any component, matches
/// sorted within each directory; a pattern without them names the file if it exists.
pub fn glob(pattern: &Path) -> Vec<PathBuf> {
    let text = pattern.to_string_lossy();
    if !text.contains(['*', '?', '[']) {
        return if std::fs::symlink_metadata(pattern).is_ok() { vec![pattern.to_path_buf()] } else { Vec::new() };
    }
    let mut found = vec![PathBuf::new()];
    for component in pattern.components() {
        let part = component.as_os_str().to_string_lossy();
        let mut next = Vec::new();
        for dir in &found {
            if !part.contains(['*', '?', '[']) {
                next.push(dir.join(component));
                continue;
            }
            let read = if dir.as_os_str().is_empty() { Path::new(".") } else { dir.as_path() };
            let Ok(entries) = std::fs::read_dir(read) else { continue };
            let mut names: Vec<String> =
                entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            next.extend(names.into_iter().filter(|n| matches(part.as_bytes(), n.as_bytes())).map(|n| dir.join(n)));
        }
        found = next;
    }
    found.retain(|p| std::fs::symlink_metadata(p).is_ok());
    found
}

/// Shell pattern matching of one path component: `*`, `?`, `[abc]`, `[a-z]`, `[^…]`, `\x`.
fn matches(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| matches(rest, &name[i..])),
        Some((b'?', rest)) => !name.is_empty() && matches(rest, &name[1..]),
        Some((b'[', rest)) => {
            let Some((&c, tail)) = name.split_first() else { return false };
            let (negate, class) = match rest.first() {
                Some(b'^') => (true, &rest[1..]),
                _ => (false, rest),
            };
            let Some(end) = class.iter().position(|&b| b == b']') else { return false };
            let set = &class[..end];
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negate && matches(&class[end + 1..], tail)
        }
        Some((b'\\', rest)) if !rest.is_empty() => name.first() == Some(&rest[0]) && matches(&rest[1..], &name[1..]),
        Some((&p, rest)) => name.first() == Some(&p) && matches(rest, &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn durations() {
        let got: Vec<String> = [
            "0", "0s", "5m", "1d", "1m10s", "90s", "106700d", "1h30m", "2w", "365d", "5m1s", "1500ms", "5x", "m",
            "1s1m",
        ]
        .iter()
        .map(|s| match PromDuration::parse(s) {
            Ok(d) => format!("{s}={d}"),
            Err(e) => e,
        })
        .collect();
        expect![[r#"["0=0s", "0s=0s", "5m=5m", "1d=1d", "1m10s=1m10s", "90s=1m30s", "106700d=106700d", "1h30m=1h30m", "2w=2w", "365d=1y", "5m1s=5m1s", "1500ms=1s500ms", "not a valid duration string: \"5x\"", "not a valid duration string: \"m\"", "not a valid duration string: \"1s1m\""]"#]]
            .assert_eq(&format!("{got:?}"));
    }

    #[test]
    fn patterns() {
        let cases = [
            ("*.yml", "rules.yml", true),
            ("*.yml", "rules.yaml", false),
            ("r?les.yml", "rules.yml", true),
            ("[a-r]ules.yml", "rules.yml", true),
            ("[^r]ules.yml", "rules.yml", false),
            ("\\*", "*", true),
        ];
        for (p, n, want) in cases {
            assert_eq!(matches(p.as_bytes(), n.as_bytes()), want, "{p} against {n}");
        }
    }

    #[test]
    fn globs_rule_files() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.yml", "a.yml", "c.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let got: Vec<String> = glob(&dir.path().join("*.yml"))
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(got, ["a.yml", "b.yml"]);
        assert_eq!(glob(&dir.path().join("c.txt")).len(), 1);
        assert!(glob(&dir.path().join("missing.yml")).is_empty());
    }

    #[test]
    fn test_files() {
        let src = "rule_files: [r.yml]\ntests:\n- interval: 1m\n  input_series:\n  - series: up\n    values: 0x10\n  - series: n\n    values: 1\n  alert_rule_test:\n  - eval_time: 0\n    alertname: A\n    exp_alerts:\n    - {}\n  promql_expr_test:\n  - expr: up\n    eval_time: 5m\n    exp_samples:\n";
        let f: TestFile = serde_norway::from_str(src).unwrap();
        let t = &f.tests[0];
        assert_eq!(
            (t.input_series[0].values.as_str(), t.input_series[1].values.as_str(), t.interval),
            ("0x10", "1", PromDuration(60_000))
        );
        assert_eq!((t.alert_rule_test[0].exp_alerts.len(), t.promql_expr_test[0].exp_samples.len()), (1, 0));
        let err = serde_norway::from_str::<TestFile>("tests:\n- intervall: 1m\n").unwrap_err().to_string();
        assert!(err.contains("unknown field `intervall`"), "{err}");
    }
}
