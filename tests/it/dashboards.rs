//! The Grafana dashboards in dashboards/ against our own PromQL engine.
//!
//! Every panel, variable and annotation query is taken as Grafana would send it: template variables
//! substituted (multi-value "All" as its `allValue`, `.*`; single-value query variables by the first
//! value their `label_values` query finds; custom variables by their current value; `$__rate_interval`,
//! `$__interval` and `$__range` as durations), then parsed and evaluated by `argus_store::query` on an
//! embedded store. The store holds a fixture with every series the dashboards name, labelled as the
//! collector, alertd and the analyzer label them, so evaluation meets real vector matching, not an
//! empty store: a panel that is not marked `"argus": {"may_be_empty": true}` must return data. Every
//! metric name a query names must be documented (docs/metrics.md, the analyzer's output contract, or
//! the scraped series listed in dashboards/README.md), and at most one panel in ten may be marked.
//!
//! The same queries then run over the last hour of `argus serve --demo` (started by the test, with its
//! collector): once the demo's history, live rounds, anomaly scores, forecasts and alerts are in,
//! every unmarked panel must return data. With `ARGUS_DASHBOARDS_DATA_DIR=<data dir>` (a copy of a
//! store's data directory) or `ARGUS_DASHBOARDS_URL=http://host:9700` (a running server), they run on
//! that data instead.

use crate::support::server;

use argus_model::{Labels, Sample};
use argus_store::WalSync;
use argus_store::query::{self, QueryLimits, Value};
use argus_store::{Db, Options};
use promql_parser::label::MatchOp;
use promql_parser::parser::{Expr, VectorSelector};
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What Grafana substitutes for its built-in interval variables (a 1 h range, 15 s resolution).
const BUILTINS: &[(&str, &str)] = &[
    ("__rate_interval", "1m"),
    ("__interval_ms", "15000"),
    ("__interval", "15s"),
    ("__range_s", "3600"),
    ("__range_ms", "3600000"),
    ("__range", "1h"),
];
/// The analyzer's output, from the design's contract: exact names, and the capacity family's prefix.
const CONTRACT: &[&str] = &["argus_anomaly_score", "argus_yhat", "argus_yhat_lower", "argus_yhat_upper"];
const CONTRACT_PREFIX: &str = "argus_capacity_";
const RANGE_MS: i64 = 3_600_000;
const STEP_MS: i64 = 60_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_millis() as i64
}

// === Dashboards as Grafana sees them ===

struct Dashboard {
    file: String,
    vars: Vec<Var>,
    panels: Vec<Panel>,
    /// Annotation queries (name, expr): checked like panel queries, but events may rightly be absent.
    annotations: Vec<(String, String)>,
}

enum Var {
    /// A multi-value variable: "All" sends `allValue`.
    All { name: String, all: String, query: String },
    /// A single-value query variable: the first value of its `label_values` query.
    Query { name: String, query: String },
    /// A custom or constant variable at its current value.
    Fixed { name: String, value: String },
}

struct Panel {
    title: String,
    description: String,
    may_be_empty: bool,
    targets: Vec<(String, bool)>,
}

fn load_dashboards(dir: &Path) -> Vec<Dashboard> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.iter().map(|f| parse_dashboard(f, &std::fs::read_to_string(f).expect("read dashboard"))).collect()
}

