//! The memory all queries of one process share (`[store] max_query_memory`).
//!
//! `max_query_samples` bounds one query; this bounds the sum over the queries running at once, so
//! that three people opening a heavy dashboard together cannot take the server (and the alerting
//! that runs in it) down. Each query takes a [`Reservation`] that grows by an estimate of the
//! samples and points it holds as it reads and evaluates (see [`SAMPLE_BYTES`], [`SERIES_BYTES`]) and
//! gives everything back when it is dropped: when the query answers, fails or panics. The HTTP API
//! keeps it until the answer is written, giving back each series' share as the series is written
//! and let go (`http/envelope.rs`), so a result counts for as long as it is in memory. A query that
//! would push the total past the budget fails at once (HTTP 422, `execution`), never with a partial
//! answer; it does not wait, since it would wait holding what it has already reserved, and two
//! queries each waiting for the other's share would wait until their timeouts.
//!
//! Rule evaluation keeps a share of its own ([`RULES_SHARE`]): other queries may hold at most the
//! rest, so a dashboard storm cannot make alerting rules fail.

use super::QueryError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Estimated bytes of one sample or point a query holds: a `Sample` (time and value) or a step's
/// `Option<f64>`, 16 bytes each.
pub const SAMPLE_BYTES: u64 = 16;
/// Estimated bytes of one series a query holds besides its points: the `Arc` of its labels and the
/// vector's header in the result, and the labels' own allocation where the series was read from a
/// block (a head series shares the head's): a 32-byte row, an `Arc` header and a two-label vector
/// of 96 bytes, and the labels' strings in jemalloc's smallest size classes, about 200.
pub const SERIES_BYTES: u64 = 200;
/// The share of the budget kept for rule evaluation: other queries together may hold at most the
/// rest, rules the whole budget.
pub const RULES_SHARE: f64 = 0.25;

/// Who runs a query: the budget keeps a share for rules and counts refusals by caller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Caller {
    /// The HTTP API (`/api/v1/query`, `/api/v1/query_range`).
    #[default]
    Http,
    /// Recording and alerting rules.
    Rules,
    /// Other parts of the process reading through the embedded backend (the analyzer, forecasts).
    Internal,
}

impl Caller {
    fn label(self) -> &'static str {
        match self {
            Caller::Http => "http",
            Caller::Rules => "rules",
            Caller::Internal => "internal",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallerLabel {
    caller: &'static str,
}

/// The budget shared by every query of the process.
pub struct MemoryBudget {
    limit: u64,
    /// Bytes only rule evaluation may use.
    rules_reserve: u64,
    /// Bytes reserved now, by all queries (`argus_query_memory_bytes`).
    in_use: Gauge<u64, AtomicU64>,
    limit_gauge: Gauge<u64, AtomicU64>,
    /// Queries running under the budget now.
    queries: AtomicUsize,
    refusals: Family<CallerLabel, Counter>,
}

impl fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBudget").field("limit", &self.limit).field("in_use", &self.in_use()).finish()
    }
}

// === impl MemoryBudget ===

impl MemoryBudget {
    /// A budget of `limit` bytes, [`RULES_SHARE`] of it kept for rules.
    pub fn new(limit: u64) -> Arc<MemoryBudget> {
        let b = MemoryBudget {
            limit,
            rules_reserve: (limit as f64 * RULES_SHARE) as u64,
            in_use: Gauge::default(),
            limit_gauge: Gauge::default(),
            queries: AtomicUsize::new(0),
            refusals: Family::default(),
        };
        b.limit_gauge.set(limit);
        for c in [Caller::Http, Caller::Rules, Caller::Internal] {
            let _ = b.refusals.get_or_create(&CallerLabel { caller: c.label() });
        }
        Arc::new(b)
    }

    /// `argus_query_memory_bytes`, `argus_query_memory_limit_bytes` and
    /// `argus_query_memory_refusals_total` (docs/metrics.md).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "argus_query_memory_bytes",
            "Estimated bytes held by the queries running now, against max_query_memory",
            self.in_use.clone(),
        );
        registry.register(
            "argus_query_memory_limit_bytes",
            "The memory all queries running at once may hold (max_query_memory)",
            self.limit_gauge.clone(),
        );
        registry.register(
            "argus_query_memory_refusals",
            "Queries refused because they would have passed max_query_memory, by caller",
            self.refusals.clone(),
        );
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes held by the queries running now.
    pub fn in_use(&self) -> u64 {
        self.in_use.get()
    }

    /// Queries refused so far for `caller`.
    pub fn refusals(&self, caller: Caller) -> u64 {
        self.refusals.get_or_create(&CallerLabel { caller: caller.label() }).get()
    }

    /// The most all queries together may hold when one of `caller`'s asks.
    fn ceiling(&self, caller: Caller) -> u64 {
        match caller {
            Caller::Rules => self.limit,
            Caller::Http | Caller::Internal => self.limit - self.rules_reserve,
        }
    }

    /// Takes `n` more bytes for a query that holds `held`, or says why not.
    fn take(&self, caller: Caller, held: u64, n: u64) -> Result<(), QueryError> {
        let ceiling = self.ceiling(caller);
        let got = self.in_use.inner().fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            used.checked_add(n).filter(|&total| total <= ceiling)
        });
        match got {
            Ok(_) => Ok(()),
            Err(used) => {
                let others = self.queries.load(Ordering::Relaxed).saturating_sub(1);
                let kept = match caller {
                    Caller::Rules => String::new(),
                    Caller::Http | Caller::Internal => {
                        format!(", {} kept for rule evaluation", Size(self.rules_reserve))
                    }
                };
                Err(QueryError::Execution(format!(
                    "query needs {} of the {} shared query memory (max_query_memory); {} in use by {others} other {}{kept}",
                    Size(held + n),
                    Size(self.limit),
                    Size(used.saturating_sub(held)),
                    if others == 1 { "query" } else { "queries" },
                )))
            }
        }
    }

    fn give_back(&self, n: u64) {
        self.in_use.inner().fetch_sub(n, Ordering::AcqRel);
    }

    fn count_refusal(&self, caller: Caller) {
        self.refusals.get_or_create(&CallerLabel { caller: caller.label() }).inc();
    }
}

