//! `[collector.gpu.attribution]`: which workload a GPU's series are labelled with — the Kubernetes
//! pod and container the kubelet allocated the GPU to (PodResources API), and the Slurm job whose
//! processes use it (from their cgroups, with the job's user and partition from `scontrol`).
//!
//! ```toml
//! [collector.gpu.attribution]
//! kubernetes = true            # default: on when the socket exists
//! pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock"
//! refresh = "30s"
//! slurm = true
//! scontrol = "/usr/bin/scontrol"
//! families = ["gpu_utilization_ratio", "gpu_memory_*"]
//! ```

use super::{ConfigError, duration};
use regex::Regex;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

const DEFAULT_SOCKET: &str = "/var/lib/kubelet/pod-resources/kubelet.sock";
const DEFAULT_REFRESH: Duration = Duration::from_secs(30);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(120);
const DEFAULT_SLURM_CACHE_TTL: Duration = Duration::from_secs(300);

/// The section as written. Every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttributionConfig {
    /// Ask the kubelet which pod holds each GPU. Default: on when `pod_resources_socket` exists
    /// (checked at every refresh, so a kubelet started after the collector is found).
    pub kubernetes: Option<bool>,
    /// The kubelet's PodResources socket (default `/var/lib/kubelet/pod-resources/kubelet.sock`).
    pub pod_resources_socket: Option<PathBuf>,
    /// How often the kubelet is asked (default "30s"); collections in between use the last answer.
    pub refresh: Option<String>,
    /// How long one call to the kubelet or to `scontrol` may take (default "5s", at most `refresh`).
    pub timeout: Option<String>,
    /// While the kubelet fails, its last answer is used until it is this old (default "2m", at least
    /// `refresh`); then GPUs lose their pod labels until it answers again.
    pub max_age: Option<String>,
    /// Label GPUs used by exactly one Slurm job with `slurm_job`, `slurm_user` and
    /// `slurm_partition` (default true).
    pub slurm: Option<bool>,
    /// The `scontrol` program (default `scontrol`, found in PATH).
    pub scontrol: Option<PathBuf>,
    /// `SLURM_CONF` for `scontrol`, where slurm.conf is not where Slurm looks by default.
    pub slurm_conf: Option<PathBuf>,
    /// How long a job's user and partition are kept before `scontrol` is asked again (default "5m").
    pub slurm_cache_ttl: Option<String>,
    /// Which per-GPU series families carry the labels: names or globs (`*`, `?`), e.g.
    /// `["gpu_utilization_ratio", "gpu_memory_*"]`. Default: every per-GPU series. Fewer families,
    /// fewer series renamed when a GPU changes hands.
    pub families: Option<Vec<String>>,
}

/// Validated `[collector.gpu.attribution]`.
#[derive(Debug, Clone)]
pub struct AttributionSettings {
    pub kubernetes: Kubernetes,
    pub pod_resources_socket: PathBuf,
    pub refresh: Duration,
    pub timeout: Duration,
    pub max_age: Duration,
    /// `None` with `slurm = false`.
    pub slurm: Option<SlurmSettings>,
    pub families: Families,
}

/// Whether the kubelet is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kubernetes {
    Off,
    /// When the socket exists; its absence is not an error.
    WhenPresent,
    /// Always; a missing socket is reported like any other failure.
    On,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmSettings {
    pub scontrol: PathBuf,
    pub slurm_conf: Option<PathBuf>,
    pub cache_ttl: Duration,
}

/// The series families that carry attribution labels: every one, or those a glob matches.
#[derive(Debug, Clone)]
pub struct Families(Option<Vec<Regex>>);

// === impl AttributionSettings ===

impl Default for AttributionSettings {
    /// The settings of an absent section.
    fn default() -> AttributionSettings {
        AttributionSettings {
            kubernetes: Kubernetes::WhenPresent,
            pod_resources_socket: DEFAULT_SOCKET.into(),
            refresh: DEFAULT_REFRESH,
            timeout: DEFAULT_TIMEOUT,
            max_age: DEFAULT_MAX_AGE,
            slurm: Some(SlurmSettings::default()),
            families: Families::all(),
        }
    }
}

impl Default for SlurmSettings {
    fn default() -> SlurmSettings {
        SlurmSettings { scontrol: "scontrol".into(), slurm_conf: None, cache_ttl: DEFAULT_SLURM_CACHE_TTL }
    }
}

// === impl Families ===

impl Families {
    pub fn all() -> Families {
        Families(None)
    }

    /// Whether every family carries the labels (no `families` list).
    pub fn is_all(&self) -> bool {
        self.0.is_none()
    }

