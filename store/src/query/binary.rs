//! Binary operators: arithmetic, comparison (with `bool`) and set operators, between scalars and
//! vectors, with `on`/`ignoring` and `group_left`/`group_right` matching, as Prometheus 2 does them.

use super::QueryError;
use super::eval::{Ev, Out, Row, Val, drop_name};
use argus_model::{Labels, METRIC_NAME};
use promql_parser::parser::token::{
    T_ADD, T_ATAN2, T_DIV, T_EQLC, T_GTE, T_GTR, T_LAND, T_LOR, T_LSS, T_LTE, T_LUNLESS, T_MOD, T_MUL, T_NEQ, T_POW,
    T_SUB, TokenId,
};
use promql_parser::parser::{BinaryExpr, LabelModifier, VectorMatchCardinality};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// `(value, keep)`: for comparisons the value is the left operand's and `keep` the outcome.
fn apply(op: TokenId, l: f64, r: f64) -> Result<(f64, bool), QueryError> {
    Ok(match op {
        T_ADD => (l + r, true),
        T_SUB => (l - r, true),
        T_MUL => (l * r, true),
        T_DIV => (l / r, true),
        T_POW => (l.powf(r), true),
        // Rust's `%` on floats is C's fmod, whose sign follows the dividend, as Go's math.Mod.
        T_MOD => (l % r, true),
        T_ATAN2 => (l.atan2(r), true),
        T_EQLC => (l, l == r),
        T_NEQ => (l, l != r),
        T_GTR => (l, l > r),
        T_LSS => (l, l < r),
        T_GTE => (l, l >= r),
        T_LTE => (l, l <= r),
        _ => return Err(QueryError::BadData(format!("operator {} is not allowed here", token_name(op)))),
    })
}

fn is_comparison(op: TokenId) -> bool {
    matches!(op, T_EQLC | T_NEQ | T_GTR | T_LSS | T_GTE | T_LTE)
}

/// Arithmetic drops the metric name; comparisons keep it.
fn drops_name(op: TokenId) -> bool {
    matches!(op, T_ADD | T_SUB | T_MUL | T_DIV | T_POW | T_MOD)
}

fn token_name(op: TokenId) -> String {
    promql_parser::parser::token::TokenType::new(op).to_string()
}

/// How series of the two sides are matched: by the labels listed with `on`, or by all labels but
/// the name and those listed with `ignoring`.
struct Matching<'a> {
    on: bool,
    names: &'a [String],
}

impl Matching<'_> {
    /// The match key of a series: `name=value` pairs joined with a byte no label contains.
    fn signature(&self, l: &Labels) -> String {
        let mut s = String::new();
        for x in l.iter() {
            let listed = self.names.contains(&x.name);
            let used = if self.on { listed } else { !listed && x.name != METRIC_NAME };
            if used {
                s.push_str(&x.name);
                s.push('\u{ff}');
                s.push_str(&x.value);
                s.push('\u{ff}');
            }
        }
        s
    }
}

// === impl Ev ===