fn parse_dashboard(file: &Path, text: &str) -> Dashboard {
    let file = file.file_name().map_or_else(|| file.display().to_string(), |n| n.to_string_lossy().into_owned());
    let json: Json = serde_json::from_str(text).unwrap_or_else(|e| panic!("{file}: not JSON: {e}"));
    let s = |v: &Json, k: &str| v.get(k).and_then(Json::as_str).unwrap_or_default().to_string();
    let mut vars = Vec::new();
    for v in json["templating"]["list"].as_array().into_iter().flatten() {
        let name = s(v, "name");
        let query = match &v["query"] {
            Json::String(q) => q.clone(),
            q => s(q, "query"),
        };
        match s(v, "type").as_str() {
            "datasource" => {}
            "query" if v["includeAll"].as_bool() == Some(true) => {
                let all = v.get("allValue").and_then(Json::as_str);
                let all = all.unwrap_or_else(|| panic!("{file}: variable {name}: \"All\" without an allValue"));
                vars.push(Var::All { name, all: all.to_string(), query });
            }
            "query" => vars.push(Var::Query { name, query }),
            "custom" | "constant" | "interval" | "textbox" => {
                let value = match &v["current"]["value"] {
                    Json::String(x) => x.clone(),
                    _ => query.split(',').next().unwrap_or_default().trim().to_string(),
                };
                vars.push(Var::Fixed { name, value });
            }
            other => panic!("{file}: variable {name} of unknown type {other:?}"),
        }
    }
    let mut panels = Vec::new();
    let mut stack: Vec<&Json> = json["panels"].as_array().into_iter().flatten().collect();
    while let Some(p) = stack.pop() {
        stack.extend(p["panels"].as_array().into_iter().flatten());
        if s(p, "type") == "row" {
            continue;
        }
        let targets = p["targets"].as_array().into_iter().flatten();
        let targets = targets.map(|t| (s(t, "expr"), t["instant"].as_bool() == Some(true) && t["range"] != true));
        panels.push(Panel {
            title: s(p, "title"),
            description: s(p, "description"),
            may_be_empty: p["argus"]["may_be_empty"].as_bool() == Some(true),
            targets: targets.collect(),
        });
    }
    panels.reverse();
    let annotations = json["annotations"]["list"].as_array().into_iter().flatten();
    let annotations = annotations.filter(|a| a.get("expr").is_some()).map(|a| (s(a, "name"), s(a, "expr"))).collect();
    Dashboard { file, vars, panels, annotations }
}

