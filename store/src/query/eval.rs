//! The evaluator: each node of the expression evaluated once over all steps of the query.
//!
//! An instant vector is a set of rows, one per label set, each with one optional value per step;
//! a scalar has a value at every step. Rows of a vector always have distinct label sets: whatever
//! changes labels merges rows through [`Out`], which refuses two values for one label set at one
//! step, as Prometheus refuses a vector with the same label set twice.

use super::memory::{Reservation, SAMPLE_BYTES, SERIES_BYTES};
use super::{DEFAULT_SUBQUERY_STEP_MS, LOOKBACK_MS, QueryError, QueryLimits, is_stale, matchers_of, visible};
use crate::Db;
use argus_model::{Labels, METRIC_NAME, Sample};
use promql_parser::parser::{AtModifier, Expr, Offset, SubqueryExpr, VectorSelector};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, UNIX_EPOCH};

/// An instant vector's series: its labels and its value at each step, if any.
#[derive(Debug, Clone)]
pub struct Row {
    pub labels: Arc<Labels>,
    pub vals: Vec<Option<f64>>,
}

/// Raw samples per series, as a range selector or a subquery yields them.
pub type Series = Vec<(Arc<Labels>, Vec<Sample>)>;

#[derive(Debug)]
pub enum Val {
    Scalar(Vec<f64>),
    Vector(Vec<Row>),
    /// Only at the top of an instant query (`x[5m]`, `x[1h:1m]`).
    Matrix(Series),
    String(String),
}

/// The windows of a range vector: at step `i`, `[ends[i] - range, ends[i]]`.
pub struct Span {
    pub range: i64,
    pub ends: Vec<i64>,
}

/// One evaluation: the steps `start, start + step, …, end` over one store.
pub struct Ev<'a> {
    pub db: &'a Db,
    pub start: i64,
    pub step: i64,
    pub n: usize,
    /// The query's own start and end, which `@ start()` and `@ end()` name inside subqueries too.
    q_start: i64,
    q_end: i64,
    pub limits: &'a QueryLimits,
    /// The query's share of the memory all queries share, grown as results are built.
    pub mem: &'a Reservation,
    deadline: Instant,
}

// === impl Ev ===

impl<'a> Ev<'a> {
    pub fn new(db: &'a Db, start: i64, end: i64, step: i64, limits: &'a QueryLimits, mem: &'a Reservation) -> Ev<'a> {
        Ev {
            db,
            start,
            step,
            n: ((end - start) / step + 1) as usize,
            q_start: start,
            q_end: end,
            limits,
            mem,
            deadline: super::deadline(limits),
        }
    }

    /// A nested evaluation over other steps (a subquery), sharing the deadline.
    fn child(&self, start: i64, end: i64, step: i64) -> Ev<'a> {
        Ev { start, step, n: ((end - start) / step + 1) as usize, ..*self }
    }

    /// The time of step `i`.
    pub fn t(&self, i: usize) -> i64 {
        self.start + i as i64 * self.step
    }

    pub fn check_time(&self) -> Result<(), QueryError> {
        if Instant::now() > self.deadline {
            return Err(QueryError::Timeout("expression evaluation"));
        }
        Ok(())
    }

    pub fn check_samples(&self, n: usize) -> Result<(), QueryError> {
        if n > self.limits.max_samples {
            return Err(QueryError::Execution(format!(
                "query processing would load too many samples into memory in query execution (more than {})",
                self.limits.max_samples
            )));
        }
        Ok(())
    }

    fn check_points(&self, v: &Val) -> Result<(), QueryError> {
        let n = match v {
            Val::Vector(rows) => rows.iter().map(|r| r.vals.iter().filter(|v| v.is_some()).count()).sum(),
            Val::Matrix(m) => m.iter().map(|(_, s)| s.len()).sum(),
            Val::Scalar(_) | Val::String(_) => 0,
        };
        self.check_samples(n)
    }

