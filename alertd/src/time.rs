//! Timestamps: milliseconds since the Unix epoch, RFC 3339 on the wire, and the civil calendar that
//! time intervals need. Hand-written so the crate carries no date library; UTC only.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time, in milliseconds since the Unix epoch (UTC). `Timestamp::ZERO` is Go's zero time
/// (`0001-01-01T00:00:00Z`), which Alertmanager's wire format uses for "not set".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// Go's zero `time.Time`: 0001-01-01T00:00:00Z.
    pub const ZERO: Timestamp = Timestamp(-62_135_596_800_000);

    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    pub fn is_zero(self) -> bool {
        self == Self::ZERO
    }

    /// Parses RFC 3339 (`2020-09-13T12:26:40Z`, fractional seconds and `±hh:mm` offsets allowed).
    pub fn parse_rfc3339(s: &str) -> Result<Self, TimeError> {
        parse(s.as_bytes()).ok_or_else(|| TimeError(s.to_string()))
    }

    /// The civil date and time of day in UTC.
    pub fn civil(self) -> Civil {
        let secs = self.0.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        // 1970-01-01 was a Thursday; weekday 0 is Sunday, as in Go.
        let weekday = (days + 4).rem_euclid(7) as u32;
        Civil { year, month, day, weekday, minute_of_day: (sod / 60) as u32 }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("invalid RFC 3339 time {0:?}")]
pub struct TimeError(pub String);

/// A UTC calendar position, as time intervals read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    /// 1..=12
    pub month: u32,
    /// 1..=31
    pub day: u32,
    /// 0 = Sunday .. 6 = Saturday
    pub weekday: u32,
    pub minute_of_day: u32,
}

impl Civil {
    /// Days in this date's month.
    pub fn days_in_month(&self) -> u32 {
        days_in_month(self.year, self.month)
    }
}

pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(d.as_millis().min(i64::MAX as u128) as i64))
    }
}

impl Sub<Duration> for Timestamp {
    type Output = Timestamp;
    fn sub(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_sub(d.as_millis().min(i64::MAX as u128) as i64))
    }
}

impl Sub for Timestamp {
    type Output = Duration;
    /// The time from `rhs` to `self`, zero when `rhs` is later.
    fn sub(self, rhs: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(rhs.0).max(0) as u64)
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC with trailing zeros of the fraction dropped, as Go's `time.RFC3339Nano`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.div_euclid(1000);
        let ms = self.0.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (y, mo, d) = civil_from_days(days);
        write!(f, "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}", sod / 3600, sod / 60 % 60, sod % 60)?;
        if ms != 0 {
            let frac = format!("{ms:03}");
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

/// An RFC 3339 string on the wire.
impl utoipa::PartialSchema for Timestamp {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .examples([serde_json::json!("2025-01-02T03:04:05.678Z")])
            .into()
    }
}

impl utoipa::ToSchema for Timestamp {}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse_rfc3339(&s).map_err(serde::de::Error::custom)
    }
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to (year, month, day).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The inverse of `civil_from_days`.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn parse(b: &[u8]) -> Option<Timestamp> {
    fn num(b: &[u8]) -> Option<i64> {
        if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(b.iter().fold(0i64, |n, c| n * 10 + i64::from(c - b'0')))
    }
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(&b[0..4])?, num(&b[5..7])? as u32, num(&b[8..10])? as u32);
    let (h, mi, s) = (num(&b[11..13])?, num(&b[14..16])?, num(&b[17..19])?);
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &b[19..];
    let mut ms = 0i64;
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        let digits = &rest[1..1 + n];
        let mut frac = digits.iter().take(3).fold(0i64, |acc, c| acc * 10 + i64::from(c - b'0'));
        for _ in digits.len().min(3)..3 {
            frac *= 10;
        }
        ms = frac;
        rest = &rest[1 + n..];
    }
    let offset_secs = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), hh @ .., b':', m1, m2] if hh.len() == 2 => {
            let off = num(hh)? * 3600 + num(&[*m1, *m2])? * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset_secs;
    Some(Timestamp(secs * 1000 + ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(input: &str, expect: Expect) {
        let got = match Timestamp::parse_rfc3339(input) {
            Ok(t) => format!("{} {}", t.0, t),
            Err(e) => e.to_string(),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn parse_and_format() {
        check("2020-09-13T12:26:40Z", expect!["1600000000000 2020-09-13T12:26:40Z"]);
        check("2020-09-13T12:26:40.5Z", expect!["1600000000500 2020-09-13T12:26:40.5Z"]);
        check("2020-09-13T14:26:40.123456+02:00", expect!["1600000000123 2020-09-13T12:26:40.123Z"]);
        check("1970-01-01T00:00:00Z", expect!["0 1970-01-01T00:00:00Z"]);
        check("0001-01-01T00:00:00Z", expect!["-62135596800000 0001-01-01T00:00:00Z"]);
        check("2024-02-29T00:00:00Z", expect!["1709164800000 2024-02-29T00:00:00Z"]);
        check("2023-02-29T00:00:00Z", expect![[r#"invalid RFC 3339 time "2023-02-29T00:00:00Z""#]]);
        check("2020-09-13 12:26", expect![[r#"invalid RFC 3339 time "2020-09-13 12:26""#]]);
    }

    #[test]
    fn civil_weekday() {
        // 2020-09-13 was a Sunday.
        let c = Timestamp(1_600_000_000_000).civil();
        assert_eq!((c.year, c.month, c.day, c.weekday, c.minute_of_day), (2020, 9, 13, 0, 12 * 60 + 26));
        assert_eq!(Timestamp::ZERO.to_string(), "0001-01-01T00:00:00Z");
    }
}
