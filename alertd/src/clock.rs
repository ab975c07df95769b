//! Clocks. The engine takes times as arguments; these say where the times come from: tokio's clock
//! (which tests pause and advance), or a virtual clock that replay moves by hand.

use crate::time::Timestamp;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// Wall-clock time anchored once, then advanced by tokio's monotonic clock — so with tokio's time
/// paused, `now` moves only when the test advances it.
#[derive(Debug, Clone)]
pub struct TokioClock {
    base: Timestamp,
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `base` now.
    pub fn starting_at(base: Timestamp) -> Self {
        TokioClock { base, start: tokio::time::Instant::now() }
    }

    /// The tokio instant at which this clock reads `t` (now, when `t` is past).
    pub fn instant_at(&self, t: Timestamp) -> tokio::time::Instant {
        self.start + Duration::from_millis(t.0.saturating_sub(self.base.0).max(0) as u64)
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        self.base + self.start.elapsed()
    }
}

/// A clock that reads whatever it was last set to.
#[derive(Debug, Default)]
pub struct VirtualClock(AtomicI64);

impl VirtualClock {
    pub fn new(t: Timestamp) -> Self {
        VirtualClock(AtomicI64::new(t.0))
    }

    pub fn set(&self, t: Timestamp) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}
