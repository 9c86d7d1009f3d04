//! Object reads for long history walks, with a delta-base cache that keeps
//! every base it resolves, as Git's own delta base cache does.
//!
//! gix's pack caches keep only the objects callers asked for. An object at
//! depth 30 of a delta chain therefore replays (inflates and applies) 30
//! deltas on every read whose chain holds nothing cached, and over a range
//! of thousands of commits, whose trees and blobs sit in long chains,
//! that replay is most of the work. On a miss, [`ChainCache`] resolves the
//! missing base itself, by its object id, before the pending decode goes
//! on: that nested decode asks for its own base the same way, so each
//! object of a chain is inflated once and stays cached for its neighbours.
//! Nesting is bounded; beyond [`MAX_NESTING`] the decode replays as gix
//! normally does. A handle is busy while it decodes, so each nesting level
//! reads through a handle of its own.

use gix::hash::ObjectId;
use gix::objs::Kind;
use gix::odb::pack::Find as _;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

/// The deepest chain of bases resolved ahead.
const MAX_NESTING: usize = 64;
/// Packs with more objects than this are not mapped (the map would cost
/// more memory than the replay costs time); their decodes replay.
const MAX_MAPPED_OBJECTS: usize = 1_000_000;

struct Entry {
    kind: Kind,
    compressed_size: usize,
    data: Vec<u8>,
}

/// A size-capped delta-base cache keyed by pack and data offset.
pub(super) struct ChainCache<'odb> {
    odb: &'odb gix::odb::Handle,
    /// One handle per nesting level, made on first use; taken out while
    /// its level decodes.
    nested: Vec<Option<gix::odb::Handle>>,
    entries: HashMap<(u32, u64), Entry>,
    /// Insertion order, for eviction.
    order: VecDeque<(u32, u64)>,
    bytes: usize,
    max_bytes: usize,
    /// Per pack, its entries' start offsets (sorted) with their ids; `None`
    /// when the pack is too large or its index unreadable.
    packs: HashMap<u32, Option<Vec<(u64, ObjectId)>>>,
    /// The data offsets being resolved right now, innermost last.
    resolving: Vec<(u32, u64)>,
}

impl<'odb> ChainCache<'odb> {
    pub fn new(odb: &'odb gix::odb::Handle, max_bytes: usize) -> Self {
        Self {
            odb,
            nested: Vec::new(),
            entries: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            max_bytes,
            packs: HashMap::new(),
            resolving: Vec::new(),
        }
    }

    /// Makes sure nesting level `level` has its handle: one of the same
    /// object database, without caches of its own, kept mapped.
    fn ensure_handle(&mut self, level: usize) {
        while self.nested.len() <= level {
            let mut handle = self.odb.clone();
            handle.unset_object_cache();
            handle.unset_pack_cache();
            handle.prevent_pack_unload();
            self.nested.push(Some(handle));
        }
    }

    /// The object whose entry holds `data_offset`, with the entry's
    /// compressed size when it is known; the pack is mapped through the
    /// handle of `level`.
    fn object_at(&mut self, pack_id: u32, data_offset: u64, level: usize) -> Option<(ObjectId, usize)> {
        if !self.packs.contains_key(&pack_id) {
            let offsets = self.nested.get(level)?.as_ref()?.pack_offsets_and_oid(pack_id).ok().flatten();
            let offsets = offsets.filter(|offsets| offsets.len() <= MAX_MAPPED_OBJECTS).map(|mut offsets| {
                offsets.sort_unstable_by_key(|(offset, _)| *offset);
                offsets
            });
            self.packs.insert(pack_id, offsets);
        }
        let offsets = self.packs.get(&pack_id)?.as_ref()?;
        // The entry starts at the last offset at or before the data (its
        // header comes first).
        let index = offsets.partition_point(|(offset, _)| *offset <= data_offset).checked_sub(1)?;
        let next = offsets.get(index + 1).map_or(0, |(offset, _)| offset.saturating_sub(data_offset) as usize);
        Some((offsets[index].1, next))
    }

