//! packaging/install.sh and the generated shell completions.

use git_agent_tests::{TestEnv, binary};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn install_script_installs_both_binaries_and_fish_completions() {
    let env = TestEnv::new();
    let destdir = env.work().join("dest");
    std::fs::create_dir_all(env.config_home().join("fish")).unwrap();
    let bin_dir = binary("git-agent").parent().unwrap().to_path_buf();
    let mut command = Command::new("bash");
    env.apply(&mut command);
    let output = command
        .arg(workspace_root().join("packaging/install.sh"))
        .args([
            "--destdir",
            destdir.to_str().unwrap(),
            "--prefix",
            "/usr/local",
            "--bin-dir",
            bin_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for name in ["git-agent", "gitagentd"] {
        let installed = destdir.join("usr/local/bin").join(name);
        let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
        assert!(mode & 0o111 != 0, "{name} is executable");
        let version = Command::new(&installed).arg("--version").output().unwrap();
        assert!(version.status.success());
    }
    let fish = destdir.join(env.config_home().strip_prefix("/").unwrap()).join("fish/completions/git-agent.fish");
    assert!(fish.is_file(), "{fish:?}");
    let man = destdir.join("usr/local/share/man/man1");
    assert_eq!(man_pages_in(&man), rendered_man_pages(), "{man:?}");
    assert_eq!(std::fs::metadata(man.join("git-agent.1")).unwrap().permissions().mode() & 0o777, 0o644);
}

/// Installed where `man` looks beside the binaries, the page is what
/// `git agent --help` shows (git runs `man git-agent`).
#[test]
fn git_agent_help_through_git_shows_the_installed_man_page() {
    let env = TestEnv::new();
    let prefix = env.work().join("prefix");
    let bin_dir = binary("git-agent").parent().unwrap().to_path_buf();
    let mut install = Command::new("bash");
    env.apply(&mut install);
    let output = install
        .arg(workspace_root().join("packaging/install.sh"))
        .args(["--prefix", prefix.to_str().unwrap(), "--bin-dir", bin_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut help = Command::new("git");
    env.apply(&mut help);
    let path = std::env::join_paths(
        std::iter::once(prefix.join("bin")).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let output = help
        .args(["agent", "--help"])
        .env("PATH", path)
        .env("MANPATH", prefix.join("share/man"))
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}{stdout}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("git-agent - Git writing and reading chores with a language model"), "{stdout}");
    assert!(stdout.contains("git-agent-completions(1)"), "{stdout}");
    let mut search = Command::new("man");
    env.apply(&mut search);
    let output =
        search.arg("git-agent-search").env("MANPATH", prefix.join("share/man")).env("MANWIDTH", "80").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("--format"),
        "{}{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn install_script_skips_fish_without_a_fish_config_folder() {
    let env = TestEnv::new();
    let destdir = env.work().join("dest");
    let bin_dir = binary("git-agent").parent().unwrap().to_path_buf();
    let mut command = Command::new("bash");
    env.apply(&mut command);
    let output = command
        .arg(workspace_root().join("packaging/install.sh"))
        .env("DESTDIR", &destdir)
        .args(["--bin-dir", bin_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let home_bin = destdir.join(env.home().strip_prefix("/").unwrap()).join(".local/bin/git-agent");
    assert!(home_bin.is_file(), "default prefix is $HOME/.local: {home_bin:?}");
    assert!(!destdir.join(env.config_home().strip_prefix("/").unwrap()).join("fish").exists());
}

#[test]
fn committed_completions_match_the_command_line_definition() {
    for shell in ["bash", "zsh", "fish"] {
        let generated = Command::new(binary("git-agent")).args(["completions", shell]).output().unwrap();
        assert!(generated.status.success());
        let committed =
            std::fs::read(workspace_root().join(format!("packaging/completions/git-agent.{shell}"))).unwrap();
        assert!(
            generated.stdout == committed,
            "packaging/completions/git-agent.{shell} is stale; regenerate with `git-agent completions {shell}`"
        );
    }
}

/// The manual pages as the clap definition renders them now: `git-agent.1`
/// and one page per subcommand (`git-agent-search.1`, `git-agent-index-sync.1`),
/// which the first one's SUBCOMMANDS section names; by file name.
fn rendered_man_pages() -> std::collections::BTreeMap<String, Vec<u8>> {
    let folder = tempfile::tempdir().unwrap();
    clap_mangen::generate_to(git_agent_shared::cli::command(), folder.path()).expect("render the manual pages");
    man_pages_in(folder.path())
}

fn man_pages_in(folder: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Default::default() };
    entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "1"))
        .map(|path| (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap()))
        .collect()
}

/// `git agent --help` asks `man git-agent`; the committed pages are what
/// the clap definition renders (`UPDATE_GOLDEN=1` rewrites them).
#[test]
fn committed_man_pages_match_the_command_line_definition() {
    let folder = workspace_root().join("packaging/man");
    let rendered = rendered_man_pages();
    assert!(
        rendered.contains_key("git-agent.1") && rendered.contains_key("git-agent-search.1"),
        "{:?}",
        rendered.keys()
    );
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        for (name, page) in &rendered {
            std::fs::write(folder.join(name), page).unwrap();
        }
    }
    let committed = man_pages_in(&folder);
    let stale: Vec<&String> =
        rendered.keys().chain(committed.keys()).filter(|name| rendered.get(*name) != committed.get(*name)).collect();
    assert!(
        stale.is_empty(),
        "packaging/man/ is stale ({stale:?}); regenerate with `UPDATE_GOLDEN=1 cargo test -p git-agent-tests --test e2e -- man_pages`"
    );
}

/// What bash's programmable completion offers for `words` (the last one
/// the word being completed) with `script` loaded: the function that
/// `complete -p git-agent` names, called as a TAB would call it.
fn bash_completions(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let driver = r#"
        source "$1"; shift
        function=$(complete -p git-agent | sed -n 's/.*-F \([^ ]*\).*/\1/p')
        COMP_WORDS=("$@")
        COMP_CWORD=$(( $# - 1 ))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        COMPREPLY=()
        "$function" git-agent "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let output = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", driver, "bash"])
        .arg(script)
        .args(words)
        .output()
        .expect("bash runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).lines().filter(|line| !line.is_empty()).map(str::to_string).collect()
}

/// clap_complete labelled the states of its bash script `git__subcmd__agent__…`
/// while it walked the words into `git__agent__…`, so nothing past the
/// first word completed (issue 32). The committed script is the one users
/// install; `committed_completions_match_the_command_line_definition` ties
/// it to what the binary prints.
#[test]
fn bash_completion_completes_subcommand_flags_and_nested_subcommands() {
    let script = workspace_root().join("packaging/completions/git-agent.bash");
    for (words, expected) in [
        (&["git-agent", "se"][..], "search"),
        (&["git-agent", "comp"][..], "completions"),
        (&["git-agent", "search", "--fo"][..], "--format"),
        (&["git-agent", "index", "s"][..], "sync"),
        (&["git-agent", "index", "migrate", "--t"][..], "--to"),
        (&["git-agent", "release-note", "--o"][..], "--out"),
        (&["git-agent", "completions", "f"][..], "fish"),
    ] {
        let offered = bash_completions(&script, words);
        assert_eq!(offered, [expected], "completions of {words:?}");
    }
}

/// `git-agent completions` is a command like the others, listed by `--help`.
#[test]
fn help_lists_the_completions_command() {
    let help = Command::new(binary("git-agent")).arg("--help").output().unwrap();
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.lines().any(|line| line.trim_start().starts_with("completions ")), "{help}");
}
