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

    pub fn iter(&self) -> impl Iterator<Item = &Label> {
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

    /// A stable 64-bit hash (FNV-1a over names and values with separators). Stable across processes and
    /// versions, so it may be persisted; equal label sets hash equal.
    pub fn stable_hash(&self) -> u64 {
        hash_pairs(self.0.iter().map(|l| (l.name.as_str(), l.value.as_str())))
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

/// The hash of `Labels::stable_hash` over borrowed pairs, so a hot path can find a series without
/// building its label set. Pairs must come sorted by name, without empty values.
pub fn hash_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for (n, v) in pairs {
        feed(n.as_bytes());
        feed(&[0xff]);
        feed(v.as_bytes());
        feed(&[0xfe]);
    }
    h
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
    fn hash_is_stable_and_order_independent() {
        let a = Labels::from_pairs([("__name__", "up"), ("job", "x")]);
        let b = Labels::from_pairs([("job", "x"), ("__name__", "up")]);
        assert_eq!(a.stable_hash(), b.stable_hash());
        // Pinned: a persisted hash must never change between versions.
        assert_eq!(a.stable_hash(), 0x408f_bdc4_0adf_f476, "{:#x}", a.stable_hash());
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