    pub fn eval(&self, e: &Expr) -> Result<Val, QueryError> {
        self.check_time()?;
        if let Expr::Paren(p) = e {
            return self.eval(&p.expr);
        }
        // What this node holds is counted from here: see `Reservation::settle`.
        let mark = self.mem.begin();
        let v = match e {
            Expr::NumberLiteral(n) => Val::Scalar(vec![n.val; self.n]),
            Expr::StringLiteral(s) => Val::String(s.val.clone()),
            Expr::Paren(p) => return self.eval(&p.expr),
            Expr::VectorSelector(vs) => Val::Vector(self.selector(vs, false)?),
            Expr::MatrixSelector(_) | Expr::Subquery(_) => {
                if self.n != 1 {
                    return Err(QueryError::BadData("a range vector cannot be evaluated at more than one step".into()));
                }
                // At the top of an instant query: the samples of the one window.
                Val::Matrix(self.map_range(e, |labels, s, span| {
                    let (lo, hi) = (span.ends[0] - span.range, span.ends[0]);
                    let (a, b) = (s.partition_point(|x| x.t < lo), s.partition_point(|x| x.t <= hi));
                    Ok((a < b).then(|| (labels.clone(), s[a..b].to_vec())))
                })?)
            }
            Expr::Unary(u) => match self.eval(&u.expr)? {
                Val::Scalar(v) => Val::Scalar(v.into_iter().map(|x| -x).collect()),
                Val::Vector(rows) => {
                    let rows: Vec<Row> = rows
                        .into_iter()
                        .map(|r| Row {
                            labels: drop_name(&r.labels),
                            vals: r.vals.iter().map(|v| v.map(|x| -x)).collect(),
                        })
                        .collect();
                    check_distinct(&rows)?;
                    Val::Vector(rows)
                }
                _ => return Err(QueryError::BadData("unary minus applies to scalars and instant vectors only".into())),
            },
            Expr::Binary(b) => self.binary(b)?,
            Expr::Aggregate(a) => self.aggregate(a)?,
            Expr::Call(c) => self.call(c)?,
            Expr::Extension(_) => return Err(unsupported("extension expressions")),
        };
        self.check_points(&v)?;
        self.mem.settle(mark, v.bytes())?;
        Ok(v)
    }

    pub fn eval_vector(&self, e: &Expr) -> Result<Vec<Row>, QueryError> {
        match self.eval(e)? {
            Val::Vector(rows) => Ok(rows),
            _ => Err(QueryError::BadData(format!("expected an instant vector, got {e}"))),
        }
    }

    pub fn eval_scalar(&self, e: &Expr) -> Result<Vec<f64>, QueryError> {
        match self.eval(e)? {
            Val::Scalar(v) => Ok(v),
            _ => Err(QueryError::BadData(format!("expected a scalar, got {e}"))),
        }
    }

    pub fn eval_string(&self, e: &Expr) -> Result<String, QueryError> {
        match unparen(e) {
            Expr::StringLiteral(s) => Ok(s.val.clone()),
            _ => Err(QueryError::BadData(format!("expected a string literal, got {e}"))),
        }
    }

    /// The time a selector reads at for step time `t`, after `@` and `offset`.
    fn shifted(&self, at: &Option<AtModifier>, offset: &Option<Offset>, t: i64) -> i64 {
        let base = match at {
            None => t,
            Some(AtModifier::Start) => self.q_start,
            Some(AtModifier::End) => self.q_end,
            Some(AtModifier::At(st)) => match st.duration_since(UNIX_EPOCH) {
                Ok(d) => d.as_millis() as i64,
                Err(e) => -(e.duration().as_millis() as i64),
            },
        };
        match offset {
            None => base,
            Some(Offset::Pos(d)) => base - d.as_millis() as i64,
            Some(Offset::Neg(d)) => base + d.as_millis() as i64,
        }
    }

    /// The times a selector reads at, one per step, after `@` and `offset`.
    fn read_times(&self, at: &Option<AtModifier>, offset: &Option<Offset>) -> Vec<i64> {
        (0..self.n).map(|i| self.shifted(at, offset, self.t(i))).collect()
    }

    /// Counts samples read toward the query's limit, across the threads of one read.
    fn count_loaded(&self, loaded: &AtomicUsize, n: usize) -> Result<(), QueryError> {
        self.check_samples(loaded.fetch_add(n, Ordering::Relaxed) + n)
    }

    /// An instant selector at every step; with `timestamps`, the value is the sample's time in
    /// seconds (what `timestamp()` of a selector returns).
    pub fn selector(&self, vs: &VectorSelector, timestamps: bool) -> Result<Vec<Row>, QueryError> {
        let mut rows = Vec::new();
        self.selector_windows(vs, timestamps, usize::MAX, |w| {
            rows.extend(w);
            Ok(())
        })?;
        Ok(rows)
    }

