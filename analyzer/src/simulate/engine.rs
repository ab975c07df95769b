//! The event loop: pods arrive, start, finish or are preempted; nodes start, come up and power down; the
//! policy acts after every batch of events at the same instant.

use super::cluster::{Cluster, Placement, Power, fit_on, fits_empty};
use super::trace::{NodeSpec, Pod};
use super::{Policy, Report, SimConfig, SimError};
use crate::capacity::{CapacityPlanner, Outlook, PlanInput};
use crate::forecast::{Forecaster, Regular};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Arrive(usize),
    /// Pod, its generation when started.
    Finish(usize, u64),
    /// Node, its generation when started.
    Ready(usize, u64),
    /// Node, its generation when it became idle.
    IdleCheck(usize, u64),
    Tick,
}

#[derive(Debug, Clone, Default)]
struct PodState {
    placement: Option<Placement>,
    started_at: i64,
    /// Set while pending: when it (re)entered the queue.
    queued_at: Option<i64>,
    pending_s: i64,
    /// Run time done before preemptions.
    ran_s: i64,
    /// Bumped at every preemption, so the finish event of the preempted run is ignored.
    generation: u64,
    done: bool,
}

/// The `forecast` policy's state: demand history, the two forecasters and the planner.
struct Planning {
    total: Box<dyn Forecaster>,
    low: Box<dyn Forecaster>,
    history_total: Vec<f64>,
    history_low: Vec<f64>,
    minute_peak: (f64, f64),
    since_fit: Option<usize>,
    planner: CapacityPlanner,
    recommended: u64,
}

#[derive(Debug, Default)]
struct Stats {
    powered_gpu_s: f64,
    alloc_gpu_s: f64,
    ratio_s: f64,
    in_use_ratio_s: f64,
    powered_s: f64,
    preemptions: u64,
    power_ups: u64,
}

pub(super) struct Sim<'a> {
    cfg: &'a SimConfig,
    pods: Vec<&'a Pod>,
    state: Vec<PodState>,
    cluster: Cluster,
    /// (low priority, queued at, pod): high priority first, then first come.
    pending: BTreeSet<(bool, i64, usize)>,
    pending_milli: (u64, u64),
    /// Pending pods the last scheduling pass found no room for on any running node.
    unfit: Vec<usize>,
    events: BinaryHeap<Reverse<(i64, u64, Kind)>>,
    /// Whether a node may have become idle or the plan dropped since `power_down_to` last looked.
    idle_changed: bool,
    /// Idle checks due at this instant, run after scheduling.
    idle_checks: Vec<(usize, u64)>,
    seq: u64,
    now: i64,
    start: i64,
    finished: usize,
    planning: Option<Planning>,
    stats: Stats,
    skipped: (usize, usize),
    /// What happened, one line per decision, when asked for (tests).
    pub(super) log: Option<Vec<String>>,
}

// === impl Sim ===