    /// Families matching any of `globs` (`*`: any run of characters, `?`: one character). A glob may
    /// use the characters of a metric name only.
    pub fn globs<S: AsRef<str>>(globs: &[S]) -> Result<Families, String> {
        let mut out = Vec::new();
        for (i, g) in globs.iter().enumerate() {
            let g = g.as_ref();
            if g.is_empty() || !g.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '*' | '?')) {
                return Err(format!("[{i}]: {g:?} is not a metric name or glob (letters, digits, '_', ':', '*', '?')"));
            }
            let pattern: String = g
                .chars()
                .map(|c| match c {
                    '*' => ".*".to_string(),
                    '?' => ".".to_string(),
                    c => c.to_string(),
                })
                .collect();
            // Only name characters and the two wildcards reach here: the pattern always compiles.
            out.push(Regex::new(&format!("^(?:{pattern})$")).map_err(|e| format!("[{i}]: {e}"))?);
        }
        Ok(Families(Some(out)))
    }

    /// Whether series of the family `name` (`gpu_utilization_ratio`) carry the labels.
    pub fn matches(&self, name: &str) -> bool {
        match &self.0 {
            None => true,
            Some(globs) => globs.iter().any(|g| g.is_match(name)),
        }
    }
}

// === impl AttributionConfig ===

