//! The paths a sync repository's work tree may hold. Anything else (an
//! unrelated file, a symlink, a device, a manifest of the other schema) is
//! an unsafe tree: git-agent owns the repository and refuses to read,
//! commit or push what it did not write.

use super::FormatError;
use super::keys;
use super::schema::SchemaVersion;
use std::path::Path;

/// What an allowed path is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeEntry {
    Schema,
    IndexesDir,
    OriginDir,
    RevisionDir,
    /// `indexes/<origin>/<revision>/<16 hex>.json`.
    ManifestV1 {
        origin_key: String,
        revision: String,
        key: String,
    },
    /// `indexes/<origin>/<revision>/<64 hex>.json`.
    ManifestV2 {
        origin_key: String,
        revision: String,
        model_key: String,
    },
    PacksDir,
    ModelDir,
    /// `packs/<model-key>/<pack-sha256>.pack`.
    Pack {
        model_key: String,
        digest: String,
    },
}

/// Which manifests a tree may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeRules {
    /// Exactly the layout of the schema.
    Strict(SchemaVersion),
    /// A schema-v2 tree that still holds v1 manifests: accepted only by
    /// `index migrate`, which repairs it.
    MixedMigration,
}

impl TreeRules {
    fn allows_v1_manifests(self) -> bool {
        matches!(self, Self::Strict(SchemaVersion::V1) | Self::MixedMigration)
    }

    fn allows_v2(self) -> bool {
        matches!(self, Self::Strict(SchemaVersion::V2) | Self::MixedMigration)
    }
}

/// Classifies a `/`-separated repository-relative path (never `.git`).
pub fn classify(rel: &str, is_dir: bool, rules: TreeRules) -> Option<TreeEntry> {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["schema.json"] if !is_dir => Some(TreeEntry::Schema),
        ["indexes"] if is_dir => Some(TreeEntry::IndexesDir),
        ["indexes", origin] if is_dir && keys::is_lower_hex(origin, 64) => Some(TreeEntry::OriginDir),
        ["indexes", origin, revision]
            if is_dir && keys::is_lower_hex(origin, 64) && keys::is_lower_hex(revision, 40) =>
        {
            Some(TreeEntry::RevisionDir)
        }
        ["indexes", origin, revision, file]
            if !is_dir && keys::is_lower_hex(origin, 64) && keys::is_lower_hex(revision, 40) =>
        {
            let key = file.strip_suffix(".json")?;
            if keys::is_lower_hex(key, 16) && rules.allows_v1_manifests() {
                Some(TreeEntry::ManifestV1 {
                    origin_key: origin.to_string(),
                    revision: revision.to_string(),
                    key: key.to_string(),
                })
            } else if keys::is_lower_hex(key, 64) && rules.allows_v2() {
                Some(TreeEntry::ManifestV2 {
                    origin_key: origin.to_string(),
                    revision: revision.to_string(),
                    model_key: key.to_string(),
                })
            } else {
                None
            }
        }
        ["packs"] if is_dir && rules.allows_v2() => Some(TreeEntry::PacksDir),
        ["packs", model] if is_dir && rules.allows_v2() && keys::is_lower_hex(model, 64) => Some(TreeEntry::ModelDir),
        ["packs", model, file] if !is_dir && rules.allows_v2() && keys::is_lower_hex(model, 64) => {
            let digest = file.strip_suffix(".pack").filter(|digest| keys::is_lower_hex(digest, 64))?;
            Some(TreeEntry::Pack { model_key: model.to_string(), digest: digest.to_string() })
        }
        _ => None,
    }
}

/// Walks the work tree at `root` (skipping `.git`) and returns every file
/// with its classification, sorted by path; refuses symlinks, non-regular
/// files and any path outside the rules.
pub fn check(root: &Path, rules: TreeRules) -> Result<Vec<(String, TreeEntry)>, FormatError> {
    let mut files = Vec::new();
    walk(root, "", rules, &mut files)?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

fn walk(dir: &Path, prefix: &str, rules: TreeRules, files: &mut Vec<(String, TreeEntry)>) -> Result<(), FormatError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| FormatError::Io { path, source }
    };
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(FormatError::UnsafePath(path));
        };
        if prefix.is_empty() && name == ".git" {
            continue;
        }
        let file_type = entry.file_type().map_err(io(&path))?;
        if file_type.is_symlink() {
            return Err(FormatError::Symlink(path));
        }
        if !file_type.is_dir() && !file_type.is_file() {
            return Err(FormatError::NonRegular(path));
        }
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let Some(kind) = classify(&rel, file_type.is_dir(), rules) else {
            return Err(FormatError::UnsafePath(path));
        };
        if file_type.is_dir() {
            walk(&path, &rel, rules, files)?;
        } else {
            files.push((rel, kind));
        }
    }
    Ok(())
}

/// Whether the work tree holds anything besides `.git` (a repository with
/// data and no `schema.json` is refused rather than guessed).
pub fn has_data(root: &Path) -> Result<bool, FormatError> {
    let entries = std::fs::read_dir(root).map_err(|source| FormatError::Io { path: root.to_path_buf(), source })?;
    for entry in entries {
        let entry = entry.map_err(|source| FormatError::Io { path: root.to_path_buf(), source })?;
        if entry.file_name() != ".git" {
            return Ok(true);
        }
    }
    Ok(false)
}
