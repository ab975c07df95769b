//! An in-memory inverted index from label pairs to sorted series ids, and matcher evaluation over it.
//! The head keeps one; blocks keep theirs on disk (`block::reader`) and share the matcher evaluation.

use argus_model::{Labels, MatchOp, Matcher};
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Default)]
pub struct Postings {
    by_label: HashMap<String, BTreeMap<String, Vec<u32>>>,
    count: u32,
}

impl Postings {
    /// Adds a series. **Invariant:** ids are added in increasing order, so each list stays sorted.
    pub fn add(&mut self, id: u32, labels: &Labels) {
        for l in labels {
            self.by_label.entry(l.name.clone()).or_default().entry(l.value.clone()).or_default().push(id);
        }
        self.count = self.count.max(id + 1);
    }

    /// Adds a series whose id may be lower than others already present (a series coming back).
    pub fn insert(&mut self, id: u32, labels: &Labels) {
        for l in labels {
            let list = self.by_label.entry(l.name.clone()).or_default().entry(l.value.clone()).or_default();
            if let Err(i) = list.binary_search(&id) {
                list.insert(i, id);
            }
        }
        self.count = self.count.max(id + 1);
    }

    /// How many series carry `name="value"`.
    pub fn count(&self, name: &str, value: &str) -> usize {
        self.by_label.get(name).and_then(|v| v.get(value)).map_or(0, Vec::len)
    }

    /// Removes every id in `gone` from every list, dropping lists and names left empty.
    pub fn remove(&mut self, gone: &std::collections::HashSet<u32>) {
        self.by_label.retain(|_, values| {
            values.retain(|_, list| {
                list.retain(|id| !gone.contains(id));
                !list.is_empty()
            });
            !values.is_empty()
        });
    }

    /// Ids of the series selected by all matchers, sorted. With no matcher that excludes the empty
    /// value, every id is a candidate (the caller decides whether to allow such selectors).
    pub fn select(&self, matchers: &[Matcher]) -> Vec<u32> {
        let all = |m: &Matcher, want| Ok::<_, std::convert::Infallible>(self.union_matching(m, want));
        select_with(self.count, matchers, all).unwrap_or_else(|e| match e {})
    }

    /// Union of the lists whose value the matcher accepts (`want` true) or rejects (`want` false).
    fn union_matching(&self, m: &Matcher, want: bool) -> Vec<u32> {
        let Some(values) = self.by_label.get(&m.name) else { return Vec::new() };
        if m.op == MatchOp::Equal && want {
            return values.get(&m.value).cloned().unwrap_or_default();
        }
        let lists: Vec<&Vec<u32>> = values.iter().filter(|(v, _)| m.matches(v) == want).map(|(_, l)| l).collect();
        union(&lists)
    }
}

/// Ids among `0..count` selected by all matchers, sorted, given each matcher's union of the lists
/// whose value it accepts (`want` true) or rejects (`want` false): the one matcher evaluation for
/// the head's postings and a block's mapped ones.
pub fn select_with<E>(
    count: u32,
    matchers: &[Matcher],
    mut union_matching: impl FnMut(&Matcher, bool) -> Result<Vec<u32>, E>,
) -> Result<Vec<u32>, E> {
    let mut result: Option<Vec<u32>> = None;
    // Positive matchers first: they narrow the candidates fastest.
    for m in matchers.iter().filter(|m| !m.matches_empty()) {
        let ids = union_matching(m, true)?;
        result = Some(match result {
            None => ids,
            Some(r) => intersect(&r, &ids),
        });
        if result.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
    }
    let mut r = result.unwrap_or_else(|| (0..count).collect());
    for m in matchers.iter().filter(|m| m.matches_empty()) {
        // Series carrying a value the matcher rejects drop out; series lacking the label stay.
        let drop = union_matching(m, false)?;
        r = subtract(&r, &drop);
    }
    Ok(r)
}

pub fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

pub fn subtract(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut j = 0;
    a.iter()
        .copied()
        .filter(|x| {
            while j < b.len() && b[j] < *x {
                j += 1;
            }
            !(j < b.len() && b[j] == *x)
        })
        .collect()
}

pub fn union(lists: &[&Vec<u32>]) -> Vec<u32> {
    match lists {
        [] => Vec::new(),
        [one] => (*one).clone(),
        _ => {
            let mut out: Vec<u32> = lists.iter().flat_map(|l| l.iter().copied()).collect();
            out.sort_unstable();
            out.dedup();
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> Postings {
        let mut p = Postings::default();
        let series = [
            [("__name__", "gpu_util"), ("host", "a"), ("gpu", "0")],
            [("__name__", "gpu_util"), ("host", "a"), ("gpu", "1")],
            [("__name__", "gpu_util"), ("host", "b"), ("gpu", "0")],
            [("__name__", "host_load"), ("host", "b"), ("gpu", "")],
        ];
        for (i, s) in series.iter().enumerate() {
            p.add(i as u32, &Labels::from_pairs(s.iter().copied()));
        }
        p
    }

    fn check(matchers: &[(&str, MatchOp, &str)], want: &[u32]) {
        let ms: Vec<Matcher> = matchers.iter().map(|(n, o, v)| Matcher::new(*n, *o, *v).unwrap()).collect();
        assert_eq!(index().select(&ms), want, "{matchers:?}");
    }

    #[test]
    fn matchers() {
        use MatchOp::*;
        check(&[("__name__", Equal, "gpu_util")], &[0, 1, 2]);
        check(&[("__name__", Equal, "gpu_util"), ("host", Equal, "a")], &[0, 1]);
        check(&[("__name__", Equal, "gpu_util"), ("gpu", NotEqual, "0")], &[1]);
        check(&[("host", RegexMatch, "a|b"), ("gpu", Equal, "")], &[3]);
        check(&[("__name__", RegexMatch, "gpu_.*"), ("host", RegexNoMatch, "a")], &[2]);
        check(&[("gpu", NotEqual, "")], &[0, 1, 2]);
        check(&[("host", Equal, "zzz")], &[]);
        check(&[("nope", Equal, "")], &[0, 1, 2, 3]);
    }
}
