//! Git remote URLs: one stable identity for the many spellings of the same
//! repository, and a sanitized form that is safe to print.

use std::path::Path;
use url::Url;

/// The identity of a remote: `host[:port]/path` for network remotes with
/// the user, default port, trailing `.git` and case of the host dropped;
/// `file:<clean absolute path>` for local ones. Relative local paths are
/// resolved against `base`.
pub fn identity(value: &str, base: &Path) -> String {
    let value = value.trim();
    if let Some((host, path)) = split_scp(value) {
        return network_identity(host, path);
    }
    if let Ok(parsed) = Url::parse(value) {
        if parsed.scheme() == "file" {
            let path = percent_decode(parsed.path());
            return format!("file:{}", clean_path(&absolutize(&path, base)));
        }
        if let Some(host) = parsed.host() {
            let host = match host {
                url::Host::Domain(name) => name.to_string(),
                url::Host::Ipv4(address) => address.to_string(),
                url::Host::Ipv6(address) => format!("[{address}]"),
            };
            let host = match parsed.port() {
                Some(port) if Some(port) != default_port(parsed.scheme()) => format!("{host}:{port}"),
                _ => host,
            };
            return network_identity(&host, &percent_decode(parsed.path()));
        }
    }
    format!("file:{}", clean_path(&absolutize(value, base)))
}

/// The URL without credentials, query or fragment, for printing.
/// Values that are not URLs are returned trimmed, except that a password in
/// an scp-like `user:password@host:path` is dropped too.
pub fn sanitize(value: &str) -> String {
    let trimmed = value.trim();
    match Url::parse(trimmed) {
        Ok(mut parsed) if !parsed.cannot_be_a_base() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        _ => strip_scp_password(trimmed),
    }
}

fn strip_scp_password(value: &str) -> String {
    let Some(at) = value.find('@') else { return value.to_string() };
    let user = &value[..at];
    if user.contains('/') {
        return value.to_string();
    }
    match user.split_once(':') {
        Some((name, _password)) => format!("{name}{}", &value[at..]),
        None => value.to_string(),
    }
}

/// Splits `[user@]host:path`, Git's scp-like syntax, refusing URL schemes,
/// absolute paths and single-letter Windows drives.
fn split_scp(value: &str) -> Option<(&str, &str)> {
    let (host, path) = value.split_once(':')?;
    if host.is_empty() || path.is_empty() || host.contains(['/', '\\']) || path.starts_with(['/', '\\']) {
        return None;
    }
    if !host.contains('@') {
        let lower = host.to_ascii_lowercase();
        if matches!(lower.as_str(), "file" | "git" | "git+ssh" | "http" | "https" | "ssh") || host.len() == 1 {
            return None;
        }
    }
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    (!host.is_empty()).then_some((host, path))
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme.to_ascii_lowercase().as_str() {
        "http" => Some(80),
        "https" => Some(443),
        "ssh" | "git+ssh" => Some(22),
        _ => None,
    }
}

fn network_identity(host: &str, path: &str) -> String {
    let cleaned = clean_path(&format!("/{path}"));
    let trimmed = cleaned.trim_matches('/');
    let trimmed = trimmed.strip_suffix(".git").unwrap_or(trimmed);
    format!("{}/{}", host.to_ascii_lowercase(), trimmed)
}

fn absolutize(path: &str, base: &Path) -> String {
    if path.starts_with('/') { path.to_string() } else { format!("{}/{}", base.display(), path) }
}

fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && index + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[index + 1]), hex(bytes[index + 2]))
        {
            out.push(high * 16 + low);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// Lexical path cleaning with Go's `path.Clean` rules: repeated slashes
/// collapse, `.` elements vanish, `..` removes the element before it and
/// is dropped at the root; the empty path becomes `.`.
pub fn clean_path(path: &str) -> String {
    // Cleaning splits and joins at the ASCII `/`, so UTF-8 stays UTF-8.
    match String::from_utf8(clean_path_bytes(path.as_bytes())) {
        Ok(clean) => clean,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    }
}

/// [`clean_path`] of a path's bytes, which need not be UTF-8.
pub fn clean_path_bytes(path: &[u8]) -> Vec<u8> {
    let rooted = path.starts_with(b"/");
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&byte| byte == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                if parts.last().is_some_and(|last| *last != b"..") {
                    parts.pop();
                } else if !rooted {
                    parts.push(b"..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join(&b'/');
    match (rooted, joined.is_empty()) {
        (true, _) => [b"/".as_slice(), &joined].concat(),
        (false, true) => b".".to_vec(),
        (false, false) => joined,
    }
}

/// [`clean_path`] of an operating-system path, byte for byte.
pub fn clean_os_path(path: &Path) -> std::path::PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    std::ffi::OsString::from_vec(clean_path_bytes(path.as_os_str().as_bytes())).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(value: &str) -> String {
        identity(value, Path::new("/base"))
    }

    #[test]
    fn paths_are_cleaned_byte_for_byte() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(clean_path("/a/./b/../c//"), "/a/c");
        assert_eq!(clean_path("../a/.."), "..");
        assert_eq!(clean_path(""), ".");
        let odd = clean_os_path(Path::new(std::ffi::OsStr::from_bytes(b"/w/dir\xff/./x/../y")));
        assert_eq!(odd.as_os_str().as_bytes(), b"/w/dir\xff/y");
    }

    #[test]
    fn common_spellings_share_one_identity() {
        let expected = "github.com/org/repo";
        for spelling in [
            "git@github.com:org/repo.git",
            "ssh://git@github.com/org/repo",
            "ssh://git@github.com:22/org/repo.git",
            "https://github.com/org/repo.git",
            "https://user:token@GitHub.com/org/repo",
            "https://github.com:443/org/repo/",
            "git+ssh://git@github.com/org/repo.git",
            "github.com:org/repo",
        ] {
            assert_eq!(id(spelling), expected, "{spelling}");
        }
    }

    #[test]
    fn non_default_ports_are_kept() {
        assert_eq!(id("ssh://git@host:2222/org/repo.git"), "host:2222/org/repo");
        assert_eq!(id("https://host:8443/org/repo"), "host:8443/org/repo");
    }

    #[test]
    fn local_paths_are_file_identities() {
        assert_eq!(id("/srv/git/repo.git"), "file:/srv/git/repo.git");
        assert_eq!(id("../up/./repo"), "file:/up/repo");
        assert_eq!(id("file:///srv/git//repo"), "file:/srv/git/repo");
        assert_eq!(id("C:/repo"), "file:/base/C:/repo");
    }

    #[test]
    fn sanitize_drops_credentials_query_and_fragment() {
        assert_eq!(sanitize("https://user:secret@example.test/indexes.git"), "https://example.test/indexes.git");
        assert_eq!(sanitize(" https://example.test/x.git?token=1#frag "), "https://example.test/x.git");
        assert_eq!(sanitize("git@example.test:org/indexes.git"), "git@example.test:org/indexes.git");
        assert_eq!(sanitize("user:secret@example.test:org/x.git"), "user@example.test:org/x.git");
    }

    #[test]
    fn clean_path_follows_go_rules() {
        assert_eq!(clean_path("/a//b/./c/.."), "/a/b");
        assert_eq!(clean_path("/../a"), "/a");
        assert_eq!(clean_path("a/../.."), "..");
        assert_eq!(clean_path(""), ".");
        assert_eq!(clean_path("/"), "/");
    }
}
