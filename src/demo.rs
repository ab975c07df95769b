//! `argus serve --demo`: real GPU-cluster telemetry replayed as a live demo cluster, with a fault.
//!
//! The traces are small excerpts embedded in the binary (demo/README.md names their sources and
//! licenses): eight GPUs of Alibaba's GenAI serving trace (duty cycle and memory used) on one demo
//! host, and three virtual clusters of SenseTime's Helios trace (GPU capacity, running and pending)
//! as GPU pools. Each trace minute is one wall-clock minute, values interpolated in between, the trace
//! wrapping around at its end. Temperature and power are derived from the replayed utilisation (the
//! traces have neither). Every series carries `cluster="demo"` and `demo="true"`.
//!
//! At start [`BACKFILL`] of history up to now is written at [`STEP`], so the analyzer warms up at
//! once; then a point is written every [`STEP`]. [`FAULT_AFTER`] after start GPU [`FAULT_GPU`]
//! stops working while its peers stay busy: its utilisation collapses, its temperature climbs and
//! the kernel logs Xid 79 for it. The analyzer flags it, alertd opens an incident and notifies the
//! demo receiver, a webhook endpoint on its own loopback port that appends every notification it
//! receives to `demo-notifications.jsonl` in the data directory.

use anyhow::{Context, Result, bail};
use argus_model::lineprotocol::{Precision, parse_numbered};
use argus_store::Db;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

mod counter;
mod fabric;
mod service;
mod training;

const GPU_CSV: &str = include_str!("../demo/alibaba_gpu.csv");
const POOL_CSV: &str = include_str!("../demo/helios_vc_demand.csv");

/// History written at start: the analyzer warms up on two hours, forecasters want more.
pub const BACKFILL: Duration = Duration::from_secs(6 * 3600);
/// Time between two written points, live and in the backfill.
pub const STEP: Duration = Duration::from_secs(10);
/// Time between two points of the service, training and fabric families in the history.
pub const SERVICE_STEP: Duration = Duration::from_secs(30);
/// When the fault begins, after start.
pub const FAULT_AFTER: Duration = Duration::from_secs(10);
/// The GPU that fails.
pub const FAULT_GPU: usize = 5;
/// When its Xid is logged, after the fault begins.
const XID_AFTER: Duration = Duration::from_secs(10);
pub const HOST: &str = "demo-gpu-01";
/// Framebuffer of the demo's boards (80 GiB).
const GPU_MEMORY_BYTES: f64 = 85_899_345_920.0;
/// File name of the demo receiver's log, in the data directory.
pub const NOTIFICATION_LOG: &str = "demo-notifications.jsonl";
/// File name of the demo's alertd configuration, written to the data directory.
pub const ALERTD_CONFIG: &str = "demo-alertd.yml";
/// File name of the demo's recording rules, written to the data directory beside it.
pub const RULES: &str = "demo-rules.yml";

/// One replayed GPU: its pod in the trace, duty cycle (percent) and memory used (bytes) per minute.
struct Gpu {
    pod: String,
    util: Vec<f64>,
    memory: Vec<f64>,
}

/// One replayed pool (a Helios virtual cluster): GPUs it has, running and pending, per minute.
struct Pool {
    name: String,
    capacity: Vec<f64>,
    running: Vec<f64>,
    pending: Vec<f64>,
}

/// The demo cluster: the loaded traces and when the demo started.
pub struct Demo {
    gpus: Vec<Gpu>,
    pools: Vec<Pool>,
    started_ms: i64,
    /// Where the demo's counters start: the first point of its history.
    origin_ms: i64,
    service: service::Service,
    jobs: Vec<training::Job>,
    fabric: fabric::Fabric,
}

