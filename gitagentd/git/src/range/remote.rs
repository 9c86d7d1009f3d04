//! Web addresses for links in release notes: the browsable address of a
//! remote (`git@host:org/repo.git` and `https://host/org/repo` both give
//! `https://host/org/repo`), commit and compare links in the layout
//! GitHub, GitLab, Gitea and Forgejo all serve, and submodule URLs
//! relative to their parent's. Local remotes (paths, `file://`) have no
//! web address.

use git_agent_shared::giturl;
use std::path::Path;

/// The browsable address of the repository at `remote_url`, when it is a
/// network remote with at least an owner and a name.
pub fn web_url(remote_url: &str) -> Option<String> {
    let remote_url = remote_url.trim();
    let identity = giturl::identity(remote_url, Path::new("/"));
    if identity.starts_with("file:") {
        return None;
    }
    let (host, path) = identity.split_once('/')?;
    if path.split('/').filter(|part| !part.is_empty()).count() < 2 {
        return None;
    }
    let plain_http = remote_url.to_ascii_lowercase().starts_with("http://");
    // A port belongs to the transport: an SSH port says nothing about the
    // web server's.
    let host = if plain_http || remote_url.to_ascii_lowercase().starts_with("https://") {
        host
    } else {
        host.split_once(':').map_or(host, |(name, _)| name)
    };
    let scheme = if plain_http { "http" } else { "https" };
    Some(format!("{scheme}://{host}/{path}"))
}

/// The link to one commit of the repository at `web`.
pub fn commit_url(web: &str, sha: &str) -> String {
    format!("{}/commit/{sha}", web.trim_end_matches('/'))
}

/// The link comparing two commits of the repository at `web`.
pub fn compare_url(web: &str, base: &str, release: &str) -> String {
    format!("{}/compare/{base}...{release}", web.trim_end_matches('/'))
}

/// The web address of a submodule whose `.gitmodules` URL is `url`,
/// resolving `./` and `../` URLs against the parent's web address.
pub fn resolve_submodule_url(url: &str, parent_web: Option<&str>) -> Option<String> {
    let url = url.trim();
    if !(url.starts_with("./") || url.starts_with("../")) {
        return web_url(url);
    }
    let parent = parent_web?;
    let (scheme_host, path) = parent.split_once("://").and_then(|(scheme, rest)| {
        let (host, path) = rest.split_once('/')?;
        Some((format!("{scheme}://{host}"), path))
    })?;
    let mut parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    for part in url.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    let joined = parts.join("/");
    let joined = joined.strip_suffix(".git").unwrap_or(&joined);
    (joined.split('/').count() >= 2).then(|| format!("{scheme_host}/{joined}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_remotes_have_web_addresses() {
        for remote in [
            "git@github.com:org/repo.git",
            "ssh://git@github.com/org/repo",
            "ssh://git@github.com:2222/org/repo.git",
            "https://user:token@GitHub.com/org/repo.git",
            "https://github.com/org/repo/",
        ] {
            assert_eq!(web_url(remote).as_deref(), Some("https://github.com/org/repo"), "{remote}");
        }
        assert_eq!(
            web_url("git@gitlab.example:group/sub/repo.git").as_deref(),
            Some("https://gitlab.example/group/sub/repo")
        );
        assert_eq!(web_url("http://git.lan:3000/me/repo").as_deref(), Some("http://git.lan:3000/me/repo"));
    }

    #[test]
    fn local_and_ownerless_remotes_have_none() {
        for remote in ["/srv/git/repo.git", "../repo.git", "file:///srv/git/repo.git", "https://host/repo", ""] {
            assert_eq!(web_url(remote), None, "{remote}");
        }
    }

    #[test]
    fn links_and_relative_submodules() {
        assert_eq!(commit_url("https://h/o/r", "abc"), "https://h/o/r/commit/abc");
        assert_eq!(compare_url("https://h/o/r/", "v1", "v2"), "https://h/o/r/compare/v1...v2");
        assert_eq!(resolve_submodule_url("../lib.git", Some("https://h/o/app")).as_deref(), Some("https://h/o/lib"));
        assert_eq!(resolve_submodule_url("./sub", Some("https://h/o/app")).as_deref(), Some("https://h/o/app/sub"));
        assert_eq!(resolve_submodule_url("../../x", Some("https://h/o/app")), None);
        assert_eq!(resolve_submodule_url("../lib.git", None), None);
        assert_eq!(
            resolve_submodule_url("git@h:other/lib.git", Some("https://h/o/app")).as_deref(),
            Some("https://h/other/lib")
        );
    }
}