    /// [`Ev::selector`]'s rows handed to `sink` a window of at most `window` series at a time, in
    /// label order: what lets an aggregation fold a fleet's series without holding all their rows.
    pub fn selector_windows(
        &self,
        vs: &VectorSelector,
        timestamps: bool,
        window: usize,
        mut sink: impl FnMut(Vec<Row>) -> Result<(), QueryError>,
    ) -> Result<(), QueryError> {
        let ms = matchers_of(vs).map_err(QueryError::BadData)?;
        let times = self.read_times(&vs.at, &vs.offset);
        let loaded = AtomicUsize::new(0);
        let row = |labels: &Arc<Labels>, samples: &[Sample]| {
            self.count_loaded(&loaded, samples.len())?;
            self.check_time()?;
            let mut vals = Vec::with_capacity(self.n);
            // Step times only move forward, so a cursor replaces a binary search per step.
            let mut end = 0;
            for &te in &times {
                while end < samples.len() && samples[end].t <= te {
                    end += 1;
                }
                vals.push(visible(samples, end, te).map(|x| if timestamps { x.t as f64 / 1000.0 } else { x.v }));
            }
            let row = vals.iter().any(Option::is_some).then(|| Row { labels: labels.clone(), vals });
            if let Some(r) = &row {
                self.mem.grow_output(r.bytes())?;
            }
            Ok(row)
        };
        // A window handed on whole is kept by the caller; windows of a fold are let go once folded.
        let sink = |w: Vec<Row>| {
            let bytes = if window == usize::MAX { 0 } else { w.iter().map(Held::bytes).sum() };
            sink(w)?;
            self.mem.shrink_output(bytes);
            Ok(())
        };
        self.db.select_chunks(&ms, times[0] - LOOKBACK_MS, times[self.n - 1], window, row, sink)
    }

    /// A plain instant selector over every step, as a range query answers it: for each series the
    /// (step time, value) points where [`Ev::selector`] has a value — the same lookback, stale
    /// markers, `offset` and `@` — written in one walk over its samples, without a value slot per
    /// step. Series without a point are left out; the point count is held to the query's limit.
    pub fn selector_points(&self, vs: &VectorSelector) -> Result<Series, QueryError> {
        self.check_time()?;
        let ms = matchers_of(vs).map_err(QueryError::BadData)?;
        let times = self.read_times(&vs.at, &vs.offset);
        let loaded = AtomicUsize::new(0);
        let out: Series = self.db.select_map(&ms, times[0] - LOOKBACK_MS, times[self.n - 1], |labels, samples| {
            self.count_loaded(&loaded, samples.len())?;
            self.check_time()?;
            // A sample is seen by the steps from its own time up to the next sample or the end of the
            // lookback, whichever comes first; so at most n points, and at most one per step.
            let mut points = Vec::with_capacity(self.n);
            let mut end = 0;
            for (i, &te) in times.iter().enumerate() {
                while end < samples.len() && samples[end].t <= te {
                    end += 1;
                }
                if let Some(x) = visible(samples, end, te) {
                    points.push(Sample::new(self.t(i), x.v));
                }
            }
            if points.len() < points.capacity() / 2 {
                // A sparse series must not hold a slot per step until the answer is written.
                points.shrink_to_fit();
            }
            if points.is_empty() {
                return Ok(None);
            }
            self.mem.grow_output(SERIES_BYTES + points.capacity() as u64 * SAMPLE_BYTES)?;
            Ok::<_, QueryError>(Some((labels.clone(), points)))
        })?;
        self.check_samples(out.iter().map(|(_, p)| p.len()).sum())?;
        Ok(out)
    }

