//! `validate`: the written config → settings that cannot be invalid.

use super::{Config, ConfigError, SourceConfig, bytes, duration, regex};
use regex::Regex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
const DEFAULT_URL: &str = "http://127.0.0.1:9700/api/v1/write";
const DEFAULT_DEVICES_EXCLUDE: &str = r"^(ram|loop|zram|fd|sr|(h|s|v|xv)d[a-z]+\d+|nvme\d+n\d+p\d+|dm-\d+)\d*$";
const DEFAULT_FS_TYPES_EXCLUDE: &str = r"^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|hugetlbfs|iso9660|mqueue|nsfs|overlay|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|squashfs|sysfs|tracefs|tmpfs|ramfs)$";
const DEFAULT_MOUNT_POINTS_EXCLUDE: &str = r"^/(dev|proc|run|sys|var/lib/docker/.+|var/lib/kubelet/.+)($|/)";
const DEFAULT_INTERFACES_EXCLUDE: &str = r"^(lo|veth.*|cali.*|docker.*|ifb.*)$";

/// Settings that passed validation.
#[derive(Debug, Clone)]
pub struct Valid {
    /// Global labels; `host` is filled from the hostname by `build` when absent.
    pub labels: BTreeMap<String, String>,
    pub procfs_root: PathBuf,
    pub sysfs_root: PathBuf,
    pub data_dir: PathBuf,
    pub listen: Option<std::net::SocketAddr>,
    pub gpu: Option<ValidSource<GpuSettings>>,
    /// `[collector.gpu.attribution]`, when the gpu source is on.
    pub gpu_attribution: Option<super::AttributionSettings>,
    pub host: Option<ValidSource<()>>,
    pub disk: Option<ValidSource<DiskSettings>>,
    pub net: Option<ValidSource<NetSettings>>,
    pub events: Option<ValidSource<EventsSettings>>,
    pub training: Option<ValidSource<TrainingSettings>>,
    pub scrape: Option<ValidSource<ScrapeSettings>>,
    pub replay: Option<ValidSource<ReplaySettings>>,
    pub sinks: Vec<ValidSink>,
}

/// A source that is switched on, with its schedule and own settings.
#[derive(Debug, Clone)]
pub struct ValidSource<T> {
    pub interval: Duration,
    pub timeout: Duration,
    pub settings: T,
}

