//! Where a search's files come from: the files on disk under the search
//! root ([`discovery`]), the tree of one commit ([`revision`]), or a
//! `--remote` repository fetched into a bare cache ([`remote`], through
//! the [`filter_transport`] wrapper). A source decides which files are
//! candidates and hands their bytes on; it never chunks, embeds or ranks.

pub mod discovery;
pub mod filter_transport;
pub mod remote;
pub mod revision;
