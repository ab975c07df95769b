//! Time intervals (Alertmanager's `time_intervals`): when a route is muted or active. UTC only.

pub mod raw;

use crate::time::Timestamp;
use std::ops::RangeInclusive;

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
}

impl TimeInterval {
    pub fn contains(&self, t: Timestamp) -> bool {
        let c = t.civil();
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
        if let Some(loc) = &r.location
            && loc != "UTC"
        {
            return Err(("location".into(), format!("location {loc:?} is not supported yet (only UTC)")));
        }
        let mut out = TimeInterval::default();
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
        let r: raw::TimeInterval = serde_norway::from_str("{location: Asia/Shanghai}").unwrap();
        assert_eq!(TimeInterval::from_raw(&r).unwrap_err().0, "location");
    }
}
