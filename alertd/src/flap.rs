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
