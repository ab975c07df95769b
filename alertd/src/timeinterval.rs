//! Time intervals (Alertmanager's `time_intervals`): when a route is muted or active, read on the wall
//! clock of their `location` (an IANA time zone, `Local`, or UTC by default).

pub mod raw;

use crate::time::{Civil, Timestamp};
use std::ops::RangeInclusive;

/// Where an interval's times are read: UTC, or an IANA zone by name (daylight saving included).
#[derive(Debug, Clone, Default)]
pub struct Location(Option<(String, jiff::tz::TimeZone)>);

impl PartialEq for Location {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Location {
    /// `UTC`, `Local` (the system's zone) or an IANA name such as `Asia/Shanghai`.
    pub fn parse(name: &str) -> Result<Location, String> {
        match name {
            "" | "UTC" => Ok(Location(None)),
            "Local" => jiff::tz::TimeZone::try_system()
                .map(|tz| Location(Some((name.into(), tz))))
                .map_err(|e| format!("location \"Local\": the system's time zone is unknown: {e}")),
            _ => jiff::tz::TimeZone::get(name)
                .map(|tz| Location(Some((name.into(), tz))))
                .map_err(|_| format!("location {name:?} is not a time zone of the IANA database")),
        }
    }

    pub fn name(&self) -> &str {
        self.0.as_ref().map(|(n, _)| n.as_str()).unwrap_or("UTC")
    }

    /// The wall-clock date and time of `t` here.
    pub fn civil(&self, t: Timestamp) -> Civil {
        let Some((_, tz)) = &self.0 else { return t.civil() };
        let Ok(ts) = jiff::Timestamp::from_millisecond(t.0) else { return t.civil() };
        let dt = tz.to_datetime(ts);
        Civil {
            year: i64::from(dt.year()),
            month: dt.month() as u32,
            day: dt.day() as u32,
            weekday: dt.weekday().to_sunday_zero_offset() as u32,
            minute_of_day: dt.hour() as u32 * 60 + dt.minute() as u32,
        }
    }
}

/// One interval: every non-empty field must match. A named set holds several, any of which matches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeInterval {
    /// Minutes of the day, start inclusive, end exclusive.
    pub times: Vec<(u32, u32)>,
    /// 0 = Sunday.
    pub weekdays: Vec<RangeInclusive<u32>>,
    /// 1..=31, or negative counting back from the month's last day (-1 = last).
    pub days_of_month: Vec<RangeInclusive<i32>>,
    pub months: Vec<RangeInclusive<u32>>,
    pub years: Vec<RangeInclusive<i64>>,
    pub location: Location,
}

impl TimeInterval {
    pub fn contains(&self, t: Timestamp) -> bool {
        let c = self.location.civil(t);
        let times =
            self.times.is_empty() || self.times.iter().any(|&(s, e)| c.minute_of_day >= s && c.minute_of_day < e);
        let weekdays = self.weekdays.is_empty() || self.weekdays.iter().any(|r| r.contains(&c.weekday));
        let dim = c.days_in_month() as i32;
        let days = self.days_of_month.is_empty()
            || self.days_of_month.iter().any(|r| {
                let abs = |d: i32| if d < 0 { dim + d + 1 } else { d };
                (abs(*r.start())..=abs(*r.end())).contains(&(c.day as i32))
            });
        let months = self.months.is_empty() || self.months.iter().any(|r| r.contains(&c.month));
        let years = self.years.is_empty() || self.years.iter().any(|r| r.contains(&c.year));
        times && weekdays && days && months && years
    }

    /// Validates one raw interval; errors name the offending field and value.
    pub fn from_raw(r: &raw::TimeInterval) -> Result<Self, (String, String)> {
        let mut out = TimeInterval::default();
        if let Some(loc) = &r.location {
            out.location = Location::parse(loc).map_err(|e| ("location".to_string(), e))?;
        }
        for t in &r.times {
            let s = clock(&t.start_time).map_err(|e| ("times.start_time".to_string(), e))?;
            let e = clock(&t.end_time).map_err(|e| ("times.end_time".to_string(), e))?;
            if s >= e {
                return Err((
                    "times".into(),
                    format!("start_time {} must be before end_time {}", t.start_time, t.end_time),
                ));
            }
            out.times.push((s, e));
        }
        for w in &r.weekdays {
            out.weekdays
                .push(range(w, |x| name_or_num(x, &WEEKDAYS, 0, 0, 6)).map_err(|e| ("weekdays".to_string(), e))?);
        }
        for d in &r.days_of_month {
            let r = range(d, |x| {
                let n: i32 = x.parse().map_err(|_| format!("invalid day of month {x:?}"))?;
                if n == 0 || !(-31..=31).contains(&n) {
                    return Err(format!("day of month {n} out of range (1..31 or -31..-1)"));
                }
                Ok(n)
            })
            .map_err(|e| ("days_of_month".to_string(), e))?;
            if (*r.start() < 0) != (*r.end() < 0) {
                return Err(("days_of_month".into(), format!("range {d:?} mixes positive and negative days")));
            }
            out.days_of_month.push(r);
        }
        for m in &r.months {
            out.months.push(range(m, |x| name_or_num(x, &MONTHS, 1, 1, 12)).map_err(|e| ("months".to_string(), e))?);
        }
        for y in &r.years {
            out.years.push(
                range(y, |x| x.parse::<i64>().map_err(|_| format!("invalid year {x:?}")))
                    .map_err(|e| ("years".to_string(), e))?,
            );
        }
        Ok(out)
    }
}

