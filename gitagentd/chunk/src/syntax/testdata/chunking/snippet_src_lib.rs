//! Module docs.
use std::fmt;

/// A searcher.
#[derive(Debug)]
pub struct Searcher<'a> {
    root: &'a str,
}

impl<'a> Searcher<'a> {
    /// Searches one path.
    pub fn search_path(&self, path: &str) -> bool {
        path.starts_with(self.root)
    }

    fn helper() {}
}

impl fmt::Display for Searcher<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)
    }
}

pub trait Scorer {
    fn score(&self) -> f64;
}

const LIMIT: usize = 3;

mod inner {
    pub fn parse_args() {}
}