impl Demo {
    /// Loads the embedded traces; `started_ms` places the fault.
    pub fn new(started_ms: i64) -> Result<Demo> {
        let (gpus, pools) = (gpus(GPU_CSV)?, pools(POOL_CSV)?);
        let util: Vec<&[f64]> = gpus.iter().map(|g| g.util.as_slice()).collect();
        let service = service::Service::new(&util)?;
        let fabric = fabric::Fabric::new(&util);
        let jobs = pools.iter().map(|p| training::Job::new(&p.name, &p.running)).collect();
        let step = STEP.as_millis() as i64;
        let origin_ms = (started_ms - BACKFILL.as_millis() as i64).div_euclid(step) * step;
        Ok(Demo { gpus, pools, started_ms, origin_ms, service, jobs, fabric })
    }

    pub fn fault_at_ms(&self) -> i64 {
        self.started_ms + FAULT_AFTER.as_millis() as i64
    }

    fn xid_at_ms(&self) -> i64 {
        self.fault_at_ms() + XID_AFTER.as_millis() as i64
    }

    /// The line-protocol points of the demo cluster at `t` (ms). Without `services`, only the GPUs, their
    /// Xid and the pools: the history writes the service, training and fabric families every
    /// [`SERVICE_STEP`], enough for rates over a minute, and so is written several times faster.
    pub fn lines(&self, t: i64, services: bool, out: &mut String) {
        let fault = (t - self.fault_at_ms()) as f64 / 1000.0;
        let mut tags = Vec::with_capacity(self.gpus.len());
        for (i, g) in self.gpus.iter().enumerate() {
            let mut util = at(&g.util, t) / 100.0;
            // A GPU warms with its load of the last few minutes (its heat sink's inertia) and drifts a
            // little on its own.
            let recent = (0..5).map(|k| at(&g.util, t - k * 60_000)).sum::<f64>() / 500.0;
            let wobble = ((t as f64 / 37_000.0) + i as f64 * 1.7).sin() * 0.5;
            let mut temp = 38.0 + (2 * i % 5) as f64 + 22.0 * recent + wobble;
            if i == FAULT_GPU && fault >= 0.0 {
                // Its work stops within 20 s; its temperature climbs 2 °C a second to 95 °C.
                util *= 1.0 - (fault / 20.0).min(1.0);
                temp = (temp + 2.0 * fault).min(95.0);
            }
            let power = 65.0 + 230.0 * util + wobble;
            let memory = at(&g.memory, t);
            // The rest of what the collector reports for a healthy 80 GiB board, derived: clocks boost
            // under load, HBM runs a few degrees above the die, a process holds the memory it uses.
            let clock = if util > 0.05 { 1.41e9 } else { 0.21e9 };
            let processes = i32::from(memory > 1e9);
            let gpu = format!(
                "gpu,cluster=demo,demo=true,host={HOST},gpu={i},uuid=GPU-demo-{},model=demo",
                g.pod.get(..12).unwrap_or(&g.pod)
            );
            let _ = writeln!(
                out,
                "{gpu} utilization_ratio={util},temperature_celsius={temp},power_watts={power},memory_used_bytes={memory},\
                 memory_total_bytes={GPU_MEMORY_BYTES},power_limit_watts=400,sm_clock_hertz={clock},\
                 memory_temperature_celsius={},processes={processes},ecc_errors_corrected_total=0,\
                 ecc_errors_uncorrected_total=0,pcie_replays_total=0,remapped_rows_uncorrectable=0,\
                 remapped_rows_pending=0 {t}",
                temp + 4.0,
            );
            // A GPU past 90 °C slows its clocks to cool down.
            let hot = i32::from(temp >= 90.0);
            let _ = writeln!(out, "{gpu},reason=hw_thermal_slowdown throttle_reason={hot} {t}");
            // The pod's process holds the memory: GPU memory by owner, labelled as the collector does.
            if processes > 0 {
                let _ = writeln!(out, "{gpu},pod_uid={} process_memory_used_bytes={memory} {t}", g.pod);
            }
            // The Xid counter starts at 0 just before its first count, as the collector's does.
            if i == FAULT_GPU && fault >= 0.0 {
                let count = i32::from(t >= self.xid_at_ms());
                let _ = writeln!(
                    out,
                    "gpu,cluster=demo,demo=true,host={HOST},gpu={i},code=79 xid_errors_total={count} {t}"
                );
            }
            tags.push(gpu);
        }
        if !services {
            return self.pool_lines(t, out);
        }
        // The failed GPU's pod stops serving, and its NVLinks go quiet, when the fault begins.
        let stopped: Vec<Option<i64>> =
            (0..self.gpus.len()).map(|i| (i == FAULT_GPU).then(|| self.fault_at_ms())).collect();
        let memory: Vec<f64> = self.gpus.iter().map(|g| at(&g.memory, t) / GPU_MEMORY_BYTES).collect();
        self.service.lines(t, self.origin_ms, HOST, &stopped, &memory, out);
        self.fabric.lines(t, self.origin_ms, HOST, &tags, &stopped, out);
        for job in &self.jobs {
            job.lines(t, self.origin_ms, out);
        }
        self.pool_lines(t, out)
    }

