//! Notifications against the injected faults: which belong to a fault, which are false pages, and how
//! soon each fault was notified.

use super::diagnose::Diagnosis;
use super::faults::{Fault, GRACE, KINDS};
use super::pipeline::{Page, Stages};
use serde::Serialize;
use std::collections::BTreeMap;

/// The figures of one data set (or of all, summed).
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub series: usize,
    pub series_days: f64,
    pub notifications: usize,
    /// Notifications none of whose firing alerts belongs to a fault.
    pub pages_outside_faults: usize,
    pub faults: usize,
    /// Faults notified within [`GRACE`] of their start.
    pub faults_notified_5m: usize,
    /// Faults notified at all: by an alert of their series that began while they lasted or within
    /// [`GRACE`] after.
    pub faults_notified: usize,
    /// Faults that changed nothing: the day's standard deviation was 0 (a flat day), or a stuck value
    /// on a series that did not move. Counted in `faults` like every other.
    pub faults_without_change: usize,
    /// Alerts the analyzer posted to alertd (firing, resent and resolved), and the steps it evaluated.
    pub analyzer_alerts: usize,
    pub steps: usize,
    /// Seconds from each notified fault's start to its first notification.
    #[serde(skip)]
    pub detect_seconds: Vec<f64>,
    pub by_kind: BTreeMap<&'static str, KindFigures>,
    /// Where each fault was lost and what raised the false pages.
    pub diagnosis: Diagnosis,
    /// Seconds spent writing the data, in the analyzer and in alertd.
    pub stage_seconds: Stages,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct KindFigures {
    pub faults: usize,
    pub notified_5m: usize,
}

impl Figures {
    pub fn pages_per_1000_series_days(&self) -> f64 {
        if self.series_days > 0.0 { self.pages_outside_faults as f64 * 1000.0 / self.series_days } else { 0.0 }
    }

    pub fn fault_recall(&self) -> f64 {
        if self.faults > 0 { self.faults_notified_5m as f64 / self.faults as f64 } else { 0.0 }
    }

    /// The median of [`Figures::detect_seconds`] (null in JSON when no fault was notified).
    pub fn median_detect_seconds(&self) -> Option<f64> {
        let mut v = self.detect_seconds.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) })
    }

    pub fn add(&mut self, o: &Figures) {
        self.series += o.series;
        self.series_days += o.series_days;
        self.notifications += o.notifications;
        self.pages_outside_faults += o.pages_outside_faults;
        self.faults += o.faults;
        self.faults_notified_5m += o.faults_notified_5m;
        self.faults_notified += o.faults_notified;
        self.faults_without_change += o.faults_without_change;
        self.analyzer_alerts += o.analyzer_alerts;
        self.steps += o.steps;
        self.detect_seconds.extend(&o.detect_seconds);
        for (k, f) in &o.by_kind {
            let e = self.by_kind.entry(*k).or_default();
            e.faults += f.faults;
            e.notified_5m += f.notified_5m;
        }
        self.diagnosis.add(&o.diagnosis);
        self.stage_seconds.write += o.stage_seconds.write;
        self.stage_seconds.analyzer += o.stage_seconds.analyzer;
        self.stage_seconds.alertd += o.stage_seconds.alertd;
    }

    pub fn json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        v["pages_per_1000_series_days"] = self.pages_per_1000_series_days().into();
        v["fault_recall"] = self.fault_recall().into();
        v["median_detect_seconds"] = self.median_detect_seconds().into();
        v
    }
}

/// Scores `pages` against `faults`. `series_days` is the live time the analyzer judged;
/// `unchanged[i]` whether fault `i` altered nothing.
pub fn score(series: usize, series_days: f64, pages: &[Page], faults: &[Fault], unchanged: &[bool]) -> Figures {
    let mut by_series: BTreeMap<usize, Vec<&Fault>> = BTreeMap::new();
    for f in faults {
        by_series.entry(f.series).or_default().push(f);
    }
    let belongs =
        |&(s, started): &(usize, i64)| by_series.get(&s).is_some_and(|fs| fs.iter().any(|f| f.covers(started)));
    let mut out = Figures { series, series_days, notifications: pages.len(), ..Figures::default() };
    out.pages_outside_faults = pages.iter().filter(|p| !p.alerts.iter().any(belongs)).count();
    for k in KINDS {
        out.by_kind.insert(k.name(), KindFigures::default());
    }
    for (f, &same) in faults.iter().zip(unchanged) {
        out.faults += 1;
        out.faults_without_change += usize::from(same);
        let first = pages
            .iter()
            .filter(|p| p.at >= f.start && p.alerts.iter().any(|&(s, started)| s == f.series && f.covers(started)))
            .map(|p| p.at)
            .min();
        let in_time = first.is_some_and(|at| at - f.start <= GRACE);
        if let Some(at) = first {
            out.faults_notified += 1;
            out.detect_seconds.push((at - f.start) as f64 / 1000.0);
        }
        out.faults_notified_5m += usize::from(in_time);
        let kind = out.by_kind.entry(f.kind.name()).or_default();
        kind.faults += 1;
        kind.notified_5m += usize::from(in_time);
    }
    out
}
