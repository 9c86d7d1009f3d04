//! The range a release note covers: `<base> <release>` as given, or
//! `patch|minor|major` from the latest semantic-version tag reachable from
//! HEAD to HEAD, with the bumped version as the release's name.

use gitagent_git::range::{History, HistoryError, ResolvedRevision};
use gitagent_git::version::{Bump, Version};
use serde::Serialize;

/// What the command line asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeRequest {
    Explicit { base: String, release: String },
    Bump(Bump),
}

/// The positional arguments were not a range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0}\nusage: git-agent release-note [--out <file>] [flags] <base> <release>\n       git-agent release-note [--out <file>] [flags] patch|minor|major"
)]
pub struct RangeUsageError(String);

impl RangeRequest {
    /// `<base> <release>`, or one of `patch`, `minor`, `major`.
    pub fn from_args(args: &[String]) -> Result<Self, RangeUsageError> {
        match args {
            [bump] => bump.parse().map(Self::Bump).map_err(|()| {
                RangeUsageError(format!(
                    "release-note takes <base> <release> or patch|minor|major; {bump:?} is not patch, minor or major"
                ))
            }),
            [base, release] => Ok(Self::Explicit { base: base.clone(), release: release.clone() }),
            _ => Err(RangeUsageError(format!(
                "release-note takes <base> <release> or patch|minor|major, not {} arguments",
                args.len()
            ))),
        }
    }
}

/// How the release version was inferred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionBump {
    pub from_tag: String,
    pub bump: &'static str,
    /// The new version, without a `v`.
    pub version: String,
}

/// Both ends resolved to commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseRange {
    pub base: ResolvedRevision,
    /// The commit the evidence is read up to (HEAD for a bump).
    pub release: ResolvedRevision,
    /// The release's name: the release revision as given, or the bumped
    /// version.
    pub release_ref: String,
    pub bump: Option<VersionBump>,
}

impl ReleaseRange {
    /// `base..release` with the names the user knows.
    pub fn display(&self) -> String {
        format!("{}..{}", self.base.spec, self.release_ref)
    }
}

/// Resolves and peels both ends.
pub fn resolve(history: &History, request: &RangeRequest) -> Result<ReleaseRange, HistoryError> {
    match request {
        RangeRequest::Explicit { base, release } => Ok(ReleaseRange {
            base: history.resolve_commit(base)?,
            release: history.resolve_commit(release)?,
            release_ref: release.clone(),
            bump: None,
        }),
        RangeRequest::Bump(bump) => {
            let tag = history.latest_version_tag()?;
            let version: Version = tag.version.bump(*bump);
            Ok(ReleaseRange {
                base: history.resolve_commit(&tag.name)?,
                release: history.resolve_commit("HEAD")?,
                release_ref: version.to_string(),
                bump: Some(VersionBump {
                    from_tag: tag.name,
                    bump: match bump {
                        Bump::Patch => "patch",
                        Bump::Minor => "minor",
                        Bump::Major => "major",
                    },
                    version: version.to_string(),
                }),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gitagent_git::range::RevisionKind;
    use gitagent_git::range::fixture::Fixture;

    fn args(values: &[&str]) -> Vec<String> {
        values.iter().map(|value| value.to_string()).collect()
    }

    #[test]
    fn arguments_are_a_pair_or_a_bump() {
        assert_eq!(RangeRequest::from_args(&args(&["minor"])), Ok(RangeRequest::Bump(Bump::Minor)));
        assert_eq!(
            RangeRequest::from_args(&args(&["v1", "v2"])),
            Ok(RangeRequest::Explicit { base: "v1".into(), release: "v2".into() })
        );
        let error = RangeRequest::from_args(&args(&["micro"])).unwrap_err().to_string();
        assert!(error.contains("\"micro\" is not patch, minor or major"), "{error}");
        assert!(error.contains("usage: git-agent release-note"), "{error}");
        assert!(RangeRequest::from_args(&args(&[])).is_err());
        assert!(RangeRequest::from_args(&args(&["a", "b", "c"])).unwrap_err().to_string().contains("not 3 arguments"));
    }

    fn tagged(tag: &str, annotated: bool) -> Fixture {
        let fixture = Fixture::new();
        fixture.commit_file("a.txt", "1\n", "one");
        if annotated {
            fixture.git(&["tag", "-a", tag, "-m", "release"]);
        } else {
            fixture.git(&["tag", tag]);
        }
        fixture.commit_file("a.txt", "2\n", "two");
        fixture
    }

    #[test]
    fn bumps_start_at_the_latest_tag_and_end_at_head() {
        for (tag, annotated) in [("v1.2.3", true), ("1.2.3", false)] {
            let fixture = tagged(tag, annotated);
            let history = fixture.history();
            for (bump, expected) in [(Bump::Patch, "1.2.4"), (Bump::Minor, "1.3.0"), (Bump::Major, "2.0.0")] {
                let range = resolve(&history, &RangeRequest::Bump(bump)).unwrap();
                assert_eq!(range.base.spec, tag);
                assert_eq!(range.base.sha, fixture.rev("HEAD~1"));
                let kind = if annotated { RevisionKind::AnnotatedTag } else { RevisionKind::LightweightTag };
                assert_eq!(range.base.kind, kind);
                assert_eq!(range.release.sha, fixture.rev("HEAD"));
                assert_eq!(range.release_ref, expected);
                assert_eq!(range.display(), format!("{tag}..{expected}"));
                assert_eq!(range.bump.as_ref().map(|bump| bump.from_tag.as_str()), Some(tag));
            }
        }
    }

    #[test]
    fn no_version_tag_is_a_clear_error() {
        let fixture = Fixture::new();
        fixture.commit_file("a.txt", "1\n", "one");
        fixture.git(&["tag", "release-one"]);
        let error = resolve(&fixture.history(), &RangeRequest::Bump(Bump::Patch)).unwrap_err().to_string();
        assert!(error.starts_with("no semantic version tag (vX.Y.Z or X.Y.Z) is reachable from HEAD"), "{error}");
        assert!(error.contains("git-agent release-note <base> <release>"), "{error}");
    }

    #[test]
    fn explicit_ranges_peel_both_tag_kinds() {
        let fixture = tagged("v1.0.0", true);
        fixture.git(&["tag", "v1.1.0"]);
        let range =
            resolve(&fixture.history(), &RangeRequest::Explicit { base: "v1.0.0".into(), release: "v1.1.0".into() })
                .unwrap();
        assert_eq!((range.base.kind, range.release.kind), (RevisionKind::AnnotatedTag, RevisionKind::LightweightTag));
        assert_eq!(range.base.sha, fixture.rev("v1.0.0^{commit}"));
        assert_eq!(range.release.sha, fixture.rev("HEAD"));
        assert_eq!(range.display(), "v1.0.0..v1.1.0");
        assert!(range.bump.is_none());
    }
}
