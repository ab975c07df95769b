//! Runs an engine on tokio time: alerts arrive on a channel (`run`), or the engine is shared with
//! the API (`Shared`, `run_shared`), which posts and reads under its lock. Group timers are tokio
//! sleeps either way.

use crate::alert::PostableAlert;
use crate::clock::{Clock, TokioClock};
use crate::engine::Engine;
use crate::time::Timestamp;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, mpsc};

/// Drives `engine` until the sender side of `alerts` is dropped.
pub async fn run(mut engine: Engine, clock: TokioClock, mut alerts: mpsc::Receiver<Vec<PostableAlert>>) {
    loop {
        let deadline = engine.next_deadline().map(|t| clock.instant_at(t));
        tokio::select! {
            batch = alerts.recv() => {
                let Some(batch) = batch else { break };
                let now = clock.now();
                engine.advance(now);
                if let Err(error) = engine.post(now, batch) {
                    tracing::warn!(%error, "Alerts refused");
                }
                engine.advance(now);
            }
            _ = sleep_until(deadline), if deadline.is_some() => {
                engine.advance(clock.now());
            }
        }
    }
}

/// An engine shared between its timer loop (`run_shared`) and the API. Whoever changes the engine
/// under the lock calls `changed`, so the timer loop picks up an earlier deadline.
#[derive(Clone)]
pub struct Shared {
    engine: Arc<Mutex<Engine>>,
    wake: Arc<Notify>,
    pub clock: TokioClock,
}

impl Shared {
    pub fn new(engine: Engine, clock: TokioClock) -> Shared {
        Shared { engine: Arc::new(Mutex::new(engine)), wake: Arc::new(Notify::new()), clock }
    }

    /// The engine. Hold the guard briefly and never across an await.
    pub fn lock(&self) -> MutexGuard<'_, Engine> {
        // A panic while holding the lock leaves the engine as consistent as any single call does.
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Tells the timer loop that the engine's deadlines may have moved.
    pub fn changed(&self) {
        self.wake.notify_one();
    }
}

/// Fires the shared engine's group timers on time, forever (abort the task to stop it).
pub async fn run_shared(shared: Shared) {
    loop {
        let deadline = shared.lock().next_deadline().map(|t| shared.clock.instant_at(t));
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = sleep_until(deadline), if deadline.is_some() => {
                let now = shared.now();
                shared.lock().advance(now);
            }
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