    fn pool_lines(&self, t: i64, out: &mut String) {
        for p in &self.pools {
            let _ = writeln!(
                out,
                "pool,cluster=demo,demo=true,pool={} gpu_capacity={},gpu_running={},gpu_pending={} {t}",
                p.name,
                at(&p.capacity, t),
                at(&p.running, t),
                at(&p.pending, t),
            );
        }
    }

    /// The kernel log line of the fault's Xid, as a `gpu_xid` event.
    fn xid_event(&self) -> String {
        format!(
            "gpu,cluster=demo,demo=true,host={HOST},gpu={FAULT_GPU},code=79 \
             xid=\"NVRM: Xid (PCI:0000:9d:00): 79, pid=0, GPU has fallen off the bus.\" {}\n",
            self.xid_at_ms()
        )
    }

    /// Writes the history from `now - BACKFILL` to `now`.
    pub fn backfill(&self, db: &Db, now: i64) -> Result<usize> {
        self.write_history(db, now - BACKFILL.as_millis() as i64, now)
    }

    /// Writes the points from `from` to `now`, a step apart.
    fn write_history(&self, db: &Db, from: i64, now: i64) -> Result<usize> {
        let step = STEP.as_millis() as i64;
        let mut t = from.div_euclid(step) * step;
        let mut points = 0;
        let mut text = String::new();
        while t <= now {
            text.clear();
            // An hour at a time keeps each write small.
            for _ in 0..360 {
                if t > now {
                    break;
                }
                self.lines(t, t.rem_euclid(SERVICE_STEP.as_millis() as i64) == 0, &mut text);
                t += step;
            }
            points += write(db, &text)?;
        }
        Ok(points)
    }

    /// Writes a point every [`STEP`] until the task is dropped, and the Xid event once it is due.
    pub async fn run(self: Arc<Self>, db: Arc<Db>) {
        let mut tick = tokio::time::interval(STEP);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut xid_logged = false;
        loop {
            tick.tick().await;
            let now = argus_store::now_ms();
            let mut text = String::new();
            self.lines(now, true, &mut text);
            if !xid_logged && now >= self.xid_at_ms() {
                text.push_str(&self.xid_event());
                xid_logged = true;
                tracing::info!(host = HOST, gpu = FAULT_GPU, "Demo: injected Xid 79 on the failing GPU");
            }
            let d = db.clone();
            match tokio::task::spawn_blocking(move || write(&d, &text)).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => tracing::warn!(%error, "Demo: writing a point failed"),
                Err(error) => tracing::warn!(%error, "Demo: the writer task failed"),
            }
        }
    }
}

fn write(db: &Db, text: &str) -> Result<usize> {
    let numbered = parse_numbered(text).map_err(|e| anyhow::anyhow!("demo line protocol: {e:?}"))?;
    let (numbers, lines): (Vec<usize>, Vec<_>) = numbered.into_iter().unzip();
    let n = lines.iter().map(|l| l.fields.len()).sum();
    db.write_lines(&lines, &numbers, Precision::Milliseconds, &[]).map_err(|e| anyhow::anyhow!("demo write: {e}"))?;
    Ok(n)
}

