use super::data::{DataSet, Input};
use super::faults::{self, DAY, Fault, KINDS, Kind, Spec};
use super::{pipeline, score};
use argus_model::{Labels, Sample};
use std::collections::BTreeMap;
use std::path::Path;

const MIN: i64 = 60_000;

/// A smooth daily cycle with a little deterministic noise: `days` days at `step`, from a whole day.
fn series(days: f64, step: i64, seed: u64) -> Vec<Sample> {
    let n = (days * DAY as f64 / step as f64) as i64;
    let from = 20_000 * DAY;
    let mut rng = faults::SplitMix64::new(seed);
    (0..n)
        .map(|i| {
            let t = from + i * step;
            let phase = (t % DAY) as f64 / DAY as f64 * std::f64::consts::TAU;
            Sample { t, v: 0.5 + 0.1 * phase.sin() + 0.005 * (rng.next_f64() - 0.5) }
        })
        .collect()
}

fn host_series(host: &str, metric: &str, days: f64, step: i64, seed: u64) -> Input {
    let mut labels = Labels::from_pairs([("cluster", "test"), ("host", host), ("series", metric)]);
    labels.set(argus_model::METRIC_NAME, "host_cpu_busy_ratio");
    Input { labels, samples: series(days, step, seed), group: None }
}

fn set(series: Vec<Input>, step: i64) -> DataSet {
    DataSet { name: "test", step, series }
}

/// Seed 1, a fault in about a tenth of the series-days, the five kinds in equal shares; the same
/// faults every time, and other ones for another seed.
#[test]
fn faults_are_drawn_by_the_spec() {
    let step = 10 * MIN;
    let s = set((0..100).map(|i| host_series(&format!("h{i}"), "m0", 30.0, step, i)).collect(), step);
    let spec = Spec::default();
    assert_eq!((spec.seed, spec.probability), (1, 0.1));
    let plan = faults::plan(&spec, &s, 2 * 3_600_000);
    assert_eq!(plan.days, 100 * 30, "days counted from each series' live start, the last one partial");
    let drawn = plan.faults.len() + plan.no_room;
    assert!((240..=360).contains(&drawn), "{drawn} faults in 3000 series-days");
    let mut kinds: BTreeMap<Kind, usize> = BTreeMap::new();
    for f in &plan.faults {
        *kinds.entry(f.kind).or_default() += 1;
    }
    for k in KINDS {
        let n = kinds.get(&k).copied().unwrap_or(0);
        assert!((35..=90).contains(&n), "{} {n} of {}", k.name(), plan.faults.len());
    }
    assert_eq!(faults::plan(&spec, &s, 2 * 3_600_000), plan);
    assert_ne!(faults::plan(&Spec { seed: 2, ..spec }, &s, 2 * 3_600_000).faults, plan.faults);
    // Every fault lies in its series' live time, with its grace period before the data ends.
    for f in &plan.faults {
        let samples = &s.series[f.series].samples;
        assert!(f.start >= samples[0].t + 2 * 3_600_000);
        assert!(f.last + faults::GRACE < samples.last().unwrap().t + step);
        assert_eq!(f.last - f.start, (f.kind.duration() - step).max(0), "{f:?}");
    }
}

/// Each kind's shape and size, in the day's standard deviation.
#[test]
fn faults_have_the_specified_magnitudes() {
    let step = MIN;
    let mut gpus: Vec<Input> = (0..8)
        .map(|g| {
            let gpu = g.to_string();
            let mut l = Labels::from_pairs([("cluster", "c"), ("host", "h"), ("gpu", gpu.as_str())]);
            l.set(argus_model::METRIC_NAME, "gpu_utilization_ratio");
            let samples =
                (0..600).map(|i| Sample { t: i * step, v: 0.4 + 0.01 * g as f64 + (i % 2) as f64 * 0.1 }).collect();
            Input { labels: l, samples, group: Some(0) }
        })
        .collect();
    let mut alone = gpus[0].clone();
    alone.labels.set("host", "alone");
    alone.group = None;
    gpus.push(alone);
    let clean = set(gpus, step);
    let sd = 0.05; // values alternate 0.1 apart
    let fault = |series, kind: Kind, start: i64, from_peers| Fault {
        series,
        kind,
        start,
        last: start + kind.duration().max(step) - step,
        day_sd: sd,
        from_peers,
    };
    let check = |f: Fault, expect: &dyn Fn(i64, f64) -> f64| {
        let mut s = clean.clone();
        faults::apply(&mut s, std::slice::from_ref(&f));
        for (p, q) in s.series[f.series].samples.iter().zip(&clean.series[f.series].samples) {
            let want = if p.t >= f.start && p.t <= f.last { expect(p.t, q.v) } else { q.v };
            assert!((p.v - want).abs() < 1e-12, "{:?} at {}: {} not {want}", f.kind, p.t, p.v);
        }
        s
    };
    let at = 100 * step;
    check(fault(1, Kind::Step, at, false), &|_: i64, v: f64| v + 0.15);
    check(fault(1, Kind::Spike, at, false), &|_: i64, v: f64| v + 0.3);
    let drift = check(fault(1, Kind::Drift, at, false), &|t: i64, v: f64| {
        v + 0.15 * ((t - at + step) as f64 / (120 * step) as f64)
    });
    let top = drift.series[1].samples.iter().find(|p| p.t == at + 119 * step).unwrap().v;
    let base = clean.series[1].samples.iter().find(|p| p.t == at + 119 * step).unwrap().v;
    assert!((top - base - 0.15).abs() < 1e-12, "the drift reaches +3 sd at its end");
    let held = clean.series[1].samples[100].v;
    check(fault(1, Kind::Stuck, at, false), &|_: i64, _: f64| held);
    // GPU 3 at half of its seven peers' median (0.44 or 0.54 at a step: GPUs 0–2 and 4–7).
    check(fault(3, Kind::GpuDrop, at, true), &|t: i64, _: f64| 0.5 * (0.44 + ((t / step) % 2) as f64 * 0.1));
    // A series without a group of eight falls to half its own level.
    check(fault(8, Kind::GpuDrop, at, false), &|_: i64, v: f64| 0.5 * v);
    assert_eq!(Kind::Step.duration(), 3_600_000);
    assert_eq!(Kind::Drift.duration(), 7_200_000);
    assert_eq!(Kind::Stuck.duration(), 1_800_000);
    assert_eq!(Kind::GpuDrop.duration(), 1_800_000);
}

