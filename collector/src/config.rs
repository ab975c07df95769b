//! The `[collector]` section of `argus.toml`: parsed (serde, unknown keys refused, defaults), then
//! validated into [`Valid`] (pure; values that cannot be invalid), then built by [`crate::Agent::build`]
//! (the only step that does IO: hostname, spool directories, NVML).
//!
//! ```toml
//! [collector]
//! interval = "10s"
//! [collector.labels]
//! cluster = "train-a"
//! [collector.gpu]
//! dcgm_names = true
//! [[collector.sink]]
//! url = "http://argus:9700/api/v1/write"
//! ```

use regex::Regex;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod attribution;
mod discovery;
mod valid;

pub use attribution::{AttributionConfig, AttributionSettings, Families, Kubernetes, SlurmSettings};
pub use discovery::{KubernetesConfig, KubernetesSettings};
pub use valid::{
    DiskSettings, EventsSettings, GpuBackendKind, GpuSettings, NetSettings, ReplaySettings, ScrapeSettings,
    ScrapeTarget, SinkFormat, TrainingLog, TrainingSettings, Valid, ValidSink, ValidSource,
};

/// The collector's settings as written. Every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Default collection interval of every source, e.g. "10s".
    pub interval: Option<String>,
    /// Global labels stamped on every point (a source's own tag of the same name wins): `cluster`,
    /// `rack`, `host` (default: this machine's hostname), and any others.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Where `/proc` and `/sys` are read from (a fixture tree in tests, `/host/proc` in a container).
    pub procfs_root: Option<PathBuf>,
    pub sysfs_root: Option<PathBuf>,
    /// Where sinks keep their spools. Default `data/collector`.
    pub data_dir: Option<PathBuf>,
    /// Address for the collector's own `/metrics`; unset means no listener.
    pub listen: Option<String>,
    pub gpu: Option<GpuConfig>,
    pub host: Option<SourceConfig>,
    pub disk: Option<DiskConfig>,
    pub net: Option<NetConfig>,
    pub events: Option<EventsConfig>,
    /// Off unless its section is present (it opens a port).
    pub training: Option<TrainingConfig>,
    /// Off unless its section is present.
    pub scrape: Option<ScrapeConfig>,
    /// Off unless its section is present.
    pub replay: Option<ReplayConfig>,
    #[serde(default, rename = "sink")]
    pub sinks: Vec<SinkConfig>,
}

