//! Aggregation operators (`sum`, `avg`, `topk`, `count_values`, …) with `by`/`without`, computed
//! per step in the order and with the arithmetic of Prometheus 2, so sums and ties come out the same.

use super::QueryError;
use super::eval::{Ev, Out, Row, Val, unparen, unsupported};
use super::functions::{format_value, quantile};
use argus_model::{Labels, METRIC_NAME};
use promql_parser::parser::token::{
    T_AVG, T_BOTTOMK, T_COUNT, T_COUNT_VALUES, T_GROUP, T_MAX, T_MIN, T_QUANTILE, T_STDDEV, T_STDVAR, T_SUM, T_TOPK,
};
use promql_parser::parser::{AggregateExpr, Expr, LabelModifier, VectorSelector};
use std::collections::HashMap;
use std::sync::Arc;

/// How rows are grouped: by the listed labels, or by all but the listed ones and the name.
struct Grouping<'a> {
    without: bool,
    names: &'a [String],
}

impl Grouping<'_> {
    fn labels(&self, l: &Labels) -> Labels {
        let keep = |name: &str| {
            let listed = self.names.iter().any(|n| n == name);
            if self.without { !listed && name != METRIC_NAME } else { listed }
        };
        Labels::from_pairs(l.iter().filter(|x| keep(&x.name)).map(|x| (x.name.clone(), x.value.clone())))
    }
}

/// Series folded at a time by [`Ev::fold_selector`]: 2,048 rows of a 6-hour panel at a 30-second step
/// are ~24 MiB, where a fleet of 37,736 GPUs held ~415 MiB.
pub(super) const FOLD_WINDOW: usize = 2048;

/// One group's running state at one step (24 bytes: [`Ev::fold_selector`] keeps one per group and
/// step). `quantile`'s members are kept beside it by [`Ev::fold`].
#[derive(Clone, Copy, Default)]
struct Acc {
    value: f64,
    mean: f64,
    count: usize,
}

// === impl Ev ===