/// `$name`, `${name}` and `[[name]]` replaced, longest names first so `$__range_s` is not `$__range` + "_s".
fn substitute(text: &str, values: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = values.iter().collect();
    sorted.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    let mut out = text.to_string();
    for (name, value) in sorted {
        out = out.replace(&format!("${{{name}}}"), value).replace(&format!("[[{name}]]"), value);
        let pat = format!("${name}");
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(i) = rest.find(&pat) {
            let after = &rest[i + pat.len()..];
            result.push_str(&rest[..i]);
            if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                result.push_str(&pat);
            } else {
                result.push_str(value);
            }
            rest = after;
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// `label_values(selector, label)` → (selector, label); `label_values(label)` → (None, label).
fn label_values_query(q: &str) -> Result<(Option<String>, String), String> {
    let inner = q
        .trim()
        .strip_prefix("label_values(")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("variable query {q:?} is not label_values(…)"))?;
    match inner.rsplit_once(',') {
        Some((sel, label)) => Ok((Some(sel.trim().to_string()), label.trim().to_string())),
        None => Ok((None, inner.trim().to_string())),
    }
}

// === Where queries run ===

/// Number of series a query answered, or its error.
trait Source {
    fn run(&self, expr: &str, instant: bool) -> Result<usize, String>;
    fn label_values(&self, selector: Option<&str>, label: &str) -> Result<Vec<String>, String>;
}

struct Embedded {
    db: Db,
    end: i64,
}

impl Source for Embedded {
    fn run(&self, expr: &str, instant: bool) -> Result<usize, String> {
        let limits = QueryLimits { max_samples: 50_000_000, timeout: Duration::from_secs(30), ..Default::default() };
        let v = if instant {
            query::instant(&self.db, expr, self.end, &limits)
        } else {
            query::range(&self.db, expr, self.end - RANGE_MS, self.end, STEP_MS, &limits)
        };
        match v.map_err(|e| e.to_string())? {
            Value::Vector(v) => Ok(v.len()),
            Value::Matrix(m) => Ok(m.len()),
            Value::Scalar(_) | Value::String(..) => Ok(1),
        }
    }

    fn label_values(&self, selector: Option<&str>, label: &str) -> Result<Vec<String>, String> {
        let matchers = match selector {
            None => Vec::new(),
            Some(sel) => match promql_parser::parser::parse(sel)? {
                Expr::VectorSelector(vs) => query::matchers_of(&vs)?,
                other => return Err(format!("label_values takes a series selector, not {other}")),
            },
        };
        self.db.label_values(label, &matchers, self.end - RANGE_MS, self.end).map_err(|e| e.to_string())
    }
}

struct Http {
    base: String,
    client: reqwest::blocking::Client,
    end: i64,
}

impl Http {
    fn get(&self, path_and_query: &str) -> Result<Json, String> {
        let url = format!("{}{path_and_query}", self.base);
        let r = self.client.get(&url).send().map_err(|e| format!("{url}: {e}"))?;
        let status = r.status();
        let body: Json = r.json().map_err(|e| format!("{url}: {status}: {e}"))?;
        if body["status"] != "success" {
            return Err(format!("{status}: {}", body["error"]));
        }
        Ok(body["data"].clone())
    }
}

impl Source for Http {
    fn run(&self, expr: &str, instant: bool) -> Result<usize, String> {
        let (end, start) = (self.end as f64 / 1000.0, (self.end - RANGE_MS) as f64 / 1000.0);
        let data = if instant {
            self.get(&format!("/api/v1/query?query={}&time={end}", server::enc(expr)))?
        } else {
            self.get(&format!(
                "/api/v1/query_range?query={}&start={start}&end={end}&step={}",
                server::enc(expr),
                STEP_MS / 1000
            ))?
        };
        Ok(match &data["result"] {
            Json::Array(a) => a.len(),
            _ => 1,
        })
    }

    fn label_values(&self, selector: Option<&str>, label: &str) -> Result<Vec<String>, String> {
        let (end, start) = (self.end / 1000, (self.end - RANGE_MS) / 1000);
        let m = selector.map(|s| format!("&match[]={}", server::enc(s))).unwrap_or_default();
        let data = self.get(&format!("/api/v1/label/{label}/values?start={start}&end={end}{m}"))?;
        Ok(data.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect())
    }
}

// === Metric names ===

/// Names documented in docs/metrics.md tables, the analyzer contract and dashboards/README.md's scraped list.
fn documented_names() -> BTreeSet<String> {
    let mut names: BTreeSet<String> = CONTRACT.iter().map(|s| s.to_string()).collect();
    let first_cell = |line: &str| -> Option<String> {
        let cell = line.strip_prefix("| `")?;
        Some(cell[..cell.find('`')?].to_string())
    };
    let metrics = std::fs::read_to_string(root().join("docs/metrics.md")).expect("docs/metrics.md");
    names.extend(metrics.lines().filter_map(first_cell));
    let readme = std::fs::read_to_string(root().join("dashboards/README.md")).expect("dashboards/README.md");
    let start = readme.find("<!-- scraped-metrics").expect("dashboards/README.md: scraped-metrics list");
    let end = readme.find("<!-- end scraped-metrics").expect("dashboards/README.md: end of scraped-metrics list");
    names.extend(readme[start..end].lines().filter_map(first_cell));
    names
}

/// The metric names an expression selects: literal names and `__name__` matchers (`=` and `=~`).
fn selected_names(e: &Expr, out: &mut Vec<(String, bool)>) {
    let mut vs = |v: &VectorSelector| {
        if let Some(n) = &v.name {
            out.push((n.clone(), false));
        }
        for m in v.matchers.matchers.iter().filter(|m| m.name == "__name__") {
            match m.op {
                MatchOp::Equal => out.push((m.value.clone(), false)),
                MatchOp::Re(_) => out.push((m.value.clone(), true)),
                _ => {}
            }
        }
    };
    match e {
        Expr::VectorSelector(v) => vs(v),
        Expr::MatrixSelector(m) => vs(&m.vs),
        Expr::Aggregate(a) => {
            selected_names(&a.expr, out);
            if let Some(p) = &a.param {
                selected_names(p, out);
            }
        }
        Expr::Unary(u) => selected_names(&u.expr, out),
        Expr::Binary(b) => {
            selected_names(&b.lhs, out);
            selected_names(&b.rhs, out);
        }
        Expr::Paren(p) => selected_names(&p.expr, out),
        Expr::Subquery(s) => selected_names(&s.expr, out),
        Expr::Call(c) => c.args.args.iter().for_each(|a| selected_names(a, out)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

/// Why a name is not documented, if it is not. A name regex must start with a documented literal
/// prefix of its own (`argus_capacity_.*`), so it cannot select undocumented series.
fn undocumented(name: &str, regex: bool, documented: &BTreeSet<String>) -> Option<String> {
    if !regex {
        return (!documented.contains(name) && !name.starts_with(CONTRACT_PREFIX))
            .then(|| format!("metric {name:?} is not documented"));
    }
    let prefix: String = name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':').collect();
    let tail = &name[prefix.len()..];
    let ok = (prefix.starts_with(CONTRACT_PREFIX) || documented.iter().any(|d| d.starts_with(&prefix)))
        && (tail.is_empty() || tail == ".*" || tail == ".+")
        && !prefix.is_empty();
    (!ok).then(|| {
        format!("metric regex {name:?} may select undocumented series: use a documented prefix followed by .*")
    })
}

// === The check ===

/// Runs every query of the dashboards on `source`; returns one line per problem, and how many
/// queries ran. `check_names` holds the names to the documentation; `need_data` asks unmarked
/// panels for data.
///
/// With `young` (data that began less than a forecast horizon ago, as a fresh demo's forecasts do), a
/// panel whose every query reads forecasts one horizon back (`offset $horizon`) cannot have data yet:
/// it is checked for validity only, and named on stdout.
fn check(
    dashboards: &[Dashboard],
    source: &dyn Source,
    check_names: bool,
    need_data: bool,
    young: bool,
) -> (Vec<String>, usize) {
    let documented = documented_names();
    let mut problems = Vec::new();
    let mut ran = 0;
    let (mut panels, mut with_data) = (0, 0);
    let check_expr = |at: &str, expr: &str, problems: &mut Vec<String>| -> Option<()> {
        let parsed = match promql_parser::parser::parse(expr) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("{at}: {expr:?} does not parse: {e}"));
                return None;
            }
        };
        if let Err(e) = query::check(expr) {
            problems.push(format!("{at}: {expr:?}: {e}"));
            return None;
        }
        if check_names {
            let mut names = Vec::new();
            selected_names(&parsed, &mut names);
            if names.is_empty() && !matches!(parsed, Expr::NumberLiteral(_) | Expr::StringLiteral(_)) {
                problems.push(format!("{at}: {expr:?} names no metric"));
            }
            for (name, regex) in names {
                if let Some(p) = undocumented(&name, regex, &documented) {
                    problems.push(format!("{at}: {p}"));
                }
            }
        }
        Some(())
    };
    for d in dashboards {
        let mut values: Vec<(String, String)> = BUILTINS.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        for v in &d.vars {
            let (name, query) = match v {
                Var::Fixed { name, value } => {
                    values.push((name.clone(), value.clone()));
                    continue;
                }
                Var::All { name, query, .. } | Var::Query { name, query } => (name, query),
            };
            let at = format!("{}: variable {name}", d.file);
            let q = substitute(query, &values);
            let found = label_values_query(&q).and_then(|(sel, label)| {
                if let Some(sel) = &sel {
                    check_expr(&at, sel, &mut problems).ok_or_else(String::new)?;
                }
                source.label_values(sel.as_deref(), &label)
            });
            ran += 1;
            let found = match found {
                Ok(f) => f,
                Err(e) => {
                    if !e.is_empty() {
                        problems.push(format!("{at}: {q:?}: {e}"));
                    }
                    Vec::new()
                }
            };
            if found.is_empty() && need_data {
                // Not a problem by itself ("All" still selects everything; a single value missing
                // shows as panels without data), but it explains those.
                println!("{at}: {q:?} found no values");
            }
            let value = match v {
                Var::All { all, .. } => all.clone(),
                _ => found.into_iter().next().unwrap_or_else(|| "none".into()),
            };
            values.push((name.clone(), value));
        }
        for (name, expr) in &d.annotations {
            let at = format!("{}: annotation {name:?}", d.file);
            let expr = substitute(expr, &values);
            if check_expr(&at, &expr, &mut problems).is_some() {
                ran += 1;
                if let Err(e) = source.run(&expr, false) {
                    problems.push(format!("{at}: {expr:?} fails on our engine: {e}"));
                }
            }
        }
        for p in &d.panels {
            if p.targets.is_empty() {
                problems.push(format!("{}: panel {:?} has no query", d.file, p.title));
            }
            let mut series = 0;
            for (expr, instant) in &p.targets {
                let at = format!("{}: panel {:?}", d.file, p.title);
                let expr = substitute(expr, &values);
                if expr.contains('$') {
                    problems.push(format!("{at}: {expr:?} keeps an unknown variable"));
                    continue;
                }
                if check_expr(&at, &expr, &mut problems).is_none() {
                    continue;
                }
                ran += 1;
                match source.run(&expr, *instant) {
                    Ok(n) => series += n,
                    Err(e) => problems.push(format!("{at}: {expr:?} fails on our engine: {e}")),
                }
            }
            panels += 1;
            with_data += usize::from(series > 0);
            let waits_a_horizon = young && p.targets.iter().all(|(e, _)| e.contains("offset $horizon"));
            if waits_a_horizon && series == 0 {
                println!(
                    "{}: panel {:?} reads forecasts one horizon old: none yet, checked for validity",
                    d.file, p.title
                );
            } else if need_data && series == 0 && !p.may_be_empty {
                problems
                    .push(format!("{}: panel {:?} returned no data (and is not marked may_be_empty)", d.file, p.title));
            }
        }
    }
    if need_data {
        println!("{with_data} of {panels} panels returned data");
    }
    (problems, ran)
}

