//! alertd replicas as a cluster, as Alertmanager's: every replica receives every alert and runs the
//! whole pipeline; silences and the notification log are shared by gossip; a replica waits its
//! position times `peer_timeout` before notifying, so the first live replica notifies and the
//! others find its notification in the shared log. When it dies the next one notifies, with the
//! same idempotency key (the key is derived from the shared log). Under a partition each side
//! notifies — at least once beats silence — and the logs merge when it heals.
//!
//! Membership, failure detection and state transport are chitchat's (Quickwit's maintained
//! scuttlebutt gossip, MIT): a phi-accrual failure detector, anti-entropy that brings a new or
//! returning replica the whole state (a partition heals by itself, since every round gossips with
//! live, dead and seed nodes), seeds re-resolved by DNS every minute (a Kubernetes headless
//! service), and a pluggable transport, which `transport` seals with the shared secret. foca was
//! the other candidate: its SWIM membership is as good, but it carries no state, and shipping
//! silences and logs to a joining replica would have been ours to build. chitchat is pinned at
//! 0.11: later releases made message encoding crate-private, which a sealing transport needs.

pub mod state;
pub mod transport;

use crate::deliver::now_millis;
use crate::engine::NFLOG_RETENTION;
use crate::runner::Shared;
use crate::time::Timestamp;
use chitchat::{Chitchat, ChitchatConfig, ChitchatHandle, ChitchatId, DeletionStatus, FailureDetectorConfig};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use state::{Item, Outgoing, ReplicatedLog, ReplicatedSilences};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `[alertd.cluster]`, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// This replica's name in the cluster; default its advertised address. Positions follow names.
    pub name: String,
    /// Name of the cluster: replicas of other clusters are not gossiped with.
    pub cluster: String,
    pub listen: SocketAddr,
    /// The address peers reach this replica at; default `listen`.
    pub advertise: SocketAddr,
    /// Static addresses and DNS names (`host:port`), re-resolved every minute.
    pub peers: Vec<String>,
    /// How long each replica waits per position before notifying.
    pub peer_timeout: Duration,
    /// The longest a starting replica waits to merge its peers' state before answering ready.
    pub settle_timeout: Duration,
    pub gossip_interval: Duration,
    /// Encrypts and authenticates cluster traffic.
    pub secret: String,
}

impl Settings {
    pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(15);
    pub const DEFAULT_SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_GOSSIP_INTERVAL: Duration = Duration::from_millis(200);
    pub const DEFAULT_CLUSTER: &'static str = "argus-alertd";
}

/// Rounds a starting replica's view must hold still (same peers, nothing new from them) before it
/// counts as merged.
const SETTLED_ROUNDS: u32 = 3;
/// How often keys of items past their retention are deleted from this replica's gossip state.
const GC_EVERY: Duration = Duration::from_secs(60);

/// Whether a replica is ready, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Readiness {
    /// Still merging its peers' state.
    Settling,
    /// Merged the state of every peer it reached.
    Merged { peers: usize },
    /// `settle_timeout` passed first.
    TimedOut { peers: usize },
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        !matches!(self, Readiness::Settling)
    }

    /// What `/-/ready` says.
    pub fn describe(&self) -> String {
        match self {
            Readiness::Settling => "alertd cluster: settling, merging the peers' state".into(),
            Readiness::Merged { peers } => format!("alertd cluster: merged the state of {peers} peer(s)"),
            Readiness::TimedOut { peers } => {
                format!("alertd cluster: settle timeout passed with {peers} peer(s) reached")
            }
        }
    }
}

/// One member, as the status API shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Peer {
    pub name: String,
    pub address: String,
}

/// What the API and the status page read about the cluster.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub cluster: String,
    pub name: String,
    pub readiness: Readiness,
    /// Live members other than this one, by name.
    pub peers: Vec<Peer>,
    pub position: usize,
}

/// The cluster as this replica sees it, shared with the API.
#[derive(Clone)]
pub struct View(Arc<Mutex<Snapshot>>);

