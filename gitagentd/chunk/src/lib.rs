//! Source text as search cuts it: which files are code or text
//! ([`paths`], [`textkind`]), the words of a text ([`words`]), and chunks
//! with their symbols and embedding inputs ([`chunking`]), syntax-aware
//! through tree-sitter where a language feature is on ([`syntax`]).

pub mod chunking;
pub mod paths;
pub mod syntax;
pub mod textkind;
pub mod words;
