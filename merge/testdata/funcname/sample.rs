use std::collections::HashMap;
use std::fmt;

pub struct Cache<K, V> {
    entries: HashMap<K, V>,
    hits: u64,
    misses: u64,
}

impl<K: std::hash::Hash + Eq, V: Clone> Cache<K, V> {
    pub fn new() -> Self {
        Cache { entries: HashMap::new(), hits: 0, misses: 0 }
    }

    pub fn get(&mut self, k: &K) -> Option<V> {
        match self.entries.get(k) {
            Some(v) => {
                self.hits += 1;
                Some(v.clone())
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    pub(crate) fn insert(&mut self, k: K, v: V) {
        self.entries.insert(k, v);
    }
}

pub enum Event {
    Hit,
    Miss,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Hit => write!(f, "hit"),
            Event::Miss => write!(f, "miss"),
        }
    }
}

pub async unsafe fn dangerous_and_asynchronous_operation_with_a_long_name(pointer: *const u8, length: usize) -> u8 {
    let slice = std::slice::from_raw_parts(pointer, length);
    slice[0]
}

mod tests {
    use super::*;

    #[test]
    fn cache_counts() {
        let mut c = Cache::new();
        c.insert(1, 2);
        assert_eq!(c.get(&1), Some(2));
        assert_eq!(c.get(&3), None);
    }
}
