//! Revisions the user names (tags annotated or lightweight, branches,
//! commit expressions) resolved and peeled to commits; the latest
//! semantic-version tag reachable from HEAD; and `origin/HEAD`.

use super::{History, HistoryError};
use crate::version::{Version, latest_version_tag};
use gix::hash::ObjectId;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;
use serde::Serialize;
use std::collections::HashMap;

/// What kind of name a revision was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RevisionKind {
    AnnotatedTag,
    LightweightTag,
    Branch,
    RemoteBranch,
    /// Any other expression: a commit id, `HEAD`, `main~3`, ...
    Commit,
}

/// A revision resolved and peeled to a commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedRevision {
    /// What the user wrote.
    pub spec: String,
    pub sha: String,
    pub kind: RevisionKind,
    #[serde(skip)]
    pub id: ObjectId,
}

/// The semantic-version tag a bump starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionTag {
    pub name: String,
    pub version: Version,
    /// The commit the tag peels to.
    pub commit: ObjectId,
}

impl History {
    /// Resolves `spec` like `git rev-parse <spec>^{commit}`, keeping what
    /// kind of name it was.
    pub fn resolve_commit(&self, spec: &str) -> Result<ResolvedRevision, HistoryError> {
        let unknown = || HistoryError::UnknownRevision { spec: spec.to_string(), root: self.root.clone() };
        if spec.trim().is_empty() || spec.starts_with('-') {
            return Err(unknown());
        }
        let kind = self.reference_kind(spec);
        let id = self.repo.rev_parse_single(spec).map_err(|_| unknown())?;
        let object = id.object().map_err(|error| self.read_error(format!("the object {spec:?} names"), error))?;
        let found_kind = object.kind;
        let commit = object
            .peel_to_kind(gix::object::Kind::Commit)
            .map_err(|_| HistoryError::NotACommit { spec: spec.to_string(), kind: found_kind.to_string() })?;
        Ok(ResolvedRevision { spec: spec.to_string(), sha: commit.id.to_string(), kind, id: commit.id })
    }

    /// The kind of reference `spec` names when it is a plain reference
    /// name, following Git's lookup order.
    fn reference_kind(&self, spec: &str) -> RevisionKind {
        let Ok(Some(reference)) = self.repo.try_find_reference(spec) else { return RevisionKind::Commit };
        let name = reference.name().as_bstr().to_string();
        if name.starts_with("refs/tags/") {
            let points_to_tag_object = reference
                .try_id()
                .and_then(|id| id.header().ok())
                .is_some_and(|header| header.kind() == gix::object::Kind::Tag);
            if points_to_tag_object { RevisionKind::AnnotatedTag } else { RevisionKind::LightweightTag }
        } else if name.starts_with("refs/heads/") {
            RevisionKind::Branch
        } else if name.starts_with("refs/remotes/") {
            RevisionKind::RemoteBranch
        } else {
            RevisionKind::Commit
        }
    }

    /// The semantic-version tag nearest to HEAD: walking back from HEAD,
    /// newest commit first, the first commit that carries any `vX.Y.Z` or
    /// `X.Y.Z` tag; among several tags on that commit, the highest
    /// version.
    pub fn latest_version_tag(&self) -> Result<VersionTag, HistoryError> {
        let head = self.head()?;
        let mut tags_by_commit: HashMap<ObjectId, Vec<String>> = HashMap::new();
        let references = self.repo.references().map_err(|error| self.read_error("the references", error))?;
        let tags = references.tags().map_err(|error| self.read_error("the tags", error))?;
        for reference in tags.flatten() {
            let name = reference.name().shorten().to_string();
            if Version::parse_tag(&name).is_none() {
                continue;
            }
            let Ok(commit) = reference
                .into_fully_peeled_id()
                .and_then(|id| id.object())
                .and_then(|object| object.peel_to_kind(gix::object::Kind::Commit).map(|commit| commit.id))
            else {
                continue;
            };
            tags_by_commit.entry(commit).or_default().push(name);
        }
        if tags_by_commit.is_empty() {
            return Err(HistoryError::NoVersionTag { root: self.root.clone() });
        }
        let walk = self
            .repo
            .rev_walk([head])
            .sorting(Sorting::ByCommitTime(CommitTimeOrder::NewestFirst))
            .all()
            .map_err(|error| self.read_error("the history of HEAD", error))?;
        for info in walk {
            let info = info.map_err(|error| self.read_error("the history of HEAD", error))?;
            if let Some(names) = tags_by_commit.get(&info.id)
                && let Some((name, version)) = latest_version_tag(names.iter().map(String::as_str))
            {
                return Ok(VersionTag { name: name.to_string(), version, commit: info.id });
            }
        }
        Err(HistoryError::NoVersionTag { root: self.root.clone() })
    }