    /// Calls `f(labels, samples, span)` for each series of a range vector — a range selector or a
    /// subquery — with stale markers dropped, and returns what it kept, in label order. A range
    /// selector streams from the store, large reads on several threads at once.
    pub fn map_range<T: Send + Held>(
        &self,
        e: &Expr,
        f: impl Fn(&Arc<Labels>, &[Sample], &Span) -> Result<Option<T>, QueryError> + Sync,
    ) -> Result<Vec<T>, QueryError> {
        match unparen(e) {
            Expr::MatrixSelector(m) => {
                let ms = matchers_of(&m.vs).map_err(QueryError::BadData)?;
                let span = Span { range: m.range.as_millis() as i64, ends: self.read_times(&m.vs.at, &m.vs.offset) };
                let loaded = AtomicUsize::new(0);
                self.db.select_map(&ms, span.ends[0] - span.range, span.ends[self.n - 1], |labels, samples| {
                    self.count_loaded(&loaded, samples.len())?;
                    self.check_time()?;
                    let kept = if samples.iter().any(|x| is_stale(x.v)) {
                        let fresh: Vec<Sample> = samples.iter().filter(|x| !is_stale(x.v)).copied().collect();
                        f(labels, &fresh, &span)?
                    } else {
                        f(labels, samples, &span)?
                    };
                    if let Some(k) = &kept {
                        self.mem.grow_output(k.bytes())?;
                    }
                    Ok(kept)
                })
            }
            Expr::Subquery(sq) => {
                let (series, span) = self.subquery(sq)?;
                let mut kept = Vec::new();
                for (labels, samples) in &series {
                    self.check_time()?;
                    if let Some(k) = f(labels, samples, &span)? {
                        self.mem.grow_output(k.bytes())?;
                        kept.push(k);
                    }
                }
                Ok(kept)
            }
            other => Err(QueryError::BadData(format!("expected a range vector, got {other}"))),
        }
    }

    /// A subquery: its expression evaluated at its own steps, aligned to multiples of the step as
    /// Prometheus aligns them, from the first window's start to the last window's end.
    fn subquery(&self, sq: &SubqueryExpr) -> Result<(Series, Span), QueryError> {
        let range = sq.range.as_millis() as i64;
        let step = sq.step.map(|d| d.as_millis() as i64).filter(|&s| s > 0).unwrap_or(DEFAULT_SUBQUERY_STEP_MS);
        let ends = self.read_times(&sq.at, &sq.offset);
        let lo = ends[0] - range;
        let mut start = lo.div_euclid(step) * step;
        if start < lo {
            start += step;
        }
        let end = ends[self.n - 1];
        if end < start {
            return Ok((Vec::new(), Span { range, ends }));
        }
        // Each step of the subquery is a point of every series it yields.
        self.check_samples(((end - start) / step) as usize)?;
        let inner = self.child(start, end, step);
        let series = match inner.eval(&sq.expr)? {
            Val::Vector(rows) => rows
                .into_iter()
                .map(|r| {
                    let s =
                        r.vals.iter().enumerate().filter_map(|(i, v)| v.map(|v| Sample::new(inner.t(i), v))).collect();
                    (r.labels, s)
                })
                .collect(),
            Val::Scalar(v) => vec![(
                Arc::new(Labels::default()),
                v.iter().enumerate().map(|(i, &v)| Sample::new(inner.t(i), v)).collect(),
            )],
            _ => return Err(QueryError::BadData("subqueries apply to instant vectors only".into())),
        };
        Ok((series, Span { range, ends }))
    }
}

/// Estimated bytes a value holds, as the shared query memory counts them.
pub trait Held {
    fn bytes(&self) -> u64;
}

impl Held for Row {
    fn bytes(&self) -> u64 {
        SERIES_BYTES + self.vals.len() as u64 * SAMPLE_BYTES
    }
}

impl Held for (Arc<Labels>, Vec<Sample>) {
    fn bytes(&self) -> u64 {
        SERIES_BYTES + self.1.len() as u64 * SAMPLE_BYTES
    }
}

impl Held for Vec<bool> {
    fn bytes(&self) -> u64 {
        self.len() as u64
    }
}

impl Held for Val {
    fn bytes(&self) -> u64 {
        match self {
            Val::Scalar(v) => v.len() as u64 * 8,
            Val::Vector(rows) => rows.iter().map(Held::bytes).sum(),
            Val::Matrix(m) => m.iter().map(Held::bytes).sum(),
            Val::String(s) => s.len() as u64,
        }
    }
}

// === impl Span ===