impl View {
    pub fn snapshot(&self) -> Snapshot {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn update(&self, f: impl FnOnce(&mut Snapshot)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: String,
}

/// The cluster's self metrics (docs/metrics.md).
#[derive(Clone, Default)]
struct Metrics {
    members: Gauge,
    position: Gauge,
    ready: Gauge,
    merges: Family<Kind, Counter>,
    merge_errors: Counter,
    failovers: Counter,
    transport: transport::Counters,
}

impl Metrics {
    fn register(&self, r: &mut Registry) {
        let r = r.sub_registry_with_prefix("argus_alertd_cluster");
        r.register("members", "Live replicas in the cluster, this one included", self.members.clone());
        r.register(
            "position",
            "This replica's position: it notifies after position × peer_timeout",
            self.position.clone(),
        );
        r.register(
            "ready",
            "1 once this replica merged its peers' state (or the settle timeout passed)",
            self.ready.clone(),
        );
        r.register("merges", "Peer items that changed this replica's state, by kind", self.merges.clone());
        r.register("merge_errors", "Peer items this replica could not read or store", self.merge_errors.clone());
        r.register("failovers", "Times this replica moved up because a replica before it left", self.failovers.clone());
        r.register("messages_sent", "Gossip datagrams sent", self.transport.sent.clone());
        r.register("messages_received", "Gossip datagrams received and opened", self.transport.received.clone());
        r.register(
            "messages_rejected",
            "Gossip datagrams dropped: not sealed with this cluster's secret, or unreadable",
            self.transport.rejected.clone(),
        );
        for kind in ["silence", "nflog", "incident", "backoff", "flap"] {
            let _ = self.merges.get_or_create(&Kind { kind: kind.into() });
        }
    }
}

/// The replicated parts of a replica's state.
pub struct Replicated {
    pub silences: Arc<ReplicatedSilences>,
    pub log: Arc<ReplicatedLog>,
    pub outgoing: Outgoing,
}

/// A running cluster member. Dropping it leaves the cluster.
pub struct Cluster {
    handle: ChitchatHandle,
    task: tokio::task::JoinHandle<()>,
    view: View,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.task.abort();
        self.handle.abort();
    }
}

impl Cluster {
    pub fn view(&self) -> View {
        self.view.clone()
    }

    /// Joins the cluster: publishes this replica's state, gossips with `peers`, merges theirs into
    /// `parts` and keeps `engine`'s position wait current.
    pub async fn start(
        s: &Settings,
        parts: Replicated,
        engine: Shared,
        registry: &mut Registry,
    ) -> anyhow::Result<Cluster> {
        let metrics = Metrics::default();
        metrics.register(registry);
        let sealed = transport::SealedUdp::new(&s.secret, metrics.transport.clone());
        Self::start_on(s, parts, engine, metrics, &sealed).await
    }

    async fn start_on(
        s: &Settings,
        parts: Replicated,
        engine: Shared,
        metrics: Metrics,
        transport: &dyn chitchat::transport::Transport,
    ) -> anyhow::Result<Cluster> {
        // A restarted replica is a new generation of the same name.
        let generation = now_millis() as u64;
        let config = ChitchatConfig {
            chitchat_id: ChitchatId::new(s.name.clone(), generation, s.advertise),
            cluster_id: s.cluster.clone(),
            gossip_interval: s.gossip_interval,
            listen_addr: s.listen,
            seed_nodes: s.peers.clone(),
            failure_detector_config: FailureDetectorConfig {
                // A replica silent for about `peer_timeout` is dead; its state stays readable for the
                // notification log's retention.
                initial_interval: s.gossip_interval * 5,
                max_interval: s.peer_timeout,
                dead_node_grace_period: NFLOG_RETENTION,
                ..FailureDetectorConfig::default()
            },
            marked_for_deletion_grace_period: NFLOG_RETENTION,
            catchup_callback: None,
            extra_liveness_predicate: None,
        };
        // Everything this replica held before it started (its own SQLite copy) is published at once.
        let mut initial: Vec<(String, String)> = parts.silences.items().iter().flat_map(state::encode).collect();
        initial.extend(parts.log.items().iter().flat_map(state::encode));
        initial.extend(parts.outgoing.take().iter().flat_map(state::encode));
        let handle = chitchat::spawn_chitchat(config, initial, transport).await?;
        let view = View(Arc::new(Mutex::new(Snapshot {
            cluster: s.cluster.clone(),
            name: s.name.clone(),
            readiness: Readiness::Settling,
            peers: Vec::new(),
            position: 0,
        })));
        let mut round = Round {
            settings: s.clone(),
            parts,
            engine,
            metrics,
            view: view.clone(),
            seen: HashMap::new(),
            started: Instant::now(),
            stable: 0,
            last_view: Vec::new(),
            last_gc: Instant::now(),
            position: None,
        };
        let chitchat = handle.chitchat();
        let every = s.gossip_interval;
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                round.run(&chitchat).await;
            }
        });
        tracing::info!(name = %s.name, listen = %s.listen, peers = ?s.peers, "alertd joined its cluster");
        Ok(Cluster { handle, task, view })
    }
}

