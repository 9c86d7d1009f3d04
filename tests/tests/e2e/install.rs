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
