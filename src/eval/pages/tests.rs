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
        Page { at: 900 * MIN, alerts: vec![(0, 899 * MIN)], trigger: None }, // before: false
        Page { at: 1_004 * MIN, alerts: vec![(0, 1_003 * MIN)], trigger: None }, // f, 4 min
        Page { at: 1_070 * MIN, alerts: vec![(0, 1_063 * MIN), (1, 10)], trigger: None }, // f's end: not false
        Page { at: 2_007 * MIN, alerts: vec![(1, 2_001 * MIN)], trigger: None }, // g, 7 min: late
        Page { at: 3_000 * MIN, alerts: vec![(1, 2_010 * MIN)], trigger: None }, // after g's grace: false
        Page { at: 3_100 * MIN, alerts: vec![], trigger: None },             // someone else's: false
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

/// A gauge series of `metric` under `labels`, the fixture's smooth daily cycle.
fn gauge(metric: &str, labels: &[(&str, &str)], days: f64, seed: u64) -> Input {
    let mut l = Labels::from_pairs(labels.iter().copied());
    l.set(argus_model::METRIC_NAME, metric);
    Input { labels: l, samples: series(days, MIN, seed), group: None }
}

/// Three known faults through the default analyzer and alertd, each lost (or caught) where it must be:
/// a rise on a host series (watched both ways) is scored, alerted and notified within five minutes; the
/// same rise on a GPU's utilisation (watched for drops only) is never scored; a step on a flat series
/// changes nothing.
#[test]
fn the_diagnosis_follows_known_faults_to_where_they_are_lost() {
    let mut flat = gauge("host_cpu_busy_ratio", &[("cluster", "test"), ("host", "flat")], 1.2, 3);
    flat.samples.iter_mut().for_each(|p| p.v = 0.25);
    let mut s = set(
        vec![
            gauge("host_cpu_busy_ratio", &[("cluster", "test"), ("host", "node-1")], 1.2, 7),
            gauge("gpu_utilization_ratio", &[("cluster", "test"), ("host", "gpu-1"), ("gpu", "0")], 1.2, 7),
            flat,
        ],
        MIN,
    );
    super::shift_before_now(&mut s);
    let first = s.series[0].samples[0].t;
    let day_sd =
        |i: usize| faults::sd(s.series[i].samples.iter().filter(|p| p.t >= first + 2 * 3_600_000).map(|p| p.v));
    let step = |series: usize, hours: i64| {
        let start = first + hours * 3_600_000;
        Fault { series, kind: Kind::Step, start, last: start + 59 * MIN, day_sd: day_sd(series), from_peers: false }
    };
    let planted = [step(0, 20), step(1, 20), step(2, 16)];
    let figures = super::run_faults(s, &planted, &analyzer(), alertd()).unwrap();
    let d = &figures.diagnosis;
    let f = &d.by_kind["step"];
    assert_eq!(f.faults, 3);
    assert_eq!((f.scored_anomalous_5m, f.alert_posted_5m, f.notified_5m), (1, 1, 1), "{f:?}");
    let outcome: Vec<(&str, usize)> = f.outcome.iter().map(|(k, &n)| (k.as_str(), n)).collect();
    assert_eq!(outcome, vec![("caught", 1), ("no_change", 1), ("unwatched_side", 1)], "{f:?}");
    assert_eq!(f.scored_by.get("threshold"), Some(&1), "{f:?}");
    assert_eq!(f.scored_by.get("peer"), Some(&0), "the GPU rule's peers are counted, and saw nothing: {f:?}");
    for k in ["spike", "drift", "stuck", "gpu_drop"] {
        assert_eq!(d.by_kind[k].faults, 0);
    }
    assert_eq!(d.false_pages.pages, figures.pages_outside_faults);
    assert_eq!(figures.faults_notified_5m, 1);
}