/// One merge round's state.
struct Round {
    settings: Settings,
    parts: Replicated,
    engine: Shared,
    metrics: Metrics,
    view: View,
    /// Per peer generation, the highest version merged.
    seen: HashMap<ChitchatId, u64>,
    started: Instant,
    /// Rounds the view has held still.
    stable: u32,
    last_view: Vec<(ChitchatId, u64)>,
    last_gc: Instant,
    position: Option<usize>,
}

impl Round {
    async fn run(&mut self, chitchat: &tokio::sync::Mutex<Chitchat>) {
        // Under the gossip lock: publish local changes, take what peers published since last time.
        let (incoming, live, heard) = {
            let mut cc = chitchat.lock().await;
            let me = cc.self_chitchat_id().clone();
            for item in self.parts.outgoing.take() {
                publish(&mut cc, &item);
            }
            if self.last_gc.elapsed() >= GC_EVERY {
                self.last_gc = Instant::now();
                self.gc(&mut cc);
            }
            let mut incoming = Vec::new();
            let mut heard = Vec::new();
            for (id, node) in cc.node_states() {
                if *id == me {
                    continue;
                }
                let mut seen = self.seen.get(id).copied().unwrap_or(0);
                if node.max_version() < seen {
                    // The peer's state was reset (gossip garbage-collected it): read all of it again.
                    seen = 0;
                }
                let mut next_seen = node.max_version();
                for (key, v) in node.key_values_including_deleted() {
                    if v.version > seen && matches!(v.status, DeletionStatus::Set) && !state::is_part(key) {
                        // A large log entry is read with its parts, from the same member.
                        let decoded = state::decode(key, &v.value, |p| node.get(p).map(str::to_string));
                        if matches!(decoded, Ok(None)) && key.starts_with(state::NFLOG_PREFIX) {
                            // Its parts have not all arrived: read it again next round.
                            next_seen = next_seen.min(v.version - 1);
                        }
                        incoming.push(decoded);
                    }
                }
                self.seen.insert(id.clone(), next_seen);
                heard.push((id.clone(), node.max_version()));
            }
            let live: Vec<ChitchatId> = cc.live_nodes().cloned().collect();
            (incoming, live, heard)
        };
        let republish = self.merge(incoming);
        if !republish.is_empty() {
            let mut cc = chitchat.lock().await;
            for item in republish {
                publish(&mut cc, &item);
            }
        }
        self.place(live, heard);
    }

    /// Merges peers' items; returns those that changed this replica's state, to publish as its own.
    fn merge(&mut self, incoming: Vec<Result<Option<Item>, String>>) -> Vec<Item> {
        let mut changed = Vec::new();
        let mut engine_changed = false;
        for decoded in incoming {
            let item = match decoded {
                Ok(Some(item)) => item,
                Ok(None) => continue,
                Err(error) => {
                    self.metrics.merge_errors.inc();
                    tracing::warn!(%error, "Cluster item not merged");
                    continue;
                }
            };
            let applied = match &item {
                Item::Silence(s) => match self.parts.silences.merge(s.clone()) {
                    Ok(applied) => applied,
                    Err(error) => {
                        self.metrics.merge_errors.inc();
                        tracing::error!(silence = %s.id, %error, "Peer silence not stored");
                        false
                    }
                },
                Item::Log { group_key, recipient, entry, pending } => {
                    self.parts.log.merge(group_key, recipient, entry.clone(), pending.clone())
                }
                Item::Memory(m) => {
                    // The engine remembers (and so publishes) the merged state itself.
                    let applied = self.engine.lock().merge_memory(m, Timestamp(now_millis()));
                    engine_changed |= applied;
                    if applied {
                        self.metrics.merges.get_or_create(&Kind { kind: item.kind().into() }).inc();
                    }
                    continue;
                }
            };
            if applied {
                self.metrics.merges.get_or_create(&Kind { kind: item.kind().into() }).inc();
                changed.push(item);
            }
        }
        if engine_changed {
            // Escalation timers may have moved.
            self.engine.changed();
        }
        changed
    }