fn alertd() -> argus_alertd::Config {
    argus_alertd::config::parse(super::ALERTD_CONFIG, "config/alertd.yml").unwrap()
}

fn analyzer() -> argus_analyzer::runtime::Valid {
    argus_analyzer::runtime::Config { interval: Some("60s".into()), ..Default::default() }.validate().unwrap()
}

/// A day of a smooth host series through the default analyzer and alertd: with nothing injected
/// nobody is paged; with a step of +3 daily standard deviations, it is paged within five minutes.
#[test]
fn a_clean_series_pages_no_one_and_a_step_is_caught() {
    let mut s = set(vec![host_series("node-1", "m0", 1.2, MIN, 7)], MIN);
    super::shift_before_now(&mut s);
    let dir = tempfile::tempdir().unwrap();
    let clean = pipeline::run(&s, &analyzer(), alertd(), &dir.path().join("clean")).unwrap();
    assert!(clean.ticks > 1000, "{} steps", clean.ticks);
    assert_eq!(clean.pages, vec![], "pages on a clean series");

    let first = s.series[0].samples[0].t;
    let start = first + 20 * 3_600_000;
    let day_sd = faults::sd(s.series[0].samples.iter().filter(|p| p.t >= first + 2 * 3_600_000).map(|p| p.v));
    let f = Fault { series: 0, kind: Kind::Step, start, last: start + 59 * MIN, day_sd, from_peers: false };
    let mut faulty = s.clone();
    faults::apply(&mut faulty, std::slice::from_ref(&f));
    let out = pipeline::run(&faulty, &analyzer(), alertd(), &dir.path().join("step")).unwrap();
    let figures = score::score(1, 1.0, &out.pages, std::slice::from_ref(&f), &[false]);
    assert_eq!(figures.faults_notified_5m, 1, "pages: {:?}, fault at {start}", out.pages);
    assert_eq!(figures.pages_outside_faults, 0, "{:?}", out.pages);
}

/// A whole run over the fixture (30 hours of three SMD metrics): the figures under the keys the
/// benchmark's readers use.
#[test]
fn a_run_writes_the_figures_under_their_keys() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages");
    let names = vec!["smd".to_string(), "genai".to_string()];
    let report = super::evaluate(&dir, &names, None, &alertd()).unwrap();
    assert_eq!(report.skipped, vec!["genai".to_string()]);
    let json = report.json();
    for key in
        ["pages_per_1000_series_days", "fault_recall", "median_detect_seconds", "series", "series_days", "faults"]
    {
        assert!(json.get(key).is_some(), "no {key} in {json}");
    }
    let smd = &json["data_sets"]["smd"];
    assert_eq!(smd["series"], 3);
    let days = smd["series_days"].as_f64().unwrap();
    assert!((days - 3.0 * 28.0 / 24.0).abs() < 0.01, "three series of 30 h less the 2 h warm-up: {days}");
    assert!(json["pages_per_1000_series_days"].as_f64().unwrap() >= 0.0);
    assert_eq!(json["by_kind"].as_object().unwrap().len(), 5);
}

/// Notifications are false unless one of their alerts began in a fault of its series (or within five
/// minutes after); a fault counts as caught in time when notified within five minutes of its start.
#[test]
fn pages_are_scored_against_faults() {
    use pipeline::Page;
    let f =
        Fault { series: 0, kind: Kind::Step, start: 1_000 * MIN, last: 1_059 * MIN, day_sd: 1.0, from_peers: false };
    let g =
        Fault { series: 1, kind: Kind::Spike, start: 2_000 * MIN, last: 2_000 * MIN, day_sd: 1.0, from_peers: false };
    let pages = vec![
        Page { at: 900 * MIN, alerts: vec![(0, 899 * MIN)] }, // before: false
        Page { at: 1_004 * MIN, alerts: vec![(0, 1_003 * MIN)] }, // f, 4 min
        Page { at: 1_070 * MIN, alerts: vec![(0, 1_063 * MIN), (1, 10)] }, // f's end: not false
        Page { at: 2_007 * MIN, alerts: vec![(1, 2_001 * MIN)] }, // g, 7 min: late
        Page { at: 3_000 * MIN, alerts: vec![(1, 2_010 * MIN)] }, // after g's grace: false
        Page { at: 3_100 * MIN, alerts: vec![] },             // someone else's: false
    ];
    let s = score::score(2, 4.0, &pages, &[f, g], &[false, true]);
    assert_eq!((s.notifications, s.pages_outside_faults), (6, 3));
    assert_eq!(s.pages_per_1000_series_days(), 750.0);
    assert_eq!((s.faults, s.faults_notified_5m, s.faults_notified, s.faults_without_change), (2, 1, 2, 1));
    assert_eq!(s.fault_recall(), 0.5);
    assert_eq!(s.median_detect_seconds(), Some(330.0));
    assert_eq!(s.by_kind["step"].notified_5m, 1);
    assert_eq!(s.by_kind["spike"].notified_5m, 0);
}
