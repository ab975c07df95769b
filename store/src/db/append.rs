//! Turning a write request into one WAL entry: resolve (or create) each series in the head, drop
//! samples past retention, refuse batches with samples too far in the future, then commit.

use super::commit::Job;
use super::{Db, DbError, now_ms};
use crate::wal::{RefSample, encode_events, encode_samples, encode_series};
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
}

/// A sample still to be resolved to a head reference.
struct Pending<'a> {
    pairs: Vec<(&'a str, &'a str)>,
    t: i64,
    v: f64,
}

impl Db {
    /// Stores parsed line-protocol points. `extra` labels (v1's `db`) apply where the line has no tag of
    /// that name, as VictoriaMetrics does.
    /// `line_numbers[i]` is the 1-based input line of `lines[i]`, for error messages.
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
        // Names `{measurement}_{field}` live here so pending samples can borrow them.
        let mut names: Vec<String> = Vec::new();
        let mut stamps: Vec<i64> = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            let lineno = line_numbers.get(i).copied().unwrap_or(i + 1);
            let t = match precision.to_millis(line.timestamp.unwrap_or(default_t)) {
                Some(t) if t <= max_t => t,
                Some(_) => {
                    errors.push(LineError {
                        line: lineno,
                        column: 1,
                        reason: format!(
                            "timestamp more than {} in the future",
                            humantime::format_duration(self.shared.opts.max_future)
                        ),
                    });
                    0
                }
                None => {
                    errors.push(LineError { line: lineno, column: 1, reason: "timestamp out of range".into() });
                    0
                }
            };
            stamps.push(t);
            for (f, _) in &line.fields {
                let mut n = String::new();
                series_name(&line.measurement, f, &mut n);
                names.push(n);
            }
        }
        if !errors.is_empty() {
            self.shared.metrics.rejected("invalid");
            return Err(WriteError::Invalid(errors));
        }
        let mut pending = Vec::with_capacity(names.len());
        let mut events = Vec::new();
        let mut dropped_old = 0;
        let mut name_i = 0;
        let mut tags: Vec<(&str, &str)> = Vec::new();
        for (line, &t) in lines.iter().zip(&stamps) {
            tags.clear();
            tags.extend(extra.iter().copied());
            tags.extend(line.tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
            // Later wins for repeated names (the line's tags come last); empty values mean absent.
            tags.sort_by(|a, b| a.0.cmp(b.0));
            dedup_last(&mut tags);
            tags.retain(|(k, v)| !v.is_empty() && *k != METRIC_NAME);
            let at = tags.partition_point(|(k, _)| *k < METRIC_NAME);
            for (_, value) in &line.fields {
                let name = names[name_i].as_str();
                name_i += 1;
                if t < min_t {
                    dropped_old += 1;
                    continue;
                }
                let mut pairs = Vec::with_capacity(tags.len() + 1);
                pairs.extend_from_slice(&tags[..at]);
                pairs.push((METRIC_NAME, name));
                pairs.extend_from_slice(&tags[at..]);
                match (field_as_f64(value), value) {
                    (Some(v), _) => pending.push(Pending { pairs, t, v }),
                    (None, FieldValue::Str(s)) => {
                        events.push(Event { labels: Labels::from_pairs(pairs), t, text: s.to_string() })
                    }
                    (None, _) => {}
                }
            }
        }
        self.commit(pending, events, dropped_old)
    }

    /// Stores already-labelled series (Prometheus remote write).
    pub fn write_series(&self, series: &[(Labels, Vec<Sample>)]) -> Result<WriteStats, WriteError> {
        let now = now_ms();
        let (min_t, max_t) = self.valid_range(now);
        let mut errors = Vec::new();
        let mut pending = Vec::new();
        let mut dropped_old = 0;
        for (i, (labels, samples)) in series.iter().enumerate() {
            for s in samples {
                if s.t > max_t {
                    errors.push(LineError {
                        line: i + 1,
                        column: 1,
                        reason: format!(
                            "series {labels}: timestamp {} more than {} in the future",
                            s.t,
                            humantime::format_duration(self.shared.opts.max_future)
                        ),
                    });
                } else if s.t < min_t {
                    dropped_old += 1;
                } else {
                    let pairs = labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
                    pending.push(Pending { pairs, t: s.t, v: s.v });
                }
            }
        }
        if !errors.is_empty() {
            self.shared.metrics.rejected("invalid");
            return Err(WriteError::Invalid(errors));
        }
        self.commit(pending, Vec::new(), dropped_old)
    }

    fn valid_range(&self, now: i64) -> (i64, i64) {
        let o = &self.shared.opts;
        (now.saturating_sub(o.retention.as_millis() as i64), now.saturating_add(o.max_future.as_millis() as i64))
    }

    fn commit(
        &self,
        pending: Vec<Pending<'_>>,
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
                match head.lookup_pairs(&p.pairs) {
                    Some(r) => refs.push(RefSample { r, t: p.t, v: p.v }),
                    None => {
                        missing.push(i);
                        refs.push(RefSample { r: u32::MAX, t: p.t, v: p.v });
                    }
                }
            }
        }
        if !missing.is_empty() {
            let mut head = self.shared.head.write();
            let mut created = Vec::new();
            for i in missing {
                let (r, new) = head.get_or_create(Labels::from_pairs(pending[i].pairs.iter().copied()));
                refs[i].r = r;
                if new {
                    created.push(r);
                }
            }
            if !created.is_empty() {
                let mut payload = Vec::new();
                let labels: Vec<_> = created.iter().filter_map(|r| head.labels(*r).map(|l| (*r, l.clone()))).collect();
                encode_series(&mut payload, labels.iter().map(|(r, l)| (*r, &**l)));
                // Queued while the head lock is held, so no entry using these series can precede it.
                self.committer.submit(Job::Series(payload))?;
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
            Ok(Err(e)) => Err(WriteError::Storage(e)),
            Err(_) => Err(WriteError::Db(DbError::Closed)),
        }
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
