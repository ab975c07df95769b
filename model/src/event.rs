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