const WEEKDAYS: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn clock(s: &str) -> Result<u32, String> {
    let bad = || format!("invalid time {s:?} (expected HH:MM)");
    let (h, m) = s.split_once(':').ok_or_else(bad)?;
    let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if m > 59 || h > 24 || (h == 24 && m != 0) {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

fn name_or_num(x: &str, names: &[&str], base: u32, lo: u32, hi: u32) -> Result<u32, String> {
    let lower = x.to_ascii_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        return Ok(i as u32 + base);
    }
    match x.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("invalid value {x:?}")),
    }
}

fn range<T: PartialOrd + Copy + std::fmt::Debug>(
    s: &str,
    one: impl Fn(&str) -> Result<T, String>,
) -> Result<RangeInclusive<T>, String> {
    let (a, b) = match s.split_once(':') {
        Some((a, b)) => (one(a.trim())?, one(b.trim())?),
        None => {
            let v = one(s.trim())?;
            (v, v)
        }
    };
    if a > b {
        return Err(format!("range {s:?} ends before it starts"));
    }
    Ok(a..=b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ti(yaml: &str) -> TimeInterval {
        let r: raw::TimeInterval = serde_norway::from_str(yaml).unwrap();
        TimeInterval::from_raw(&r).unwrap()
    }

    #[test]
    fn business_hours_and_month_end() {
        let t = ti("{times: [{start_time: '09:00', end_time: '17:00'}], weekdays: ['monday:friday']}");
        // 2020-09-13 12:26 UTC is a Sunday.
        assert!(!t.contains(Timestamp(1_600_000_000_000)));
        // Monday 2020-09-14 12:26.
        assert!(t.contains(Timestamp(1_600_000_000_000 + 86_400_000)));
        // Monday 2020-09-14 17:26.
        assert!(!t.contains(Timestamp(1_600_000_000_000 + 86_400_000 + 5 * 3_600_000)));
        let last = ti("{days_of_month: ['-1'], months: ['september']}");
        assert!(last.contains(Timestamp::parse_rfc3339("2020-09-30T23:00:00Z").unwrap()));
        assert!(!last.contains(Timestamp::parse_rfc3339("2020-09-29T23:00:00Z").unwrap()));
    }

    #[test]
    fn bad_intervals_name_the_field() {
        let r: raw::TimeInterval = serde_norway::from_str("{weekdays: ['friday:monday']}").unwrap();
        assert_eq!(
            TimeInterval::from_raw(&r).unwrap_err(),
            ("weekdays".to_string(), r#"range "friday:monday" ends before it starts"#.to_string())
        );
        let r: raw::TimeInterval = serde_norway::from_str("{location: Mars/Olympus_Mons}").unwrap();
        assert_eq!(
            TimeInterval::from_raw(&r).unwrap_err(),
            ("location".to_string(), r#"location "Mars/Olympus_Mons" is not a time zone of the IANA database"#.into())
        );
    }

    #[test]
    fn a_location_reads_its_own_wall_clock_with_daylight_saving() {
        // Business hours in Shanghai (UTC+8, no daylight saving): 09:00-17:00 there is 01:00-09:00 UTC.
        let sh = ti(
            "{times: [{start_time: '09:00', end_time: '17:00'}], weekdays: ['monday:friday'], location: Asia/Shanghai}",
        );
        let at = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
        assert!(sh.contains(at("2020-09-14T01:00:00Z")), "Monday 09:00 in Shanghai");
        assert!(!sh.contains(at("2020-09-14T09:00:00Z")), "Monday 17:00 in Shanghai");
        assert!(sh.contains(at("2020-09-18T08:59:00Z")), "Friday 16:59");
        // Sunday 23:30 UTC is Monday 07:30 in Shanghai: the weekday is the zone's, not UTC's.
        let monday = ti("{weekdays: [monday], location: Asia/Shanghai}");
        assert!(monday.contains(at("2020-09-13T23:30:00Z")));
        assert!(!ti("{weekdays: [monday]}").contains(at("2020-09-13T23:30:00Z")));
        // New York's 09:00 is 14:00 UTC in winter (EST) and 13:00 UTC in summer (EDT).
        let ny = ti("{times: [{start_time: '09:00', end_time: '10:00'}], location: America/New_York}");
        assert!(ny.contains(at("2021-01-15T14:30:00Z")) && !ny.contains(at("2021-01-15T13:30:00Z")));
        assert!(ny.contains(at("2021-07-15T13:30:00Z")) && !ny.contains(at("2021-07-15T14:30:00Z")));
        // Month ends and years are the zone's too: 2020-12-31T20:00Z is already 2021 in Tokyo.
        let jan = ti("{months: [january], years: ['2021'], location: Asia/Tokyo}");
        assert!(jan.contains(at("2020-12-31T20:00:00Z")));
        assert_eq!(ti("{location: UTC}").location, Location::default());
    }
}