/// What every source has: an on/off switch and its own interval and deadline.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    pub enabled: Option<bool>,
    pub interval: Option<String>,
    /// How long one collection may take; default the interval.
    pub timeout: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuConfig {
    pub enabled: Option<bool>,
    pub interval: Option<String>,
    pub timeout: Option<String>,
    /// "nvml" (default) or "fake".
    pub backend: Option<String>,
    /// JSON fixture the fake backend serves.
    pub fake_fixture: Option<PathBuf>,
    /// The NVML library the nvml backend opens, e.g. `/usr/lib64/nvidia/libnvidia-ml.so.1`; default the
    /// system's `libnvidia-ml.so.1` found by the dynamic loader.
    pub nvml_library: Option<PathBuf>,
    /// Also emit dcgm-exporter's names (`DCGM_FI_DEV_GPU_UTIL`, …) with its labels.
    pub dcgm_names: Option<bool>,
    /// Where `NVRM: Xid` lines are read from: `/dev/kmsg` (default) or a log file such as
    /// `/var/log/kern.log`. An empty string turns the kernel log off.
    pub kernel_log: Option<PathBuf>,
    /// GPUs this node should have, for `gpu_expected_count` when some are missing from the PCI bus
    /// too; the GPUs the bus shows and those NVML has listed are expected anyway.
    pub expected_gpus: Option<u32>,
    /// A co-located dcgm-exporter's page (`http://127.0.0.1:9400/metrics`), read for the profiling
    /// fields NVML has no GPM for (before Hopper), and for every reading where NVML cannot be used.
    pub dcgm_exporter_url: Option<String>,
    /// `[collector.gpu.attribution]`: pod, container and Slurm job labels on per-GPU series.
    pub attribution: Option<AttributionConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskConfig {
    pub enabled: Option<bool>,
    pub interval: Option<String>,
    pub timeout: Option<String>,
    /// Block devices left out (regex over the name). Default: loop, ram, zram, device-mapper partitions.
    pub devices_exclude: Option<String>,
    /// Filesystem types left out (regex). Default: pseudo filesystems.
    pub fs_types_exclude: Option<String>,
    /// Mount points left out (regex). Default: /proc, /sys, /dev and /run subtrees.
    pub mount_points_exclude: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    pub enabled: Option<bool>,
    pub interval: Option<String>,
    pub timeout: Option<String>,
    /// Interfaces left out (regex). Default: `^(lo|veth.*|cali.*|docker.*|ifb.*)$`.
    pub interfaces_exclude: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsConfig {
    pub enabled: Option<bool>,
    pub interval: Option<String>,
    pub timeout: Option<String>,
    /// Log files watched (training logs, `/var/log/kern.log`…); each may appear after the start.
    pub files: Option<Vec<PathBuf>>,
    /// `/dev/kmsg` (default); an empty string turns the kernel log off.
    pub kernel_log: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingConfig {
    pub enabled: Option<bool>,
    /// How often logs are read and the stall gauges written (default the global interval).
    pub interval: Option<String>,
    pub timeout: Option<String>,
    /// Address of the push endpoint (`POST /progress`); default "127.0.0.1:9702", "" turns it off.
    pub listen: Option<String>,
    /// The token a push must send (`Authorization: Bearer <token>`); without it (or `token_file`) the
    /// endpoint takes pushes from anyone who can reach it.
    pub token: Option<String>,
    /// A file holding that token (a mounted Kubernetes Secret), read at start.
    pub token_file: Option<PathBuf>,
    /// A job with no step progress for this long is stalled (default "10m").
    pub stall_after: Option<String>,
    /// A job not heard from for this long is forgotten (default "1h").
    pub forget_after: Option<String>,
    /// Trainer logs to follow.
    #[serde(default)]
    pub logs: Vec<TrainingLogConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingLogConfig {
    pub path: PathBuf,
    /// The `job` label; default the file name without its extension.
    pub job: Option<String>,
    /// The `rank` label; default "0".
    pub rank: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrapeConfig {
    pub enabled: Option<bool>,
    pub interval: Option<String>,
    pub timeout: Option<String>,
    #[serde(default)]
    pub targets: Vec<ScrapeTargetConfig>,
    /// `[collector.scrape.kubernetes]`: targets found in the Kubernetes API besides `targets`.
    pub kubernetes: Option<KubernetesConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrapeTargetConfig {
    /// e.g. "http://127.0.0.1:8000/metrics".
    pub url: String,
    /// The `job` label (default "scrape"); `instance` is the URL's host:port.
    pub job: Option<String>,
    /// More labels on every scraped series; a scraped label of the same name is kept as `exported_<name>`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    pub enabled: Option<bool>,
    /// Wall-clock time between two replayed steps (default the global interval).
    pub interval: Option<String>,
    pub timeout: Option<String>,
    /// The Alibaba GenAI trace's `pod_gpu_duty_cycle_anon` CSV, or its `.tar.gz`.
    pub duty_cycle: Option<PathBuf>,
    /// Optional: its `pod_gpu_memory_used_bytes_anon` CSV or `.tar.gz`.
    pub memory_used: Option<PathBuf>,
    /// How many of the trace's pods become GPUs (default 8), the busiest first.
    pub gpus: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkConfig {
    /// Names the spool directory and the `sink` label of self metrics. Default "default", "1", "2"…
    pub name: Option<String>,
    /// Default `http://127.0.0.1:9700/api/v1/write`.
    pub url: Option<String>,
    /// "remote_write" (default) or "line_protocol".
    pub format: Option<String>,
    /// Where events (string fields) go when `format` is remote_write, which cannot carry text. Default:
    /// the same server's `/api/v2/write` when `url` ends in `/api/v1/write`; otherwise events are dropped
    /// and counted.
    pub events_url: Option<String>,
    /// Sent as `Authorization: Bearer …`.
    pub token: Option<String>,
    /// A file holding the token instead (a mounted Kubernetes Secret, a systemd credential), read
    /// once when the configuration is validated; surrounding whitespace is ignored.
    pub token_file: Option<PathBuf>,
    /// PEM file of extra certificate authorities to trust for an `https` URL (e.g. a private CA).
    pub ca_file: Option<PathBuf>,
    /// A request is sent once this many samples wait (default 10000) …
    pub max_samples: Option<usize>,
    /// … or when the oldest has waited this long (default "5s").
    pub flush_interval: Option<String>,
    /// Per request (default "10s").
    pub timeout: Option<String>,
    /// Retry backoff bounds (default "500ms" and "30s").
    pub min_backoff: Option<String>,
    pub max_backoff: Option<String>,
    /// Bound of the on-disk spool (default "1GiB"); the oldest segments are dropped first.
    pub spool_max_bytes: Option<String>,
    /// Size at which a spool segment is closed and a new one started (default "16MiB").
    pub spool_segment_bytes: Option<String>,
}

/// serde's `flatten` cannot be combined with `deny_unknown_fields`, so each source repeats the three
/// common keys and hands them over here.
macro_rules! common {
    ($($t:ty),*) => {$(
        impl $t {
            pub fn common(&self) -> SourceConfig {
                SourceConfig { enabled: self.enabled, interval: self.interval.clone(), timeout: self.timeout.clone() }
            }
        }
    )*};
}
common!(GpuConfig, DiskConfig, NetConfig, EventsConfig, TrainingConfig, ScrapeConfig, ReplayConfig);

/// Why a configuration was refused. Messages name the file (when there is one), the line for syntax
/// errors, and the field for invalid values.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("{file}:{line}:{column}: {reason}")]
    Syntax { file: String, line: usize, column: usize, reason: String },
    #[error("{file}: {error}")]
    Invalid { file: String, error: argus_model::FieldError },
}

/// The file as `argus collect` reads it: only `[collector]` is ours; other sections belong to other parts.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    collector: Config,
}

// === impl Config ===

impl Config {
    /// Reads the `[collector]` section of a TOML file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { file: file.clone(), source })?;
        Config::parse(&text, &file)
    }

    /// Parses the `[collector]` section of TOML text; `file` only names the source in errors.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let f: File = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
            ConfigError::Syntax { file: file.to_string(), line, column, reason: e.message().to_string() }
        })?;
        Ok(f.collector)
    }

    /// Checks every value and returns settings that cannot be invalid. Pure: no IO.
    pub fn validate(&self, file: &str) -> Result<Valid, ConfigError> {
        valid::validate(self, file)
    }
}

/// "10s", "500ms", "1m": a non-zero duration, as every Argus section writes one.
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    argus_model::units::duration(s)
}

/// "512MiB", "1GiB", "1000000" (bytes), as every Argus section writes one.
pub(crate) fn bytes(s: &str) -> Result<u64, String> {
    argus_model::units::bytes(s)
}

pub(crate) fn regex(s: &str) -> Result<Regex, String> {
    Regex::new(s).map_err(|e| format!("bad regex: {e}"))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |p| p + 1) + 1;
    (line, col)
}

#[cfg(test)]
mod tests;