fn marker_problems(dashboards: &[Dashboard]) -> Vec<String> {
    let mut problems = Vec::new();
    let (mut marked, mut total) = (0, 0);
    for d in dashboards {
        let m = d.panels.iter().filter(|p| p.may_be_empty).count();
        if m * 10 > d.panels.len() {
            problems.push(format!(
                "{}: {m} of {} panels marked may_be_empty (at most one in ten)",
                d.file,
                d.panels.len()
            ));
        }
        for p in d.panels.iter().filter(|p| p.may_be_empty && p.description.trim().is_empty()) {
            problems
                .push(format!("{}: marked panel {:?} lacks a description saying why it may be empty", d.file, p.title));
        }
        marked += m;
        total += d.panels.len();
    }
    if marked * 10 > total {
        problems.push(format!("{marked} of {total} panels marked may_be_empty overall (at most one in ten)"));
    }
    problems
}

// === The fixture store ===

/// Labels each documented family carries (besides `cluster`, `host`), as the collector writes them.
fn label_sets(name: &str) -> Vec<Vec<(&'static str, &'static str)>> {
    let gpus = || {
        vec![
            vec![("gpu", "0"), ("uuid", "GPU-0"), ("device", "nvidia0"), ("model", "NVIDIA H100")],
            vec![("gpu", "1"), ("uuid", "GPU-1"), ("device", "nvidia1"), ("model", "NVIDIA H100")],
        ]
    };
    let with = |sets: Vec<Vec<(&'static str, &'static str)>>, extra: &[(&'static str, &'static str)]| {
        let extra = extra.to_vec();
        sets.into_iter().map(move |mut s| {
            s.extend_from_slice(&extra);
            s
        })
    };
    match name {
        "gpu_throttle_reason" => {
            with(gpus(), &[("reason", "gpu_idle")]).chain(with(gpus(), &[("reason", "hw_slowdown")])).collect()
        }
        "gpu_xid_errors_total" => with(gpus(), &[("code", "79")]).collect(),
        "gpu_process_memory_used_bytes" => with(gpus(), &[("pod_uid", "pod-1")]).collect(),
        n if n.starts_with("gpu_nvlink_") => with(gpus(), &[("link", "0")]).collect(),
        n if n.starts_with("gpu_mig_") => with(gpus(), &[("mig_uuid", "MIG-0"), ("mig_profile", "1g.10gb")]).collect(),
        n if n.starts_with("gpu_") => gpus(),
        "host_cpu_seconds_total" | "host_cpu_utilization_ratio" => vec![vec![("mode", "user")], vec![("mode", "idle")]],
        n if n.starts_with("disk_") => vec![vec![("device", "nvme0n1")]],
        n if n.starts_with("fs_") => vec![vec![("device", "nvme0n1p1"), ("mountpoint", "/"), ("fstype", "ext4")]],
        n if n.starts_with("net_receive_") || n.starts_with("net_transmit_") => vec![vec![("interface", "eth0")]],
        n if n.starts_with("ib_") => vec![vec![("device", "mlx5_0"), ("port", "1"), ("link_layer", "InfiniBand")]],
        n if n.starts_with("event_") => vec![vec![("kind", "cuda_oom"), ("log", "kernel")]],
        n if n.starts_with("train_") => {
            vec![vec![("job", "llama"), ("rank", "0")], vec![("job", "llama"), ("rank", "1")]]
        }
        n if n.starts_with("scrape_") || n.starts_with("vllm:") => {
            let base = vec![("job", "vllm"), ("instance", "127.0.0.1:8000"), ("model_name", "llama")];
            if n.ends_with("_bucket") {
                ["0.1", "1", "10", "+Inf"].iter().map(|le| [base.clone(), vec![("le", *le)]].concat()).collect()
            } else {
                vec![base]
            }
        }
        n if n.starts_with("argus_collector_") => {
            vec![vec![("source", "gpu"), ("sink", "store"), ("reason", "rejected")]]
        }
        "argus_alertd_notifications_total" => ["delivered", "failed"]
            .iter()
            .map(|o| vec![("receiver", "oncall"), ("integration", "webhook"), ("outcome", *o)])
            .collect(),
        "argus_store_batches_rejected_total" | "argus_store_samples_dropped_total" => vec![vec![("reason", "invalid")]],
        "ALERTS" => vec![
            vec![("alertname", "GpuHot"), ("alertstate", "firing"), ("severity", "critical")],
            vec![("alertname", "GpuHot"), ("alertstate", "pending"), ("severity", "warning")],
        ],
        "ALERTS_FOR_STATE" => vec![vec![("alertname", "GpuHot"), ("severity", "critical")]],
        "argus_anomaly_score" => {
            with(gpus(), &[("detector", "iforest"), ("metric", "gpu_utilization_ratio")]).collect()
        }
        "argus_yhat" | "argus_yhat_lower" | "argus_yhat_upper" => {
            let m = [("metric", "gpu_utilization_ratio"), ("model", "ets")];
            with(gpus(), &[m[0], m[1], ("horizon", "0s")])
                .chain(with(gpus(), &[m[0], m[1], ("horizon", "15m")]))
                .collect()
        }
        n if n.starts_with(CONTRACT_PREFIX) => vec![vec![("pool", "default")]],
        _ => vec![vec![]],
    }
}