    /// Deletes this replica's keys of items past their retention.
    fn gc(&self, cc: &mut Chitchat) {
        let now = Timestamp(now_millis());
        let node = cc.self_node_state();
        let expires_at = |k: &str, v: &str| match state::is_part(k) {
            true => state::part_expires_at(v),
            false => state::decode(k, v, |p| node.get(p).map(str::to_string)).ok().flatten().map(|i| i.expires_at()),
        };
        let old: Vec<String> = node
            .key_values()
            .filter(|(k, v)| expires_at(k, v).is_some_and(|t| t < now))
            .map(|(k, _)| k.to_string())
            .collect();
        for k in old {
            cc.self_node_state().delete(&k);
        }
    }

    /// Updates position, readiness and the view from the live members.
    fn place(&mut self, live: Vec<ChitchatId>, mut heard: Vec<(ChitchatId, u64)>) {
        // One entry per name: a restarted replica's newest generation.
        let mut by_name: BTreeMap<String, ChitchatId> = BTreeMap::new();
        for id in live {
            let keep = by_name.get(&*id.node_id).is_none_or(|k| k.generation_id < id.generation_id);
            if keep {
                by_name.insert(id.node_id.to_string(), id);
            }
        }
        let position = by_name.keys().position(|n| *n == self.settings.name).unwrap_or(0);
        self.parts.log.set_live(by_name.keys().cloned());
        let peers: Vec<Peer> = by_name
            .values()
            .filter(|id| *id.node_id != *self.settings.name)
            .map(|id| Peer { name: id.node_id.to_string(), address: id.gossip_advertise_addr.to_string() })
            .collect();
        if self.position != Some(position) {
            if self.position.is_some_and(|p| position < p) {
                self.metrics.failovers.inc();
                tracing::info!(position, "A replica before this one left: it notifies sooner now");
            }
            self.position = Some(position);
            let wait = self.settings.peer_timeout * position as u32;
            self.engine.lock().set_peer_wait(wait);
            self.engine.changed();
        }
        heard.retain(|(id, _)| by_name.get(&*id.node_id) == Some(id));
        heard.sort();
        if heard == self.last_view {
            self.stable = self.stable.saturating_add(1);
        } else {
            self.stable = 0;
            self.last_view = heard;
        }
        let was = self.view.snapshot().readiness;
        let readiness = if was.is_ready() {
            was.clone()
        } else if self.settings.peers.is_empty() {
            Readiness::Merged { peers: 0 }
        } else if !peers.is_empty() && self.stable >= SETTLED_ROUNDS {
            Readiness::Merged { peers: peers.len() }
        } else if self.started.elapsed() >= self.settings.settle_timeout {
            Readiness::TimedOut { peers: peers.len() }
        } else {
            Readiness::Settling
        };
        if readiness.is_ready() && !was.is_ready() {
            tracing::info!("{}", readiness.describe());
            // Alerts received while settling join the incidents just merged.
            let held = self.engine.lock().release_intake(Timestamp(now_millis()));
            self.engine.changed();
            if held > 0 {
                tracing::info!(alerts = held, "Alerts received while settling are taken in");
            }
        }
        self.metrics.members.set(by_name.len() as i64);
        self.metrics.position.set(position as i64);
        self.metrics.ready.set(i64::from(readiness.is_ready()));
        self.view.update(|v| {
            v.readiness = readiness;
            v.peers = peers;
            v.position = position;
        });
    }
}

/// Writes `item` into this replica's gossip state, and deletes the parts of a larger earlier version
/// of a log entry that this one no longer has.
fn publish(cc: &mut Chitchat, item: &Item) {
    let kvs = state::encode(item);
    let node = cc.self_node_state();
    if let (Item::Log { .. }, Some((key, _))) = (item, kvs.last()) {
        let parts = kvs.len() - 1;
        let prefix = &state::parts_prefix(key);
        let stale: Vec<String> = node
            .iter_prefix(prefix)
            .filter(|(k, _)| k[prefix.len()..].parse::<usize>().is_ok_and(|i| i >= parts))
            .map(|(k, _)| k.to_string())
            .collect();
        for k in stale {
            node.delete(&k);
        }
    }
    for (k, v) in kvs {
        if k.len() + v.len() > MAX_VALUE_BYTES {
            // It could never be gossiped, and would hold back every later change of this replica.
            tracing::error!(key = %k.chars().take(80).collect::<String>(), bytes = v.len(), "Cluster item too large to share; kept on this replica only");
            continue;
        }
        node.set(k, v);
    }
}

/// The largest key-value a replica shares: one must fit a gossip datagram with room to spare.
const MAX_VALUE_BYTES: usize = 56 * 1024;

#[cfg(test)]
mod tests;