    /// `origin/HEAD`: the remote's default branch as the clone recorded
    /// it, by short name (such as `origin/main`) and commit.
    pub fn origin_head(&self) -> Result<(String, ObjectId), HistoryError> {
        let reference = self
            .repo
            .try_find_reference("refs/remotes/origin/HEAD")
            .map_err(|error| self.read_error("refs/remotes/origin/HEAD", error))?;
        let Some(mut reference) = reference else {
            let has_origin = self.repo.config_snapshot().string("remote.origin.url").is_some();
            return Err(if has_origin {
                HistoryError::NoOriginHead { root: self.root.clone() }
            } else {
                HistoryError::NoOrigin { root: self.root.clone() }
            });
        };
        let target = match reference.target() {
            gix::refs::TargetRef::Symbolic(name) => name.shorten().to_string(),
            gix::refs::TargetRef::Object(_) => "origin/HEAD".to_string(),
        };
        let id = reference
            .peel_to_id()
            .map_err(|_| HistoryError::DanglingOriginHead { target: target.clone(), root: self.root.clone() })?;
        let commit = id
            .object()
            .and_then(|object| object.peel_to_kind(gix::object::Kind::Commit))
            .map_err(|_| HistoryError::DanglingOriginHead { target: target.clone(), root: self.root.clone() })?;
        Ok((target, commit.id))
    }

    /// The best common ancestor of `one` and `two`, if any.
    pub fn merge_base(&self, one: ObjectId, two: ObjectId) -> Result<Option<ObjectId>, HistoryError> {
        self.repo
            .merge_base(one, two)
            .map(|base| base.map(|id| id.detach()))
            .map_err(|error| self.read_error(format!("the merge base of {one} and {two}"), error))
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::Fixture;
    use super::*;

    #[test]
    fn annotated_lightweight_branch_and_expressions_resolve_to_commits() {
        let fixture = Fixture::new();
        fixture.commit_file("a.txt", "a\n", "first");
        let first = fixture.rev("HEAD");
        fixture.commit_file("a.txt", "b\n", "second");
        let second = fixture.rev("HEAD");
        fixture.git(&["tag", "-a", "v1.0.0", "-m", "release", &first]);
        fixture.git(&["tag", "light", &second]);
        let history = fixture.history();

        let annotated = history.resolve_commit("v1.0.0").unwrap();
        assert_eq!((annotated.sha.as_str(), annotated.kind), (first.as_str(), RevisionKind::AnnotatedTag));
        let light = history.resolve_commit("light").unwrap();
        assert_eq!((light.sha.as_str(), light.kind), (second.as_str(), RevisionKind::LightweightTag));
        assert_eq!(history.resolve_commit("main").unwrap().kind, RevisionKind::Branch);
        let parent = history.resolve_commit("HEAD~1").unwrap();
        assert_eq!((parent.sha.as_str(), parent.kind), (first.as_str(), RevisionKind::Commit));
        assert_eq!(history.resolve_commit(&second[..10]).unwrap().sha, second);
    }

    #[test]
    fn unknown_revisions_and_trees_are_clear_errors() {
        let fixture = Fixture::new();
        fixture.commit_file("a.txt", "a\n", "first");
        let history = fixture.history();
        let error = history.resolve_commit("v9.9.9").unwrap_err().to_string();
        assert!(error.starts_with("unknown revision \"v9.9.9\""), "{error}");
        assert!(error.contains("hint:"), "{error}");
        let error = history.resolve_commit("HEAD^{tree}").unwrap_err().to_string();
        assert!(error.contains("names a tree, not a commit"), "{error}");
        assert!(matches!(history.resolve_commit("--all"), Err(HistoryError::UnknownRevision { .. })));
    }

    #[test]
    fn the_nearest_version_tag_wins_and_other_tags_are_ignored() {
        let fixture = Fixture::new();
        fixture.commit_file("a.txt", "1\n", "one");
        fixture.git(&["tag", "v1.2.3"]);
        fixture.commit_file("a.txt", "2\n", "two");
        fixture.git(&["tag", "-a", "1.3.0", "-m", "annotated"]);
        fixture.git(&["tag", "1.2.9"]);
        fixture.git(&["tag", "nightly"]);
        fixture.commit_file("a.txt", "3\n", "three");
        let history = fixture.history();
        let tag = history.latest_version_tag().unwrap();
        assert_eq!(tag.name, "1.3.0");
        assert_eq!(tag.version.to_string(), "1.3.0");
        assert_eq!(tag.commit.to_string(), fixture.rev("HEAD~1"));
    }

    #[test]
    fn tags_off_the_head_history_do_not_count() {
        let fixture = Fixture::new();
        fixture.commit_file("a.txt", "1\n", "one");
        fixture.git(&["checkout", "-q", "-b", "side"]);
        fixture.commit_file("b.txt", "1\n", "side");
        fixture.git(&["tag", "v5.0.0"]);
        fixture.git(&["checkout", "-q", "main"]);
        let history = fixture.history();
        assert!(matches!(history.latest_version_tag(), Err(HistoryError::NoVersionTag { .. })));
    }
}