/// The value of a per-minute trace at `t` (ms): the trace repeats, and is linear between minutes.
fn at(v: &[f64], t: i64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let minutes = t as f64 / 60_000.0;
    let i = minutes.floor().rem_euclid(v.len() as f64) as usize;
    let frac = minutes - minutes.floor();
    v[i] * (1.0 - frac) + v[(i + 1) % v.len()] * frac
}

/// Fills the gaps (`None`) of a trace column with the last value seen, and the leading ones with the
/// first.
fn held(v: Vec<Option<f64>>) -> Vec<f64> {
    let first = v.iter().flatten().next().copied().unwrap_or(0.0);
    let mut last = first;
    v.into_iter()
        .map(|x| {
            last = x.unwrap_or(last);
            last
        })
        .collect()
}

fn number(s: &str, what: &str, line: usize) -> Result<Option<f64>> {
    if s.is_empty() {
        return Ok(None);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => bail!("demo/{what}:{line}: {s:?} is not a number"),
    }
}

/// `timestamp_anon,container_ip,duty_cycle,memory_used_bytes`, rows in time order.
fn gpus(csv: &str) -> Result<Vec<Gpu>> {
    let mut order: Vec<String> = Vec::new();
    // Per pod: duty cycle and memory, `None` where the trace has no sample.
    type Column = Vec<Option<f64>>;
    let mut cols: Vec<(Column, Column)> = Vec::new();
    for (n, line) in csv.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let [_, pod, util, mem] = f[..] else { bail!("demo/alibaba_gpu.csv:{}: expected 4 fields", n + 1) };
        let i = match order.iter().position(|p| p == pod) {
            Some(i) => i,
            None => {
                order.push(pod.to_string());
                cols.push(Default::default());
                order.len() - 1
            }
        };
        cols[i].0.push(number(util, "alibaba_gpu.csv", n + 1)?);
        cols[i].1.push(number(mem, "alibaba_gpu.csv", n + 1)?);
    }
    if order.len() <= FAULT_GPU {
        bail!("demo/alibaba_gpu.csv: {} GPUs, the demo needs more than {FAULT_GPU}", order.len());
    }
    Ok(order.into_iter().zip(cols).map(|(pod, (u, m))| Gpu { pod, util: held(u), memory: held(m) }).collect())
}

/// `time,vc,total_gpu_num,running_gpu_num,pending_gpu_num`, rows in time order.
fn pools(csv: &str) -> Result<Vec<Pool>> {
    let mut out: Vec<Pool> = Vec::new();
    for (n, line) in csv.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let [_, vc, total, running, pending] = f[..] else {
            bail!("demo/helios_vc_demand.csv:{}: expected 5 fields", n + 1)
        };
        let i = match out.iter().position(|p| p.name == vc) {
            Some(i) => i,
            None => {
                out.push(Pool { name: vc.into(), capacity: vec![], running: vec![], pending: vec![] });
                out.len() - 1
            }
        };
        let num = |s| number(s, "helios_vc_demand.csv", n + 1).map(Option::unwrap_or_default);
        out[i].capacity.push(num(total)?);
        out[i].running.push(num(running)?);
        out[i].pending.push(num(pending)?);
    }
    Ok(out)
}

// === in `argus serve` ===

/// The demo, prepared: history written, receiver listening, alertd configured to notify it.
pub struct Prepared {
    demo: Arc<Demo>,
    receiver: Receiver,
    db: Arc<Db>,
    alertd_config: Option<PathBuf>,
}