/// Every documented series, on two hosts, every 30 s over the last 90 minutes (built once per test run): counters rising,
/// gauges moving between 0.1 and 1.0, timestamps where a series holds one.
fn fixture() -> &'static Embedded {
    // A static is never dropped, so the store lives in cargo's scratch directory for integration
    // tests, not in a temporary directory that would be left behind; each run starts it afresh.
    static FIXTURE: OnceLock<Embedded> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboards-fixture");
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("remove the previous fixture store");
        }
        build_fixture(&dir)
    })
}

fn build_fixture(dir: &Path) -> Embedded {
    let mut o = Options::new(dir);
    o.wal_sync = WalSync::Never;
    let db = Db::open(o).expect("open fixture store");
    let end = now_ms();
    let start = end - 90 * 60_000;
    let mut names: Vec<String> = documented_names().into_iter().collect();
    names.push(format!("{CONTRACT_PREFIX}recommended_gpus"));
    for name in names.iter().filter(|n| !n.starts_with("DCGM_") && !n.ends_with("_xid") && *n != "event_message") {
        let mut batch = Vec::new();
        for host in ["node-1", "node-2"] {
            for (k, extra) in label_sets(name).into_iter().enumerate() {
                let mut pairs = vec![("__name__", name.as_str()), ("cluster", "c1"), ("host", host)];
                pairs.extend(extra.iter().copied());
                let le_rank = ["0.1", "1", "10", "+Inf"].iter().position(|l| extra.contains(&("le", l)));
                let samples: Vec<Sample> = (0..)
                    .map(|i| start + i * 30_000)
                    .take_while(|&t| t <= end)
                    .enumerate()
                    .map(|(i, t)| {
                        let v = if name.ends_with("_total") || name.ends_with("_bucket") {
                            (i * (le_rank.unwrap_or(k) + 1)) as f64
                        } else if name.contains("timestamp") || name == "ALERTS_FOR_STATE" {
                            (t / 1000 - 120) as f64
                        } else if name == "argus_anomaly_score" && host == "node-2" && k == 1 {
                            1.5
                        } else {
                            0.1 + ((i + k) % 10) as f64 / 10.0
                        };
                        Sample::new(t, v)
                    })
                    .collect();
                batch.push((Labels::from_pairs(pairs), samples));
            }
        }
        db.write_series(&batch).unwrap_or_else(|e| panic!("fixture {name}: {e}"));
    }
    Embedded { db, end }
}