impl AttributionConfig {
    /// Checks the section (absent: `None`); errors name the key. Pure: the socket's existence is
    /// looked at only when the collector runs.
    pub(super) fn validate(c: Option<&AttributionConfig>, file: &str) -> Result<AttributionSettings, ConfigError> {
        let Some(c) = c else { return Ok(AttributionSettings::default()) };
        let bad = |key: &str, reason: String| ConfigError::Invalid {
            file: file.to_string(),
            error: argus_model::FieldError::new(format!("collector.gpu.attribution.{key}"), reason),
        };
        let dur = |key: &str, v: &Option<String>, default: Duration| match v {
            Some(s) => duration(s).map_err(|r| bad(key, r)),
            None => Ok(default),
        };
        let refresh = dur("refresh", &c.refresh, DEFAULT_REFRESH)?;
        let timeout = dur("timeout", &c.timeout, DEFAULT_TIMEOUT.min(refresh))?;
        if timeout > refresh {
            return Err(bad("timeout", format!("must not exceed refresh ({})", humantime::format_duration(refresh))));
        }
        let max_age = dur("max_age", &c.max_age, DEFAULT_MAX_AGE.max(refresh))?;
        if max_age < refresh {
            return Err(bad("max_age", format!("must be at least refresh ({})", humantime::format_duration(refresh))));
        }
        let pod_resources_socket = c.pod_resources_socket.clone().unwrap_or_else(|| DEFAULT_SOCKET.into());
        if pod_resources_socket.as_os_str().is_empty() {
            return Err(bad(
                "pod_resources_socket",
                "empty; name the kubelet's socket or set kubernetes = false".into(),
            ));
        }
        let kubernetes = match c.kubernetes {
            None => Kubernetes::WhenPresent,
            Some(true) => Kubernetes::On,
            Some(false) => Kubernetes::Off,
        };
        let slurm = match c.slurm {
            Some(false) => {
                for (key, set) in [
                    ("scontrol", c.scontrol.is_some()),
                    ("slurm_conf", c.slurm_conf.is_some()),
                    ("slurm_cache_ttl", c.slurm_cache_ttl.is_some()),
                ] {
                    if set {
                        return Err(bad(key, "only read with slurm = true".into()));
                    }
                }
                None
            }
            None | Some(true) => {
                let scontrol = c.scontrol.clone().unwrap_or_else(|| "scontrol".into());
                if scontrol.as_os_str().is_empty() {
                    return Err(bad("scontrol", "empty; name the program or set slurm = false".into()));
                }
                Some(SlurmSettings {
                    scontrol,
                    slurm_conf: c.slurm_conf.clone(),
                    cache_ttl: dur("slurm_cache_ttl", &c.slurm_cache_ttl, DEFAULT_SLURM_CACHE_TTL)?,
                })
            }
        };
        let families = match &c.families {
            None => Families::all(),
            Some(f) if f.is_empty() => return Err(bad("families", "empty; leave it out to label every family".into())),
            Some(f) => Families::globs(f).map_err(|r| bad("families", r))?,
        };
        Ok(AttributionSettings { kubernetes, pod_resources_socket, refresh, timeout, max_age, slurm, families })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(toml: &str, expected: Expect) {
        let c: AttributionConfig = toml::from_str(toml).unwrap();
        let out = match AttributionConfig::validate(Some(&c), "argus.toml") {
            Ok(s) => format!(
                "kubernetes={:?} socket={} refresh={:?} timeout={:?} max_age={:?} slurm={:?}",
                s.kubernetes,
                s.pod_resources_socket.display(),
                s.refresh,
                s.timeout,
                s.max_age,
                s.slurm.map(|s| (s.scontrol, s.slurm_conf, s.cache_ttl)),
            ),
            Err(e) => e.to_string(),
        };
        expected.assert_eq(&out);
    }

    #[test]
    fn settings_and_their_errors() {
        check(
            "",
            expect![[
                r#"kubernetes=WhenPresent socket=/var/lib/kubelet/pod-resources/kubelet.sock refresh=30s timeout=5s max_age=120s slurm=Some(("scontrol", None, 300s))"#
            ]],
        );
        check(
            "kubernetes = true\npod_resources_socket = \"/run/k.sock\"\nrefresh = \"1m\"\nmax_age = \"10m\"\nscontrol = \"/opt/slurm/bin/scontrol\"\nslurm_conf = \"/etc/slurm-llnl/slurm.conf\"",
            expect![[
                r#"kubernetes=On socket=/run/k.sock refresh=60s timeout=5s max_age=600s slurm=Some(("/opt/slurm/bin/scontrol", Some("/etc/slurm-llnl/slurm.conf"), 300s))"#
            ]],
        );
        check(
            "kubernetes = false\nslurm = false\nrefresh = \"2s\"",
            expect![
                "kubernetes=Off socket=/var/lib/kubelet/pod-resources/kubelet.sock refresh=2s timeout=2s max_age=120s slurm=None"
            ],
        );
        check(
            "refresh = \"5m\"",
            expect![[
                r#"kubernetes=WhenPresent socket=/var/lib/kubelet/pod-resources/kubelet.sock refresh=300s timeout=5s max_age=300s slurm=Some(("scontrol", None, 300s))"#
            ]],
        );
        check(
            "refresh = \"often\"",
            expect![[
                r#"argus.toml: collector.gpu.attribution.refresh: "often" is not a duration (e.g. 500ms, 10s, 5m, 35d)"#
            ]],
        );
        check(
            "refresh = \"10s\"\ntimeout = \"20s\"",
            expect!["argus.toml: collector.gpu.attribution.timeout: must not exceed refresh (10s)"],
        );
        check(
            "refresh = \"1m\"\nmax_age = \"30s\"",
            expect!["argus.toml: collector.gpu.attribution.max_age: must be at least refresh (1m)"],
        );
        check(
            "slurm = false\nscontrol = \"/usr/bin/scontrol\"",
            expect!["argus.toml: collector.gpu.attribution.scontrol: only read with slurm = true"],
        );
        check(
            "scontrol = \"\"",
            expect!["argus.toml: collector.gpu.attribution.scontrol: empty; name the program or set slurm = false"],
        );
        check(
            "pod_resources_socket = \"\"",
            expect![
                "argus.toml: collector.gpu.attribution.pod_resources_socket: empty; name the kubelet's socket or set kubernetes = false"
            ],
        );
        check(
            "families = []",
            expect!["argus.toml: collector.gpu.attribution.families: empty; leave it out to label every family"],
        );
        check(
            "families = [\"gpu_utilization_ratio\", \"gpu memory\"]",
            expect![[
                r#"argus.toml: collector.gpu.attribution.families: [1]: "gpu memory" is not a metric name or glob (letters, digits, '_', ':', '*', '?')"#
            ]],
        );
        check(
            "slurm_cache_ttl = \"0s\"",
            expect!["argus.toml: collector.gpu.attribution.slurm_cache_ttl: must be more than zero"],
        );
    }

    #[test]
    fn the_section_is_read_under_collector_gpu() {
        let valid = |text: &str| super::super::Config::parse(text, "argus.toml").and_then(|c| c.validate("argus.toml"));
        let v = valid("[collector.gpu.attribution]\nkubernetes = false\nfamilies = [\"gpu_memory_*\"]\n").unwrap();
        let a = v.gpu_attribution.unwrap();
        assert_eq!(a.kubernetes, Kubernetes::Off);
        assert!(a.families.matches("gpu_memory_used_bytes") && !a.families.matches("gpu_power_watts"));
        // No section: the defaults; the gpu source off: nothing.
        assert_eq!(valid("").unwrap().gpu_attribution.unwrap().kubernetes, Kubernetes::WhenPresent);
        let off = valid("[collector.gpu]\nenabled = false\n[collector.gpu.attribution]\nslurm = false\n").unwrap();
        assert!(off.gpu_attribution.is_none());
        let e = valid("[collector.gpu.attribution]\nrefresh = \"soon\"\n").unwrap_err();
        expect![[
            r#"argus.toml: collector.gpu.attribution.refresh: "soon" is not a duration (e.g. 500ms, 10s, 5m, 35d)"#
        ]]
        .assert_eq(&e.to_string());
        let e = valid("[collector.gpu.attribution]\nkubelet = true\n").unwrap_err().to_string();
        assert!(e.starts_with("argus.toml:2:1: unknown field `kubelet`"), "{e}");
    }

    #[test]
    fn families_match_names_and_globs() {
        let f = Families::globs(&["gpu_utilization_ratio", "gpu_memory_*", "gpu_?ower_watts"]).unwrap();
        let matched: Vec<&str> = [
            "gpu_utilization_ratio",
            "gpu_utilization_ratio_x",
            "gpu_memory_used_bytes",
            "gpu_memory_utilization_ratio",
            "gpu_power_watts",
            "gpu_temperature_celsius",
            "xgpu_memory_used_bytes",
        ]
        .into_iter()
        .filter(|n| f.matches(n))
        .collect();
        assert_eq!(
            matched,
            ["gpu_utilization_ratio", "gpu_memory_used_bytes", "gpu_memory_utilization_ratio", "gpu_power_watts"]
        );
        assert!(Families::all().matches("gpu_temperature_celsius"));
    }
}
