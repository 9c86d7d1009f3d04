//! The crate boundaries as facts: each heavy dependency is declared only
//! by the crates that own its concern, and the client links none of the
//! daemon's machinery (tonic's server side, through axum, included).
//! Read from `cargo metadata` and `cargo tree`, offline: the lock file and
//! the local registry cache the build already filled.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Heavy dependencies and the workspace crates allowed to declare them as
/// normal dependencies (dev-dependencies of tests are not counted).
const OWNERS: &[(&str, &[&str])] = &[
    ("gix", &["gitagent-git", "gitagent-search", "gitagent-sync", "gitagent-inspect", "gitagentd"]),
    ("gix-transport", &["gitagent-search"]),
    // gitagent-embed: the local model's download, through a client of the
    // provider's `HttpClients` that the caller passes in.
    ("reqwest", &["gitagent-provider", "gitagent-search", "gitagent-embed", "git-agent-tests"]),
    ("tonic", &["gitagent-proto", "git-agent-client", "gitagentd"]),
    ("rusqlite", &["gitagent-search", "gitagentd"]),
    ("tree-sitter", &["gitagent-chunk"]),
    ("hyper", &["gitagent-runtime", "gitagentd", "git-agent-client"]),
    ("axum", &["git-agent-tests"]),
];

/// What the client must never link, directly or through another crate.
const NEVER_IN_THE_CLIENT: &[&str] = &["gix", "rusqlite", "libsqlite3-sys", "tree-sitter", "gitagentd", "axum"];

/// The host's target triple, as rustc names it.
fn host() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc).arg("-vV").output().expect("run rustc -vV");
    let text = String::from_utf8(output.stdout).expect("rustc -vV prints UTF-8");
    text.lines().find_map(|line| line.strip_prefix("host: ")).expect("rustc -vV names the host").to_string()
}

/// The workspace's metadata for this host (other platforms' crates are
/// never downloaded by a build here, so they cannot be resolved offline).
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--locked", "--filter-platform"])
        .arg(host())
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("run cargo metadata");
    assert!(output.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn heavy_dependencies_are_declared_only_by_their_owners() {
    let metadata = metadata();
    let members: BTreeSet<&str> =
        metadata["workspace_members"].as_array().unwrap().iter().map(|id| id.as_str().unwrap()).collect();
    let mut strays = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        if !members.contains(package["id"].as_str().unwrap()) {
            continue;
        }
        let crate_name = package["name"].as_str().unwrap();
        for dependency in package["dependencies"].as_array().unwrap() {
            if !dependency["kind"].is_null() {
                continue;
            }
            let name = dependency["name"].as_str().unwrap();
            if let Some((_, owners)) = OWNERS.iter().find(|(heavy, _)| *heavy == name)
                && !owners.contains(&crate_name)
            {
                strays.push(format!("{crate_name} depends on {name}; only {} may", owners.join(", ")));
            }
        }
    }
    assert!(strays.is_empty(), "dependencies outside their owners:\n{}", strays.join("\n"));
}

#[test]
fn the_client_links_none_of_the_daemons_machinery() {
    // `cargo tree` resolves features for the client alone, as a build of
    // the client does (`cargo metadata` unifies them over the workspace).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let output = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "-p", "git-agent-client", "-e", "normal,build", "--prefix", "none"])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("run cargo tree");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).expect("cargo tree prints UTF-8");
    let linked: BTreeSet<&str> = text.lines().filter_map(|line| line.split_whitespace().next()).collect();
    assert!(linked.contains("tonic") && linked.contains("git-agent-shared"), "cargo tree listed the client: {text}");
    let forbidden: Vec<&&str> = NEVER_IN_THE_CLIENT.iter().filter(|name| linked.contains(**name)).collect();
    assert!(forbidden.is_empty(), "the client links {forbidden:?}");
}