fn fail_on(problems: Vec<String>) {
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

// === Tests ===

#[test]
fn every_dashboard_query_is_valid_documented_and_returns_data_on_our_engine() {
    let dashboards = load_dashboards(&root().join("dashboards"));
    assert!(dashboards.len() >= 10, "expected the ten dashboards, found {}", dashboards.len());
    let (problems, ran) = check(&dashboards, fixture(), true, true, false);
    println!("{ran} queries of {} dashboards ran on the fixture store", dashboards.len());
    fail_on(problems);
}

#[test]
fn at_most_one_panel_in_ten_is_marked_may_be_empty() {
    let dashboards = load_dashboards(&root().join("dashboards"));
    fail_on(marker_problems(&dashboards));
}

#[test]
fn dashboards_return_data_on_demo_data() {
    let dashboards = load_dashboards(&root().join("dashboards"));
    let client =
        reqwest::blocking::Client::builder().no_proxy().timeout(Duration::from_secs(60)).build().expect("client");
    let source =
        |base: &str| Http { base: base.trim_end_matches('/').to_string(), client: client.clone(), end: now_ms() };
    // A running server, or a copy of a store's data directory, checked as it is.
    if let Ok(url) = std::env::var("ARGUS_DASHBOARDS_URL") {
        let (problems, ran) = check(&dashboards, &source(&url), false, true, false);
        println!("{ran} queries ran against {url}");
        return fail_on(problems);
    }
    if let Ok(dir) = std::env::var("ARGUS_DASHBOARDS_DATA_DIR") {
        let db = Db::open(Options::new(&dir)).unwrap_or_else(|e| panic!("ARGUS_DASHBOARDS_DATA_DIR={dir}: {e}"));
        let end = std::env::var("ARGUS_DASHBOARDS_END_MS").map_or_else(|_| now_ms(), |s| s.parse().expect("ms"));
        let (problems, ran) = check(&dashboards, &Embedded { db, end }, false, true, false);
        println!("{ran} queries ran against {dir}");
        return fail_on(problems);
    }
    // Else `argus serve --demo` of this build, with its collector, until every unmarked panel has data:
    // the history is written before the server answers, the live rounds, the analyzer's scores and
    // forecasts and alertd's alerts follow within a minute or two.
    let started = Instant::now();
    let demo = Demo::start();
    let mut round = 0;
    loop {
        round += 1;
        let (problems, ran) = check(&dashboards, &source(&demo.base), false, true, true);
        if problems.is_empty() {
            let panels: usize = dashboards.iter().map(|d| d.panels.len()).sum();
            let marked: usize = dashboards.iter().map(|d| d.panels.iter().filter(|p| p.may_be_empty).count()).sum();
            println!(
                "{ran} queries of {panels} panels ({marked} marked may_be_empty) returned data on `argus serve --demo` \
                 after {:.0?} ({round} rounds)",
                started.elapsed()
            );
            return;
        }
        println!("after {:.0?}, still:\n  {}", started.elapsed(), problems.join("\n  "));
        assert!(
            started.elapsed() < DEMO_WAIT,
            "after {DEMO_WAIT:?} of `argus serve --demo`, {} problem(s):\n{}\n\nthe server's log (tail):\n{}",
            problems.len(),
            problems.join("\n"),
            demo.log_tail()
        );
        std::thread::sleep(Duration::from_secs(5));
    }
}

/// How long the demo may take to produce data for every panel (the notification counter comes last:
/// after the fault's first notification, and two scrapes of Argus' /metrics).
const DEMO_WAIT: Duration = Duration::from_secs(150);

/// `argus serve --demo` on a free loopback port with a temporary data directory and its collector on;
/// killed when dropped.
struct Demo {
    child: Child,
    base: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Demo {
    fn start() -> Demo {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port").port();
        let log = dir.path().join("argus.log");
        let out = std::fs::File::create(&log).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_argus"))
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(dir.path().join("data"))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .spawn()
            .expect("spawn argus serve --demo");
        let mut demo = Demo { child, base: format!("http://127.0.0.1:{port}"), log, _dir: dir };
        let client = reqwest::blocking::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build().unwrap();
        let start = Instant::now();
        loop {
            if client.get(format!("{}/-/healthy", demo.base)).send().is_ok_and(|r| r.status().is_success()) {
                return demo;
            }
            if let Ok(Some(status)) = demo.child.try_wait() {
                panic!("argus serve --demo exited ({status}); its log:\n{}", demo.log_tail());
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "argus serve --demo not healthy in 90 s:\n{}",
                demo.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_check_catches_bad_dashboards() {
    let bad = r#"{"annotations": {"list": [{"name": "broken", "expr": "ALERTS{"}]},
      "templating": {"list": [
        {"name": "host", "type": "query", "includeAll": true, "allValue": ".*",
         "query": {"query": "label_values(host_uptime_seconds, host)"}}]},
      "panels": [
        {"type": "timeseries", "title": "syntax", "targets": [{"expr": "rate(gpu_power_watts{host=~\"$host\"}[5m]"}]},
        {"type": "timeseries", "title": "unknown name", "targets": [{"expr": "gpu_wattage{host=~\"$host\"}"}]},
        {"type": "timeseries", "title": "wide regex", "targets": [{"expr": "{__name__=~\"gpu.*_total\"}"}]},
        {"type": "timeseries", "title": "many to many", "targets": [{"expr": "host_cpu_seconds_total / on(host) host_cpu_utilization_ratio"}]},
        {"type": "timeseries", "title": "empty", "targets": [{"expr": "gpu_temperature_celsius{host=\"nowhere\"}"}]},
        {"type": "timeseries", "title": "unknown var", "targets": [{"expr": "gpu_power_watts{gpu=~\"$gpu\"}"}]},
        {"type": "timeseries", "title": "fine", "targets": [{"expr": "gpu_power_watts{host=~\"$host\"}"}]},
        {"type": "stat", "title": "marked", "description": "may be empty", "argus": {"may_be_empty": true}, "targets": [{"expr": "gpu_power_watts{host=\"x\"}"}]}
      ]}"#;
    let d = parse_dashboard(Path::new("bad.json"), bad);
    let (problems, _) = check(std::slice::from_ref(&d), fixture(), true, true, false);
    let text = problems.join("\n");
    assert!(text.contains("annotation \"broken\""), "a broken annotation query is not caught:\n{text}");
    for title in ["syntax", "unknown name", "wide regex", "many to many", "empty", "unknown var"] {
        assert!(text.contains(&format!("panel {title:?}")), "{title} not caught:\n{text}");
    }
    for title in ["fine", "marked"] {
        assert!(!text.contains(&format!("panel {title:?}")), "{title} wrongly caught:\n{text}");
    }
    // Two marked panels of eight: over the budget.
    let two = bad.replace(r#""title": "fine","#, r#""title": "fine", "argus": {"may_be_empty": true},"#);
    let problems = marker_problems(&[parse_dashboard(Path::new("two.json"), &two)]);
    assert!(problems.iter().any(|p| p.contains("2 of 8 panels")), "{problems:?}");
}

#[test]
fn substitution_is_grafanas() {
    let v = |pairs: &[(&str, &str)]| pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    let values = v(&[("__range", "1h"), ("__range_s", "3600"), ("host", ".*"), ("hostname", "n1")]);
    assert_eq!(
        substitute("x[$__range] $__range_s ${host} [[host]] $hostname $host", &values),
        "x[1h] 3600 .* .* n1 .*"
    );
    assert_eq!(
        label_values_query("label_values(up{a=\"b\"}, job)").unwrap(),
        (Some("up{a=\"b\"}".into()), "job".into())
    );
    assert_eq!(label_values_query("label_values(job)").unwrap(), (None, "job".into()));
}

#[test]
fn provisioning_points_grafana_at_argus() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    let argus = read("dashboards/provisioning/datasources/argus.yaml");
    let vm = read("dashboards/provisioning/datasources-victoriametrics/argus.yaml");
    for (file, text, url) in
        [("argus", &argus, "url: http://127.0.0.1:9700"), ("victoriametrics", &vm, "url: http://127.0.0.1:8428")]
    {
        for want in ["type: prometheus", "uid: argus", url] {
            assert!(text.lines().any(|l| l.trim() == want), "{file} data source lacks {want:?}");
        }
    }
    let provider = read("dashboards/provisioning/dashboards/argus.yaml");
    assert!(provider.contains("type: file") && provider.contains("path: /var/lib/grafana/dashboards/argus"));
    // The dashboards default to the provisioned data source's uid.
    for d in std::fs::read_dir(root().join("dashboards")).expect("dashboards/") {
        let p = d.expect("entry").path();
        if p.extension().is_some_and(|x| x == "json") {
            let json: Json = serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
            let ds = &json["templating"]["list"][0];
            assert_eq!(
                (ds["type"].as_str(), ds["current"]["value"].as_str()),
                (Some("datasource"), Some("argus")),
                "{}",
                p.display()
            );
        }
    }
}
