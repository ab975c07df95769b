//! Turning a write request into one WAL entry: resolve (or create) each series in the head, drop
//! samples past retention, refuse batches with samples too far in the future, then commit.

use super::commit::Job;
use super::{Db, DbError, now_ms};
use crate::wal::{RefSample, encode_events, encode_samples};
use argus_model::labels::{pairs_hash, with_name};
use argus_model::lineprotocol::{FieldValue, Line, LineError, Precision, field_as_f64, series_name};
use argus_model::{Event, Labels, METRIC_NAME, Sample};
use std::sync::mpsc;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteStats {
    pub samples: usize,
    pub events: usize,
    /// Samples older than the retention window: dropped, the rest of the batch stored.
    pub dropped_old: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The batch is invalid; nothing of it was stored.
    #[error("{} invalid line(s), first: {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
    Invalid(Vec<LineError>),
    #[error("write failed: {0}")]
    Storage(String),
    #[error(transparent)]
    Db(#[from] DbError),
    /// Creating the batch's new series would pass the memory budget; nothing of it was stored.
    #[error(
        "the store is over its memory budget: {new_series} new series would need {needed} bytes with {in_use} of \
         {budget} in use by the head ({series_in_use} of {series_budget} by series); nothing stored, retry later"
    )]
    OverBudget {
        new_series: usize,
        needed: usize,
        in_use: usize,
        budget: usize,
        series_in_use: usize,
        series_budget: usize,
    },
    /// Creating the batch's new series would pass `max_series`; nothing of it was stored.
    #[error(
        "series limit max_series = {limit} reached: {live} live series and this batch adds {adding} (metric \
         {metric:?} among them); nothing stored"
    )]
    TooManySeries { limit: usize, live: usize, adding: usize, metric: String },
    /// Creating the batch's new series would pass `max_series_per_metric`; nothing of it was stored.
    #[error(
        "series limit max_series_per_metric = {limit} reached: metric {metric:?} has {have} live series and this \
         batch adds {adding}; nothing stored"
    )]
    TooManySeriesForMetric { limit: usize, metric: String, have: usize, adding: usize },
}

/// The label pairs of a write, flattened so that resolving a sample allocates nothing: each group is
/// the labels shared by the fields of one point (or one remote-write series) without the metric name.
#[derive(Default)]
struct Keys<'a> {
    tags: Vec<(&'a str, &'a str)>,
    /// Per group: start and end in `tags`, where `__name__` sorts among them, and their `pairs_hash`.
    groups: Vec<(u32, u32, u32, u64)>,
    names: String,
}

/// A sample still to be resolved to a head reference.
struct Pending {
    group: u32,
    name: (u32, u32),
    hash: u64,
    t: i64,
    v: f64,
}

impl<'a> Keys<'a> {
    /// Starts a group from tags sorted by name, without `__name__`.
    fn group(&mut self, tags: impl IntoIterator<Item = (&'a str, &'a str)>) -> u32 {
        let start = self.tags.len();
        self.tags.extend(tags);
        let g = &self.tags[start..];
        let at = g.partition_point(|(k, _)| *k < METRIC_NAME);
        let h = pairs_hash(g.iter().copied());
        self.groups.push((start as u32, self.tags.len() as u32, at as u32, h));
        (self.groups.len() - 1) as u32
    }

    fn pending(&mut self, group: u32, name: &str, t: i64, v: f64) -> Pending {
        let start = self.names.len();
        self.names.push_str(name);
        Pending {
            group,
            name: (start as u32, self.names.len() as u32),
            hash: with_name(self.groups[group as usize].3, name),
            t,
            v,
        }
    }

    /// The full label pairs of a pending sample, in name order.
    fn pairs(&self, p: &Pending) -> impl Iterator<Item = (&str, &str)> + Clone {
        let (s, e, at, _) = self.groups[p.group as usize];
        let tags = &self.tags[s as usize..e as usize];
        let name = &self.names[p.name.0 as usize..p.name.1 as usize];
        let name = (!name.is_empty()).then_some((METRIC_NAME, name));
        tags[..at as usize].iter().copied().chain(name).chain(tags[at as usize..].iter().copied())
    }
}

