//! Semantic versions for `release-note patch|minor|major`: the latest
//! reachable `vX.Y.Z` or `X.Y.Z` tag, bumped, with the `v` dropped.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bump {
    Patch,
    Minor,
    Major,
}

impl FromStr for Bump {
    type Err = ();
    fn from_str(value: &str) -> Result<Self, ()> {
        match value {
            "patch" => Ok(Self::Patch),
            "minor" => Ok(Self::Minor),
            "major" => Ok(Self::Major),
            _ => Err(()),
        }
    }
}

impl Version {
    /// Parses `vX.Y.Z` or `X.Y.Z` with no leading zeros and nothing after.
    pub fn parse_tag(tag: &str) -> Option<Self> {
        let bare = tag.strip_prefix('v').unwrap_or(tag);
        let mut parts = bare.split('.');
        let mut next = || -> Option<u64> {
            let part = parts.next()?;
            let valid =
                !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) && (part == "0" || !part.starts_with('0'));
            valid.then(|| part.parse().ok()).flatten()
        };
        let version = Self { major: next()?, minor: next()?, patch: next()? };
        parts.next().is_none().then_some(version)
    }

    pub fn bump(self, bump: Bump) -> Self {
        match bump {
            Bump::Patch => Self { patch: self.patch + 1, ..self },
            Bump::Minor => Self { minor: self.minor + 1, patch: 0, ..self },
            Bump::Major => Self { major: self.major + 1, minor: 0, patch: 0 },
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The tag naming the highest semantic version among `tags` (the tags
/// reachable from HEAD), with its parsed version.
pub fn latest_version_tag<'a>(tags: impl IntoIterator<Item = &'a str>) -> Option<(&'a str, Version)> {
    tags.into_iter().filter_map(|tag| Version::parse_tag(tag).map(|version| (tag, version))).max_by_key(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bumps_from_either_spelling() {
        for tag in ["v1.2.3", "1.2.3"] {
            let version = Version::parse_tag(tag).unwrap();
            assert_eq!(version.bump(Bump::Patch).to_string(), "1.2.4");
            assert_eq!(version.bump(Bump::Minor).to_string(), "1.3.0");
            assert_eq!(version.bump(Bump::Major).to_string(), "2.0.0");
        }
        assert_eq!(Version::parse_tag("v1.0.0").unwrap().bump(Bump::Patch).to_string(), "1.0.1");
    }

    #[test]
    fn rejects_non_semantic_tags() {
        for tag in ["1.2", "v1.2.3.4", "v01.2.3", "1.2.x", "release-1.2.3", "v1.2.3-rc1", "", "v"] {
            assert_eq!(Version::parse_tag(tag), None, "{tag}");
        }
    }

    #[test]
    fn latest_is_the_highest_version() {
        let tags = ["v1.2.3", "1.10.0", "v1.9.9", "nightly", "v2.0.0-rc1"];
        assert_eq!(latest_version_tag(tags), Some(("1.10.0", Version { major: 1, minor: 10, patch: 0 })));
        assert_eq!(latest_version_tag(["nightly"]), None);
    }

    #[test]
    fn bump_names() {
        assert_eq!("minor".parse(), Ok(Bump::Minor));
        assert!("micro".parse::<Bump>().is_err());
    }
}
