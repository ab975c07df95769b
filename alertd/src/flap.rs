//! Flap detection: an alert that changes state (firing ⇄ resolved) `threshold` times within `window`
//! is flapping until it has not changed for `settle`. While flapping its changes notify no one; it
//! rides along in its group's other notifications with its change count.

use crate::alert::Fingerprint;
use crate::time::Timestamp;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct FlapConfig {
    pub window: Duration,
    /// State changes within `window` that make an alert flapping (its first firing counts as one).
    pub threshold: u32,
    pub settle: Duration,
}

impl Default for FlapConfig {
    fn default() -> Self {
        FlapConfig { window: Duration::from_secs(3600), threshold: 5, settle: Duration::from_secs(3600) }
    }
}

#[derive(Debug, Default)]
struct State {
    /// Change times within the window, oldest first.
    recent: VecDeque<Timestamp>,
    last_change: Option<Timestamp>,
    /// Changes counted since the alert started flapping (including those that made it flap).
    flapping: Option<u32>,
}

#[derive(Debug, Default)]
pub struct FlapDetector {
    cfg: FlapConfig,
    states: HashMap<Fingerprint, State>,
}

impl FlapDetector {
    pub fn new(cfg: FlapConfig) -> Self {
        FlapDetector { cfg, states: HashMap::new() }
    }

    /// Records that the alert changed state at `at`. Changes arrive in time order per alert.
    pub fn change(&mut self, fp: Fingerprint, at: Timestamp) {
        let cfg = &self.cfg;
        let s = self.states.entry(fp).or_default();
        if let Some(last) = s.last_change
            && at - last >= cfg.settle
        {
            s.flapping = None;
        }
        while s.recent.front().is_some_and(|&t| at - t > cfg.window) {
            s.recent.pop_front();
        }
        s.recent.push_back(at);
        s.last_change = Some(at);
        s.flapping = match s.flapping {
            Some(n) => Some(n + 1),
            None if s.recent.len() as u32 >= cfg.threshold => Some(s.recent.len() as u32),
            None => None,
        };
    }

    /// The alert's change count when it is flapping at `now`.
    pub fn flapping(&self, fp: Fingerprint, now: Timestamp) -> Option<u32> {
        let s = self.states.get(&fp)?;
        match (s.flapping, s.last_change) {
            (Some(n), Some(last)) if now - last < self.cfg.settle => Some(n),
            _ => None,
        }
    }

    /// Why a flapping alert is held back at `now`: its change count and the flap settings, until
    /// it settles (when nothing changes meanwhile). None when it is not flapping.
    pub fn flap_hold(&self, fp: Fingerprint, now: Timestamp) -> Option<(crate::suppressed::Reason, Option<Timestamp>)> {
        let changes = self.flapping(fp, now)?;
        let last_change = self.states.get(&fp)?.last_change?;
        let reason = crate::suppressed::Reason::Flapping {
            changes,
            threshold: self.cfg.threshold,
            window_seconds: self.cfg.window.as_secs(),
            settle_seconds: self.cfg.settle.as_secs(),
            last_change,
        };
        Some((reason, Some(last_change + self.cfg.settle)))
    }

    /// The alert's recent changes (oldest first) and its change count while flapping; None for an
    /// alert not worth sharing: one that has changed once at most (a replica that starts later
    /// sees that much on its own).
    pub fn recent(&self, fp: Fingerprint) -> Option<(Vec<Timestamp>, Option<u32>)> {
        let s = self.states.get(&fp)?;
        (s.recent.len() >= 2).then(|| (s.recent.iter().copied().collect(), s.flapping))
    }

    /// How long an alert's history matters after its last change.
    pub fn horizon(&self) -> std::time::Duration {
        self.cfg.window.max(self.cfg.settle)
    }

    /// Merges a history that a peer or an earlier process saw: it replaces this one when it holds
    /// more changes (replicas see the same changes at slightly different times, so their lists
    /// are not merged point by point; the longer one saw more). True when it replaced it.
    pub fn merge(&mut self, fp: Fingerprint, changes: &[Timestamp], flapping: Option<u32>) -> bool {
        let s = self.states.entry(fp).or_default();
        let better = changes.len() > s.recent.len() || (changes.len() == s.recent.len() && flapping > s.flapping);
        if !better || changes.is_empty() {
            return false;
        }
        s.recent = changes.iter().copied().collect();
        s.last_change = s.recent.back().copied().max(s.last_change);
        s.flapping = flapping.max(s.flapping);
        true
    }

    /// Forgets alerts that have settled and whose window is empty.
    pub fn gc(&mut self, now: Timestamp) {
        let (window, settle) = (self.cfg.window, self.cfg.settle);
        self.states.retain(|_, s| s.last_change.is_some_and(|l| now - l < window.max(settle)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flaps_after_threshold_and_settles() {
        let mut d = FlapDetector::new(FlapConfig {
            window: Duration::from_secs(600),
            threshold: 3,
            settle: Duration::from_secs(300),
        });
        let fp = Fingerprint(1);
        let t = |s: i64| Timestamp(s * 1000);
        d.change(fp, t(0));
        d.change(fp, t(100));
        assert_eq!(d.flapping(fp, t(100)), None);
        d.change(fp, t(200));
        assert_eq!(d.flapping(fp, t(200)), Some(3));
        d.change(fp, t(400));
        assert_eq!(d.flapping(fp, t(450)), Some(4));
        assert_eq!(d.flapping(fp, t(700)), None, "settled after 300 s without a change");
        // Changes spread wider than the window never flap.
        let other = Fingerprint(2);
        for i in 0..5 {
            d.change(other, t(1000 + i * 700));
        }
        assert_eq!(d.flapping(other, t(4000)), None);
    }
}
