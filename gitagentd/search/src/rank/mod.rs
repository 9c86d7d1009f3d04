//! Answering a query against an up-to-date index: the scores ([`ranking`]:
//! terms, BM25, cosine and the hybrid formula), their use over one live
//! index's candidates ([`query`]), and the per-index query history that
//! recalls query embeddings and replays earlier answers ([`history`]).
//! Ranking reads an index; it never changes one.

pub mod history;
pub mod query;
pub mod ranking;
