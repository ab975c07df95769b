//! Where each injected fault is lost, and what raises the false pages: every fault followed through the
//! stages of the run — the detectors' scores, the analyzer's alert, alertd's holds, the notification —
//! and every false page traced to the alert that set it off (docs/eval-pages.md, "Diagnosis").

use super::faults::{Fault, GRACE, KINDS, Kind};
use super::notify::Held;
use super::pipeline::Page;
use super::tap::Scores;
use argus_alertd::alert::Fingerprint;
use argus_analyzer::detect::Direction;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The detector whose score the analyzer judges (the combination of its detectors' scores).
pub const ENSEMBLE: &str = "ensemble";

/// One fault kind followed through the run. The first counts are of faults that reached each stage at
/// all (within the fault or 5 minutes after it); the `_5m` ones within 5 minutes of its start.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Funnel {
    pub faults: usize,
    /// The analyzer's combined score above 1 at some step.
    pub scored_anomalous: usize,
    pub scored_anomalous_5m: usize,
    /// Per detector of the rule (`threshold`, `peer`): its own score above 1 at some step.
    pub scored_by: BTreeMap<String, usize>,
    /// A firing alert of the series that began in the fault posted to alertd.
    pub alert_posted: usize,
    pub alert_posted_5m: usize,
    /// A notification with that alert in it.
    pub notified: usize,
    pub notified_5m: usize,
    /// Each fault not notified within 5 minutes, by the first stage that failed it:
    /// `no_change` (the fault altered nothing), `unwatched_side` (it moves the series the way its rule
    /// does not watch, not scored), `not_scored` (inside what the detectors expect), `already_firing`
    /// (the series' alert had begun before the fault, so no new one), `too_brief` (scored, but not
    /// for the steps an alert needs, nor high enough to alert at once), `held:<reason>` (posted, held
    /// by alertd between its post and the 5-minute mark: `flapping`, `grouped:backoff`,
    /// `grouped:update_interval`, `grouped:group_wait`, …; several joined by `+`), `not_sent` (posted,
    /// held by nothing recorded, in no notification within 5 minutes); `caught` for the rest.
    pub outcome: BTreeMap<String, usize>,
}

impl Funnel {
    fn add(&mut self, o: &Funnel) {
        self.faults += o.faults;
        self.scored_anomalous += o.scored_anomalous;
        self.scored_anomalous_5m += o.scored_anomalous_5m;
        self.alert_posted += o.alert_posted;
        self.alert_posted_5m += o.alert_posted_5m;
        self.notified += o.notified;
        self.notified_5m += o.notified_5m;
        merge(&mut self.scored_by, &o.scored_by);
        merge(&mut self.outcome, &o.outcome);
    }
}

/// What set off the false pages: the newest firing alert of each (the one whose start made it news).
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct FalsePages {
    pub pages: usize,
    /// By the alert's `analyzer_rule` and `detector` labels (the detector that scored highest when it
    /// began).
    pub by_rule: BTreeMap<String, usize>,
    pub by_detector: BTreeMap<String, usize>,
    /// By the series it names (`host` and the set's other labels), the ten with most.
    pub top_series: Vec<(String, usize)>,
    /// Pages that name no series of the set (none here: every alert comes from the set's series).
    pub without_series: usize,
    #[serde(skip)]
    by_series: BTreeMap<String, usize>,
}

impl FalsePages {
    fn add(&mut self, o: &FalsePages) {
        self.pages += o.pages;
        self.without_series += o.without_series;
        merge(&mut self.by_rule, &o.by_rule);
        merge(&mut self.by_detector, &o.by_detector);
        merge(&mut self.by_series, &o.by_series);
        self.top_series = top(&self.by_series, 10);
    }
}

/// The diagnosis of one data set (or of all, summed).
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    pub by_kind: BTreeMap<&'static str, Funnel>,
    pub false_pages: FalsePages,
    /// Alerts the analyzer began (firing episodes, not resends), by rule and by detector.
    pub alerts_begun_by_rule: BTreeMap<String, usize>,
    pub alerts_begun_by_detector: BTreeMap<String, usize>,
    /// Notifications that left alerts out (the receiver's `max_alerts`).
    pub truncated_notifications: usize,
}

impl Diagnosis {
    pub fn add(&mut self, o: &Diagnosis) {
        for (k, f) in &o.by_kind {
            self.by_kind.entry(k).or_default().add(f);
        }
        self.false_pages.add(&o.false_pages);
        merge(&mut self.alerts_begun_by_rule, &o.alerts_begun_by_rule);
        merge(&mut self.alerts_begun_by_detector, &o.alerts_begun_by_detector);
        self.truncated_notifications += o.truncated_notifications;
    }
}

/// An analyzer alert as the diagnosis reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    /// The step it was posted at.
    pub at: i64,
    pub series: usize,
    pub starts_at: i64,
    /// Whether it resolves the alert (its end is not after the post).
    pub resolved: bool,
    pub fingerprint: Fingerprint,
    pub rule: String,
    pub detector: String,
}

/// What the diagnosis reads of one run.
pub struct Run<'a> {
    pub faults: &'a [Fault],
    pub unchanged: &'a [bool],
    /// The direction the rule watching each series watches.
    pub direction: &'a [Direction],
    /// Per series, the names of its rule's detectors besides the combination.
    pub detectors: &'a [Vec<String>],
    /// A readable name of each series.
    pub names: &'a [String],
    pub scores: &'a Scores,
    pub posted: &'a [Posted],
    pub pages: &'a [Page],
    pub held: &'a HashMap<Fingerprint, Vec<Held>>,
    pub truncated: usize,
}

