//! `argus eval pages [--data DIR] [--json FILE]`: how often Argus pages someone for nothing, and how
//! often it pages in time for a real fault. Long normal telemetry is replayed through what `argus serve`
//! runs by default — the analyzer's default rules and detectors, then alertd with its shipped
//! configuration in virtual time — with synthetic faults injected at known times (docs/eval-pages.md).

mod data;
mod diagnose;
mod faults;
mod notify;
mod pipeline;
mod score;
mod tap;
#[cfg(test)]
mod tests;

use anyhow::{Context, Result, anyhow, bail};
use data::DataSet;
use faults::Spec;
use score::Figures;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The alertd configuration `config/alertd.yml` ships.
const ALERTD_CONFIG: &str = include_str!("../../config/alertd.yml");

#[derive(clap::Args)]
pub struct Args {
    /// The shared data folder (alibaba/, helios/, smd/ as ../shared/data/README.md describes).
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
    /// Write the figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Data sets to run (default all: genai, helios, smd); one whose files are absent is skipped.
    #[arg(long, value_delimiter = ',')]
    sets: Vec<String>,
    /// Keep only each data set's first DAYS days (a deterministic subset).
    #[arg(long, value_name = "DAYS")]
    days: Option<f64>,
    /// alertd configuration to replay through instead of the shipped config/alertd.yml.
    #[arg(long, value_name = "FILE")]
    alertd_config: Option<PathBuf>,
    /// `[analyzer]` settings (TOML, as in argus.toml) to run instead of the defaults; `interval`
    /// defaults to the data's one-minute step.
    #[arg(long, value_name = "FILE")]
    analyzer_config: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let names: Vec<String> =
        if args.sets.is_empty() { data::NAMES.iter().map(|s| s.to_string()).collect() } else { args.sets.clone() };
    let alertd = match &args.alertd_config {
        Some(path) => argus_alertd::config::load(path)?,
        None => argus_alertd::config::parse(ALERTD_CONFIG, "built-in config/alertd.yml")?,
    };
    let report = match &args.analyzer_config {
        Some(path) => evaluate_with(&args.data, &names, args.days, &alertd, analyzer_settings(path)?)?,
        None => evaluate(&args.data, &names, args.days, &alertd)?,
    };
    print!("{}", report.text());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report.json())? + "\n";
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The figures of every data set run, and of all together.
pub struct Report {
    pub sets: Vec<(String, Figures, f64)>,
    pub total: Figures,
    pub skipped: Vec<String>,
    pub seconds: f64,
}

impl Report {
    pub fn json(&self) -> serde_json::Value {
        let mut v = self.total.json();
        let sets: serde_json::Map<String, serde_json::Value> = self
            .sets
            .iter()
            .map(|(name, f, secs)| {
                let mut j = f.json();
                j["seconds"] = (*secs).into();
                (name.clone(), j)
            })
            .collect();
        v["data_sets"] = sets.into();
        v["skipped"] = self.skipped.clone().into();
        v["seed"] = Spec::default().seed.into();
        v["date"] = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string().into();
        v["seconds"] = self.seconds.into();
        v
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        let line = |name: &str, f: &Figures| {
            let median = f.median_detect_seconds().map_or("-".to_string(), |m| format!("{m:.0} s"));
            format!(
                "{name:<8} {:>6} {:>10.1} {:>6} {:>6} {:>12.2} {:>6} {:>7.3} {:>8}\n",
                f.series,
                f.series_days,
                f.notifications,
                f.pages_outside_faults,
                f.pages_per_1000_series_days(),
                f.faults,
                f.fault_recall(),
                median
            )
        };
        out.push_str("set      series   ser-days  notif  false  per1000sd  faults  recall   median\n");
        for (name, f, _) in &self.sets {
            out.push_str(&line(name, f));
        }
        out.push_str(&line("all", &self.total));
        out.push_str("recall by kind (notified within 5 min / injected):");
        for (k, f) in &self.total.by_kind {
            out.push_str(&format!(" {k} {}/{}", f.notified_5m, f.faults));
        }
        out.push('\n');
        out.push_str(&diagnosis_text(&self.total.diagnosis));
        for s in &self.skipped {
            out.push_str(&format!("skipped {s}: its files are not under the data folder\n"));
        }
        out
    }
}

/// The `[analyzer]` table of `path` (a whole argus.toml, or the table's contents alone).
fn analyzer_settings(path: &Path) -> Result<argus_analyzer::runtime::Config> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut value: toml::Table = toml::from_str(&text).with_context(|| format!("{}: not TOML", path.display()))?;
    let table = match value.remove("analyzer") {
        Some(toml::Value::Table(t)) => t,
        Some(_) => bail!("{}: [analyzer] is not a table", path.display()),
        None => value,
    };
    toml::Value::Table(table).try_into().with_context(|| format!("{}: [analyzer]", path.display()))
}

/// The diagnosis as a table: each kind's faults through the stages, where those not caught in time were
/// lost, and what raised the false pages.
fn diagnosis_text(d: &diagnose::Diagnosis) -> String {
    let mut out = String::from("kind      faults  scored  scored5m  posted  posted5m  notified  notif5m  lost at\n");
    for (k, f) in &d.by_kind {
        let lost: Vec<String> =
            f.outcome.iter().filter(|(o, _)| *o != "caught").map(|(o, n)| format!("{o} {n}")).collect();
        out.push_str(&format!(
            "{k:<9} {:>6} {:>7} {:>9} {:>7} {:>9} {:>9} {:>8}  {}\n",
            f.faults,
            f.scored_anomalous,
            f.scored_anomalous_5m,
            f.alert_posted,
            f.alert_posted_5m,
            f.notified,
            f.notified_5m,
            lost.join(", ")
        ));
    }
    let fp = &d.false_pages;
    let list = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
    };
    out.push_str(&format!(
        "false pages {}: by rule {}; by detector {}\n",
        fp.pages,
        list(&fp.by_rule),
        list(&fp.by_detector)
    ));
    out
}

