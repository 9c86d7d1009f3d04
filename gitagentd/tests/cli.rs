//! The daemon's own command line. (Its presence also makes `cargo test`
//! build the `gitagentd` executable that the end-to-end tests run.)

#[test]
fn version_prints_the_package_version() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_gitagentd")).arg("--version").output().unwrap();
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("gitagentd {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn unknown_subcommands_fail_with_usage() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_gitagentd")).arg("frobnicate").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("frobnicate"));
}