/// A query's access to the shared budget: none (no `max_query_memory`), or the budget and who asks.
#[derive(Debug, Clone, Default)]
pub struct QueryMemory {
    budget: Option<Arc<MemoryBudget>>,
    caller: Caller,
}

// === impl QueryMemory ===

impl QueryMemory {
    pub fn new(budget: Arc<MemoryBudget>, caller: Caller) -> QueryMemory {
        QueryMemory { budget: Some(budget), caller }
    }

    /// The same budget, for queries of another caller.
    pub fn for_caller(&self, caller: Caller) -> QueryMemory {
        QueryMemory { budget: self.budget.clone(), caller }
    }

    pub fn budget(&self) -> Option<&Arc<MemoryBudget>> {
        self.budget.as_ref()
    }

    /// A new query's reservation, empty; what it takes is given back when it is dropped.
    pub fn reserve(&self) -> Reservation {
        if let Some(b) = &self.budget {
            b.queries.fetch_add(1, Ordering::Relaxed);
        }
        Reservation {
            memory: self.clone(),
            held: AtomicU64::new(0),
            output: AtomicU64::new(0),
            refused: AtomicBool::new(false),
        }
    }
}

/// The bytes one query holds of the shared budget; all given back on drop (an answer, an error, a
/// panic). Shared by the threads of the query's reads.
#[derive(Debug)]
pub struct Reservation {
    memory: QueryMemory,
    held: AtomicU64,
    /// Bytes the node being evaluated reserved for its own result as it went (see
    /// [`Reservation::settle`]).
    output: AtomicU64,
    /// Whether the budget has refused this query already: a large read grows the reservation from
    /// several threads at once, and each may be refused before the first error stops the others,
    /// but the query is one refusal (`argus_query_memory_refusals_total`).
    refused: AtomicBool,
}

// === impl Reservation ===

impl Reservation {
    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Acquire)
    }

    /// Takes `n` more bytes, or fails naming the budget, the query's need and the others' use.
    pub fn grow(&self, n: u64) -> Result<(), QueryError> {
        if n == 0 {
            return Ok(());
        }
        if let Some(b) = &self.memory.budget
            && let Err(e) = b.take(self.memory.caller, self.held(), n)
        {
            if !self.refused.swap(true, Ordering::AcqRel) {
                b.count_refusal(self.memory.caller);
            }
            return Err(e);
        }
        self.held.fetch_add(n, Ordering::AcqRel);
        Ok(())
    }

    /// Gives back `n` bytes (no more than held).
    pub fn shrink(&self, n: u64) {
        let n = match self.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| Some(h - h.min(n))) {
            Ok(h) => h.min(n),
            Err(_) => 0,
        };
        if let Some(b) = &self.memory.budget {
            b.give_back(n);
        }
    }

    /// [`Reservation::grow`] for bytes of the current node's own result, reserved as it is built.
    pub fn grow_output(&self, n: u64) -> Result<(), QueryError> {
        self.grow(n)?;
        self.output.fetch_add(n, Ordering::AcqRel);
        Ok(())
    }

    /// [`Reservation::shrink`] for bytes [`Reservation::grow_output`] took (a window of series folded
    /// and let go).
    pub fn shrink_output(&self, n: u64) {
        self.shrink(n);
        let _ = self.output.fetch_update(Ordering::AcqRel, Ordering::Acquire, |o| Some(o - o.min(n)));
    }

    /// Starts a node: its own output count from zero; the parent's, to hand back to [`Reservation::settle`].
    pub fn begin(&self) -> (u64, u64) {
        (self.held(), self.output.swap(0, Ordering::AcqRel))
    }

    /// Ends a node whose result is `size` bytes, given what [`Reservation::begin`] returned: its
    /// operands and result lived together for a moment, so the part of the result not yet reserved
    /// is taken on top of everything held; then the operands, consumed, are given back, and the node
    /// holds `size` above what was held before it began.
    pub fn settle(&self, (before, parent_output): (u64, u64), size: u64) -> Result<(), QueryError> {
        let own = self.output.swap(parent_output, Ordering::AcqRel);
        self.grow(size.saturating_sub(own))?;
        let target = before + size;
        let held = self.held();
        if held > target {
            self.shrink(held - target);
        } else {
            self.grow(target - held)?;
        }
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(b) = &self.memory.budget {
            b.give_back(*self.held.get_mut());
            b.queries.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Bytes as an operator reads them: `312 MiB`, `1 GiB`, `1.5 KiB`, `12 B`.
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
        for (unit, size) in UNITS {
            if self.0 >= size {
                let x = self.0 as f64 / size as f64;
                return if x >= 100.0 || (x * 10.0).round() % 10.0 == 0.0 {
                    write!(f, "{} {unit}", x.round())
                } else {
                    write!(f, "{x:.1} {unit}")
                };
            }
        }
        write!(f, "{} B", self.0)
    }
}

#[cfg(test)]
mod tests;
