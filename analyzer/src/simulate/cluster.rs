//! The simulated cluster: nodes, their power state, and where pods sit.
//!
//! Placement is first fit over the nodes that are on, in inventory order, with shared pods (`gpu_milli <
//! 1000`) packed first onto GPUs already shared (the fullest that still has room), and only then onto an
//! empty GPU. Low-priority pods together may hold at most `1 - reserve` of the GPUs of nodes that are on;
//! the rest is reserved for high-priority pods, which may also use every other GPU and preempt low-priority
//! pods.

use super::trace::{NodeSpec, Pod};

/// A node's power state. Starting nodes count as powered (they draw power) but hold no pods yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    Off,
    Starting { ready_at: i64 },
    On,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub spec: NodeSpec,
    pub power: Power,
    /// Thousandths of each GPU handed out.
    pub gpu_used: Vec<u32>,
    pub cpu_free: i64,
    pub mem_free: i64,
    /// Pods placed here.
    pub pods: Vec<usize>,
    /// When the node last became empty (or came on empty).
    pub idle_since: i64,
    /// Bumped at every power change and at every change to `pods`, so queued events about an older state
    /// are ignored.
    pub generation: u64,
}

/// Where a pod sits: its node and GPU indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub node: usize,
    pub gpus: Vec<u8>,
}

/// Node state and the totals the metrics read.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    /// GPUs of nodes on or starting.
    pub powered_gpus: u64,
    /// GPUs of nodes on.
    pub ready_gpus: u64,
    /// Thousandths of GPUs handed out, all pods / low-priority pods.
    pub alloc_milli: u64,
    pub low_alloc_milli: u64,
    /// GPUs holding at least one pod.
    pub gpus_in_use: u64,
    /// Share of GPUs (of nodes on) reserved for high-priority pods.
    pub reserve: f64,
}

// === impl Cluster ===

impl Cluster {
    pub fn new(specs: &[NodeSpec], reserve: f64) -> Cluster {
        let nodes = specs
            .iter()
            .map(|s| Node {
                spec: s.clone(),
                power: Power::Off,
                gpu_used: vec![0; s.gpus as usize],
                cpu_free: s.cpu_milli as i64,
                mem_free: s.memory_mib as i64,
                pods: Vec::new(),
                idle_since: 0,
                generation: 0,
            })
            .collect();
        Cluster { nodes, powered_gpus: 0, ready_gpus: 0, alloc_milli: 0, low_alloc_milli: 0, gpus_in_use: 0, reserve }
    }

    /// Whether low-priority pods may take `milli` more thousandths of a GPU without eating the reserve.
    pub fn low_quota_allows(&self, milli: u64) -> bool {
        let cap = ((1.0 - self.reserve) * self.ready_gpus as f64 * 1000.0 + 1e-6).floor() as u64;
        self.low_alloc_milli + milli <= cap
    }

    /// GPU indices `pod` would take on `node` as it stands (its power state aside), or `None`.
    pub fn fit(&self, node: usize, pod: &Pod, shared_only: bool) -> Option<Vec<u8>> {
        fit_on(&self.nodes[node], pod, shared_only)
    }

    /// First fit over nodes that are on: a shared pod first onto a GPU already shared, then anywhere.
    /// Ignores the low-priority quota; the caller checks it.
    pub fn first_fit(&self, pod: &Pod) -> Option<Placement> {
        let on = || self.nodes.iter().enumerate().filter(|(_, n)| n.power == Power::On);
        if pod.is_shared()
            && let Some(p) = on().find_map(|(i, n)| fit_on(n, pod, true).map(|gpus| Placement { node: i, gpus }))
        {
            return Some(p);
        }
        on().find_map(|(i, n)| fit_on(n, pod, false).map(|gpus| Placement { node: i, gpus }))
    }

    pub fn place(&mut self, pod_id: usize, pod: &Pod, at: &Placement) {
        let node = &mut self.nodes[at.node];
        for &g in &at.gpus {
            if node.gpu_used[g as usize] == 0 {
                self.gpus_in_use += 1;
            }
            node.gpu_used[g as usize] += pod.gpu_milli;
        }
        node.cpu_free -= pod.cpu_milli as i64;
        node.mem_free -= pod.memory_mib as i64;
        node.pods.push(pod_id);
        node.generation += 1;
        self.alloc_milli += pod.gpu_share_milli();
        if !pod.high_priority {
            self.low_alloc_milli += pod.gpu_share_milli();
        }
    }