    fn insert(&mut self, key: (u32, u64), kind: Kind, compressed_size: usize, data: &[u8]) {
        if data.len() > self.max_bytes / 4 {
            return;
        }
        if let Some(previous) = self.entries.remove(&key) {
            self.bytes -= previous.data.len();
        } else {
            self.order.push_back(key);
        }
        while self.bytes + data.len() > self.max_bytes {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(evicted) = self.entries.remove(&oldest) {
                self.bytes -= evicted.data.len();
            }
        }
        self.bytes += data.len();
        self.entries.insert(key, Entry { kind, compressed_size, data: data.to_vec() });
    }

    fn copy_out(&self, key: (u32, u64), out: &mut Vec<u8>) -> Option<(Kind, usize)> {
        let entry = self.entries.get(&key)?;
        out.clear();
        out.extend_from_slice(&entry.data);
        Some((entry.kind, entry.compressed_size))
    }
}

impl gix::odb::pack::cache::DecodeEntry for ChainCache<'_> {
    fn put(&mut self, pack_id: u32, offset: u64, data: &[u8], kind: Kind, compressed_size: usize) {
        self.insert((pack_id, offset), kind, compressed_size, data);
    }

    fn get(&mut self, pack_id: u32, offset: u64, out: &mut Vec<u8>) -> Option<(Kind, usize)> {
        let key = (pack_id, offset);
        if let Some(found) = self.copy_out(key, out) {
            return Some(found);
        }
        if self.resolving.len() >= MAX_NESTING || self.resolving.contains(&key) {
            return None;
        }
        let level = self.resolving.len();
        self.ensure_handle(level);
        let (id, compressed_size) = self.object_at(pack_id, offset, level)?;
        let handle = self.nested.get_mut(level)?.take()?;
        self.resolving.push(key);
        let mut buffer = Vec::new();
        let found = handle.try_find_cached(&id, &mut buffer, self).ok().flatten().map(|(data, _)| data.kind);
        self.resolving.pop();
        self.nested[level] = Some(handle);
        let kind = found?;
        // A delta was stored by its decode; an undeltified base was not.
        if !self.entries.contains_key(&key) {
            self.insert(key, kind, compressed_size, &buffer);
        }
        self.copy_out(key, out)
    }
}

/// The object source of one thread's tree and blob diffs: the
/// repository's objects, read through a [`ChainCache`] for long walks.
pub(super) struct CachedObjects<'odb> {
    odb: &'odb gix::odb::Handle,
    /// `None` for short reads, which use gix's own pack cache.
    cache: Option<RefCell<ChainCache<'odb>>>,
}

impl<'odb> CachedObjects<'odb> {
    /// Reads through a chain cache of `max_bytes`, or plainly when zero.
    pub fn new(repo: &'odb gix::Repository, max_bytes: usize) -> Self {
        let odb: &gix::odb::Handle = &repo.objects;
        Self { odb, cache: (max_bytes > 0).then(|| RefCell::new(ChainCache::new(odb, max_bytes))) }
    }
}

impl gix::objs::Find for CachedObjects<'_> {
    fn try_find<'a>(&self, id: &gix::hash::oid, buffer: &'a mut Vec<u8>) -> gix::Result<Option<gix::objs::Data<'a>>> {
        match &self.cache {
            Some(cache) => {
                let mut cache = cache.borrow_mut();
                Ok(self.odb.try_find_cached(id, buffer, &mut *cache)?.map(|(data, _)| data))
            }
            None => gix::objs::Find::try_find(self.odb, id, buffer),
        }
    }
}

impl gix::objs::FindHeader for CachedObjects<'_> {
    fn try_header(&self, id: &gix::hash::oid) -> gix::Result<Option<gix::objs::Header>> {
        gix::objs::FindHeader::try_header(self.odb, id)
    }
}