impl Ev<'_> {
    pub fn aggregate(&self, a: &AggregateExpr) -> Result<Val, QueryError> {
        let op = a.op.id();
        let (without, names): (bool, &[String]) = match &a.modifier {
            Some(LabelModifier::Include(ls)) => (false, &ls.labels),
            Some(LabelModifier::Exclude(ls)) => (true, &ls.labels),
            None => (false, &[]),
        };
        let g = Grouping { without, names };
        if op == T_COUNT_VALUES {
            let label = match &a.param {
                Some(p) => self.eval_string(p)?,
                None => return Err(QueryError::BadData("count_values needs a label name".into())),
            };
            let rows = self.eval_vector(&a.expr)?;
            return self.count_values(&label, &g, rows).map(Val::Vector);
        }
        let param = match (&a.param, op) {
            (Some(p), T_TOPK | T_BOTTOMK | T_QUANTILE) => Some(self.eval_scalar(p)?),
            (None, T_SUM | T_AVG | T_COUNT | T_MIN | T_MAX | T_GROUP | T_STDDEV | T_STDVAR) => None,
            _ => return Err(unsupported(&format!("{} aggregations", a.op))),
        };
        // Every aggregation without a parameter (all but topk, bottomk and quantile) folds as it reads.
        if param.is_none()
            && let Expr::VectorSelector(vs) = unparen(&a.expr)
        {
            return self.fold_selector(op, &g, vs).map(Val::Vector);
        }
        let rows = self.eval_vector(&a.expr)?;
        match op {
            T_TOPK | T_BOTTOMK => self.top(op == T_TOPK, &g, rows, &param.unwrap_or_default()).map(Val::Vector),
            _ => self.fold(op, &g, rows, param.as_deref()).map(Val::Vector),
        }
    }

    /// An aggregation straight over a selector, its series folded a window at a time as they are
    /// read: each group keeps one accumulator per step, so a fleet-wide panel holds its groups'
    /// accumulators and one window's rows rather than a value slot for every series and step (by
    /// host over 37,736 GPUs: 4,717 groups, 24 bytes per group and step, against 16 bytes per series
    /// and step). Groups come in the order of their first series and, within a step, values are
    /// added in label order, as [`Ev::fold`] adds them.
    fn fold_selector(&self, op: u16, g: &Grouping, vs: &VectorSelector) -> Result<Vec<Row>, QueryError> {
        let mut index: HashMap<Labels, usize> = HashMap::new();
        let mut groups: Vec<(Labels, Vec<Acc>)> = Vec::new();
        self.selector_windows(vs, false, FOLD_WINDOW, |rows| {
            self.check_time()?;
            for r in &rows {
                let l = g.labels(&r.labels);
                let gi = match index.get(&l) {
                    Some(&gi) => gi,
                    None => {
                        index.insert(l.clone(), groups.len());
                        groups.push((l, vec![Acc::default(); self.n]));
                        groups.len() - 1
                    }
                };
                for (acc, v) in groups[gi].1.iter_mut().zip(&r.vals) {
                    if let Some(v) = *v {
                        accumulate(op, acc, v);
                    }
                }
            }
            Ok(())
        })?;
        drop(index);
        // Each group's accumulators are let go as its row is made.
        Ok(groups
            .into_iter()
            .filter_map(|(l, accs)| {
                let vals: Vec<Option<f64>> = accs.iter().map(|a| (a.count > 0).then(|| result(op, a))).collect();
                vals.iter().any(Option::is_some).then(|| Row { labels: Arc::new(l), vals })
            })
            .collect())
    }

    /// Aggregations with one output series per group.
    fn fold(&self, op: u16, g: &Grouping, rows: Vec<Row>, param: Option<&[f64]>) -> Result<Vec<Row>, QueryError> {
        let mut out = Out::new(self.n);
        let mut index: HashMap<Labels, usize> = HashMap::new();
        let group: Vec<usize> = rows
            .iter()
            .map(|r| {
                let l = g.labels(&r.labels);
                let next = index.len();
                *index.entry(l.clone()).or_insert_with(|| {
                    out.slot(Arc::new(l));
                    next
                })
            })
            .collect();
        let mut accs: Vec<Acc> = vec![Acc::default(); index.len()];
        // `quantile`'s members per group at the current step.
        let mut members: Vec<Vec<f64>> = if op == T_QUANTILE { vec![Vec::new(); index.len()] } else { Vec::new() };
        for i in 0..self.n {
            self.check_time()?;
            accs.iter_mut().for_each(|a| a.count = 0);
            members.iter_mut().for_each(Vec::clear);
            for (r, &gi) in rows.iter().zip(&group) {
                let Some(v) = r.vals[i] else { continue };
                accumulate(op, &mut accs[gi], v);
                if let Some(m) = members.get_mut(gi) {
                    m.push(v);
                }
            }
            for (gi, acc) in accs.iter().enumerate() {
                if acc.count == 0 {
                    continue;
                }
                let v = match members.get_mut(gi) {
                    Some(m) => quantile(param.map_or(f64::NAN, |p| p[i]), m),
                    None => result(op, acc),
                };
                out.set(gi, i, v)?;
            }
        }
        Ok(out.finish())
    }

    /// `count_values`: groups also by the value, written as a label.
    fn count_values(&self, label: &str, g: &Grouping, rows: Vec<Row>) -> Result<Vec<Row>, QueryError> {
        if !argus_model::valid_label_name(label) {
            return Err(QueryError::Execution(format!("invalid label name {label:?}")));
        }
        let mut names = g.names.to_vec();
        if !g.without {
            names.push(label.to_string());
        }
        let g = Grouping { without: g.without, names: &names };
        let mut out = Out::new(self.n);
        for i in 0..self.n {
            self.check_time()?;
            let mut counts: Vec<(usize, f64)> = Vec::new();
            for r in &rows {
                let Some(v) = r.vals[i] else { continue };
                let mut l = (*r.labels).clone();
                l.set(label, &format_value(v));
                let slot = out.slot(Arc::new(g.labels(&l)));
                match counts.iter_mut().find(|c| c.0 == slot) {
                    Some(c) => c.1 += 1.0,
                    None => counts.push((slot, 1.0)),
                }
            }
            for (slot, c) in counts {
                out.set(slot, i, c)?;
            }
        }
        Ok(out.finish())
    }

    /// `topk`/`bottomk`: the selected input series themselves, with Prometheus' heap, so ties
    /// resolve as there.
    fn top(&self, top: bool, g: &Grouping, rows: Vec<Row>, k: &[f64]) -> Result<Vec<Row>, QueryError> {
        let mut index: HashMap<Labels, usize> = HashMap::new();
        let group: Vec<usize> = rows
            .iter()
            .map(|r| {
                let next = index.len();
                *index.entry(g.labels(&r.labels)).or_insert(next)
            })
            .collect();
        // `less(a, b)`: a sorts before b in the heap; NaN always first, so NaNs are replaced first.
        let less = |a: f64, b: f64| a.is_nan() || if top { a < b } else { a > b };
        let mut vals: Vec<Vec<Option<f64>>> = vec![vec![None; self.n]; rows.len()];
        // For an instant query the answer keeps Prometheus' order: groups in order of appearance,
        // each sorted best first.
        let mut order: Vec<usize> = Vec::new();
        for i in 0..self.n {
            self.check_time()?;
            let kf = k[i];
            if !(-9.223_372_036_854_776e18..=9.223_372_036_854_776e18).contains(&kf) {
                return Err(QueryError::Execution(format!("Scalar value {kf} overflows int64")));
            }
            let k = kf as i64;
            if k < 1 {
                continue;
            }
            let k = k as usize;
            let mut heaps: Vec<Vec<(f64, usize)>> = vec![Vec::new(); index.len()];
            let mut seen: Vec<usize> = Vec::new();
            for (j, r) in rows.iter().enumerate() {
                let Some(v) = r.vals[i] else { continue };
                let h = &mut heaps[group[j]];
                if h.is_empty() {
                    seen.push(group[j]);
                    h.push((v, j));
                    continue;
                }
                let replace = if top { h[0].0 < v } else { h[0].0 > v };
                if h.len() < k || replace || h[0].0.is_nan() {
                    if h.len() == k {
                        if k == 1 {
                            h[0] = (v, j);
                            continue;
                        }
                        heap_pop(h, &less);
                    }
                    heap_push(h, (v, j), &less);
                }
            }
            for gi in seen {
                let h = &mut heaps[gi];
                // Reverse heap order: best first.
                h.sort_by(|a, b| {
                    if less(b.0, a.0) {
                        std::cmp::Ordering::Less
                    } else if less(a.0, b.0) {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Equal
                    }
                });
                for &(v, j) in h.iter() {
                    vals[j][i] = Some(v);
                    if self.n == 1 {
                        order.push(j);
                    }
                }
            }
        }
        let mut rows: Vec<Option<Row>> = rows
            .into_iter()
            .zip(vals)
            .map(|(r, vals)| vals.iter().any(Option::is_some).then_some(Row { labels: r.labels, vals }))
            .collect();
        if self.n == 1 {
            return Ok(order.into_iter().filter_map(|j| rows[j].take()).collect());
        }
        Ok(rows.into_iter().flatten().collect())
    }
}

