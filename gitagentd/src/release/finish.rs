//! After generation: the model's structured document becomes the final
//! Markdown. The document is checked, its sections put in the standard
//! order, its commit references resolved against the prepared commits
//! (and linked when the owning repository has a web address), the full
//! changelog added from the context, and the rendered Markdown checked
//! once more. Errors are worded for the repair pass.

use super::context::ReleaseContext;
use super::document::{Document, Reference, SECTION_HEADINGS, render};
use super::validate::{validate_document, validate_markdown};

/// The final Markdown of `document`, or every rule it breaks.
pub fn finish(mut document: Document, context: &ReleaseContext) -> Result<String, Vec<String>> {
    let mut errors = validate_document(&document);
    for section in &mut document.sections {
        for bullet in &mut section.bullets {
            resolve_refs(&mut bullet.refs, &bullet.summary, context, &mut errors);
            for child in &mut bullet.children {
                resolve_refs(&mut child.refs, &child.summary, context, &mut errors);
            }
        }
    }
    if !errors.is_empty() {
        return Err(once_each(errors));
    }
    document.sections.sort_by_key(|section| {
        SECTION_HEADINGS.iter().position(|heading| *heading == section.heading).unwrap_or(SECTION_HEADINGS.len())
    });
    let (parent_changelog, submodules) = context.changelog();
    document.parent_changelog = parent_changelog;
    document.submodules = submodules;
    let markdown = render(&document);
    let errors = validate_markdown(&markdown, &document, context.code_touched, &context.link_owners());
    if errors.is_empty() { Ok(markdown) } else { Err(once_each(errors)) }
}

/// `errors` with each message once, in first-seen order: a ref repeated
/// in one bullet, or the same bad ref under the same summary, is one
/// problem for the repair pass and the user.
fn once_each(errors: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    errors.into_iter().filter(|error| seen.insert(error.clone())).collect()
}

/// Points each commit reference at the one prepared commit its value
/// abbreviates, with that commit's link.
fn resolve_refs(refs: &mut [Reference], summary: &str, context: &ReleaseContext, errors: &mut Vec<String>) {
    for reference in refs.iter_mut().filter(|reference| reference.kind == "commit") {
        let value = reference.value.trim().to_ascii_lowercase();
        if value.len() < 7 || !value.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            continue; // validate_document reports it.
        }
        let mut matches = context.commits().filter(|commit| commit.sha.starts_with(&value));
        match (matches.next(), matches.next()) {
            (Some(commit), None) => {
                reference.value = commit.sha.clone();
                reference.url = commit.url.clone();
            }
            (Some(_), Some(_)) => errors.push(format!(
                "{summary:?} refers to commit {value}, which abbreviates more than one commit of {}; use the full sha",
                context.range
            )),
            (None, _) => errors.push(format!(
                "{summary:?} refers to commit {value}, which is not in {}; use a sha from the prepared context",
                context.range
            )),
        }
    }
}
