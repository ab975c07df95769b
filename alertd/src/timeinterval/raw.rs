//! A time interval as written in the YAML (`time_intervals[].time_intervals[]`), before validation.
//! It lives beside [`TimeInterval::from_raw`](super::TimeInterval::from_raw), which reads it, so that
//! time intervals need nothing from `config`; `config::raw` re-exports it in place.

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeInterval {
    #[serde(default)]
    pub times: Vec<TimeRange>,
    #[serde(default)]
    pub weekdays: Vec<String>,
    #[serde(default)]
    pub days_of_month: Vec<String>,
    #[serde(default)]
    pub months: Vec<String>,
    #[serde(default)]
    pub years: Vec<String>,
    pub location: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeRange {
    pub start_time: String,
    pub end_time: String,
}
