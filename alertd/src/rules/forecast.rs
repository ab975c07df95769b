//! Forecast-band rules (Argus' own rule kind, `forecast:` in a rule file): an alert per forecast
//! series whose band crosses a limit at any horizon the analyzer forecasts. The analyzer writes, at
//! each step t, `argus_yhat{metric, model, horizon}` (and `_lower`, `_upper`): the `horizon="15m"`
//! sample at t is the forecast, made at t, of the value at t + 15m (docs/analyzer.md). A rule reads
//! the latest of them, and the earliest crossing names the alert's value and annotations.

use crate::time::Timestamp;
use argus_model::{Labels, METRIC_NAME};
use std::collections::BTreeMap;
use std::time::Duration;

/// Which series of the forecast is compared with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    Upper,
    Lower,
    Point,
}

impl Band {
    pub fn series(self) -> &'static str {
        match self {
            Band::Upper => "argus_yhat_upper",
            Band::Lower => "argus_yhat_lower",
            Band::Point => "argus_yhat",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Above,
    Below,
}

/// What a forecast rule compares: `band` of `metric`'s forecast against `limit`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForecastSpec {
    /// The `metric` label of the analyzer's forecast series.
    pub metric: String,
    /// A PromQL expression (a number is one): a scalar or one-sample vector applies to every series;
    /// otherwise each series takes the sample whose labels it carries.
    pub limit: String,
    pub band: Band,
    pub direction: Direction,
}

impl ForecastSpec {
    /// The instant query of the band's latest forecasts.
    pub fn selector(&self) -> String {
        format!("{}{{metric={:?}}}", self.band.series(), self.metric)
    }

    /// Each forecast series whose band crosses its limit at some horizon, once, at the earliest such
    /// horizon: its labels (without the name, `model` and `horizon`), the forecast value there, and the
    /// annotations saying when and how far. `forecasts` answers `selector()`, `written` answers
    /// `timestamp(selector())`, `limits` answers the limit.
    pub fn crossings(
        &self,
        forecasts: &[(Labels, f64)],
        written: &[(Labels, f64)],
        limits: &[(Labels, f64)],
    ) -> Vec<super::alerting::Annotated> {
        let mut earliest: BTreeMap<Labels, (Duration, f64, f64, Timestamp, String)> = BTreeMap::new();
        for (series, v) in forecasts {
            let Some(horizon_label) = series.get("horizon") else { continue };
            let Ok(horizon) = crate::config::duration::parse(horizon_label) else { continue };
            let unnamed = series.without_name();
            let Some(at) = written.iter().find(|(l, _)| l.without_name() == unnamed).map(|(_, t)| *t) else {
                continue;
            };
            let key = Labels::from_pairs(
                unnamed
                    .iter()
                    .filter(|l| l.name != "horizon" && l.name != "model")
                    .map(|l| (l.name.clone(), l.value.clone())),
            );
            let Some(limit) = limit_for(&key, limits) else { continue };
            let crossed = match self.direction {
                Direction::Above => *v > limit,
                Direction::Below => *v < limit,
            };
            if !crossed {
                continue;
            }
            let crossing_at = Timestamp((at * 1000.0).round() as i64) + horizon;
            let e = earliest.entry(key).or_insert((horizon, *v, limit, crossing_at, horizon_label.to_string()));
            if horizon < e.0 {
                *e = (horizon, *v, limit, crossing_at, horizon_label.to_string());
            }
        }
        earliest
            .into_iter()
            .map(|(labels, (_, v, limit, at, horizon))| {
                let notes = vec![
                    ("forecast_crossing_at".to_string(), at.to_string()),
                    ("forecast_value".to_string(), format_value(v)),
                    ("forecast_limit".to_string(), format_value(limit)),
                    ("forecast_horizon".to_string(), horizon),
                ];
                (labels, v, notes)
            })
            .collect()
    }
}

/// The limit that applies to the series `key`: the only sample when there is one, else the first
/// whose labels (without the name) the series carries.
fn limit_for(key: &Labels, limits: &[(Labels, f64)]) -> Option<f64> {
    if let [(_, v)] = limits {
        return Some(*v);
    }
    limits
        .iter()
        .find(|(l, _)| l.iter().filter(|x| x.name != METRIC_NAME).all(|x| key.get(&x.name) == Some(x.value.as_str())))
        .map(|(_, v)| *v)
}

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn l(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn earliest_crossing_per_series() {
        let spec = ForecastSpec {
            metric: "gpu_demand".into(),
            limit: "100".into(),
            band: Band::Upper,
            direction: Direction::Above,
        };
        let f = |pool: &str, h: &str| {
            l(&[
                ("__name__", "argus_yhat_upper"),
                ("metric", "gpu_demand"),
                ("model", "ets"),
                ("horizon", h),
                ("pool", pool),
            ])
        };
        let w = |pool: &str, h: &str| l(&[("metric", "gpu_demand"), ("model", "ets"), ("horizon", h), ("pool", pool)]);
        let forecasts = [
            (f("a", "15m"), 90.0),
            (f("a", "1h"), 120.0),
            (f("a", "30m"), 101.5),
            (f("b", "1h"), 99.0),
            (f("c", "1h"), 500.0),
        ];
        let written = [(w("a", "15m"), 1.7e9), (w("a", "30m"), 1.7e9), (w("a", "1h"), 1.7e9), (w("b", "1h"), 1.7e9)];
        let got: Vec<String> = spec
            .crossings(&forecasts, &written, &[(Labels::default(), 100.0)])
            .iter()
            .map(|c| format!("{c:?}"))
            .collect();
        // Pool c has no write time (a stale answer), so it is skipped; b stays under the limit.
        expect![[r#"(Labels([Label { name: "metric", value: "gpu_demand" }, Label { name: "pool", value: "a" }]), 101.5, [("forecast_crossing_at", "2023-11-14T22:43:20Z"), ("forecast_value", "101.5"), ("forecast_limit", "100"), ("forecast_horizon", "30m")])"#]]
            .assert_eq(&got.join("\n"));
        // Per-series limits, and the lower band going below.
        let spec = ForecastSpec { band: Band::Lower, direction: Direction::Below, ..spec };
        let limits = [(l(&[("pool", "a")]), 95.0), (l(&[("pool", "b")]), 100.0)];
        let got = spec.crossings(&forecasts, &written, &limits);
        let got: Vec<String> =
            got.iter().map(|(l, v, n)| format!("{} {v} {}", l.get("pool").unwrap(), n[3].1)).collect();
        assert_eq!(got, ["a 90 15m", "b 99 1h"]);
    }
}