impl Span {
    /// Calls `f(step, index of the window's first sample, window)` for each step whose window
    /// holds some of `samples`.
    pub fn each_at(&self, samples: &[Sample], mut f: impl FnMut(usize, usize, &[Sample])) {
        let (mut lo, mut hi) = (0, 0);
        for (i, &end) in self.ends.iter().enumerate() {
            let start = end - self.range;
            // Window ends never move backwards, so both bounds are cursors. Windows that do not
            // overlap (a step as long as the range) start where the last one ended: skip its samples
            // at once rather than step over them again.
            if hi > lo && samples[hi - 1].t < start {
                lo = hi;
            }
            while lo < samples.len() && samples[lo].t < start {
                lo += 1;
            }
            if hi < lo {
                hi = lo;
            }
            // The window's end by galloping: a bound doubled until past `end`, then a binary search
            // below it, a dozen comparisons for a window of 30 samples instead of 30.
            let rest = &samples[hi..];
            let mut bound = 1;
            while bound < rest.len() && rest[bound - 1].t <= end {
                bound *= 2;
            }
            hi += rest[..bound.min(rest.len())].partition_point(|x| x.t <= end);
            if lo < hi {
                f(i, lo, &samples[lo..hi]);
            }
        }
    }
}

/// Collects output rows by label set, refusing two values for one label set at one step.
pub struct Out {
    n: usize,
    index: HashMap<Arc<Labels>, usize>,
    pub rows: Vec<Row>,
}

// === impl Out ===

impl Out {
    pub fn new(n: usize) -> Out {
        Out { n, index: HashMap::new(), rows: Vec::new() }
    }

    /// The row for a label set, created empty on first use.
    pub fn slot(&mut self, labels: Arc<Labels>) -> usize {
        if let Some(&i) = self.index.get(&labels) {
            return i;
        }
        let i = self.rows.len();
        self.rows.push(Row { labels: labels.clone(), vals: vec![None; self.n] });
        self.index.insert(labels, i);
        i
    }

    pub fn set(&mut self, row: usize, step: usize, v: f64) -> Result<(), QueryError> {
        let slot = &mut self.rows[row].vals[step];
        if slot.is_some() {
            return Err(same_labelset());
        }
        *slot = Some(v);
        Ok(())
    }

    pub fn finish(self) -> Vec<Row> {
        self.rows.into_iter().filter(|r| r.vals.iter().any(Option::is_some)).collect()
    }
}

pub fn same_labelset() -> QueryError {
    QueryError::Execution("vector cannot contain metrics with the same labelset".into())
}

/// Prometheus' check on whole results: no two series with one label set.
pub fn check_distinct(rows: &[Row]) -> Result<(), QueryError> {
    let mut seen = std::collections::HashSet::with_capacity(rows.len());
    for r in rows {
        if !seen.insert(&*r.labels) {
            return Err(same_labelset());
        }
    }
    Ok(())
}

pub fn drop_name(l: &Arc<Labels>) -> Arc<Labels> {
    if l.get(METRIC_NAME).is_some() { Arc::new(l.without_name()) } else { l.clone() }
}

pub fn unparen(mut e: &Expr) -> &Expr {
    while let Expr::Paren(p) = e {
        e = &p.expr;
    }
    e
}

pub fn unsupported(what: &str) -> QueryError {
    QueryError::BadData(format!("{what} are not supported"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_window_is_found_as_a_scan_would_find_it() {
        // Uneven sample times with gaps and a sample on many window edges; windows shorter than,
        // as long as and longer than the step.
        let samples: Vec<Sample> = (0..3000i64)
            .filter(|i| i % 97 > 5)
            .map(|i| Sample::new(i * 10_000 + (i % 3) * 2_500 * (i % 5 != 0) as i64, i as f64))
            .collect();
        for (range, step) in
            [(300_000, 300_000), (300_000, 60_000), (60_000, 300_000), (10_000, 10_000), (3_600_000, 25_000)]
        {
            let span = Span { range, ends: (-5..).map(|i| i * step).take_while(|&t| t < 31_000_000).collect() };
            let mut got = Vec::new();
            span.each_at(&samples, |i, lo, s| got.push((i, lo, s.len())));
            let mut want = Vec::new();
            for (i, &end) in span.ends.iter().enumerate() {
                let inside: Vec<usize> =
                    (0..samples.len()).filter(|&k| samples[k].t >= end - range && samples[k].t <= end).collect();
                if let (Some(&lo), Some(&hi)) = (inside.first(), inside.last()) {
                    want.push((i, lo, hi - lo + 1));
                }
            }
            assert!(want.len() > 50, "range {range}, step {step}: too few windows");
            assert_eq!(got, want, "range {range}, step {step}");
        }
    }
}
