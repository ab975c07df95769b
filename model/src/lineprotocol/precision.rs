//! Timestamp precisions and their conversion to and from the store's milliseconds.

use super::Precision;

const MS_PER_S: i64 = 1_000;
const MS_PER_M: i64 = 60_000;
const MS_PER_H: i64 = 3_600_000;

impl Precision {
    /// The `precision` query parameter of the v2 write API (`/api/v2/write`).
    pub fn parse_v2(s: &str) -> Result<Precision, String> {
        match s {
            "ns" => Ok(Precision::Nanoseconds),
            "us" => Ok(Precision::Microseconds),
            "ms" => Ok(Precision::Milliseconds),
            "s" => Ok(Precision::Seconds),
            _ => Err(format!("invalid precision {s:?}, want one of ns, us, ms, s")),
        }
    }

    /// The `precision` query parameter of the v1 write API (`/write`), which also takes the v2 spellings
    /// of nanoseconds and microseconds.
    pub fn parse_v1(s: &str) -> Result<Precision, String> {
        match s {
            "n" | "ns" => Ok(Precision::Nanoseconds),
            "u" | "us" => Ok(Precision::Microseconds),
            "ms" => Ok(Precision::Milliseconds),
            "s" => Ok(Precision::Seconds),
            "m" => Ok(Precision::Minutes),
            "h" => Ok(Precision::Hours),
            _ => Err(format!("invalid precision {s:?}, want one of n, ns, u, us, ms, s, m, h")),
        }
    }

    /// Converts a timestamp written in this precision to milliseconds. Finer precisions round toward
    /// negative infinity, so an instant always lands in the millisecond that contains it (pre-1970
    /// included); coarser ones return `None` when the result does not fit in an `i64`.
    pub fn to_millis(self, ts: i64) -> Option<i64> {
        match self {
            Precision::Nanoseconds => Some(ts.div_euclid(1_000_000)),
            Precision::Microseconds => Some(ts.div_euclid(1_000)),
            Precision::Milliseconds => Some(ts),
            Precision::Seconds => ts.checked_mul(MS_PER_S),
            Precision::Minutes => ts.checked_mul(MS_PER_M),
            Precision::Hours => ts.checked_mul(MS_PER_H),
        }
    }

    /// Converts milliseconds to a timestamp in this precision: finer precisions saturate at the `i64`
    /// range (about ±292 years around 1970 in nanoseconds), coarser ones round toward negative infinity.
    pub fn from_millis(self, ms: i64) -> i64 {
        match self {
            Precision::Nanoseconds => ms.saturating_mul(1_000_000),
            Precision::Microseconds => ms.saturating_mul(1_000),
            Precision::Milliseconds => ms,
            Precision::Seconds => ms.div_euclid(MS_PER_S),
            Precision::Minutes => ms.div_euclid(MS_PER_M),
            Precision::Hours => ms.div_euclid(MS_PER_H),
        }
    }
}