#[derive(Debug, Clone)]
pub struct GpuSettings {
    pub backend: GpuBackendKind,
    pub dcgm_names: bool,
    pub kernel_log: Option<PathBuf>,
    /// The collector's `sysfs_root`, where the PCI bus shows which GPUs the node has.
    pub sysfs_root: PathBuf,
    pub expected_gpus: Option<u32>,
    /// dcgm-exporter's `/metrics`, validated as an http(s) URL.
    pub dcgm_exporter_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GpuBackendKind {
    /// NVML from the system's `libnvidia-ml.so.1`.
    Nvml,
    /// NVML from the library file `nvml_library` names.
    NvmlLibrary(PathBuf),
    Fake(PathBuf),
}

#[derive(Debug, Clone)]
pub struct DiskSettings {
    pub devices_exclude: Regex,
    pub fs_types_exclude: Regex,
    pub mount_points_exclude: Regex,
}

#[derive(Debug, Clone)]
pub struct EventsSettings {
    pub files: Vec<PathBuf>,
    /// `/dev/kmsg` by default; `None` turns the kernel log off.
    pub kernel_log: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct TrainingSettings {
    /// The push endpoint's address; `None` turns it off.
    pub listen: Option<std::net::SocketAddr>,
    /// The token every push must carry; `None`: pushes need none.
    pub token: Option<argus_model::Secret>,
    pub stall_after: Duration,
    pub forget_after: Duration,
    pub logs: Vec<TrainingLog>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrainingLog {
    pub path: PathBuf,
    pub job: String,
    pub rank: String,
}

#[derive(Debug, Clone)]
pub struct ScrapeSettings {
    /// The static targets.
    pub targets: Vec<ScrapeTarget>,
    /// Targets found in the Kubernetes API, besides them.
    pub kubernetes: Option<super::KubernetesSettings>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeTarget {
    pub url: String,
    /// `job`, `instance` and the configured labels, sorted by name.
    pub labels: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct ReplaySettings {
    pub duty_cycle: PathBuf,
    pub memory_used: Option<PathBuf>,
    pub gpus: usize,
}

#[derive(Debug, Clone)]
pub struct NetSettings {
    pub interfaces_exclude: Regex,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkFormat {
    RemoteWrite,
    LineProtocol,
}

#[derive(Debug, Clone)]
pub struct ValidSink {
    pub name: String,
    pub url: String,
    pub format: SinkFormat,
    pub events_url: Option<String>,
    pub token: Option<String>,
    pub ca_file: Option<PathBuf>,
    pub max_samples: usize,
    pub flush_interval: Duration,
    pub timeout: Duration,
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    pub spool_max_bytes: u64,
    pub spool_segment_bytes: u64,
}

pub(super) fn validate(c: &Config, file: &str) -> Result<Valid, ConfigError> {
    let bad = |field: &str, reason: String| ConfigError::Invalid {
        file: file.to_string(),
        error: argus_model::FieldError::new(field, reason),
    };
    let dur = |field: &str, v: &Option<String>, default: Duration| match v {
        Some(s) => duration(s).map_err(|r| bad(field, r)),
        None => Ok(default),
    };
    let re = |field: &str, v: &Option<String>, default: &str| {
        regex(v.as_deref().unwrap_or(default)).map_err(|r| bad(field, r))
    };
    let interval = dur("collector.interval", &c.interval, DEFAULT_INTERVAL)?;
    let source = |name: &str, s: Option<&SourceConfig>| -> Result<Option<(Duration, Duration)>, ConfigError> {
        let s = s.cloned().unwrap_or_default();
        if s.enabled == Some(false) {
            return Ok(None);
        }
        let iv = dur(&format!("collector.{name}.interval"), &s.interval, interval)?;
        let timeout = dur(&format!("collector.{name}.timeout"), &s.timeout, iv)?;
        Ok(Some((iv, timeout)))
    };

    for (k, v) in &c.labels {
        if !is_label_name(k) {
            return Err(bad(&format!("collector.labels.{k}"), "not a valid label name".into()));
        }
        if v.is_empty() {
            return Err(bad(&format!("collector.labels.{k}"), "empty value".into()));
        }
    }

    let gpu_cfg = c.gpu.clone().unwrap_or_default();
    let gpu = match source("gpu", Some(&gpu_cfg.common()))? {
        None => None,
        Some((interval, timeout)) => {
            let backend = match (gpu_cfg.backend.as_deref().unwrap_or("nvml"), &gpu_cfg.fake_fixture) {
                ("nvml", _) => match &gpu_cfg.nvml_library {
                    None => GpuBackendKind::Nvml,
                    Some(p) => GpuBackendKind::NvmlLibrary(nvml_library(p, &bad)?),
                },
                ("fake", _) if gpu_cfg.nvml_library.is_some() => {
                    return Err(bad("collector.gpu.nvml_library", "only read by backend = \"nvml\"".into()));
                }
                ("fake", Some(p)) => GpuBackendKind::Fake(p.clone()),
                ("fake", None) => {
                    return Err(bad("collector.gpu.fake_fixture", "required by backend = \"fake\"".into()));
                }
                (other, _) => return Err(bad("collector.gpu.backend", format!("{other:?}: use \"nvml\" or \"fake\""))),
            };
            let kernel_log = match &gpu_cfg.kernel_log {
                None => Some(PathBuf::from("/dev/kmsg")),
                Some(p) if p.as_os_str().is_empty() => None,
                Some(p) => Some(p.clone()),
            };
            if let Some(u) = &gpu_cfg.dcgm_exporter_url {
                check_url(u).map_err(|r| bad("collector.gpu.dcgm_exporter_url", r))?;
            }
            let settings = GpuSettings {
                backend,
                dcgm_names: gpu_cfg.dcgm_names.unwrap_or(false),
                kernel_log,
                sysfs_root: c.sysfs_root.clone().unwrap_or_else(|| "/sys".into()),
                expected_gpus: gpu_cfg.expected_gpus,
                dcgm_exporter_url: gpu_cfg.dcgm_exporter_url.clone(),
            };
            Some(ValidSource { interval, timeout, settings })
        }
    };
    let host =
        source("host", c.host.as_ref())?.map(|(interval, timeout)| ValidSource { interval, timeout, settings: () });
    let disk_cfg = c.disk.clone().unwrap_or_default();
    let disk = match source("disk", Some(&disk_cfg.common()))? {
        None => None,
        Some((interval, timeout)) => Some(ValidSource {
            interval,
            timeout,
            settings: DiskSettings {
                devices_exclude: re(
                    "collector.disk.devices_exclude",
                    &disk_cfg.devices_exclude,
                    DEFAULT_DEVICES_EXCLUDE,
                )?,
                fs_types_exclude: re(
                    "collector.disk.fs_types_exclude",
                    &disk_cfg.fs_types_exclude,
                    DEFAULT_FS_TYPES_EXCLUDE,
                )?,
                mount_points_exclude: re(
                    "collector.disk.mount_points_exclude",
                    &disk_cfg.mount_points_exclude,
                    DEFAULT_MOUNT_POINTS_EXCLUDE,
                )?,
            },
        }),
    };
    let net_cfg = c.net.clone().unwrap_or_default();
    let net = match source("net", Some(&net_cfg.common()))? {
        None => None,
        Some((interval, timeout)) => Some(ValidSource {
            interval,
            timeout,
            settings: NetSettings {
                interfaces_exclude: re(
                    "collector.net.interfaces_exclude",
                    &net_cfg.interfaces_exclude,
                    DEFAULT_INTERFACES_EXCLUDE,
                )?,
            },
        }),
    };

    let events_cfg = c.events.clone().unwrap_or_default();
    let events = source("events", Some(&events_cfg.common()))?.map(|(interval, timeout)| ValidSource {
        interval,
        timeout,
        settings: EventsSettings {
            files: events_cfg.files.clone().unwrap_or_default(),
            kernel_log: match &events_cfg.kernel_log {
                None => Some(PathBuf::from("/dev/kmsg")),
                Some(p) if p.as_os_str().is_empty() => None,
                Some(p) => Some(p.clone()),
            },
        },
    });

    let training = match &c.training {
        None => None,
        Some(t) => match source("training", Some(&t.common()))? {
            None => None,
            Some((interval, timeout)) => Some(ValidSource { interval, timeout, settings: training(t, &bad)? }),
        },
    };
    let scrape = match &c.scrape {
        None => None,
        Some(t) => match source("scrape", Some(&t.common()))? {
            None => None,
            Some((interval, timeout)) => Some(ValidSource { interval, timeout, settings: scrape(t, &bad)? }),
        },
    };
    let replay = match &c.replay {
        None => None,
        Some(r) => match source("replay", Some(&r.common()))? {
            None => None,
            Some((interval, timeout)) => {
                let Some(duty_cycle) = r.duty_cycle.clone() else {
                    return Err(bad("collector.replay.duty_cycle", "required: the trace's GPU duty-cycle file".into()));
                };
                let gpus = r.gpus.unwrap_or(8);
                if gpus == 0 {
                    return Err(bad("collector.replay.gpus", "must be more than zero".into()));
                }
                let settings = ReplaySettings { duty_cycle, memory_used: r.memory_used.clone(), gpus };
                Some(ValidSource { interval, timeout, settings })
            }
        },
    };

    let mut sinks = Vec::new();
    let written = if c.sinks.is_empty() { vec![Default::default()] } else { c.sinks.clone() };
    for (i, s) in written.iter().enumerate() {
        let field = |f: &str| format!("collector.sink[{i}].{f}");
        let name = s.name.clone().unwrap_or_else(|| if i == 0 { "default".into() } else { i.to_string() });
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(bad(&field("name"), format!("{name:?}: use letters, digits, '_' and '-'")));
        }
        if sinks.iter().any(|x: &ValidSink| x.name == name) {
            return Err(bad(&field("name"), format!("{name:?} is used by another sink")));
        }
        let url = s.url.clone().unwrap_or_else(|| DEFAULT_URL.into());
        check_url(&url).map_err(|r| bad(&field("url"), r))?;
        let format = match s.format.as_deref().unwrap_or("remote_write") {
            "remote_write" => SinkFormat::RemoteWrite,
            "line_protocol" => SinkFormat::LineProtocol,
            other => {
                return Err(bad(&field("format"), format!("{other:?}: use \"remote_write\" or \"line_protocol\"")));
            }
        };
        let events_url = match (&s.events_url, format) {
            (Some(u), _) => {
                check_url(u).map_err(|r| bad(&field("events_url"), r))?;
                Some(with_ms_precision(u))
            }
            (None, SinkFormat::LineProtocol) => None,
            (None, SinkFormat::RemoteWrite) => {
                url.strip_suffix("/api/v1/write").map(|base| format!("{base}/api/v2/write?precision=ms"))
            }
        };
        let url = match format {
            SinkFormat::LineProtocol => with_ms_precision(&url),
            SinkFormat::RemoteWrite => url,
        };
        let max_samples = s.max_samples.unwrap_or(10_000);
        if max_samples == 0 {
            return Err(bad(&field("max_samples"), "must be more than zero".into()));
        }
        let size = |f: &str, v: &Option<String>, default: u64| match v {
            Some(v) => bytes(v).map_err(|r| bad(&field(f), r)),
            None => Ok(default),
        };
        let spool_max_bytes = size("spool_max_bytes", &s.spool_max_bytes, 1 << 30)?;
        let spool_segment_bytes = size("spool_segment_bytes", &s.spool_segment_bytes, 16 << 20)?;
        if spool_segment_bytes == 0 || spool_segment_bytes > spool_max_bytes {
            return Err(bad(
                &field("spool_segment_bytes"),
                "must be more than zero and at most spool_max_bytes".into(),
            ));
        }
        let min_backoff = dur(&field("min_backoff"), &s.min_backoff, Duration::from_millis(500))?;
        let max_backoff = dur(&field("max_backoff"), &s.max_backoff, Duration::from_secs(30))?;
        if min_backoff > max_backoff {
            return Err(bad(&field("min_backoff"), "must not exceed max_backoff".into()));
        }
        sinks.push(ValidSink {
            name,
            url,
            format,
            events_url,
            token: token(&s.token, &s.token_file, &field, &bad)?,
            ca_file: s.ca_file.clone(),
            max_samples,
            flush_interval: dur(&field("flush_interval"), &s.flush_interval, Duration::from_secs(5))?,
            timeout: dur(&field("timeout"), &s.timeout, Duration::from_secs(10))?,
            min_backoff,
            max_backoff,
            spool_max_bytes,
            spool_segment_bytes,
        });
    }

    let listen = match &c.listen {
        None => None,
        Some(l) => Some(l.parse().map_err(|_| bad("collector.listen", format!("{l:?} is not an address")))?),
    };
    let gpu_attribution = match &gpu {
        Some(_) => Some(super::AttributionConfig::validate(gpu_cfg.attribution.as_ref(), file)?),
        None => None,
    };
    Ok(Valid {
        labels: c.labels.clone(),
        procfs_root: c.procfs_root.clone().unwrap_or_else(|| "/proc".into()),
        sysfs_root: c.sysfs_root.clone().unwrap_or_else(|| "/sys".into()),
        data_dir: c.data_dir.clone().unwrap_or_else(|| "data/collector".into()),
        listen,
        gpu,
        gpu_attribution,
        host,
        disk,
        net,
        events,
        training,
        scrape,
        replay,
        sinks,
    })
}

type Bad<'a> = dyn Fn(&str, String) -> ConfigError + 'a;

/// One of the two checks here that read the filesystem (with `token_file`): a wrong library path would otherwise show only as
/// "gpu unavailable" at the first collection, far from the key that caused it.
fn nvml_library(path: &Path, bad: &Bad) -> Result<PathBuf, ConfigError> {
    let field = "collector.gpu.nvml_library";
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(path.to_path_buf()),
        Ok(_) => Err(bad(field, format!("{}: not a file", path.display()))),
        Err(e) => Err(bad(field, format!("{}: {e}", path.display()))),
    }
}

/// A token (a sink's, the training endpoint's), written in place or read from `token_file`. Reading the
/// file here, not when the part is built, makes `argus check-config` and a start with an unreadable
/// Secret fail on the key that names it.
fn token(
    inline: &Option<String>,
    file: &Option<PathBuf>,
    field: &dyn Fn(&str) -> String,
    bad: &Bad,
) -> Result<Option<String>, ConfigError> {
    let path = match (inline, file) {
        (Some(_), Some(_)) => return Err(bad(&field("token_file"), "set either token or token_file, not both".into())),
        (t, None) => return Ok(t.clone()),
        (None, Some(p)) => p,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| bad(&field("token_file"), format!("{}: {e}", path.display())))?;
    match text.trim() {
        "" => Err(bad(&field("token_file"), format!("{}: empty", path.display()))),
        t => Ok(Some(t.to_string())),
    }
}

fn training(t: &super::TrainingConfig, bad: &Bad) -> Result<TrainingSettings, ConfigError> {
    let listen = match t.listen.as_deref() {
        None => Some(std::net::SocketAddr::from(([127, 0, 0, 1], 9702))),
        Some("") => None,
        Some(l) => Some(l.parse().map_err(|_| bad("collector.training.listen", format!("{l:?} is not an address")))?),
    };
    let dur = |field: &str, v: &Option<String>, default: Duration| match v {
        Some(s) => duration(s).map_err(|r| bad(field, r)),
        None => Ok(default),
    };
    let mut logs = Vec::new();
    for (i, l) in t.logs.iter().enumerate() {
        let stem = l.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let job = l.job.clone().unwrap_or(stem);
        if job.is_empty() {
            return Err(bad(&format!("collector.training.logs[{i}].job"), "empty; name the job".into()));
        }
        logs.push(TrainingLog { path: l.path.clone(), job, rank: l.rank.clone().unwrap_or_else(|| "0".into()) });
    }
    let field = |f: &str| format!("collector.training.{f}");
    let token = match token(&t.token, &t.token_file, &field, bad)? {
        Some(t) if t.trim().is_empty() => return Err(bad(&field("token"), "empty".into())),
        t => t.map(argus_model::Secret::new),
    };
    Ok(TrainingSettings {
        listen,
        token,
        stall_after: dur("collector.training.stall_after", &t.stall_after, Duration::from_secs(600))?,
        forget_after: dur("collector.training.forget_after", &t.forget_after, Duration::from_secs(3600))?,
        logs,
    })
}

fn scrape(s: &super::ScrapeConfig, bad: &Bad) -> Result<ScrapeSettings, ConfigError> {
    let mut targets = Vec::new();
    for (i, t) in s.targets.iter().enumerate() {
        let field = |f: &str| format!("collector.scrape.targets[{i}].{f}");
        check_url(&t.url).map_err(|r| bad(&field("url"), r))?;
        let rest = t.url.split_once("://").map_or("", |(_, r)| r);
        let instance = rest.split(['/', '?']).next().unwrap_or(rest).to_string();
        let mut labels: BTreeMap<String, String> = t.labels.clone();
        for (k, v) in &labels {
            if !is_label_name(k) || v.is_empty() {
                return Err(bad(&field(&format!("labels.{k}")), "needs a valid label name and a value".into()));
            }
        }
        labels.entry("job".into()).or_insert_with(|| t.job.clone().unwrap_or_else(|| "scrape".into()));
        labels.entry("instance".into()).or_insert(instance);
        targets.push(ScrapeTarget { url: t.url.clone(), labels: labels.into_iter().collect() });
    }
    let kubernetes = s.kubernetes.as_ref().map(|k| k.validate(bad, is_label_name)).transpose()?;
    if targets.is_empty() && kubernetes.is_none() {
        return Err(bad(
            "collector.scrape.targets",
            "no targets: add [[collector.scrape.targets]] url = …, or [collector.scrape.kubernetes]".into(),
        ));
    }
    Ok(ScrapeSettings { targets, kubernetes })
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
        && !s.starts_with("__")
}

/// Line-protocol bodies carry millisecond timestamps; the endpoint must be told, or it reads nanoseconds.
fn with_ms_precision(url: &str) -> String {
    if url.contains("precision=") {
        url.to_string()
    } else {
        format!("{url}{}precision=ms", if url.contains('?') { '&' } else { '?' })
    }
}

fn check_url(u: &str) -> Result<(), String> {
    let rest = u.strip_prefix("http://").or_else(|| u.strip_prefix("https://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') => Ok(()),
        _ => Err(format!("{u:?} is not an http:// or https:// URL")),
    }
}
