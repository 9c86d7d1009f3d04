//! A flag the caller raises to stop long blocking work between steps (a
//! history walk, a file walk). The daemon's blocking pool raises it when
//! the caller's cancellation fires; the work decides where it can stop.

use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Default)]
pub struct Interrupt(AtomicBool);

impl Interrupt {
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
