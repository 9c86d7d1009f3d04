//! Building and storing an index: bringing one physical index up to date
//! with its source ([`refresh`]), chunk body snapshots ([`bodies`]), the
//! vectors it needs ([`embeddings`], from an endpoint or the in-process
//! model of [`local_model`], staged in [`spool`]), the on-disk
//! format and its publication ([`store`], read back compactly by
//! [`records`]; older layouts moved in by [`migrate`]), and the daemon's
//! mapped views of published indexes ([`live`], kept in [`cache`]). An
//! index never decides which files exist (that is [`crate::source`]) and
//! never scores a query (that is [`crate::rank`]).

pub mod bodies;
pub mod cache;
pub mod embeddings;
pub mod live;
pub mod local_model;
pub mod migrate;
pub mod records;
pub mod refresh;
pub mod spool;
pub mod store;