impl<'a> Sim<'a> {
    pub(super) fn new(
        all: &'a [Pod],
        nodes: &[NodeSpec],
        cfg: &'a SimConfig,
        forecaster: &mut dyn FnMut() -> Box<dyn Forecaster>,
    ) -> Result<Sim<'a>, SimError> {
        let cpu_only = all.iter().filter(|p| p.num_gpu == 0).count();
        let gpu: Vec<&Pod> = all.iter().filter(|p| p.num_gpu > 0).collect();
        let pods: Vec<&Pod> = gpu.iter().copied().filter(|p| nodes.iter().any(|n| fits_empty(n, p))).collect();
        if pods.is_empty() {
            return Err(SimError::NothingToRun);
        }
        let start = pods.iter().map(|p| p.creation).min().unwrap_or(0);
        let planning = match cfg.policy {
            Policy::Forecast => Some(Planning {
                total: forecaster(),
                low: forecaster(),
                history_total: Vec::new(),
                history_low: Vec::new(),
                minute_peak: (0.0, 0.0),
                since_fit: None,
                planner: CapacityPlanner::new("simulated", cfg.planner.clone())?,
                recommended: 0,
            }),
            _ => None,
        };
        let mut sim = Sim {
            cfg,
            state: vec![PodState::default(); pods.len()],
            skipped: (cpu_only, gpu.len() - pods.len()),
            pods,
            cluster: Cluster::new(nodes, cfg.reserve),
            pending: BTreeSet::new(),
            pending_milli: (0, 0),
            unfit: Vec::new(),
            events: BinaryHeap::new(),
            idle_checks: Vec::new(),
            idle_changed: false,
            seq: 0,
            now: start,
            start,
            finished: 0,
            planning,
            stats: Stats::default(),
            log: None,
        };
        for i in 0..sim.pods.len() {
            sim.push(sim.pods[i].creation, Kind::Arrive(i));
        }
        if cfg.policy == Policy::Static {
            for n in 0..sim.cluster.nodes.len() {
                sim.cluster.switch_on(n, start);
            }
        }
        if cfg.policy == Policy::Forecast {
            sim.push(start + tick_s(cfg), Kind::Tick);
        }
        Ok(sim)
    }

    pub(super) fn run(self) -> Result<Report, SimError> {
        Ok(self.run_logged().0)
    }

    /// Runs to the end; the log is filled when `log` was set.
    pub(super) fn run_logged(mut self) -> (Report, Vec<String>) {
        while let Some(Reverse((t, _, kind))) = self.events.pop() {
            self.integrate(t);
            self.now = t;
            self.apply(kind);
            while let Some(&Reverse((t2, _, k2))) = self.events.peek() {
                if t2 != t {
                    break;
                }
                self.events.pop();
                self.apply(k2);
            }
            self.schedule();
            for (n, generation) in std::mem::take(&mut self.idle_checks) {
                let node = &self.cluster.nodes[n];
                if node.generation == generation && node.power == Power::On && node.pods.is_empty() {
                    self.cluster.power_off(n);
                    self.note(|s| format!("off {}", s.cluster.nodes[n].spec.name));
                }
            }
            self.act();
            if self.finished == self.pods.len() {
                break;
            }
        }
        (self.report(), self.log.take().unwrap_or_default())
    }

    fn note(&mut self, what: impl FnOnce(&Self) -> String) {
        if self.log.is_some() {
            let line = format!("{} {}", self.now - self.start, what(self));
            if let Some(log) = &mut self.log {
                log.push(line);
            }
        }
    }

    fn push(&mut self, t: i64, kind: Kind) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, kind)));
    }

    fn integrate(&mut self, t: i64) {
        let dt = (t - self.now) as f64;
        if dt <= 0.0 {
            return;
        }
        let c = &self.cluster;
        let s = &mut self.stats;
        s.powered_gpu_s += c.powered_gpus as f64 * dt;
        s.alloc_gpu_s += c.alloc_milli as f64 / 1000.0 * dt;
        if c.powered_gpus > 0 {
            s.ratio_s += c.alloc_milli as f64 / 1000.0 / c.powered_gpus as f64 * dt;
            s.in_use_ratio_s += c.gpus_in_use as f64 / c.powered_gpus as f64 * dt;
            s.powered_s += dt;
        }
    }

    fn apply(&mut self, kind: Kind) {
        match kind {
            Kind::Arrive(i) => self.enqueue(i),
            Kind::Finish(i, generation) => {
                if self.state[i].generation != generation || self.state[i].done {
                    return;
                }
                let Some(at) = self.state[i].placement.take() else { return };
                self.cluster.remove(i, self.pods[i], &at, self.now);
                self.state[i].done = true;
                self.finished += 1;
                self.idle_changed = true;
                self.note(|s| format!("done {}", s.pods[i].name));
                self.watch_idle(at.node);
            }
            Kind::Ready(n, generation) => {
                if self.cluster.nodes[n].generation == generation {
                    self.cluster.ready(n, self.now);
                    self.idle_changed = true;
                    self.note(|s| format!("ready {}", s.cluster.nodes[n].spec.name));
                    self.watch_idle(n);
                }
            }
            // After this instant's pods had their chance at the node.
            Kind::IdleCheck(n, generation) => self.idle_checks.push((n, generation)),
            Kind::Tick => {
                self.plan();
                if self.finished < self.pods.len() {
                    self.push(self.now + tick_s(self.cfg), Kind::Tick);
                }
            }
        }
    }

    /// `reactive`: an empty node is checked again after `idle_off`.
    fn watch_idle(&mut self, n: usize) {
        let node = &self.cluster.nodes[n];
        if self.cfg.policy == Policy::Reactive && node.pods.is_empty() && node.power == Power::On {
            let generation = node.generation;
            self.push(self.now + self.cfg.idle_off.as_secs() as i64, Kind::IdleCheck(n, generation));
        }
    }

    fn enqueue(&mut self, i: usize) {
        let pod = self.pods[i];
        self.state[i].queued_at = Some(self.now);
        self.pending.insert((!pod.high_priority, self.now, i));
        self.pending_milli.0 += pod.gpu_share_milli();
        if !pod.high_priority {
            self.pending_milli.1 += pod.gpu_share_milli();
        }
    }

    fn start_pod(&mut self, i: usize, at: Placement) {
        let pod = self.pods[i];
        let queued_at = self.state[i].queued_at.take().unwrap_or(self.now);
        self.pending.remove(&(!pod.high_priority, queued_at, i));
        self.pending_milli.0 -= pod.gpu_share_milli();
        if !pod.high_priority {
            self.pending_milli.1 -= pod.gpu_share_milli();
        }
        self.cluster.place(i, pod, &at);
        let s = &mut self.state[i];
        s.pending_s += self.now - queued_at;
        s.started_at = self.now;
        s.placement = Some(at);
        let generation = s.generation;
        let left = (pod.run_s - s.ran_s).max(0);
        self.push(self.now + left, Kind::Finish(i, generation));
        self.note(|s| {
            let (node, gpus) = match &s.state[i].placement {
                Some(a) => (s.cluster.nodes[a.node].spec.name.as_str(), a.gpus.as_slice()),
                None => ("", &[][..]),
            };
            format!("start {} on {node} gpus {gpus:?} after {}s", pod.name, s.now - queued_at)
        });
    }

    fn preempt(&mut self, i: usize) {
        let Some(at) = self.state[i].placement.take() else { return };
        self.cluster.remove(i, self.pods[i], &at, self.now);
        // The pod resumes where it stopped (training jobs checkpoint), so every policy runs the same work.
        let s = &mut self.state[i];
        s.ran_s += self.now - s.started_at;
        s.generation += 1;
        self.stats.preemptions += 1;
        self.idle_changed = true;
        self.note(|s| format!("preempt {}", s.pods[i].name));
        self.enqueue(i);
    }

    /// Passes over the queue until one preempts nothing, so preempted pods get their own try.
    fn schedule(&mut self) {
        let mut passes = 0;
        while self.schedule_pass() && passes < 100 {
            passes += 1;
        }
    }

    /// One pass over the queue: first fit for each pending pod, preemption for high-priority ones. Whether
    /// it preempted.
    fn schedule_pass(&mut self) -> bool {
        self.unfit.clear();
        if self.pending.is_empty() {
            return false;
        }
        let preempted_before = self.stats.preemptions;
        let queue: Vec<(bool, i64, usize)> = self.pending.iter().copied().collect();
        // Room only shrinks during a pass (preemption frees room for the preemptor alone), so a shape that
        // found none need not be tried again.
        let mut no_room: HashSet<(u32, u32, u64, u64, bool)> = HashSet::new();
        for (low, _, i) in queue {
            let pod = self.pods[i];
            if low && !self.cluster.low_quota_allows(pod.gpu_share_milli()) {
                if self.cluster.first_fit(pod).is_none() {
                    self.unfit.push(i);
                }
                continue;
            }
            let shape = (pod.num_gpu, pod.gpu_milli, pod.cpu_milli, pod.memory_mib, pod.gpu_spec.is_empty());
            if pod.gpu_spec.is_empty() && no_room.contains(&shape) && !pod.high_priority {
                self.unfit.push(i);
                continue;
            }
            if let Some(at) = self.cluster.first_fit(pod) {
                self.start_pod(i, at);
                continue;
            }
            if !low && let Some((node, victims)) = self.find_victims(pod) {
                for v in victims {
                    self.preempt(v);
                }
                if let Some(gpus) = self.cluster.fit(node, pod, false) {
                    self.start_pod(i, Placement { node, gpus });
                    continue;
                }
            }
            no_room.insert(shape);
            self.unfit.push(i);
        }
        self.stats.preemptions > preempted_before
    }

    /// The first running node where evicting low-priority pods (the most recently started first) makes room
    /// for `pod`, and those pods.
    fn find_victims(&self, pod: &Pod) -> Option<(usize, Vec<usize>)> {
        for (n, node) in self.cluster.nodes.iter().enumerate() {
            if node.power != Power::On || !fits_empty(&node.spec, pod) {
                continue;
            }
            let mut lows: Vec<usize> = node.pods.iter().copied().filter(|&p| !self.pods[p].high_priority).collect();
            if lows.is_empty() {
                continue;
            }
            lows.sort_by_key(|&p| Reverse((self.state[p].started_at, p)));
            let mut scratch = node.clone();
            for (k, &v) in lows.iter().enumerate() {
                let victim = self.pods[v];
                if let Some(at) = &self.state[v].placement {
                    for &g in &at.gpus {
                        scratch.gpu_used[g as usize] -= victim.gpu_milli;
                    }
                }
                scratch.cpu_free += victim.cpu_milli as i64;
                scratch.mem_free += victim.memory_mib as i64;
                if fit_on(&scratch, pod, false).is_some() {
                    return Some((n, lows[..=k].to_vec()));
                }
            }
        }
        None
    }

    /// The policy's power decisions after a batch of events.
    fn act(&mut self) {
        match self.cfg.policy {
            Policy::Static => {}
            Policy::Reactive => {
                self.start_for_unfit();
                let need = self.quota_need();
                self.top_up(need);
            }
            Policy::Forecast => {
                self.start_for_unfit();
                let recommended = self.planning.as_ref().map_or(0, |p| p.recommended);
                let need = self.quota_need().max(recommended);
                self.top_up(need);
                self.power_down_to(recommended);
                let demand = self.demand();
                if let Some(p) = &mut self.planning {
                    p.minute_peak.0 = p.minute_peak.0.max(demand.0);
                    p.minute_peak.1 = p.minute_peak.1.max(demand.1);
                }
            }
        }
    }

    /// Running + pending GPUs, all and low-priority.
    fn demand(&self) -> (f64, f64) {
        (
            (self.cluster.alloc_milli + self.pending_milli.0) as f64 / 1000.0,
            (self.cluster.low_alloc_milli + self.pending_milli.1) as f64 / 1000.0,
        )
    }

    /// `forecast`: sample demand, refit or update the forecasters, and ask the planner for the GPUs to keep.
    fn plan(&mut self) {
        let demand = self.demand();
        let (horizon, refit, window) = (self.cfg.horizon_steps, self.cfg.refit_every_steps, self.cfg.fit_window_steps);
        let step_ms = tick_s(self.cfg) * 1000;
        let (now, current) = (self.now, self.cluster.powered_gpus);
        let Some(p) = &mut self.planning else { return };
        let peak = (p.minute_peak.0.max(demand.0), p.minute_peak.1.max(demand.1));
        p.minute_peak = demand;
        p.history_total.push(peak.0);
        p.history_low.push(peak.1);
        let n = p.history_total.len();
        let due = p.since_fit.is_none_or(|s| s + 1 >= refit);
        let mut fitted = p.since_fit.is_some();
        if due && n >= horizon + 2 {
            let from = n.saturating_sub(window);
            let start_ms = (now - (n - from) as i64 * step_ms / 1000) * 1000;
            let ok_total = p.total.fit(Regular { start_ms, step_ms, values: &p.history_total[from..] }).is_ok();
            let ok_low = p.low.fit(Regular { start_ms, step_ms, values: &p.history_low[from..] }).is_ok();
            fitted = ok_total && ok_low;
            p.since_fit = fitted.then_some(0);
        } else if fitted {
            p.total.observe(peak.0);
            p.low.observe(peak.1);
            p.since_fit = p.since_fit.map(|s| s + 1);
        }
        let outlook = |m: &dyn Forecaster, now: f64| match fitted.then(|| m.forecast(horizon)) {
            Some(Ok(f)) => Outlook::from_forecast(now, &f),
            _ => Outlook { now, upper: now },
        };
        let input = PlanInput {
            timestamp_ms: now * 1000,
            current,
            demand: outlook(p.total.as_ref(), demand.0),
            low_priority: Some(outlook(p.low.as_ref(), demand.1)),
        };
        let recommended = p.planner.plan(&input).recommended;
        self.idle_changed |= recommended < p.recommended;
        p.recommended = recommended;
    }

    /// GPUs to keep powered so the pending low-priority pods fit within the unreserved share.
    fn quota_need(&self) -> u64 {
        if self.pending_milli.1 == 0 {
            return 0;
        }
        let low = (self.cluster.low_alloc_milli + self.pending_milli.1) as f64 / 1000.0;
        (low / (1.0 - self.cfg.reserve) - 1e-9).ceil() as u64
    }

    /// Starts nodes for pending pods that fit on no running node and on no node already starting.
    fn start_for_unfit(&mut self) {
        if self.unfit.is_empty() {
            return;
        }
        let mut starting: Vec<super::cluster::Node> =
            self.cluster.nodes.iter().filter(|n| matches!(n.power, Power::Starting { .. })).cloned().collect();
        for i in std::mem::take(&mut self.unfit) {
            let pod = self.pods[i];
            if let Some((k, gpus)) =
                starting.iter().enumerate().find_map(|(k, n)| fit_on(n, pod, false).map(|g| (k, g)))
            {
                take(&mut starting[k], pod, &gpus);
                continue;
            }
            // The node with the fewest GPUs that holds it keeps powered GPUs close to the demand; among
            // those, the most CPU and memory leave room for more pods on its other GPUs (GPUs stranded by
            // a node's CPU running out are the larger waste in GPU-sharing traces).
            let choice = (0..self.cluster.nodes.len())
                .filter(|&n| self.cluster.nodes[n].power == Power::Off && fits_empty(&self.cluster.nodes[n].spec, pod))
                .min_by_key(|&n| {
                    let s = &self.cluster.nodes[n].spec;
                    (s.gpus, Reverse(s.cpu_milli), Reverse(s.memory_mib), n)
                });
            if let Some(n) = choice {
                self.power_up(n);
                let mut node = self.cluster.nodes[n].clone();
                if let Some(gpus) = fit_on(&node, pod, false) {
                    take(&mut node, pod, &gpus);
                }
                starting.push(node);
            }
        }
    }

    /// Starts nodes until `target` GPUs are powered: the largest node within what is missing, else the
    /// smallest that covers it.
    fn top_up(&mut self, target: u64) {
        while self.cluster.powered_gpus < target {
            let missing = target - self.cluster.powered_gpus;
            let off = || (0..self.cluster.nodes.len()).filter(|&n| self.cluster.nodes[n].power == Power::Off);
            let gpus = |n: usize| u64::from(self.cluster.nodes[n].spec.gpus);
            let cpu = |n: usize| self.cluster.nodes[n].spec.cpu_milli;
            let within =
                off().filter(|&n| gpus(n) > 0 && gpus(n) <= missing).max_by_key(|&n| (gpus(n), cpu(n), Reverse(n)));
            let Some(n) =
                within.or_else(|| off().filter(|&n| gpus(n) > missing).min_by_key(|&n| (gpus(n), Reverse(cpu(n)), n)))
            else {
                return;
            };
            self.power_up(n);
        }
    }

    /// Powers down idle running nodes, largest first, while at least `target` GPUs stay powered.
    fn power_down_to(&mut self, target: u64) {
        // Scanning the nodes at every event costs more than the rest of the simulation.
        if !std::mem::take(&mut self.idle_changed) || self.cluster.powered_gpus <= target {
            return;
        }
        let mut idle: Vec<usize> = (0..self.cluster.nodes.len())
            .filter(|&n| self.cluster.nodes[n].power == Power::On && self.cluster.nodes[n].pods.is_empty())
            .collect();
        idle.sort_by_key(|&n| Reverse((self.cluster.nodes[n].spec.gpus, n)));
        for n in idle {
            let gpus = u64::from(self.cluster.nodes[n].spec.gpus);
            if self.cluster.powered_gpus >= target + gpus {
                self.cluster.power_off(n);
                self.note(|s| format!("off {} (planned {target})", s.cluster.nodes[n].spec.name));
            }
        }
    }

    fn power_up(&mut self, n: usize) {
        let ready_at = self.now + self.cfg.boot.as_secs() as i64;
        self.cluster.start(n, ready_at);
        let generation = self.cluster.nodes[n].generation;
        self.push(ready_at, Kind::Ready(n, generation));
        self.stats.power_ups += 1;
        self.idle_changed = true;
        self.note(|s| format!("power up {}", s.cluster.nodes[n].spec.name));
    }

    fn report(&self) -> Report {
        let mut waits: Vec<f64> = self.state.iter().map(|s| s.pending_s as f64).collect();
        waits.sort_by(f64::total_cmp);
        let pct = |q: f64| {
            let rank = ((q * waits.len() as f64).ceil() as usize).clamp(1, waits.len());
            waits[rank - 1]
        };
        let s = &self.stats;
        let ratio = |x: f64| if s.powered_s > 0.0 { x / s.powered_s } else { 0.0 };
        Report {
            policy: self.cfg.policy,
            forecaster: self.planning.as_ref().map(|p| p.total.name().to_string()),
            mean_allocation: ratio(s.ratio_s),
            gpu_hour_allocation: if s.powered_gpu_s > 0.0 { s.alloc_gpu_s / s.powered_gpu_s } else { 0.0 },
            mean_gpus_in_use: ratio(s.in_use_ratio_s),
            pending_p50_seconds: pct(0.5),
            pending_p95_seconds: pct(0.95),
            pending_p99_seconds: pct(0.99),
            pending_mean_seconds: waits.iter().sum::<f64>() / waits.len() as f64,
            powered_gpu_hours: s.powered_gpu_s / 3600.0,
            allocated_gpu_hours: s.alloc_gpu_s / 3600.0,
            pods: self.pods.len(),
            pods_waited: waits.iter().filter(|&&w| w > 0.0).count(),
            preemptions: s.preemptions,
            power_ups: s.power_ups,
            skipped_cpu_only: self.skipped.0,
            skipped_unschedulable: self.skipped.1,
            span_seconds: self.now - self.start,
        }
    }
}

/// Books `pod` on a scratch copy of a starting node.
fn take(node: &mut super::cluster::Node, pod: &Pod, gpus: &[u8]) {
    for &g in gpus {
        node.gpu_used[g as usize] += pod.gpu_milli;
    }
    node.cpu_free -= pod.cpu_milli as i64;
    node.mem_free -= pod.memory_mib as i64;
}

fn tick_s(cfg: &SimConfig) -> i64 {
    cfg.tick.as_secs().max(1) as i64
}