/// Starts the demo receiver, points alertd at it (unless `[alertd] config_file` names a configuration,
/// which is then used as is) and writes the history, before alertd and the analyzer start.
///
/// `server` is where `argus serve` will listen (`tls` when on HTTPS): unless `--no-collector`, the
/// embedded collector scrapes its `/metrics` and its own into the store, for the alerts dashboard.
pub async fn prepare(
    cfg: &mut crate::config::Config,
    data_dir: &Path,
    db: Arc<Db>,
    server: SocketAddr,
    tls: bool,
) -> Result<Prepared> {
    let receiver = start_receiver(data_dir).await?;
    if tls {
        tracing::info!("Demo: Argus' own metrics are not scraped into the store over HTTPS");
    } else {
        scrape_self(&mut cfg.collector, server)?;
    }
    // The default rules, with GPU peers compared over 30 s rather than five minutes and alerts after
    // two anomalous steps rather than three, so the fault is an incident within about a minute.
    if cfg.analyzer.rules.is_empty() {
        cfg.analyzer.rules = argus_analyzer::runtime::config::default_rules();
        for r in cfg.analyzer.rules.iter_mut().filter(|r| r.peer_by.iter().any(|l| l == "host")) {
            r.peer_window = Some("30s".into());
        }
    }
    cfg.analyzer.alert_after.get_or_insert(2);
    let now = argus_store::now_ms();
    let demo = Arc::new(Demo::new(now)?);
    // Forecasts of every pool's GPU demand (running + pending) and capacity plans from them, beside the
    // default targets, unless the configuration names its own.
    if cfg.analyzer.forecasts.is_empty() && cfg.analyzer.capacity.is_empty() {
        use argus_analyzer::runtime::forecasts::config::{PoolConfig, TargetConfig, default_targets};
        cfg.analyzer.forecasts = default_targets();
        for p in &demo.pools {
            let sel = format!("{{cluster=\"demo\",pool=\"{}\"}}", p.name);
            cfg.analyzer.forecasts.push(TargetConfig {
                name: format!("demand_{}", p.name),
                query: format!("sum by (pool) (pool_gpu_running{sel}) + sum by (pool) (pool_gpu_pending{sel})"),
                metric: Some("pool_gpu_demand".into()),
                ..TargetConfig::default()
            });
            cfg.analyzer.capacity.push(PoolConfig {
                pool: p.name.clone(),
                demand: format!("demand_{}", p.name),
                current: format!("sum(pool_gpu_capacity{sel})"),
                ..PoolConfig::default()
            });
        }
    }
    let alertd_config = match &cfg.alertd.config_file {
        Some(p) => {
            tracing::warn!(config = %p.display(), "Demo: alertd uses the configured file, not the demo receiver");
            None
        }
        None => {
            let rules = data_dir.join(RULES);
            std::fs::write(&rules, recording_rules(&cfg.analyzer.forecasts))
                .with_context(|| format!("{}: cannot write", rules.display()))?;
            let path = data_dir.join(ALERTD_CONFIG);
            let text = alertd_config(&format!("http://{}/", receiver.addr));
            std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))?;
            cfg.alertd.config_file = Some(path.clone());
            Some(path)
        }
    };
    let (d, w) = (demo.clone(), db.clone());
    let started = std::time::Instant::now();
    let points = tokio::task::spawn_blocking(move || d.backfill(&w, now)).await??;
    tracing::info!(points, elapsed = ?started.elapsed(), "Demo: wrote {} of history", humantime::format_duration(BACKFILL));
    Ok(Prepared { demo, receiver, db, alertd_config })
}

impl Prepared {
    /// `GET /api/v1/demo`.
    pub fn router(&self) -> axum::Router {
        router(&self.demo, &self.receiver)
    }

    /// Where the demo's parts are, for the startup summary.
    pub fn print(&self) {
        let fault_in = (self.demo.fault_at_ms() - argus_store::now_ms()).max(0) / 1000;
        println!(
            "  demo data      Alibaba GenAI GPU trace (8 GPUs on {HOST}) and Helios GPU pools, replayed as cluster=\"demo\", demo=\"true\""
        );
        println!(
            "  demo fault     GPU {FAULT_GPU} on {HOST} fails in {fault_in} s: utilisation collapses, temperature climbs, Xid 79"
        );
        println!("  notifications  {}  (demo receiver at http://{}/)", self.receiver.log.display(), self.receiver.addr);
        if let Some(p) = &self.alertd_config {
            println!("  alertd config  {}", p.display());
        }
    }