impl Ev<'_> {
    pub fn binary(&self, b: &BinaryExpr) -> Result<Val, QueryError> {
        let op = b.op.id();
        let modifier = b.modifier.as_ref();
        if modifier.is_some_and(|m| m.fill_values.lhs.is_some() || m.fill_values.rhs.is_some()) {
            return Err(super::eval::unsupported("fill modifiers on binary operators"));
        }
        let return_bool = modifier.is_some_and(|m| m.return_bool);
        let lhs = self.eval(&b.lhs)?;
        let rhs = self.eval(&b.rhs)?;
        match (lhs, rhs) {
            (Val::Scalar(l), Val::Scalar(r)) => {
                let mut out = Vec::with_capacity(self.n);
                for (x, y) in l.into_iter().zip(r) {
                    let (v, keep) = apply(op, x, y)?;
                    out.push(if is_comparison(op) { keep as u8 as f64 } else { v });
                }
                Ok(Val::Scalar(out))
            }
            (Val::Vector(rows), Val::Scalar(s)) => {
                self.vector_scalar(op, rows, &s, false, return_bool).map(Val::Vector)
            }
            (Val::Scalar(s), Val::Vector(rows)) => self.vector_scalar(op, rows, &s, true, return_bool).map(Val::Vector),
            (Val::Vector(l), Val::Vector(r)) => {
                let (on, names): (bool, &[String]) = match modifier.and_then(|m| m.matching.as_ref()) {
                    Some(LabelModifier::Include(ls)) => (true, &ls.labels),
                    Some(LabelModifier::Exclude(ls)) => (false, &ls.labels),
                    None => (false, &[]),
                };
                let m = Matching { on, names };
                match op {
                    T_LAND | T_LOR | T_LUNLESS => self.set_op(op, l, r, &m).map(Val::Vector),
                    _ => {
                        let card = modifier.map(|m| m.card.clone()).unwrap_or(VectorMatchCardinality::OneToOne);
                        self.vector_vector(op, l, r, &m, &card, return_bool).map(Val::Vector)
                    }
                }
            }
            _ => Err(QueryError::BadData(format!(
                "operator {} applies to scalars and instant vectors only",
                token_name(op)
            ))),
        }
    }

    fn vector_scalar(
        &self,
        op: TokenId,
        rows: Vec<Row>,
        s: &[f64],
        swap: bool,
        return_bool: bool,
    ) -> Result<Vec<Row>, QueryError> {
        let mut out = Out::new(self.n);
        for r in rows {
            self.check_time()?;
            let labels = if drops_name(op) || return_bool { drop_name(&r.labels) } else { r.labels.clone() };
            let slot = out.slot(labels);
            for (i, v) in r.vals.iter().enumerate() {
                let Some(v) = *v else { continue };
                let (lv, rv) = if swap { (s[i], v) } else { (v, s[i]) };
                let (mut value, mut keep) = apply(op, lv, rv)?;
                if is_comparison(op) && swap {
                    value = rv;
                }
                if return_bool {
                    value = keep as u8 as f64;
                    keep = true;
                }
                if keep {
                    out.set(slot, i, value)?;
                }
            }
        }
        Ok(out.finish())
    }

    fn set_op(&self, op: TokenId, l: Vec<Row>, r: Vec<Row>, m: &Matching) -> Result<Vec<Row>, QueryError> {
        let lsig: Vec<String> = l.iter().map(|x| m.signature(&x.labels)).collect();
        let rsig: Vec<String> = r.iter().map(|x| m.signature(&x.labels)).collect();
        let mut out = Out::new(self.n);
        let lslot: Vec<usize> = l.iter().map(|x| out.slot(x.labels.clone())).collect();
        let mut rslot: Vec<Option<usize>> = vec![None; r.len()];
        for i in 0..self.n {
            self.check_time()?;
            let lp: Vec<usize> = (0..l.len()).filter(|&j| l[j].vals[i].is_some()).collect();
            let rp: Vec<usize> = (0..r.len()).filter(|&j| r[j].vals[i].is_some()).collect();
            match op {
                T_LAND => {
                    if lp.is_empty() || rp.is_empty() {
                        continue;
                    }
                    let sigs: HashSet<&str> = rp.iter().map(|&j| rsig[j].as_str()).collect();
                    for &j in lp.iter().filter(|&&j| sigs.contains(lsig[j].as_str())) {
                        out.set(lslot[j], i, l[j].vals[i].unwrap_or_default())?;
                    }
                }
                T_LOR => {
                    let sigs: HashSet<&str> = lp.iter().map(|&j| lsig[j].as_str()).collect();
                    for &j in &lp {
                        out.set(lslot[j], i, l[j].vals[i].unwrap_or_default())?;
                    }
                    for &j in rp.iter().filter(|&&j| !sigs.contains(rsig[j].as_str())) {
                        let slot = *rslot[j].get_or_insert_with(|| out.slot(r[j].labels.clone()));
                        out.set(slot, i, r[j].vals[i].unwrap_or_default())?;
                    }
                }
                _ => {
                    let sigs: HashSet<&str> = rp.iter().map(|&j| rsig[j].as_str()).collect();
                    for &j in lp.iter().filter(|&&j| !sigs.contains(lsig[j].as_str())) {
                        out.set(lslot[j], i, l[j].vals[i].unwrap_or_default())?;
                    }
                }
            }
        }
        Ok(out.finish())
    }

    fn vector_vector(
        &self,
        op: TokenId,
        l: Vec<Row>,
        r: Vec<Row>,
        m: &Matching,
        card: &VectorMatchCardinality,
        return_bool: bool,
    ) -> Result<Vec<Row>, QueryError> {
        // The "many" side leads; with group_right that is the right-hand side.
        let one_to_many = matches!(card, VectorMatchCardinality::OneToMany(_));
        let (many, one) = if one_to_many { (&r, &l) } else { (&l, &r) };
        let include: &[String] = match card {
            VectorMatchCardinality::ManyToOne(ls) | VectorMatchCardinality::OneToMany(ls) => &ls.labels,
            _ => &[],
        };
        let one_to_one = matches!(card, VectorMatchCardinality::OneToOne);
        // Labels never change between steps, so match keys and candidate pairs are worked out once;
        // each step then only looks at which rows have a value.
        let mut ids: HashMap<String, usize> = HashMap::new();
        let mut intern = |s: String| {
            let next = ids.len();
            *ids.entry(s).or_insert(next)
        };
        let msig: Vec<usize> = many.iter().map(|x| intern(m.signature(&x.labels))).collect();
        let osig: Vec<usize> = one.iter().map(|x| intern(m.signature(&x.labels))).collect();
        let mut ones_by_sig: Vec<Vec<usize>> = vec![Vec::new(); ids.len()];
        for (k, &sig) in osig.iter().enumerate() {
            ones_by_sig[sig].push(k);
        }
        let shared: Vec<usize> = (0..ones_by_sig.len()).filter(|&s| ones_by_sig[s].len() > 1).collect();
        let candidates: Vec<usize> = (0..many.len()).filter(|&j| !ones_by_sig[msig[j]].is_empty()).collect();
        if one_to_one && shared.is_empty() {
            let mut seen = vec![false; ids.len()];
            if candidates.iter().all(|&j| !std::mem::replace(&mut seen[msig[j]], true)) {
                let labels: Vec<Labels> = candidates
                    .iter()
                    .map(|&j| {
                        result_labels(
                            &many[j].labels,
                            &one[ones_by_sig[msig[j]][0]].labels,
                            op,
                            m,
                            true,
                            &[],
                            return_bool,
                        )
                    })
                    .collect();
                if labels.iter().collect::<std::collections::HashSet<_>>().len() == labels.len() {
                    let pairs = candidates.iter().map(|&j| (&many[j], &one[ones_by_sig[msig[j]][0]]));
                    return self.row_by_row(op, pairs.zip(labels), return_bool);
                }
            }
        }
        let mut out = Out::new(self.n);
        // Per many-side row: the one-side row it last matched and the output row of that pair.
        let mut pair: Vec<Option<(usize, usize)>> = vec![None; many.len()];
        let mut sig_stamp: Vec<usize> = vec![0; ids.len()];
        let mut slot_stamp: Vec<usize> = Vec::new();
        for i in 0..self.n {
            self.check_time()?;
            let stamp = i + 1;
            if !many.iter().any(|x| x.vals[i].is_some()) || !one.iter().any(|x| x.vals[i].is_some()) {
                continue;
            }
            for &sig in &shared {
                let present: Vec<usize> =
                    ones_by_sig[sig].iter().copied().filter(|&k| one[k].vals[i].is_some()).collect();
                if present.len() > 1 {
                    let (a, b) = (&one[present[1]].labels, &one[present[0]].labels);
                    return Err(QueryError::Execution(format!(
                        "found duplicate series for the match group {} on the {} hand-side of the operation: [{a}, {b}];many-to-many matching not allowed: matching labels must be unique on one side",
                        match_group(a, m),
                        if one_to_many { "left" } else { "right" },
                    )));
                }
            }
            for &j in &candidates {
                let Some(mv) = many[j].vals[i] else { continue };
                let Some(k) = ones_by_sig[msig[j]].iter().copied().find(|&k| one[k].vals[i].is_some()) else {
                    continue;
                };
                let ov = one[k].vals[i].unwrap_or_default();
                let (vl, vr) = if one_to_many { (ov, mv) } else { (mv, ov) };
                let (mut value, keep) = apply(op, vl, vr)?;
                if return_bool {
                    value = keep as u8 as f64;
                } else if !keep {
                    continue;
                }
                let slot = match pair[j] {
                    Some((pk, slot)) if pk == k => slot,
                    _ => {
                        let labels =
                            result_labels(&many[j].labels, &one[k].labels, op, m, one_to_one, include, return_bool);
                        let slot = out.slot(Arc::new(labels));
                        pair[j] = Some((k, slot));
                        slot
                    }
                };
                if one_to_one {
                    if sig_stamp[msig[j]] == stamp {
                        return Err(QueryError::Execution(
                            "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                                .into(),
                        ));
                    }
                    sig_stamp[msig[j]] = stamp;
                } else {
                    // Output labels carry the match labels, so one output row belongs to one match group.
                    if slot_stamp.len() <= slot {
                        slot_stamp.resize(slot + 1, 0);
                    }
                    if slot_stamp[slot] == stamp {
                        return Err(QueryError::Execution(
                            "multiple matches for labels: grouping labels must ensure unique matches".into(),
                        ));
                    }
                    slot_stamp[slot] = stamp;
                }
                out.set(slot, i, value)?;
            }
        }
        Ok(out.finish())
    }

    /// One-to-one matching where each match key is on each side once (the usual `a + b`) and the
    /// results' labels differ: every pair of rows is fixed for all steps, so each pair is combined
    /// value by value, without the step-by-step bookkeeping that finds duplicate matches. Rows come
    /// out in the order the general loop gives them: by the first step with a value, then by the
    /// left-hand row.
    fn row_by_row<'r>(
        &self,
        op: TokenId,
        pairs: impl Iterator<Item = ((&'r Row, &'r Row), Labels)>,
        return_bool: bool,
    ) -> Result<Vec<Row>, QueryError> {
        let mut rows: Vec<(usize, Row)> = Vec::new();
        for (n, ((l, r), labels)) in pairs.enumerate() {
            if n % 64 == 0 {
                self.check_time()?;
            }
            let (mut vals, mut first) = (vec![None; self.n], usize::MAX);
            for (i, (lv, rv)) in l.vals.iter().zip(&r.vals).enumerate() {
                let (Some(lv), Some(rv)) = (*lv, *rv) else { continue };
                let (mut value, keep) = apply(op, lv, rv)?;
                if return_bool {
                    value = keep as u8 as f64;
                } else if !keep {
                    continue;
                }
                vals[i] = Some(value);
                first = first.min(i);
            }
            if first != usize::MAX {
                rows.push((first, Row { labels: Arc::new(labels), vals }));
            }
        }
        // Stable: rows first seen at one step keep the left-hand side's order.
        rows.sort_by_key(|(first, _)| *first);
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }
}