/// Runs every data set of `names` found under `dir` through the default analyzer.
pub fn evaluate(dir: &Path, names: &[String], days: Option<f64>, alertd: &argus_alertd::Config) -> Result<Report> {
    evaluate_with(dir, names, days, alertd, argus_analyzer::runtime::Config::default())
}

/// Runs every data set of `names` found under `dir` through the analyzer `settings` describe (its
/// interval the data's step unless they set one).
pub fn evaluate_with(
    dir: &Path,
    names: &[String],
    days: Option<f64>,
    alertd: &argus_alertd::Config,
    mut settings: argus_analyzer::runtime::Config,
) -> Result<Report> {
    let started = Instant::now();
    settings.interval.get_or_insert_with(|| "60s".into());
    let mut analyzer = settings.validate().map_err(|e| anyhow!("the analyzer settings: {e}"))?;
    // Forecasting (by default of `sum by (cluster) (gpu_utilization_ratio)`, a model trained per
    // cluster) posts no alert, and `argus serve` runs it on a task of its own; ticked here with the
    // rules it was nearly all of a GPU data set's time.
    analyzer.forecasts.clear();
    analyzer.pools.clear();
    let mut report = Report { sets: Vec::new(), total: Figures::default(), skipped: Vec::new(), seconds: 0.0 };
    for name in names {
        let Some(mut set) = data::load(dir, name)? else {
            report.skipped.push(name.clone());
            continue;
        };
        if let Some(d) = days {
            set.truncate_days(d);
        }
        let t = Instant::now();
        let figures = run_set(set, &analyzer, alertd.clone())?;
        report.total.add(&figures);
        report.sets.push((name.clone(), figures, t.elapsed().as_secs_f64()));
    }
    if report.sets.is_empty() {
        bail!("no data set found under {} (looked for {})", dir.display(), names.join(", "));
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// One data set: faults planned on the clean data and applied, then the pipeline, then the score.
fn run_set(
    mut set: DataSet,
    analyzer: &argus_analyzer::runtime::Valid,
    alertd: argus_alertd::Config,
) -> Result<Figures> {
    if set.step != analyzer.rules.first().map_or(set.step, |r| r.interval.as_millis() as i64) {
        bail!("{}: the data's step is not the analyzer's interval", set.name);
    }
    shift_before_now(&mut set);
    let plan = faults::plan(&Spec::default(), &set, analyzer.warmup.as_millis() as i64);
    run_faults(set, &plan.faults, analyzer, alertd)
}

/// One data set (shifted before now) with `faults` applied, through the pipeline, scored and
/// diagnosed.
fn run_faults(
    mut set: DataSet,
    faults: &[faults::Fault],
    analyzer: &argus_analyzer::runtime::Valid,
    alertd: argus_alertd::Config,
) -> Result<Figures> {
    let clean = set.clone();
    faults::apply(&mut set, faults);
    let unchanged: Vec<bool> = faults
        .iter()
        .map(|f| {
            let range = |s: &DataSet| -> Vec<f64> {
                s.series[f.series].samples.iter().filter(|p| p.t >= f.start && p.t <= f.last).map(|p| p.v).collect()
            };
            range(&clean) == range(&set)
        })
        .collect();
    let scratch = Scratch::new(set.name)?;
    let outcome = pipeline::run(&set, analyzer, alertd, &scratch.0)?;
    let series_days = outcome.live_points.iter().sum::<usize>() as f64 * set.step as f64 / faults::DAY as f64;
    let live = outcome.live_points.iter().filter(|&&n| n > 0).count();
    let mut figures = score::score(live, series_days, &outcome.pages, faults, &unchanged);
    figures.analyzer_alerts = outcome.alerts_posted;
    figures.steps = outcome.ticks;
    figures.stage_seconds = outcome.seconds;
    // The rule that watches each series: the default rules select one metric each.
    let rule_of = |s: &data::Input| analyzer.rules.iter().find(|r| Some(r.query.as_str()) == s.labels.metric_name());
    let direction: Vec<_> = set
        .series
        .iter()
        .map(|s| rule_of(s).map_or(argus_analyzer::detect::Direction::Both, |r| r.direction))
        .collect();
    let detectors: Vec<Vec<String>> = set
        .series
        .iter()
        .map(|s| {
            rule_of(s).map_or(Vec::new(), |r| {
                r.univariate.iter().cloned().chain(r.peer.as_ref().map(|_| "peer".to_string())).collect()
            })
        })
        .collect();
    let names: Vec<String> = set.series.iter().map(|s| s.labels.without_name().to_string()).collect();
    figures.diagnosis = diagnose::diagnose(&diagnose::Run {
        faults,
        unchanged: &unchanged,
        direction: &direction,
        detectors: &detectors,
        names: &names,
        scores: &outcome.scores,
        posted: &outcome.posted,
        pages: &outcome.pages,
        held: &outcome.held,
        truncated: outcome.truncated,
    });
    Ok(figures)
}

/// Moves the set by whole weeks so it ends at least two days before now: the store takes history, not
/// the future, and whole weeks keep each sample's weekday and time of day.
fn shift_before_now(set: &mut DataSet) {
    const WEEK: i64 = 7 * faults::DAY;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    if let Some(last) = set.last() {
        set.shift((now - 2 * faults::DAY - last).div_euclid(WEEK) * WEEK);
    }
}

/// A directory of its own under the system's temporary folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Result<Scratch> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("argus-eval-pages-{}-{name}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
