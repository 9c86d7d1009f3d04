//! Freed memory returned to the system. The daemon's allocator is
//! mimalloc (gitagentd's `main.rs`), which keeps freed pages for reuse;
//! the daemon's idle trim and search's publication both hand them back
//! through here.

// The collection entry point of the mimalloc library linked through the
// `mimalloc` crate (its `extended` bindings would add a dependency for this
// one function).
extern crate mimalloc;
unsafe extern "C" {
    fn mi_collect(force: bool);
}

/// Returns this thread's free pages, and the arenas' purgeable memory, to
/// the system.
pub fn collect() {
    // SAFETY: mi_collect only walks the allocator's own structures.
    unsafe { mi_collect(true) };
}

/// Returns what the calling thread freed, and the arenas' purgeable
/// memory, to the system now: after a large transient (publishing an
/// index) and before the next phase makes memory resident (mapping its
/// vectors), so the two never add up in the peak.
pub fn release_freed() {
    collect();
}
