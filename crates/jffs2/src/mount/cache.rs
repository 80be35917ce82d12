//! A small least-recently-used map bounded by the total weight of its values: the mount
//! view keeps read inodes and decompressed node data in it.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Arc;

/// A map from `K` to shared values, evicting the least recently used entries once the sum of
/// their weights exceeds the budget. Every operation is `O(log n)`.
pub(crate) struct Lru<K, V> {
    budget: usize,
    weight: usize,
    tick: u64,
    map: HashMap<K, (u64, usize, Arc<V>)>,
    order: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty cache holding at most `budget` units of weight (one entry at least).
    pub(crate) fn new(budget: usize) -> Self {
        Lru {
            budget,
            weight: 0,
            tick: 0,
            map: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// The value of `key`, marked as the most recently used.
    pub(crate) fn get(&mut self, key: &K) -> Option<Arc<V>> {
        self.tick += 1;
        let tick = self.tick;
        let (t, _, v) = self.map.get_mut(key)?;
        self.order.remove(t);
        *t = tick;
        self.order.insert(tick, key.clone());
        Some(Arc::clone(v))
    }

    /// Inserts `value` of `weight` units under `key`, then evicts the least recently used
    /// entries until the total fits the budget (the newest entry always stays).
    pub(crate) fn insert(&mut self, key: K, value: Arc<V>, weight: usize) {
        self.tick += 1;
        if let Some((t, w, _)) = self.map.remove(&key) {
            self.order.remove(&t);
            self.weight -= w;
        }
        self.map.insert(key.clone(), (self.tick, weight, value));
        self.order.insert(self.tick, key);
        self.weight += weight;
        while self.weight > self.budget && self.map.len() > 1 {
            let Some((_, old)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, w, _)) = self.map.remove(&old) {
                self.weight -= w;
            }
        }
    }

    /// The total weight held.
    #[cfg(test)]
    pub(crate) fn weight(&self) -> usize {
        self.weight
    }

    /// The number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_within_budget() {
        let mut c: Lru<u32, Vec<u8>> = Lru::new(10);
        c.insert(1, Arc::new(vec![1]), 4);
        c.insert(2, Arc::new(vec![2]), 4);
        assert!(c.get(&1).is_some()); // 2 is now the oldest
        c.insert(3, Arc::new(vec![3]), 4);
        assert!(c.get(&2).is_none());
        assert!(c.get(&1).is_some() && c.get(&3).is_some());
        assert_eq!((c.len(), c.weight()), (2, 8));
        // An entry over the budget alone stays, alone.
        c.insert(4, Arc::new(vec![4]), 100);
        assert_eq!((c.len(), c.weight()), (1, 100));
        // Re-inserting a key replaces its weight.
        c.insert(4, Arc::new(vec![5]), 3);
        assert_eq!((c.len(), c.weight()), (1, 3));
    }
}
