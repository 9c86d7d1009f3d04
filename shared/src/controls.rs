//! What the user is told when terminal control sequences were removed
//! from a model's answer: the daemon says it for the foreground commands,
//! and the client for a background task's stored report (`--wait`).

/// The stderr line for an answer that had `removed_bytes` bytes of
/// terminal control sequences removed, or `None` when nothing was removed.
pub fn removed_warning(removed_bytes: u64) -> Option<String> {
    (removed_bytes > 0).then(|| {
        format!("warning: removed {removed_bytes} bytes of terminal control sequences from the model's answer\n")
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn nothing_removed_says_nothing() {
        assert_eq!(super::removed_warning(0), None);
        assert_eq!(
            super::removed_warning(12).as_deref(),
            Some("warning: removed 12 bytes of terminal control sequences from the model's answer\n")
        );
    }
}
