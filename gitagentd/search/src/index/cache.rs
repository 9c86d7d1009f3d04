//! The daemon's bounded per-folder caches (mapped index views, query
//! history connections): least recently used first out, within a count
//! and a byte budget, so a long-lived daemon that has served many
//! projects holds only the few it served last.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A small least-recently-used map keyed by folder. Each entry carries
/// its weight in bytes; the entry just put always stays, even when it
/// alone is over the budget (the search using it needs it anyway).
pub struct FolderCache<V> {
    entries: HashMap<PathBuf, Entry<V>>,
    clock: u64,
    max_entries: usize,
    max_bytes: u64,
    bytes: u64,
}

struct Entry<V> {
    value: V,
    used: u64,
    bytes: u64,
}

impl<V: Clone> FolderCache<V> {
    pub fn new(max_entries: usize, max_bytes: u64) -> Self {
        Self { entries: HashMap::new(), clock: 0, max_entries: max_entries.max(1), max_bytes, bytes: 0 }
    }

    /// The value kept for `dir`, now the most recently used.
    pub fn get(&mut self, dir: &Path) -> Option<V> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(dir).map(|entry| {
            entry.used = clock;
            entry.value.clone()
        })
    }

    /// Keeps `value` for `dir`, then forgets the least recently used
    /// entries until both limits hold.
    pub fn put(&mut self, dir: &Path, value: V, bytes: u64) {
        self.clock += 1;
        if let Some(old) = self.entries.insert(dir.to_path_buf(), Entry { value, used: self.clock, bytes }) {
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
        while self.entries.len() > 1 && (self.entries.len() > self.max_entries || self.bytes > self.max_bytes) {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, entry)| entry.used).map(|(dir, _)| dir.clone())
            else {
                break;
            };
            if let Some(entry) = self.entries.remove(&oldest) {
                self.bytes -= entry.bytes;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The summed weight of the entries kept.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn contains(&self, dir: &Path) -> bool {
        self.entries.contains_key(dir)
    }

    /// Forgets every entry at or below `dir`: a migration moved or removed
    /// what they point at.
    pub fn forget_under(&mut self, dir: &Path) {
        let bytes = &mut self.bytes;
        self.entries.retain(|key, entry| {
            let keep = !key.starts_with(dir);
            if !keep {
                *bytes -= entry.bytes;
            }
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_limit_forgets_the_least_recently_used() {
        let mut cache = FolderCache::new(2, u64::MAX);
        cache.put(Path::new("/a"), 1, 0);
        cache.put(Path::new("/b"), 2, 0);
        assert_eq!(cache.get(Path::new("/a")), Some(1));
        cache.put(Path::new("/c"), 3, 0);
        assert_eq!(cache.len(), 2);
        assert!(!cache.contains(Path::new("/b")), "b was the least recently used");
        assert_eq!(cache.get(Path::new("/a")), Some(1));
        assert_eq!(cache.get(Path::new("/c")), Some(3));
    }

    #[test]
    fn the_byte_budget_forgets_until_it_holds_but_keeps_the_newest() {
        let mut cache = FolderCache::new(8, 100);
        cache.put(Path::new("/a"), 'a', 40);
        cache.put(Path::new("/b"), 'b', 40);
        assert_eq!(cache.bytes(), 80);
        cache.put(Path::new("/c"), 'c', 40);
        assert!(!cache.contains(Path::new("/a")));
        assert_eq!((cache.len(), cache.bytes()), (2, 80));
        // Replacing an entry counts its new weight only.
        cache.put(Path::new("/c"), 'C', 10);
        assert_eq!((cache.len(), cache.bytes()), (2, 50));
        assert_eq!(cache.get(Path::new("/c")), Some('C'));
        // One entry over the whole budget stays alone.
        cache.put(Path::new("/huge"), 'h', 500);
        assert_eq!((cache.len(), cache.bytes()), (1, 500));
        assert_eq!(cache.get(Path::new("/huge")), Some('h'));
        cache.put(Path::new("/d"), 'd', 1);
        assert_eq!((cache.len(), cache.bytes()), (1, 1));
    }
}