/// The labels the match key is made of, for error messages.
fn match_group(l: &Labels, m: &Matching) -> Labels {
    Labels::from_pairs(
        l.iter()
            .filter(|x| {
                let listed = m.names.contains(&x.name);
                if m.on { listed } else { !listed && x.name != METRIC_NAME }
            })
            .map(|x| (x.name.clone(), x.value.clone())),
    )
}

/// The labels of a result series: the "many" side's, less the name for arithmetic, narrowed to the
/// match labels for one-to-one matching, plus the `group_left`/`group_right` labels of the "one" side.
fn result_labels(
    many: &Labels,
    one: &Labels,
    op: TokenId,
    m: &Matching,
    one_to_one: bool,
    include: &[String],
    return_bool: bool,
) -> Labels {
    let mut pairs: Vec<(String, String)> = many
        .iter()
        .filter(|x| !(drops_name(op) && x.name == METRIC_NAME))
        .filter(|x| {
            if !one_to_one {
                return true;
            }
            let listed = m.names.contains(&x.name);
            if m.on { listed } else { !listed }
        })
        .map(|x| (x.name.clone(), x.value.clone()))
        .collect();
    for name in include {
        pairs.retain(|(n, _)| n != name);
        if let Some(v) = one.get(name) {
            pairs.push((name.clone(), v.to_string()));
        }
    }
    let mut l = Labels::from_pairs(pairs);
    if return_bool {
        l = l.without_name();
    }
    l
}
