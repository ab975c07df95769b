//! Label sets: the identity of a series.

use std::fmt;

/// The label that holds a series' metric name.
pub const METRIC_NAME: &str = "__name__";

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    pub name: String,
    pub value: String,
}

/// A set of labels sorted by name, names unique, no empty values (an empty value means "absent",
/// as in Prometheus). **Invariant:** every constructor keeps it sorted and deduplicated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(Vec<Label>);

impl Labels {
    /// Builds a label set from pairs in any order. A later pair with the same name wins; empty values are dropped.
    pub fn from_pairs<N: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (N, V)>) -> Self {
        let mut v: Vec<Label> = pairs.into_iter().map(|(n, v)| Label { name: n.into(), value: v.into() }).collect();
        // Stable sort keeps input order among equal names, so "later wins" holds after dedup from the back.
        v.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out: Vec<Label> = Vec::with_capacity(v.len());
        for l in v {
            match out.last_mut() {
                Some(last) if last.name == l.name => *last = l,
                _ => out.push(l),
            }
        }
        out.retain(|l| !l.value.is_empty());
        Labels(out)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.binary_search_by(|l| l.name.as_str().cmp(name)).ok().map(|i| self.0[i].value.as_str())
    }

    pub fn metric_name(&self) -> Option<&str> {
        self.get(METRIC_NAME)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Label> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets (or with an empty value, removes) one label.
    pub fn set(&mut self, name: &str, value: &str) {
        match self.0.binary_search_by(|l| l.name.as_str().cmp(name)) {
            Ok(i) if value.is_empty() => {
                self.0.remove(i);
            }
            Ok(i) => self.0[i].value = value.to_string(),
            Err(_) if value.is_empty() => {}
            Err(i) => self.0.insert(i, Label { name: name.to_string(), value: value.to_string() }),
        }
    }

    /// A copy without the metric name.
    pub fn without_name(&self) -> Labels {
        Labels(self.0.iter().filter(|l| l.name != METRIC_NAME).cloned().collect())
    }

    /// The series hash: `series_hash` of the metric name and the other labels. Used to find series in
    /// memory; never persisted, so it may change between versions.
    pub fn stable_hash(&self) -> u64 {
        let name = self.metric_name().unwrap_or("");
        series_hash(name, self.0.iter().filter(|l| l.name != METRIC_NAME).map(|l| (l.name.as_str(), l.value.as_str())))
    }

    /// True when this set equals the given pairs (sorted by name, as `hash_pairs` takes them).
    pub fn eq_pairs<'a>(&self, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
        let mut it = pairs.into_iter();
        for l in &self.0 {
            match it.next() {
                Some((n, v)) if n == l.name && v == l.value => {}
                _ => return false,
            }
        }
        it.next().is_none()
    }

    /// Approximate heap bytes held, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<Label>()
            + self.0.iter().map(|l| l.name.capacity() + l.value.capacity()).sum::<usize>()
    }
}

/// The hash of a series from its metric name and its other labels (sorted by name, no empty values),
/// so a hot path can find a series without building its label set, and can hash the labels shared by
/// the fields of one line-protocol point once (`pairs_hash`), then add each name (`with_name`).
pub fn series_hash<'a>(name: &str, others: impl IntoIterator<Item = (&'a str, &'a str)>) -> u64 {
    with_name(pairs_hash(others), name)
}

/// The hash of label pairs other than the metric name.
pub fn pairs_hash<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> u64 {
    let mut h = 0x243f_6a88_85a3_08d3u64;
    for (n, v) in pairs {
        h = hash_bytes(h, n.as_bytes());
        h = hash_bytes(h, v.as_bytes());
    }
    h
}

/// Combines `pairs_hash` of the other labels with the metric name.
pub fn with_name(pairs: u64, name: &str) -> u64 {
    let n = hash_bytes(0x1319_8a2e_0370_7344, name.as_bytes());
    (pairs ^ n.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (pairs >> 31)
}

/// Eight bytes at a time (a multiply-rotate mix in the style of FxHash), with the length folded in so
/// that ("ab","c") and ("a","bc") differ. Label sets are short; byte-at-a-time hashes cost more than
/// the lookup they serve.
fn hash_bytes(mut h: u64, b: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    (h.rotate_left(5) ^ b.len() as u64).wrapping_mul(K)
}

/// Whether `s` is a label name as PromQL writes it unquoted: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn valid_label_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

impl fmt::Display for Labels {
    /// Prometheus notation: `name{a="1", b="2"}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = self.metric_name() {
            f.write_str(n)?;
        }
        f.write_str("{")?;
        let mut first = true;
        for l in self.0.iter().filter(|l| l.name != METRIC_NAME) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{}={:?}", l.name, l.value)?;
        }
        f.write_str("}")
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = &'a Label;
    type IntoIter = std::slice::Iter<'a, Label>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_deduplicated_and_empty_dropped() {
        let l = Labels::from_pairs([("b", "2"), ("a", "1"), ("b", "3"), ("c", "")]);
        assert_eq!(l.to_string(), r#"{a="1", b="3"}"#);
        assert_eq!(l.get("b"), Some("3"));
        assert_eq!(l.get("c"), None);
    }

    #[test]
    fn hash_is_order_independent_and_separates_fields() {
        let a = Labels::from_pairs([("__name__", "up"), ("job", "x")]);
        let b = Labels::from_pairs([("job", "x"), ("__name__", "up")]);
        assert_eq!(a.stable_hash(), b.stable_hash());
        assert_eq!(a.stable_hash(), series_hash("up", [("job", "x")]));
        let c = Labels::from_pairs([("__name__", "up"), ("jo", "bx")]);
        assert_ne!(a.stable_hash(), c.stable_hash());
        let d = Labels::from_pairs([("__name__", "upjob"), ("x", "")]);
        assert_ne!(a.stable_hash(), d.stable_hash());
    }

    #[test]
    fn set_inserts_replaces_removes() {
        let mut l = Labels::from_pairs([("a", "1")]);
        l.set("c", "3");
        l.set("b", "2");
        l.set("a", "");
        assert_eq!(l.to_string(), r#"{b="2", c="3"}"#);
    }
}