impl Db {
    /// Stores parsed line-protocol points. `extra` labels (v1's `db`) apply where the line has no tag of
    /// that name, as VictoriaMetrics does. `line_numbers[i]` is the 1-based input line of `lines[i]`,
    /// for error messages.
    pub fn write_lines(
        &self,
        lines: &[Line<'_>],
        line_numbers: &[usize],
        precision: Precision,
        extra: &[(&str, &str)],
    ) -> Result<WriteStats, WriteError> {
        let now = now_ms();
        let (min_t, max_t) = self.valid_range(now);
        let default_t = precision.from_millis(now);
        let mut errors = Vec::new();
        let mut stamps: Vec<i64> = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            let lineno = line_numbers.get(i).copied().unwrap_or(i + 1);
            match precision.to_millis(line.timestamp.unwrap_or(default_t)) {
                Some(t) if t <= max_t => stamps.push(t),
                Some(_) => errors.push(LineError {
                    line: lineno,
                    column: 1,
                    reason: format!(
                        "timestamp more than {} in the future (store.max_future)",
                        humantime::format_duration(self.shared.opts.max_future)
                    ),
                }),
                None => errors.push(LineError { line: lineno, column: 1, reason: "timestamp out of range".into() }),
            }
        }
        if !errors.is_empty() {
            self.shared.metrics.rejected("invalid");
            return Err(WriteError::Invalid(errors));
        }
        let nfields: usize = lines.iter().map(|l| l.fields.len()).sum();
        let mut keys = Keys {
            tags: Vec::with_capacity(lines.len() * 8),
            groups: Vec::with_capacity(lines.len()),
            names: String::with_capacity(nfields * 24),
        };
        let mut pending = Vec::with_capacity(nfields);
        let mut events = Vec::new();
        let mut dropped_old = 0;
        let mut tags: Vec<(&str, &str)> = Vec::new();
        let mut name = String::new();
        for (line, &t) in lines.iter().zip(&stamps) {
            if t < min_t {
                dropped_old += line.fields.len();
                continue;
            }
            tags.clear();
            tags.extend(extra.iter().copied());
            tags.extend(line.tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
            // Later wins for repeated names (the line's tags come last); empty values mean absent.
            tags.sort_by(|a, b| a.0.cmp(b.0));
            dedup_last(&mut tags);
            tags.retain(|(k, v)| !v.is_empty() && *k != METRIC_NAME);
            let group = keys.group(tags.iter().copied());
            for (field, value) in &line.fields {
                name.clear();
                series_name(&line.measurement, field, &mut name);
                match (field_as_f64(value), value) {
                    (Some(v), _) => pending.push(keys.pending(group, &name, t, v)),
                    (None, FieldValue::Str(s)) => {
                        let p = keys.pending(group, &name, t, 0.0);
                        events.push(Event { labels: Labels::from_pairs(keys.pairs(&p)), t, text: s.to_string() });
                    }
                    (None, _) => {}
                }
            }
        }
        self.commit(&keys, pending, events, dropped_old)
    }

    /// Stores already-labelled series (Prometheus remote write).
    pub fn write_series(&self, series: &[(Labels, Vec<Sample>)]) -> Result<WriteStats, WriteError> {
        let now = now_ms();
        let (min_t, max_t) = self.valid_range(now);
        let mut errors = Vec::new();
        let mut keys = Keys::default();
        let mut pending = Vec::new();
        let mut dropped_old = 0;
        for (i, (labels, samples)) in series.iter().enumerate() {
            let group = keys
                .group(labels.iter().filter(|l| l.name != METRIC_NAME).map(|l| (l.name.as_str(), l.value.as_str())));
            let name = labels.metric_name().unwrap_or("");
            for s in samples {
                if s.t > max_t {
                    errors.push(LineError {
                        line: i + 1,
                        column: 1,
                        reason: format!(
                            "series {labels}: timestamp {} more than {} in the future (store.max_future)",
                            s.t,
                            humantime::format_duration(self.shared.opts.max_future)
                        ),
                    });
                } else if s.t < min_t {
                    dropped_old += 1;
                } else {
                    pending.push(keys.pending(group, name, s.t, s.v));
                }
            }
        }
        if !errors.is_empty() {
            self.shared.metrics.rejected("invalid");
            return Err(WriteError::Invalid(errors));
        }
        self.commit(&keys, pending, Vec::new(), dropped_old)
    }

    fn valid_range(&self, now: i64) -> (i64, i64) {
        let o = &self.shared.opts;
        (now.saturating_sub(o.retention.as_millis() as i64), now.saturating_add(o.max_future.as_millis() as i64))
    }

    fn commit(
        &self,
        keys: &Keys<'_>,
        pending: Vec<Pending>,
        events: Vec<Event>,
        dropped_old: usize,
    ) -> Result<WriteStats, WriteError> {
        if dropped_old > 0 {
            self.shared.metrics.dropped("retention", dropped_old as u64);
            tracing::warn!(samples = dropped_old, "Dropped samples older than retention");
        }
        let mut refs: Vec<RefSample> = Vec::with_capacity(pending.len());
        let mut missing = Vec::new();
        {
            let head = self.shared.head.read();
            for (i, p) in pending.iter().enumerate() {
                let r = head.lookup_hashed(p.hash, keys.pairs(p)).unwrap_or_else(|| {
                    missing.push(i);
                    u32::MAX
                });
                refs.push(RefSample { r, t: p.t, v: p.v });
            }
        }
        if !missing.is_empty() {
            let mut head = self.shared.head.write();
            // New series are charged before any is created, under the lock that creates them, so that
            // concurrent batches cannot pass the budget together; a refused batch creates nothing.
            let new: Vec<usize> = missing
                .into_iter()
                .filter(|&i| match head.lookup_hashed(pending[i].hash, keys.pairs(&pending[i])) {
                    Some(r) => {
                        refs[i].r = r;
                        false
                    }
                    None => true,
                })
                .collect();
            // A new series with several samples in the batch is one series: keep its first sample.
            let mut seen = std::collections::HashSet::with_capacity(new.len());
            let distinct: Vec<usize> = new.iter().copied().filter(|&i| seen.insert(pending[i].hash)).collect();
            let series_bytes =
                distinct.iter().map(|&i| crate::head::pairs_bytes(keys.pairs(&pending[i]))).sum::<usize>();
            let samples_bytes = pending.len() * crate::head::SAMPLE_BYTES;
            if let Err(e) = self.check_series_limits(&head, keys, &pending, &distinct) {
                self.shared.metrics.rejected("cardinality");
                return Err(e);
            }
            if !new.is_empty() && self.shared.over_budget(&head, series_bytes, samples_bytes) {
                self.shared.metrics.rejected("memory");
                return Err(WriteError::OverBudget {
                    new_series: distinct.len(),
                    needed: series_bytes + samples_bytes,
                    in_use: head.bytes(),
                    budget: self.shared.opts.head_budget(),
                    series_in_use: head.label_bytes(),
                    series_budget: self.shared.opts.series_budget(),
                });
            }
            for i in new {
                refs[i].r = head.get_or_create(Labels::from_pairs(keys.pairs(&pending[i]))).0;
            }
        }
        let stats = WriteStats { samples: refs.len(), events: events.len(), dropped_old };
        if refs.is_empty() && events.is_empty() {
            return Ok(stats);
        }
        let mut payload = Vec::with_capacity(refs.len() * 12 + 16);
        if !refs.is_empty() {
            encode_samples(&mut payload, &refs);
        }
        if !events.is_empty() {
            encode_events(&mut payload, &events);
        }
        let (tx, rx) = mpsc::sync_channel(1);
        self.committer.submit(Job::Append { payload, samples: refs, events, done: tx })?;
        match rx.recv() {
            Ok(Ok(())) => Ok(stats),
            Ok(Err(e)) => Err(WriteError::Storage(e.to_string())),
            Err(_) => Err(WriteError::Db(DbError::Closed)),
        }
    }
}

impl Db {
    /// `max_series` and `max_series_per_metric` against the series `new` would create.
    fn check_series_limits(
        &self,
        head: &crate::head::Head,
        keys: &Keys<'_>,
        pending: &[Pending],
        new: &[usize],
    ) -> Result<(), WriteError> {
        let o = &self.shared.opts;
        let name = |i: usize| {
            keys.pairs(&pending[i]).find(|(k, _)| *k == METRIC_NAME).map_or(String::new(), |(_, v)| v.to_string())
        };
        let Some(&first) = new.first() else { return Ok(()) };
        let live = head.series_count();
        if live + new.len() > o.max_series {
            return Err(WriteError::TooManySeries {
                limit: o.max_series,
                live,
                adding: new.len(),
                metric: name(first),
            });
        }
        let mut per_metric: std::collections::BTreeMap<String, usize> = Default::default();
        for &i in new {
            *per_metric.entry(name(i)).or_default() += 1;
        }
        for (metric, adding) in per_metric {
            let have = head.metric_series(&metric);
            if have + adding > o.max_series_per_metric {
                return Err(WriteError::TooManySeriesForMetric {
                    limit: o.max_series_per_metric,
                    metric,
                    have,
                    adding,
                });
            }
        }
        Ok(())
    }
}

/// Keeps the last of each run of equal names in a name-sorted list.
fn dedup_last(v: &mut Vec<(&str, &str)>) {
    let mut out = 0;
    for i in 0..v.len() {
        if out > 0 && v[out - 1].0 == v[i].0 {
            v[out - 1] = v[i];
        } else {
            v[out] = v[i];
            out += 1;
        }
    }
    v.truncate(out);
}
