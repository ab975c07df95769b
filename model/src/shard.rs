//! `--shard I/N`: which share of the work one replica of the rules or the analyzer takes. Work is
//! split by a hash of a key (an entity's `cluster` and `host`, a peer group's labels, a rule group's
//! name), as Prometheus' `hashmod` splits targets, so N replicas share nothing but the store and each
//! key belongs to exactly one of them.

use crate::Labels;
use std::fmt;

/// One share of N, 0-based (`--shard 0/2` and `--shard 1/2` split the work in two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// Labels that name an entity (a machine) when nothing more specific says how to split.
pub const ENTITY_LABELS: [&str; 2] = ["cluster", "host"];

impl Shard {
    /// All the work: one process, no split.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Share `index` of `count`; None unless `index < count`.
    pub fn new(index: u32, count: u32) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// Parses `I/N` as `--shard` takes it.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("{s:?} is not a shard: write I/N with 0 <= I < N, e.g. 0/2");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (i, n) = (i.trim().parse::<u32>().map_err(|_| bad())?, n.trim().parse::<u32>().map_err(|_| bad())?);
        Shard::new(i, n).ok_or_else(bad)
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether this share owns the work keyed by `parts` (the same parts in the same order on every
    /// replica).
    pub fn owns<'a>(&self, parts: impl IntoIterator<Item = &'a str>) -> bool {
        self.count == 1 || key_hash(parts) % u64::from(self.count) == u64::from(self.index)
    }

    /// Whether this share owns the series `labels`, keyed by the values of `by` (absent labels count
    /// as empty, so series without them stay together on one share).
    pub fn owns_series(&self, labels: &Labels, by: &[impl AsRef<str>]) -> bool {
        self.owns_by(by, |name| labels.get(name))
    }

    /// [`Shard::owns_series`] for labels held in another form (a query answer being decoded), `get`
    /// looking a label's value up by name.
    pub fn owns_by<'a>(&self, by: &[impl AsRef<str>], get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.count == 1 || self.owns(by.iter().map(|name| get(name.as_ref()).unwrap_or("")))
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// FNV-1a (64 bit) over the parts, each followed by a 0xff byte (which UTF-8 never holds, so ("ab",
/// "c") and ("a", "bc") differ). Written out rather than taken from std or a crate: every replica, of
/// every release, must place a key on the same share, and std's hashers promise no stable output.
fn key_hash<'a>(parts: impl IntoIterator<Item = &'a str>) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for part in parts {
        for &b in part.as_bytes().iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_i_of_n_and_refuses_the_rest() {
        assert_eq!(Shard::parse("1/4"), Ok(Shard { index: 1, count: 4 }));
        assert_eq!(Shard::parse("0/1"), Ok(Shard::ALL));
        for bad in ["4/4", "1", "a/2", "-1/2", "0/0", ""] {
            assert!(Shard::parse(bad).unwrap_err().contains("is not a shard"), "{bad}");
        }
    }

    #[test]
    fn every_key_has_exactly_one_owner_and_the_shares_are_even() {
        for n in [2, 3, 4] {
            let shards: Vec<Shard> = (0..n).map(|i| Shard::new(i, n).unwrap()).collect();
            let mut per = vec![0usize; n as usize];
            for host in 0..4000 {
                let host = format!("gpu-node-{host}");
                let owners: Vec<u32> =
                    shards.iter().filter(|s| s.owns(["a", host.as_str()])).map(|s| s.index()).collect();
                assert_eq!(owners.len(), 1, "{host}: {owners:?}");
                per[owners[0] as usize] += 1;
            }
            let even = 4000 / n as usize;
            assert!(per.iter().all(|&c| c.abs_diff(even) < even / 10), "{n} shares: {per:?}");
        }
    }

    #[test]
    fn the_hash_never_changes() {
        // Replicas of different releases must agree: these values are fixed forever.
        assert_eq!(key_hash([]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(key_hash(["prod", "gpu-node-7"]), key_hash(["prod", "gpu-node-7"]));
        assert_ne!(key_hash(["ab", "c"]), key_hash(["a", "bc"]));
        expect_test::expect!["13297312493289024405"].assert_eq(&key_hash(["prod", "gpu-node-7"]).to_string());
    }

    #[test]
    fn series_are_keyed_by_the_named_labels_only() {
        let s = Shard::new(1, 3).unwrap();
        let a = Labels::from_pairs([("__name__", "gpu_util"), ("host", "n1"), ("gpu", "0")]);
        let b = Labels::from_pairs([("__name__", "gpu_temp"), ("host", "n1"), ("gpu", "5")]);
        assert_eq!(s.owns_series(&a, &ENTITY_LABELS), s.owns_series(&b, &ENTITY_LABELS), "one host, one owner");
    }
}
