//! `Muter`: what inhibition and silences share — a yes/no on an alert's labels at a time.

use crate::time::Timestamp;
use argus_model::Labels;

pub trait Muter: Send + Sync {
    /// Whether an alert with these labels is muted at `now`.
    fn mutes(&self, labels: &Labels, now: Timestamp) -> bool;
}