    /// Takes `pod` off its node; marks the node idle from `now` when it empties.
    pub fn remove(&mut self, pod_id: usize, pod: &Pod, at: &Placement, now: i64) {
        let node = &mut self.nodes[at.node];
        for &g in &at.gpus {
            node.gpu_used[g as usize] -= pod.gpu_milli;
            if node.gpu_used[g as usize] == 0 {
                self.gpus_in_use -= 1;
            }
        }
        node.cpu_free += pod.cpu_milli as i64;
        node.mem_free += pod.memory_mib as i64;
        node.pods.retain(|&p| p != pod_id);
        node.generation += 1;
        if node.pods.is_empty() {
            node.idle_since = now;
        }
        self.alloc_milli -= pod.gpu_share_milli();
        if !pod.high_priority {
            self.low_alloc_milli -= pod.gpu_share_milli();
        }
    }

    pub fn start(&mut self, node: usize, ready_at: i64) {
        let n = &mut self.nodes[node];
        debug_assert_eq!(n.power, Power::Off);
        n.power = Power::Starting { ready_at };
        n.generation += 1;
        self.powered_gpus += u64::from(n.spec.gpus);
    }

    /// A node on at once (the static policy's cluster at the start).
    pub fn switch_on(&mut self, node: usize, now: i64) {
        if self.nodes[node].power == Power::Off {
            self.start(node, now);
        }
        self.ready(node, now);
    }

    pub fn ready(&mut self, node: usize, now: i64) {
        let n = &mut self.nodes[node];
        debug_assert!(matches!(n.power, Power::Starting { .. }));
        n.power = Power::On;
        n.generation += 1;
        n.idle_since = now;
        self.ready_gpus += u64::from(n.spec.gpus);
    }

    /// Powers off an empty node, on or starting.
    pub fn power_off(&mut self, node: usize) {
        let n = &mut self.nodes[node];
        debug_assert!(n.pods.is_empty());
        if n.power == Power::On {
            self.ready_gpus -= u64::from(n.spec.gpus);
        }
        if n.power != Power::Off {
            self.powered_gpus -= u64::from(n.spec.gpus);
        }
        n.power = Power::Off;
        n.generation += 1;
    }
}

/// Whether `pod` fits on `node` by model, CPU, memory and GPUs; the GPUs it would take.
pub fn fit_on(node: &Node, pod: &Pod, shared_only: bool) -> Option<Vec<u8>> {
    if !pod.gpu_spec.is_empty() && !pod.gpu_spec.contains(&node.spec.model) {
        return None;
    }
    if node.cpu_free < pod.cpu_milli as i64 || node.mem_free < pod.memory_mib as i64 {
        return None;
    }
    if pod.is_shared() {
        // Best fit among shared GPUs keeps whole GPUs free for whole-GPU pods.
        let shared = (0..node.gpu_used.len())
            .filter(|&g| node.gpu_used[g] > 0 && node.gpu_used[g] + pod.gpu_milli <= 1000)
            .max_by_key(|&g| (node.gpu_used[g], std::cmp::Reverse(g)));
        if let Some(g) = shared {
            return Some(vec![g as u8]);
        }
        if shared_only {
            return None;
        }
    }
    let free: Vec<u8> = (0..node.gpu_used.len())
        .filter(|&g| node.gpu_used[g] == 0)
        .take(pod.num_gpu as usize)
        .map(|g| g as u8)
        .collect();
    (free.len() == pod.num_gpu as usize).then_some(free)
}

/// Whether `pod` could run on a node of `spec` alone.
pub fn fits_empty(spec: &NodeSpec, pod: &Pod) -> bool {
    (pod.gpu_spec.is_empty() || pod.gpu_spec.contains(&spec.model))
        && spec.cpu_milli >= pod.cpu_milli
        && spec.memory_mib >= pod.memory_mib
        && spec.gpus >= pod.num_gpu
}
