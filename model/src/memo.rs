//! A bounded, process-wide memo of values made from text: what parsing or compiling the same text
//! again would give. Rules and dashboards send the same queries and selectors at every evaluation, and
//! compiling them costs more than the rest of a small query. A plain map emptied when full is enough:
//! the texts in use are few and stable, so an LRU crate would add a dependency for no measurable gain.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Values by the text they were made from; at most `max` of them (past it the memo starts afresh),
/// and none for a text longer than `max_key` bytes. Values are handed out as clones, so `V` should be
/// cheap to clone (a compiled `Regex` shares its program).
pub struct Memo<V> {
    map: OnceLock<Mutex<HashMap<String, V>>>,
    max: usize,
    max_key: usize,
}

impl<V: Clone> Memo<V> {
    pub const fn new(max: usize, max_key: usize) -> Memo<V> {
        Memo { map: OnceLock::new(), max, max_key }
    }

    /// The value made from `key`, made now by `make` when the memo has none. Errors are not kept, so
    /// a text that fails is made, and fails, again.
    pub fn get_or_try<E>(&self, key: &str, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let map = self.map.get_or_init(Default::default);
        let lock = || map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = lock().get(key) {
            return Ok(v.clone());
        }
        let v = make()?;
        if key.len() <= self.max_key {
            let mut m = lock();
            if m.len() >= self.max {
                m.clear();
            }
            m.insert(key.to_string(), v.clone());
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_made_once_errors_never_kept_and_the_bounds_hold() {
        let memo: Memo<usize> = Memo::new(2, 3);
        let made = std::cell::Cell::new(0);
        let make = |v: usize| {
            made.set(made.get() + 1);
            Ok::<_, ()>(v)
        };
        assert_eq!(memo.get_or_try("a", || make(1)), Ok(1));
        assert_eq!(memo.get_or_try("a", || make(9)), Ok(1), "kept");
        assert_eq!(made.get(), 1);
        assert_eq!(memo.get_or_try("bad", || Err::<usize, _>("no")), Err("no"));
        assert_eq!(memo.get_or_try("bad", || make(2)), Ok(2), "an error is not kept");
        // Full at two: the third text starts the memo afresh.
        assert_eq!(memo.get_or_try("c", || make(3)), Ok(3));
        assert_eq!(memo.get_or_try("a", || make(4)), Ok(4), "emptied when full");
        // Longer than max_key: made every time.
        assert_eq!(memo.get_or_try("long", || make(5)), Ok(5));
        assert_eq!(memo.get_or_try("long", || make(6)), Ok(6));
    }
}
