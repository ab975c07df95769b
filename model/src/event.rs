//! Events: the text of a string field (an Xid message, an OOM, an NCCL error) kept beside the series.

use crate::Labels;

/// A string-valued observation. `labels` carries `__name__` = `{measurement}_{field}` and the tags,
/// exactly as a numeric field of the same line would.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub labels: Labels,
    /// Milliseconds since the Unix epoch.
    pub t: i64,
    pub text: String,
}

impl Event {
    /// The order events are kept and answered in: by time, then series, then text, so that rewrites of
    /// one event sit next to each other and `dedup` removes them.
    pub fn cmp_by_time(&self, other: &Event) -> std::cmp::Ordering {
        self.t.cmp(&other.t).then_with(|| self.labels.cmp(&other.labels)).then_with(|| self.text.cmp(&other.text))
    }
}
