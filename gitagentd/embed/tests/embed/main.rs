//! The tests of gitagent-embed, in one binary; they need no network and
//! no large weights.

mod download;
mod model;