/// The stages after the detectors, on a run made by hand: an alert that began before the fault, one
/// scored too briefly to alert, one held by flap suppression at the five-minute mark, one posted and
/// never sent; and false pages counted by the rule, detector and series of the alert that set them off.
#[test]
fn the_diagnosis_names_the_stage_and_the_hold() {
    use super::diagnose::{Posted, Run, diagnose};
    use super::notify::Held;
    use super::pipeline::{Page, Trigger};
    use argus_alertd::alert::Fingerprint;
    let s = set((0..5).map(|i| host_series(&format!("h{i}"), "m0", 1.0, MIN, i)).collect(), MIN);
    let t0 = s.series[0].samples[0].t;
    let at = |m: i64| t0 + m * MIN;
    let fault = |series, start| Fault {
        series,
        kind: Kind::Stuck,
        start: at(start),
        last: at(start + 29),
        day_sd: 1.0,
        from_peers: false,
    };
    let faults = [fault(0, 600), fault(1, 600), fault(2, 600), fault(3, 600), fault(4, 600)];
    let mut scores = super::tap::Scores::new(&s);
    for series in 0..5 {
        scores.put(series, super::diagnose::ENSEMBLE, at(601), 1.5);
    }
    let post = |series, m: i64, starts: i64, resolved: bool| Posted {
        at: at(m),
        series,
        starts_at: at(starts),
        resolved,
        fingerprint: Fingerprint(series as u64),
        rule: "host_cpu".into(),
        detector: "threshold".into(),
    };
    let posted = vec![
        post(0, 500, 500, false), // series 0 fires from before its fault
        post(0, 599, 500, false),
        post(2, 602, 602, false), // series 2's alert, held by flap suppression
        post(3, 602, 602, false), // series 3's alert, waiting for its group, then not sent
        post(4, 603, 603, false), // series 4's alert, held by nothing and never sent
        post(1, 700, 700, false), // series 1: long after its fault, a false page
    ];
    let mut held = std::collections::HashMap::new();
    held.insert(Fingerprint(2), vec![Held { reason: "flapping".into(), since: at(602), ended: None }]);
    held.insert(
        Fingerprint(3),
        vec![Held { reason: "grouped:group_wait".into(), since: at(602), ended: Some(at(603)) }],
    );
    let trigger = |series| Some(Trigger { series, rule: "host_cpu".into(), detector: "threshold".into() });
    let pages = vec![
        Page { at: at(500), alerts: vec![(0, at(500))], trigger: trigger(0) },
        Page { at: at(700), alerts: vec![(1, at(700))], trigger: trigger(1) },
    ];
    let names: Vec<String> = (0..5).map(|i| format!("h{i}")).collect();
    let d = diagnose(&Run {
        faults: &faults,
        unchanged: &[false; 5],
        direction: &[argus_analyzer::detect::Direction::Both; 5],
        detectors: &vec![vec!["threshold".to_string()]; 5],
        names: &names,
        scores: &scores,
        posted: &posted,
        pages: &pages,
        held: &held,
        truncated: 0,
    });
    let f = &d.by_kind["stuck"];
    assert_eq!((f.faults, f.scored_anomalous_5m, f.alert_posted, f.alert_posted_5m, f.notified), (5, 5, 3, 3, 0));
    let outcome: Vec<(&str, usize)> = f.outcome.iter().map(|(k, &n)| (k.as_str(), n)).collect();
    let expect = [
        ("already_firing", 1),
        ("held:flapping", 1),
        ("held:grouped:group_wait", 1),
        ("not_sent", 1),
        ("too_brief", 1),
    ];
    assert_eq!(outcome, expect);
    assert_eq!(f.scored_by.get("threshold"), Some(&0), "no threshold score was kept");
    assert_eq!(d.false_pages.pages, 2);
    assert_eq!(d.false_pages.by_rule.get("host_cpu"), Some(&2));
    assert_eq!(d.false_pages.top_series, vec![("h0".to_string(), 1), ("h1".to_string(), 1)]);
    assert_eq!(d.alerts_begun_by_rule.get("host_cpu"), Some(&5), "series 0's resend is not a new alert");
}
