//! Runs an engine on tokio time: alerts arrive on a channel, group timers are tokio sleeps.

use crate::alert::PostableAlert;
use crate::clock::{Clock, TokioClock};
use crate::engine::Engine;
use tokio::sync::mpsc;

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

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