    /// Writes live points until the returned task is aborted; the receiver runs as long.
    pub fn start(self) -> tokio::task::JoinHandle<()> {
        let Prepared { demo, receiver, db, .. } = self;
        tokio::spawn(async move {
            let _receiver = receiver;
            demo.run(db).await
        })
    }
}

/// Adds scrape targets for Argus' `/metrics` at `server` (job `argus`) and the collector's own (job
/// `argus-collector`, on a free loopback port unless `[collector] listen` names one), so the store
/// holds the self metrics the alerts dashboard reads: notifications, ingest, collector spools.
fn scrape_self(c: &mut argus_collector::Config, server: SocketAddr) -> Result<()> {
    let ip = if server.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { server.ip() };
    let collector = match &c.listen {
        Some(l) => l.clone(),
        None => {
            let free = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.local_addr())
                .context("demo: finding a free port for the collector's /metrics")?;
            c.listen = Some(free.to_string());
            free.to_string()
        }
    };
    let target = |url: String, job: &str| argus_collector::config::ScrapeTargetConfig {
        url,
        job: Some(job.into()),
        ..Default::default()
    };
    let scrape = c.scrape.get_or_insert_with(Default::default);
    // Often enough that a counter's first increase (the first notification) shows as a rate within
    // seconds: three scrapes within a minute's window.
    scrape.interval.get_or_insert_with(|| "5s".into());
    scrape.targets.push(target(format!("http://{}/metrics", SocketAddr::new(ip, server.port())), "argus"));
    scrape.targets.push(target(format!("http://{collector}/metrics"), "argus-collector"));
    Ok(())
}

// === the demo receiver ===

/// The demo's notification receiver: where it listens and how many notifications it logged.
pub struct Receiver {
    pub addr: SocketAddr,
    pub log: PathBuf,
    pub received: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Log {
    file: std::sync::Mutex<std::fs::File>,
    received: Arc<AtomicU64>,
}

/// Starts the webhook receiver on a free loopback port; each notification is one JSON line
/// `{"received_at": ms, "notification": <webhook body>}` in `data_dir/demo-notifications.jsonl`.
pub async fn start_receiver(data_dir: &Path) -> Result<Receiver> {
    let log = data_dir.join(NOTIFICATION_LOG);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .with_context(|| format!("{}: cannot open the demo notification log", log.display()))?;
    let received = Arc::new(AtomicU64::new(0));
    let state = Arc::new(Log { file: std::sync::Mutex::new(file), received: received.clone() });
    let app = axum::Router::new().route("/", axum::routing::post(receive)).with_state(state);
    let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "Demo receiver stopped");
        }
    });
    Ok(Receiver { addr, log, received, task })
}