/// Follows every fault through the run, and traces every false page.
pub fn diagnose(run: &Run) -> Diagnosis {
    let mut out = Diagnosis { truncated_notifications: run.truncated, ..Diagnosis::default() };
    for k in KINDS {
        out.by_kind.insert(k.name(), Funnel::default());
    }
    let mut by_series: HashMap<usize, Vec<&Posted>> = HashMap::new();
    for p in run.posted {
        by_series.entry(p.series).or_default().push(p);
    }
    for (f, &same) in run.faults.iter().zip(run.unchanged) {
        let funnel = out.by_kind.entry(f.kind.name()).or_default();
        follow(run, f, same, by_series.get(&f.series).map_or(&[][..], Vec::as_slice), funnel);
    }
    // Alerts begun: each (series, start) once, with the rule and detector it began with.
    let mut begun: BTreeMap<(usize, i64), &Posted> = BTreeMap::new();
    for p in run.posted.iter().filter(|p| !p.resolved) {
        begun.entry((p.series, p.starts_at)).or_insert(p);
    }
    for p in begun.values() {
        *out.alerts_begun_by_rule.entry(p.rule.clone()).or_default() += 1;
        *out.alerts_begun_by_detector.entry(p.detector.clone()).or_default() += 1;
    }
    let covers = |s: usize, started: i64| run.faults.iter().any(|f| f.series == s && f.covers(started));
    for page in run.pages.iter().filter(|p| !p.alerts.iter().any(|&(s, t)| covers(s, t))) {
        let fp = &mut out.false_pages;
        fp.pages += 1;
        match &page.trigger {
            Some(t) => {
                *fp.by_rule.entry(t.rule.clone()).or_default() += 1;
                *fp.by_detector.entry(t.detector.clone()).or_default() += 1;
                let name = run.names.get(t.series).cloned().unwrap_or_default();
                *fp.by_series.entry(name).or_default() += 1;
            }
            None => fp.without_series += 1,
        }
    }
    out.false_pages.top_series = top(&out.false_pages.by_series, 10);
    out
}

/// One fault through the stages, into `funnel`.
fn follow(run: &Run, f: &Fault, unchanged: bool, posted: &[&Posted], funnel: &mut Funnel) {
    let (end, mark) = (f.last + GRACE, f.start + GRACE);
    let s = f.series;
    funnel.faults += 1;
    let first_scored = run.scores.first_above_1(s, ENSEMBLE, f.start, end);
    funnel.scored_anomalous += usize::from(first_scored.is_some());
    funnel.scored_anomalous_5m += usize::from(first_scored.is_some_and(|t| t <= mark));
    for d in run.detectors.get(s).into_iter().flatten() {
        let by = run.scores.first_above_1(s, d, f.start, end).is_some();
        *funnel.scored_by.entry(d.clone()).or_default() += usize::from(by);
    }
    // The fault's own alert: one of its series that began in it.
    let own = posted.iter().find(|p| !p.resolved && f.covers(p.starts_at));
    funnel.alert_posted += usize::from(own.is_some());
    funnel.alert_posted_5m += usize::from(own.is_some_and(|p| p.at <= mark));
    let notified = run
        .pages
        .iter()
        .filter(|p| p.at >= f.start && p.alerts.iter().any(|&(i, t)| i == s && f.covers(t)))
        .map(|p| p.at)
        .min();
    funnel.notified += usize::from(notified.is_some());
    let in_time = notified.is_some_and(|at| at <= mark);
    funnel.notified_5m += usize::from(in_time);
    let outcome = if in_time {
        "caught".to_string()
    } else if unchanged {
        "no_change".to_string()
    } else if first_scored.is_none_or(|t| t > mark) {
        let side = pushes(f.kind).is_some_and(|up| !run.direction.get(s).is_some_and(|d| d.keeps(up)));
        if side { "unwatched_side" } else { "not_scored" }.to_string()
    } else if own.is_none_or(|p| p.at > mark) {
        let firing = firing_at(posted, f.start);
        if firing { "already_firing" } else { "too_brief" }.to_string()
    } else {
        // What alertd held it for between its post and the mark.
        let post = own.map_or(mark, |p| p.at);
        let open: Vec<&str> = own
            .and_then(|p| run.held.get(&p.fingerprint))
            .into_iter()
            .flatten()
            .filter(|h| h.since <= mark && h.ended.is_none_or(|e| e >= post))
            .map(|h| h.reason.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if open.is_empty() { "not_sent".to_string() } else { format!("held:{}", open.join("+")) }
    };
    *funnel.outcome.entry(outcome).or_default() += 1;
}

/// The sign of the deviation a fault kind makes (+1 up, −1 down); `None` for a stuck value, which
/// either side may see.
fn pushes(kind: Kind) -> Option<f64> {
    match kind {
        Kind::Step | Kind::Spike | Kind::Drift => Some(1.0),
        Kind::GpuDrop => Some(-1.0),
        Kind::Stuck => None,
    }
}

/// Whether the series' alert (from its posts, in time order) was firing at `t`: begun before `t` and
/// not resolved by then.
fn firing_at(posted: &[&Posted], t: i64) -> bool {
    let mut firing = false;
    for p in posted.iter().take_while(|p| p.at < t) {
        firing = !p.resolved && p.starts_at < t;
    }
    firing
}

fn merge(into: &mut BTreeMap<String, usize>, from: &BTreeMap<String, usize>) {
    for (k, n) in from {
        *into.entry(k.clone()).or_default() += n;
    }
}

fn top(counts: &BTreeMap<String, usize>, n: usize) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = counts.iter().map(|(k, &c)| (k.clone(), c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}