/// Go's `container/heap` push and pop, so equal values settle where Prometheus' do.
fn heap_push(h: &mut Vec<(f64, usize)>, x: (f64, usize), less: &impl Fn(f64, f64) -> bool) {
    h.push(x);
    let mut j = h.len() - 1;
    while j > 0 {
        let i = (j - 1) / 2;
        if !less(h[j].0, h[i].0) {
            break;
        }
        h.swap(i, j);
        j = i;
    }
}

fn heap_pop(h: &mut Vec<(f64, usize)>, less: &impl Fn(f64, f64) -> bool) {
    let n = h.len() - 1;
    h.swap(0, n);
    let mut i = 0;
    loop {
        let j1 = 2 * i + 1;
        if j1 >= n {
            break;
        }
        let mut j = j1;
        if j1 + 1 < n && less(h[j1 + 1].0, h[j1].0) {
            j = j1 + 1;
        }
        if !less(h[j].0, h[i].0) {
            break;
        }
        h.swap(i, j);
        i = j;
    }
    h.pop();
}

/// Adds value `v` to a group's state at one step, with Prometheus 2's arithmetic for `op`.
fn accumulate(op: u16, acc: &mut Acc, v: f64) {
    if acc.count == 0 {
        *acc = Acc { value: v, mean: v, count: 1 };
        match op {
            T_STDDEV | T_STDVAR => acc.value = 0.0,
            T_GROUP => acc.value = 1.0,
            _ => {}
        }
        return;
    }
    acc.count += 1;
    let n = acc.count as f64;
    match op {
        T_SUM => acc.value += v,
        T_AVG => {
            // Prometheus keeps an infinite mean rather than turning it into NaN.
            if acc.mean.is_infinite()
                && ((v.is_infinite() && (acc.mean > 0.0) == (v > 0.0)) || (!v.is_infinite() && !v.is_nan()))
            {
                return;
            }
            acc.mean += v / n - acc.mean / n;
        }
        T_MAX if acc.value < v || acc.value.is_nan() => acc.value = v,
        T_MIN if acc.value > v || acc.value.is_nan() => acc.value = v,
        T_STDDEV | T_STDVAR => {
            let delta = v - acc.mean;
            acc.mean += delta / n;
            acc.value += delta * (v - acc.mean);
        }
        _ => {}
    }
}

/// A group's value at one step once every member is added (`count > 0`); not for `quantile`, whose
/// members [`Ev::fold`] keeps.
fn result(op: u16, acc: &Acc) -> f64 {
    let n = acc.count as f64;
    match op {
        T_AVG => acc.mean,
        T_COUNT => n,
        T_STDVAR => acc.value / n,
        T_STDDEV => (acc.value / n).sqrt(),
        _ => acc.value,
    }
}
