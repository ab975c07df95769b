//! `Muter`: what inhibition and silences share — whether an alert's labels are muted at a time, and
//! by what.

use crate::suppressed::Reason;
use crate::time::Timestamp;
use argus_model::Labels;

pub trait Muter: Send + Sync {
    /// What mutes an alert with these labels at `now`, and until when that is known to last; None
    /// when nothing does.
    fn muted_by(&self, labels: &Labels, now: Timestamp) -> Option<(Reason, Option<Timestamp>)>;

    /// Whether an alert with these labels is muted at `now`.
    fn mutes(&self, labels: &Labels, now: Timestamp) -> bool {
        self.muted_by(labels, now).is_some()
    }
}
