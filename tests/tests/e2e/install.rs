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

/// The daemon is linked with packed relative relocations (`DT_RELR`, 1.6 MB
/// less to read at every start and to keep resident) exactly when the glibc
/// it runs on loads them (2.36 and later), as gitagentd/build.rs decides for
/// x86_64 Linux; anywhere else it keeps plain `RELA` relocations.
#[test]
fn the_daemon_packs_its_relative_relocations_where_glibc_loads_them() {
    let dynamic = Command::new("readelf")
        .args(["--dynamic", "--wide"])
        .arg(binary("gitagentd"))
        .output()
        .expect("readelf (binutils) runs; CI installs it with the C compiler");
    assert!(dynamic.status.success(), "{}", String::from_utf8_lossy(&dynamic.stderr));
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    let packed = dynamic.lines().any(|line| line.contains("(RELR)"));
    let expected = cfg!(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))
        && std::env::var_os("GITAGENTD_NO_RELR").is_none_or(|value| value != "1")
        && running_glibc() >= (2, 36);
    assert_eq!(packed, expected, "DT_RELR in the daemon's dynamic section:\n{dynamic}");
    if packed {
        let relative = dynamic.lines().find(|line| line.contains("(RELACOUNT)"));
        assert!(relative.is_none(), "no relative relocation is left in RELA: {relative:?}");
    }
}

/// The running glibc's release (`gnu_get_libc_version`), or (0, 0) on
/// another C library.
fn running_glibc() -> (u32, u32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
        let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        let mut parts = version.to_str().unwrap_or("").split('.').map(|part| part.parse().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        (0, 0)
    }
}