async fn receive(
    axum::extract::State(log): axum::extract::State<Arc<Log>>,
    body: axum::body::Bytes,
) -> axum::http::StatusCode {
    let Ok(notification) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return axum::http::StatusCode::BAD_REQUEST;
    };
    let line = serde_json::json!({"received_at": argus_store::now_ms(), "notification": notification});
    let mut f = log.file.lock().unwrap_or_else(|p| p.into_inner());
    match writeln!(f, "{line}").and_then(|_| f.flush()) {
        Ok(()) => {
            log.received.fetch_add(1, Ordering::Relaxed);
            let status = notification.get("status").and_then(|s| s.as_str()).unwrap_or("?");
            tracing::info!(status, "Demo receiver: notification logged");
            axum::http::StatusCode::OK
        }
        Err(error) => {
            tracing::error!(%error, "Demo receiver: cannot write its log");
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

/// alertd's configuration in the demo: the recommended one, notifying the demo receiver at `url`,
/// with short timers so the first notification comes seconds after the first alert.
pub fn alertd_config(url: &str) -> String {
    format!(
        "# alertd for `argus serve --demo` (written at every demo start): every notification goes to the demo
# receiver, which logs it to {NOTIFICATION_LOG} in this directory.
route:
  receiver: demo-log
  group_by: [cluster]
  group_wait: 5s
  group_interval: 30s
  repeat_interval: 4h
receivers:
  - name: demo-log
    webhook_configs:
      - url: {url}
        send_resolved: true
argus:
  # HostDown's last-seen series for the demo's GPU host; no Watchdog, so every notification is the fault's.
  rules:
    files: [{RULES}]
    watchdog: false
    host_down_metric: gpu_utilization_ratio
  correlation:
    labels: [rack, host, job]
    window: 10m
    burst_window: 3m
    backoff_window: 1h
    backoff_step: 2
"
    )
}

/// Recording rules for the forecast targets: each target's value under its `metric` name, so the
/// forecasts dashboard draws what happened beside what was forecast (its "actual" line reads the
/// series of that name). Targets whose query is already a series of that name need none.
pub fn recording_rules(targets: &[argus_analyzer::runtime::forecasts::config::TargetConfig]) -> String {
    let mut out = String::from(
        "# Recording rules of `argus serve --demo` (written at every demo start): every forecast target's\n\
         # value under its metric name, for the forecasts dashboard.\ngroups:\n  - name: demo-forecast-targets\n    rules:\n",
    );
    for t in targets {
        let metric = t.metric.as_deref().unwrap_or(&t.name);
        if t.query.trim() == metric {
            continue;
        }
        let _ = write!(out, "      - record: {metric}\n        expr: '{}'\n", t.query.replace('\'', "''"));
    }
    out
}

/// What `GET /api/v1/demo` tells the status page: that this is demo data, the fault and the log.
pub fn router(demo: &Demo, receiver: &Receiver) -> axum::Router {
    let info = Arc::new(DemoInfo {
        static_part: serde_json::json!({
            "cluster": "demo",
            "label": "demo=\"true\"",
            "fault": {"host": HOST, "gpu": FAULT_GPU.to_string(), "at": demo.fault_at_ms() as f64 / 1000.0},
            "notification_log": receiver.log.display().to_string(),
            "receiver_url": format!("http://{}/", receiver.addr),
        }),
        received: receiver.received.clone(),
    });
    axum::Router::new().route("/api/v1/demo", axum::routing::get(demo_info)).with_state(info)
}

struct DemoInfo {
    static_part: serde_json::Value,
    received: Arc<std::sync::atomic::AtomicU64>,
}

/// The demo, for `GET /api/openapi.json` (listed only under `--demo`).
#[derive(utoipa::OpenApi)]
#[openapi(paths(demo_info), tags((name = "demo", description = "`argus serve --demo` (docs/quickstart.md)")))]
pub struct DemoApi;

/// What the demo replays: its cluster and label, the injected fault, where notifications are logged,
/// and how many the demo's receiver got.
#[utoipa::path(get, path = "/api/v1/demo", tag = "demo", operation_id = "getDemo",
    responses((status = 200, description = "`{status: success, data: {cluster, label, fault: {host, gpu, at}, \
        notification_log, receiver_url, notifications_received}}`", body = Object)))]
