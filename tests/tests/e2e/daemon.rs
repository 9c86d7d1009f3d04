//! The daemon's lifecycle as a user meets it: started on demand, shared by
//! concurrent callers, replaced when killed, stale or of another build,
//! private, stopped cleanly.

use git_agent_tests::{TestEnv, binary, wait_until};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Stdio};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(20);

fn pid_alive(pid: u32) -> bool {
    // A zombie still answers kill(0); read its state to tell.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn kill(pid: u32, signal: i32) {
    // SAFETY: plain kill(2) on a pid we own.
    let status = unsafe { libc::kill(pid as i32, signal) };
    assert_eq!(status, 0, "kill {pid}");
}

fn wait_child(child: &mut Child) -> std::process::ExitStatus {
    let mut status = None;
    assert!(wait_until(DEADLINE, || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    status.unwrap()
}

#[test]
fn first_call_starts_the_daemon_in_a_private_folder() {
    let env = TestEnv::new();
    assert_eq!(env.daemon_pid(), None);
    env.run_in(&env.work(), &["project_id"]).success();
    let pid = env.daemon_pid().expect("the daemon answers after the first call");
    assert!(pid_alive(pid));
    let folder = env.socket_path().parent().unwrap().to_path_buf();
    assert_eq!(std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777, 0o700);
    // Later calls reuse it.
    env.run_in(&env.work(), &["project_id"]).success();
    assert_eq!(env.daemon_pid(), Some(pid));
}

#[test]
fn a_socket_folder_others_can_enter_is_refused_before_anything_is_sent() {
    let env = TestEnv::new();
    env.run_in(&env.work(), &["project_id"]).success();
    let pid = env.daemon_pid().expect("the daemon answers after the first call");
    let folder = env.socket_path().parent().unwrap().to_path_buf();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = env.run_in(&env.work(), &["project_id"]);
    let stderr = run.failure().to_string();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(stderr.contains("refusing to use the daemon socket folder") && stderr.contains("0755"), "{stderr}");
    assert!(stderr.contains("chmod 700"), "{stderr}");
    // The daemon was not replaced and still serves a private folder.
    assert_eq!(env.daemon_pid(), Some(pid));
    env.run_in(&env.work(), &["project_id"]).success();
}

#[test]
fn fifty_concurrent_calls_agree() {
    let env = TestEnv::new();
    let repo = env.repo("shared");
    repo.git(&["remote", "add", "origin", "https://example.test/org/shared.git"]);
    let children: Vec<_> = (0..50)
        .map(|_| {
            env.git_agent_in(repo.path(), &["project_id"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = children.into_iter().map(|child| child.wait_with_output().unwrap()).collect();
    let expected = format!("{}\n", git_agent_tests::sha256_hex(b"example.test/org/shared"));
    for output in &outputs {
        assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
    }
    assert!(env.daemon_pid().is_some());
}

#[test]
fn a_killed_daemon_is_replaced_on_the_next_call() {
    let env = TestEnv::new();
    env.run_in(&env.work(), &["project_id"]).success();
    let old = env.daemon_pid().unwrap();
    kill(old, libc::SIGKILL);
    assert!(wait_until(DEADLINE, || !pid_alive(old)));
    assert!(env.socket_path().exists(), "SIGKILL leaves the socket file behind");
    env.run_in(&env.work(), &["project_id"]).success();
    let new = env.daemon_pid().unwrap();
    assert_ne!(new, old);
}

#[test]
fn a_stale_socket_file_is_recovered() {
    let env = TestEnv::new();
    let socket = env.socket_path();
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    std::fs::set_permissions(socket.parent().unwrap(), std::fs::Permissions::from_mode(0o700)).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    env.run_in(&env.work(), &["project_id"]).success();
    assert!(env.daemon_pid().is_some());
}

#[test]
fn a_daemon_of_another_build_is_replaced() {
    let env = TestEnv::new();
    let mut old = env
        .gitagentd(&["serve", "--build-id", "0.0.0+another-build"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(DEADLINE, || env.daemon_pid() == Some(old.id())));
    let stdout = env.run_in(&env.work(), &["project_id"]).success();
    assert_eq!(stdout.len(), 65);
    assert!(wait_child(&mut old).success(), "the old daemon drains and exits cleanly");
    let new = env.daemon_pid().expect("a daemon of this build answers");
    assert_ne!(new, old.id());
}

#[test]
fn sigterm_stops_the_daemon_cleanly() {
    let env = TestEnv::new();
    let mut daemon = env.gitagentd(&["serve"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    assert!(wait_until(DEADLINE, || env.daemon_pid() == Some(daemon.id())));
    kill(daemon.id(), libc::SIGTERM);
    assert!(wait_child(&mut daemon).success());
    assert!(!env.socket_path().exists(), "a clean stop removes its socket");
}

#[test]
fn status_and_stop_for_a_person() {
    let env = TestEnv::new();
    let status = env.gitagentd(&["status"]).output().unwrap();
    assert_eq!(status.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&status.stdout).contains("not running"));
    env.run_in(&env.work(), &["project_id"]).success();
    let status = env.gitagentd(&["status"]).output().unwrap();
    assert!(status.status.success());
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("gitagentd is running") && text.contains("on demand"), "{text}");
    let pid = env.daemon_pid().unwrap();
    let stop = env.gitagentd(&["stop"]).output().unwrap();
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    assert!(!pid_alive(pid));
    assert_eq!(env.daemon_pid(), None);
}

#[test]
fn an_auto_started_daemon_exits_when_idle() {
    let mut env = TestEnv::new();
    env.set_env("GITAGENTD_IDLE_SECS", "1");
    env.run_in(&env.work(), &["project_id"]).success();
    let pid = env.daemon_pid().unwrap();
    assert!(wait_until(DEADLINE, || !pid_alive(pid)), "the daemon exits after its idle period");
    assert!(!env.socket_path().exists());
}

#[test]
fn logs_go_to_private_rotated_files_under_the_state_directory() {
    let env = TestEnv::new();
    env.run_in(&env.work(), &["project_id"]).success();
    let logs = env.state_home().join("git-agent/logs");
    let mut found = false;
    assert!(wait_until(DEADLINE, || {
        found = std::fs::read_dir(&logs)
            .map(|entries| entries.flatten().any(|entry| entry.file_name().to_string_lossy().starts_with("gitagentd")))
            .unwrap_or(false);
        found
    }));
    for entry in std::fs::read_dir(&logs).unwrap().flatten() {
        assert_eq!(entry.metadata().unwrap().permissions().mode() & 0o777, 0o600, "{:?}", entry.path());
    }
}

#[test]
fn version_flags() {
    let output = std::process::Command::new(binary("gitagentd")).arg("--version").output().unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("gitagentd "));
    let output = std::process::Command::new(binary("git-agent")).arg("--version").output().unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("git-agent "));
}

#[test]
fn a_socket_passed_by_systemd_is_served() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let socket = env.socket_path();
    // As the unit's DirectoryMode=0700 makes it: the client refuses any
    // other folder.
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(socket.parent().unwrap())
        .unwrap();
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
    // systemd passes the socket as descriptor 3 and names the pid it is for.
    let mut command = std::process::Command::new("sh");
    env.apply(&mut command);
    command
        .args(["-c", "LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\" serve", binary("gitagentd").to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: dup2 and fcntl are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            // dup2 onto itself keeps close-on-exec, so clear it either way.
            if (fd != 3 && libc::dup2(fd, 3) < 0) || libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut daemon = command.spawn().unwrap();
    drop(listener);
    env.run_in(&env.work(), &["project_id"]).success();
    assert_eq!(env.daemon_pid(), Some(daemon.id()), "the activated daemon served the call");
    kill(daemon.id(), libc::SIGTERM);
    assert!(wait_child(&mut daemon).success());
    assert!(socket.exists(), "the socket belongs to the service manager and stays");
}

#[test]
fn connections_from_another_user_are_refused() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("only root can connect as another user; this check runs in CI, which runs as root");
        return;
    }
    let env = TestEnv::new();
    env.run_in(&env.work(), &["project_id"]).success();
    // Open the folders and the socket to everyone, so only the daemon's
    // peer-credential check stands between another user and the daemon.
    let socket = env.socket_path();
    for path in [env.root().to_path_buf(), env.runtime_dir(), socket.parent().unwrap().to_path_buf()] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut status = env.gitagentd(&["status"]);
    status.uid(65534).gid(65534);
    let output = status.output().unwrap();
    assert_ne!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    assert!(!String::from_utf8_lossy(&output.stdout).contains("pid:"));
    // The owner is still served.
    assert!(env.daemon_pid().is_some());
}
