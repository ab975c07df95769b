//! The store as the analyzer sees it during a run, with the anomaly scores it writes back
//! (`argus_anomaly_score{detector}`) kept in memory by series and step, for the diagnosis of what each
//! detector made of each fault. Reads go to the embedded store unchanged. The analyzer's result series
//! (scores, `argus_yhat*`) are not written to the store: nothing the analyzer or alertd decides reads
//! them back (the rules query the data's own metrics), and they are a handful of series per watched
//! series at every step of a long replay.

use super::data::DataSet;
use argus_model::labels::pairs_hash;
use argus_model::shard::Shard;
use argus_model::{Labels, METRIC_NAME, Matcher};
use argus_store::backend::{BackendError, BoxFuture, QueryValue, Series, StoreBackend};
use argus_store::remote_write::WriteSeries;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The metric the analyzer writes its scores under.
const SCORE: &str = "argus_anomaly_score";

/// Every detector's score of every series of a set, at every step it was written for (NaN where none).
#[derive(Debug, Default, Clone)]
pub struct Scores {
    origin: i64,
    step: i64,
    len: usize,
    /// By series index, then detector name (`threshold`, `peer`, `ensemble`, …).
    by_series: Vec<BTreeMap<String, Vec<f32>>>,
}

impl Scores {
    pub fn new(set: &DataSet) -> Scores {
        let (origin, last) = (set.first().unwrap_or(0), set.last().unwrap_or(0));
        let len = usize::try_from((last - origin) / set.step.max(1) + 1).unwrap_or(0);
        Scores { origin, step: set.step.max(1), len, by_series: vec![BTreeMap::new(); set.series.len()] }
    }

    pub(super) fn put(&mut self, series: usize, detector: &str, t: i64, v: f64) {
        let at = (t - self.origin).div_euclid(self.step);
        let Ok(at) = usize::try_from(at) else { return };
        if at >= self.len {
            return;
        }
        let len = self.len;
        let row = self.by_series[series].entry(detector.to_string()).or_insert_with(|| vec![f32::NAN; len]);
        row[at] = v as f32;
    }

    /// The first step in `[from, to]` at which `detector` scored `series` above 1.
    pub fn first_above_1(&self, series: usize, detector: &str, from: i64, to: i64) -> Option<i64> {
        let row = self.by_series.get(series)?.get(detector)?;
        if to < from || self.len == 0 {
            return None;
        }
        let lo = ((from - self.origin).div_euclid(self.step)).clamp(0, self.len as i64 - 1) as usize;
        let hi = ((to - self.origin).div_euclid(self.step)).clamp(0, self.len as i64 - 1) as usize;
        (lo..=hi).find(|&i| row[i] > 1.0).map(|i| self.origin + i as i64 * self.step)
    }
}

/// The embedded store behind the analyzer, keeping its scores aside.
pub struct Tap {
    inner: Arc<dyn StoreBackend>,
    /// The set's series by the hash of their labels less the name (`pairs_hash`), each with its labels.
    series: HashMap<u64, Vec<(Labels, usize)>>,
    scores: Mutex<Scores>,
}

impl Tap {
    pub fn new(inner: Arc<dyn StoreBackend>, set: &DataSet) -> Tap {
        let mut series: HashMap<u64, Vec<(Labels, usize)>> = HashMap::new();
        for (i, s) in set.series.iter().enumerate() {
            let own = s.labels.without_name();
            let hash = pairs_hash(own.iter().map(|l| (l.name.as_str(), l.value.as_str())));
            series.entry(hash).or_default().push((own, i));
        }
        Tap { inner, series, scores: Mutex::new(Scores::new(set)) }
    }

    /// The scores kept so far.
    pub fn scores(&self) -> Scores {
        self.scores.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn keep(&self, written: &[WriteSeries]) {
        let Ok(mut scores) = self.scores.lock() else { return };
        for w in written {
            if w.labels.metric_name() != Some(SCORE) {
                continue;
            }
            let Some(detector) = w.labels.get("detector") else { continue };
            // The series' own labels: the result's less its name, `detector` and `metric` (sorted, as
            // the result's are).
            let own = || {
                w.labels
                    .iter()
                    .filter(|l| !matches!(l.name.as_str(), METRIC_NAME | "detector" | "metric"))
                    .map(|l| (l.name.as_str(), l.value.as_str()))
            };
            let found = self.series.get(&pairs_hash(own())).and_then(|c| c.iter().find(|(l, _)| l.eq_pairs(own())));
            if let Some(&(_, i)) = found {
                for p in &w.samples {
                    scores.put(i, detector, p.t, p.v);
                }
            }
        }
    }
}

impl StoreBackend for Tap {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn write(&self, series: Vec<WriteSeries>) -> BoxFuture<'_, Result<(), BackendError>> {
        // The data's own series go to the store; the analyzer's results (every name `argus_…`) are kept.
        let (results, data): (Vec<WriteSeries>, Vec<WriteSeries>) =
            series.into_iter().partition(|w| w.labels.metric_name().is_some_and(|n| n.starts_with("argus_")));
        self.keep(&results);
        if data.is_empty() {
            return Box::pin(async { Ok(()) });
        }
        self.inner.write(data)
    }

    fn select<'a>(
        &'a self,
        matchers: &'a [Matcher],
        start: i64,
        end: i64,
    ) -> BoxFuture<'a, Result<Vec<Series>, BackendError>> {
        self.inner.select(matchers, start, end)
    }

    fn query_instant<'a>(&'a self, query: &'a str, t: i64) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        self.inner.query_instant(query, t)
    }

    fn query_range<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        self.inner.query_range(query, start, end, step)
    }

    fn query_range_shard<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
        shard: Shard,
        by: &'a [String],
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        self.inner.query_range_shard(query, start, end, step, shard, by)
    }
}