async fn demo_info(axum::extract::State(info): axum::extract::State<Arc<DemoInfo>>) -> axum::Json<serde_json::Value> {
    let mut data = info.static_part.clone();
    data["notifications_received"] = info.received.load(Ordering::Relaxed).into();
    axum::Json(serde_json::json!({"status": "success", "data": data}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_load_with_every_gpu_and_pool() {
        let d = Demo::new(0).unwrap();
        assert_eq!(d.gpus.len(), 8);
        assert!(d.gpus.iter().all(|g| g.util.len() == 380 && g.memory.len() == 380));
        assert_eq!(d.pools.len(), 3);
        assert!(d.pools.iter().all(|p| p.capacity.len() == 360));
    }

    #[test]
    fn interpolates_between_minutes_and_wraps() {
        let v = [10.0, 20.0, 40.0];
        assert_eq!(at(&v, 0), 10.0);
        assert_eq!(at(&v, 30_000), 15.0);
        assert_eq!(at(&v, 90_000), 30.0);
        // Past the end it wraps: minute 3 is minute 0 again, and 2.5 is halfway from 40 back to 10.
        assert_eq!(at(&v, 180_000), 10.0);
        assert_eq!(at(&v, 2 * 60_000 + 30_000), 25.0);
    }

    fn field(text: &str, gpu: usize, name: &str) -> f64 {
        let tag = format!(",gpu={gpu},");
        let line = text.lines().find(|l| l.contains(&tag) && l.contains(name)).unwrap();
        let at = line.find(&format!("{name}=")).unwrap() + name.len() + 1;
        line[at..].split([',', ' ']).next().unwrap().parse().unwrap()
    }

    #[test]
    fn the_fault_collapses_one_gpu_and_heats_it_while_peers_run() {
        // (Each GPU line is followed by its throttle-reason line, which `field` skips by name.)
        let d = Demo::new(1_000_000).unwrap();
        let mut before = String::new();
        d.lines(d.fault_at_ms() - 10_000, true, &mut before);
        let mut after = String::new();
        d.lines(d.fault_at_ms() + 60_000, true, &mut after);
        assert_eq!(field(&after, FAULT_GPU, "utilization_ratio"), 0.0);
        assert!(
            field(&after, FAULT_GPU, "temperature_celsius") > field(&before, FAULT_GPU, "temperature_celsius") + 30.0
        );
        let peers_busy = (0..8).filter(|&i| i != FAULT_GPU && field(&after, i, "utilization_ratio") > 0.0).count();
        assert!(peers_busy >= 4, "{after}");
        // Every series is marked as demo data.
        assert!(after.lines().all(|l| l.contains(",cluster=demo,demo=true,")), "{after}");
        assert!(!before.contains("xid_errors_total"));
        assert_eq!(field(&after, FAULT_GPU, "xid_errors_total"), 1.0);
        assert!(d.xid_event().contains("Xid") && d.xid_event().contains("code=79"));
    }

    #[test]
    fn backfill_writes_the_history_up_to_now() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(argus_store::Options::new(dir.path())).unwrap();
        let now = argus_store::now_ms();
        let d = Demo::new(now).unwrap();
        // The last half hour of it (the whole six hours take long in a debug build).
        let points = d.write_history(&db, now - 1_800_000, now).unwrap();
        let steps = (1_800 / STEP.as_secs()) as usize;
        // Four fields per GPU and three per pool, at every step.
        assert!(points >= steps * (8 * 4 + 3 * 3), "{points}");
        let series = |name: &str| {
            let m = argus_model::Matcher::new("__name__", argus_model::MatchOp::Equal, name).unwrap();
            db.series(&[m], now - 1_800_000, now).unwrap()
        };
        assert_eq!(series("gpu_temperature_celsius").len(), 8);
        // The service, training and fabric families, every SERVICE_STEP: one series per pod, rank, port, link.
        assert_eq!(series("vllm:request_success_total").len(), 8);
        assert_eq!(series("train_step").len(), 6);
        assert_eq!(series("ib_transmit_bytes_total").len(), 2);
        assert_eq!(series("gpu_nvlink_transmit_bytes_total").len(), 16);
        assert_eq!(series("gpu_process_memory_used_bytes").len(), 8);
    }

    #[test]
    fn alertd_config_and_rules_are_valid() {
        let dir = tempfile::tempdir().unwrap();
        let text = alertd_config("http://127.0.0.1:1/");
        argus_alertd::config::parse(&text, "demo").unwrap();
        let targets = argus_analyzer::runtime::forecasts::config::default_targets();
        let rules = recording_rules(&targets);
        assert_eq!(rules.matches("- record: ").count(), targets.len(), "{rules}");
        let path = dir.path().join(RULES);
        std::fs::write(&path, rules).unwrap();
        argus_alertd::rules::file::load(&path).unwrap();
    }
}
