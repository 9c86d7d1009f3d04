//! The daemon's lifecycle as a user meets it: started on demand, shared by
//! concurrent callers, replaced when killed, stale or of another build,
//! private, stopped cleanly.

use git_agent_tests::fake_openai::{FakeOpenAi, Reply, events};
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

/// mimalloc advises its arena for transparent huge pages, and a 2 MiB page
/// with one live object stays resident when the daemon returns its free
/// memory; the daemon turns them off for itself.
#[test]
fn the_daemon_runs_without_transparent_huge_pages() {
    let env = TestEnv::new();
    env.run_in(&env.work(), &["project_id"]).success();
    let pid = env.daemon_pid().expect("the daemon answers after the first call");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let thp = status.lines().find_map(|line| line.strip_prefix("THP_enabled:")).map(str::trim);
    assert_eq!(thp, Some("0"), "{status}");
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

/// Creates the socket's folder as the unit's `DirectoryMode=0700` makes
/// it: the client refuses any other folder.
fn create_socket_dir(socket: &std::path::Path) {
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(socket.parent().unwrap())
        .unwrap();
}

/// Starts `gitagentd serve` as systemd would on socket activation: the
/// listening socket as descriptor 3, `LISTEN_PID` naming the daemon.
fn start_activated(env: &TestEnv, listener: &std::os::unix::net::UnixListener) -> Child {
    use std::os::unix::process::CommandExt;
    let fd = std::os::fd::AsRawFd::as_raw_fd(listener);
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
    command.spawn().unwrap()
}

/// The device and inode of the file at `path`: which socket file it is.
fn file_identity(path: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).unwrap();
    (meta.dev(), meta.ino())
}

/// Whether some process holds the flock on `path`.
fn lock_is_held(path: &std::path::Path) -> bool {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    // SAFETY: flock on a descriptor we own; closing it drops our lock.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

/// Runs an auto-started `gitagentd serve --auto` to its end.
fn run_auto_daemon(env: &TestEnv) -> std::process::Output {
    let mut auto = env.gitagentd(&["serve", "--auto"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_child(&mut auto);
    auto.wait_with_output().unwrap()
}

#[test]
fn a_socket_passed_by_systemd_is_served() {
    let env = TestEnv::new();
    let socket = env.socket_path();
    create_socket_dir(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let mut daemon = start_activated(&env, &listener);
    drop(listener);
    env.run_in(&env.work(), &["project_id"]).success();
    assert_eq!(env.daemon_pid(), Some(daemon.id()), "the activated daemon served the call");
    kill(daemon.id(), libc::SIGTERM);
    assert!(wait_child(&mut daemon).success());
    assert!(socket.exists(), "the socket belongs to the service manager and stays");
}

/// The activated daemon takes the same address lock as an auto-started
/// one: a daemon started on demand meanwhile sees the address taken and
/// leaves the service manager's socket alone.
#[test]
fn a_socket_activated_daemon_holds_the_address_lock() {
    let env = TestEnv::new();
    let socket = env.socket_path();
    create_socket_dir(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let systemd_socket = file_identity(&socket);
    let mut daemon = start_activated(&env, &listener);
    drop(listener);
    env.run_in(&env.work(), &["project_id"]).success();
    assert!(lock_is_held(&socket.with_file_name("gitagentd.lock")), "the activated daemon holds gitagentd.lock");

    let auto = run_auto_daemon(&env);
    assert!(auto.status.success(), "{}", String::from_utf8_lossy(&auto.stderr));
    assert_eq!(file_identity(&socket), systemd_socket, "the auto-started daemon replaced the socket");
    env.run_in(&env.work(), &["project_id"]).success();
    assert_eq!(env.daemon_pid(), Some(daemon.id()), "the activated daemon still serves");

    kill(daemon.id(), libc::SIGTERM);
    assert!(wait_child(&mut daemon).success());
    assert_eq!(file_identity(&socket), systemd_socket, "the service manager's socket stays after stop");
}

/// Before activation the service manager's socket has a listener but no
/// lock holder: an auto-started daemon must not take it for a stale file.
#[test]
fn an_auto_started_daemon_never_unlinks_a_listening_socket() {
    let env = TestEnv::new();
    let socket = env.socket_path();
    create_socket_dir(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let systemd_socket = file_identity(&socket);

    let auto = run_auto_daemon(&env);
    assert!(auto.status.success(), "{}", String::from_utf8_lossy(&auto.stderr));
    assert_eq!(file_identity(&socket), systemd_socket, "the auto-started daemon unlinked a listening socket");
    assert!(!lock_is_held(&socket.with_file_name("gitagentd.lock")), "the auto-started daemon kept the lock");
    // The service manager's socket still reaches its listener.
    std::os::unix::net::UnixStream::connect(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "the connection reached the service manager's listener");
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

/// More stdout than any single gRPC message may carry (tonic decodes 4 MiB
/// by default): a `--ls-files --format json` listing of about 9.5 MB, made
/// of a few thousand files under a deep folder, reaches the caller byte for
/// byte.
#[test]
fn stdout_larger_than_a_message_arrives_byte_for_byte() {
    let mut env = TestEnv::new();
    let fake = git_agent_tests::fake_embeddings::FakeEmbeddings::start();
    fake.configure(&mut env);
    env.set_env("OPENAI_EMBEDDING_DIMENSIONS", "8");
    let repo = env.repo("wide");
    // Fourteen folders of 250 characters: each path is about 3,520 bytes.
    let deep: Vec<String> = (0..14).map(|level| format!("{level:02}{}", "d".repeat(248))).collect();
    let deep = deep.join("/");
    std::fs::create_dir_all(repo.path().join(&deep)).unwrap();
    let files: Vec<String> = (0..2_700).map(|n| format!("{deep}/f{n:05}.txt")).collect();
    for (n, file) in files.iter().enumerate() {
        std::fs::write(repo.path().join(file), format!("note {n}\n")).unwrap();
    }
    env.run_in(repo.path(), &["search", "--index"]).success();

    let run = env.run_in(repo.path(), &["search", "--ls-files", "--format", "json"]);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    assert!(run.stdout.len() > 8 * 1024 * 1024, "only {} bytes of stdout", run.stdout.len());
    let expected_files = format!("\"files\":{}}}\n", serde_json::to_string(&files).unwrap());
    assert!(
        run.stdout.ends_with(expected_files.as_bytes()),
        "the listing does not end with every file in order ({} bytes received)",
        run.stdout.len()
    );
    let parsed: serde_json::Value = serde_json::from_slice(&run.stdout).expect("one complete JSON document");
    assert_eq!(parsed["files"].as_array().map(Vec::len), Some(files.len()));
}

/// Blocking work runs on the blocking pool: with more slow blocking calls
/// in flight than the runtime has worker threads (each reading the
/// configuration file under an injected delay), `project_id` and
/// `status` (Hello, then Status) still answer at once.
#[test]
fn slow_blocking_work_does_not_delay_other_callers() {
    const DELAY: Duration = Duration::from_secs(5);
    let mut env = TestEnv::new();
    env.set_env("GITAGENTD_TEST_SLOW_BLOCKING", &format!("the configuration file={}", DELAY.as_millis()));
    env.run_in(&env.work(), &["project_id"]).success();
    let workers = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let slow_calls = workers + 2;
    let mut slow: Vec<Child> = (0..slow_calls)
        .map(|_| {
            env.git_agent_in(&env.work(), &["config", "index.remote"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    assert!(
        wait_until(DEADLINE, || env.active_commands() >= slow_calls),
        "the slow calls never were all in flight at once"
    );

    let started = std::time::Instant::now();
    env.run_in(&env.work(), &["project_id"]).success();
    assert!(env.daemon_pid().is_some());
    let elapsed = started.elapsed();
    assert!(elapsed < DELAY / 2, "project_id and status took {elapsed:?} beside slow blocking work");
    assert!(
        slow.iter_mut().all(|child| child.try_wait().unwrap().is_none()),
        "the slow calls ended before the fast ones were measured"
    );
    for child in &mut slow {
        let status = wait_child(child);
        assert_eq!(status.code(), Some(1), "config without a value fails as not configured");
    }
}

/// The cheap form of `bench-daemon-soak`: once the first ten
/// repositories have been searched, twenty more searches over ten other
/// repositories and five finished reviews open no descriptor for good
/// (caches are bounded; finished tasks and evicted views close theirs).
#[test]
fn open_descriptors_stay_bounded_over_many_repositories() {
    let workload = git_agent_tests::soak::Workload::new(20);
    for repo in 0..10 {
        workload.search(repo);
    }
    let baseline = workload.settled_footprint();
    for round in 0..2 {
        for repo in 10..20 {
            workload.search(repo);
            if round == 0 && repo % 2 == 0 {
                workload.review(repo);
            }
        }
    }
    let pid = workload.daemon_pid();
    let last = workload.settled_footprint();
    // Unbounded caches would add about three descriptors per new
    // repository (thirty here); snapshot segments of the cached views come
    // and go by a few, so the bound allows ten.
    let (fds_ok, _) = last.within(&baseline, 10, 10);
    assert!(
        fds_ok,
        "open descriptors grew from {} to {}:\n{}",
        baseline.open_fds,
        last.open_fds,
        git_agent_tests::soak::open_files(pid).join("\n")
    );
}

/// `--idle-timeout` takes a duration as `--timeout` does (`1s`, `15m`),
/// and plain seconds as before.
#[test]
fn idle_timeout_takes_durations_and_plain_seconds() {
    let env = TestEnv::new();
    for (flag, reported) in [("2m", "exits: after 120s idle"), ("90", "exits: after 90s idle")] {
        let mut daemon = env
            .gitagentd(&["serve", "--idle-timeout", flag])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut status = String::new();
        let answered = wait_until(DEADLINE, || {
            if daemon.try_wait().unwrap().is_some() {
                return true;
            }
            status = String::from_utf8_lossy(&env.gitagentd(&["status"]).output().unwrap().stdout).into_owned();
            status.contains(reported)
        });
        let exited = daemon.try_wait().unwrap();
        if exited.is_some() {
            let output = daemon.wait_with_output().unwrap();
            panic!("--idle-timeout {flag} was refused: {}", String::from_utf8_lossy(&output.stderr));
        }
        assert!(answered, "--idle-timeout {flag}: {status}");
        kill(daemon.id(), libc::SIGTERM);
        assert!(wait_child(&mut daemon).success());
    }
    // A daemon given one second leaves by itself once idle.
    let mut daemon =
        env.gitagentd(&["serve", "--idle-timeout", "1s"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let status = wait_child(&mut daemon);
    let stderr = std::io::read_to_string(daemon.stderr.take().unwrap()).unwrap();
    assert!(status.success(), "{status}: {stderr}");
    for refused in ["abc", "0", "250ms"] {
        let output = env.gitagentd(&["serve", "--idle-timeout", refused]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{refused}: {stderr}");
        assert!(stderr.contains(&format!("invalid idle period \"{refused}\"")) && stderr.contains("15m"), "{stderr}");
    }
}

/// A `GITAGENTD_IDLE_SECS` that is no idle period is refused, by `serve`
/// and through the client that starts the daemon, instead of leaving the
/// daemon up for the default 15 minutes without a word.
#[test]
fn an_invalid_idle_setting_is_refused_with_its_reason() {
    let mut env = TestEnv::new();
    env.set_env("GITAGENTD_IDLE_SECS", "abc");
    let mut serve = env.gitagentd(&["serve", "--auto"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let exited = wait_until(DEADLINE, || serve.try_wait().unwrap().is_some());
    if !exited {
        kill(serve.id(), libc::SIGKILL);
    }
    let output = serve.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(exited, "gitagentd serve --auto served with GITAGENTD_IDLE_SECS=abc");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("GITAGENTD_IDLE_SECS: invalid idle period \"abc\"")
            && stderr.contains("hint: fix or unset GITAGENTD_IDLE_SECS"),
        "{stderr}"
    );
    assert!(!env.socket_path().exists(), "nothing was bound");

    let started = std::time::Instant::now();
    let run = env.run_in(&env.work(), &["project_id"]);
    let stderr = run.failure();
    assert!(stderr.contains("GITAGENTD_IDLE_SECS: invalid idle period \"abc\""), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "the client waited {:?}", started.elapsed());

    // Durations work there too.
    let mut env = TestEnv::new();
    env.set_env("GITAGENTD_IDLE_SECS", "1m");
    env.run_in(&env.work(), &["project_id"]).success();
    let status = String::from_utf8_lossy(&env.gitagentd(&["status"]).output().unwrap().stdout).into_owned();
    assert!(status.contains("exits: after 60s idle"), "{status}");
}

/// Replaces the daemon's socket file with a regular file, as a stray `rm`
/// and a write to the same path would.
fn replace_socket_with_a_regular_file(env: &TestEnv) {
    let socket = env.socket_path();
    std::fs::remove_file(&socket).unwrap();
    std::fs::write(&socket, "not a socket\n").unwrap();
}

/// A daemon whose socket file was removed and replaced by a regular file
/// can no longer be reached, yet holds the address lock: it notices and
/// leaves, so the next call starts a daemon that takes the path back,
/// instead of failing after 25 s with "another gitagentd holds the lock".
#[test]
fn a_socket_path_taken_by_a_regular_file_is_recovered_by_the_next_call() {
    let env = TestEnv::new();
    env.run_in(&env.work(), &["project_id"]).success();
    let old = env.daemon_pid().unwrap();
    replace_socket_with_a_regular_file(&env);
    let started = std::time::Instant::now();
    env.run_in(&env.work(), &["project_id"]).success();
    assert!(started.elapsed() < Duration::from_secs(10), "the call took {:?}", started.elapsed());
    assert!(wait_until(DEADLINE, || !pid_alive(old)), "the unreachable daemon left");
    let new = env.daemon_pid().expect("a daemon answers on the socket again");
    assert_ne!(new, old);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(env.socket_path()).unwrap().file_type().is_socket());
}

/// `gitagentd status` and `stop` find a daemon that does not answer on the
/// socket path through the address lock, which names its pid, instead of
/// reporting "not running" while it lives. (A service manager's daemon
/// leaves its socket file alone, so it stays unreachable here until stopped.)
#[test]
fn status_and_stop_find_an_unreachable_daemon_through_its_lock() {
    let env = TestEnv::new();
    let socket = env.socket_path();
    create_socket_dir(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let mut daemon = start_activated(&env, &listener);
    drop(listener);
    env.run_in(&env.work(), &["project_id"]).success();
    replace_socket_with_a_regular_file(&env);

    let status = env.gitagentd(&["status"]).output().unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{text}");
    assert!(
        text.contains("gitagentd is running but does not answer on")
            && text.contains(&format!("pid: {}\n", daemon.id()))
            && text.contains("hint: `gitagentd stop` stops it"),
        "{text}"
    );

    let stop = env.gitagentd(&["stop"]).output().unwrap();
    let text = String::from_utf8_lossy(&stop.stdout);
    assert!(stop.status.success(), "{text}{}", String::from_utf8_lossy(&stop.stderr));
    assert!(text.contains(&format!("gitagentd (pid {}) did not answer", daemon.id())), "{text}");
    assert!(wait_child(&mut daemon).success(), "SIGTERM stops it cleanly");
    assert_eq!(env.gitagentd(&["status"]).output().unwrap().status.code(), Some(3));

    // The next call takes the path back.
    env.run_in(&env.work(), &["project_id"]).success();
    assert!(env.daemon_pid().is_some());
}

/// A daemon that cannot start (here, a HOME where nothing can be created
/// and no XDG_RUNTIME_DIR, as a read-only HOME even for root) has said why
/// on its stderr by the time it exits; the client passes that on at once
/// instead of a bare "transport error" after 15 s.
#[test]
fn a_daemon_that_cannot_start_has_its_reason_passed_on_at_once() {
    let env = TestEnv::new();
    let mut command = env.git_agent_in(&env.work(), &["project_id"]);
    command.env("HOME", "/proc/no-such-home").env_remove("XDG_RUNTIME_DIR").env_remove("XDG_STATE_HOME");
    let started = std::time::Instant::now();
    let run = git_agent_tests::Run::from(command.output().unwrap());
    let stderr = run.failure();
    assert!(started.elapsed() < Duration::from_secs(10), "the client waited {:?}", started.elapsed());
    assert!(
        stderr.contains("gitagentd exited before it served")
            && stderr.contains("cannot create the socket folder /proc/no-such-home/.git-agent/run")
            && stderr.contains("hint: set XDG_RUNTIME_DIR"),
        "{stderr}"
    );
    assert!(!stderr.contains("transport error"), "{stderr}");
}

/// Runs `git-agent <args>` in a repository with a staged change while the
/// model's answer is held, kills the daemon with SIGKILL once the request
/// reached the model, and returns what the client printed.
fn kill_the_daemon_mid_command(args: &[&str]) -> (TestEnv, FakeOpenAi, git_agent_tests::GitRepo, git_agent_tests::Run) {
    let fake = FakeOpenAi::start();
    let mut env = TestEnv::new();
    fake.configure(&mut env, "sk-e2e-secret-key");
    let repo = env.staged_repo();
    fake.push(Reply::Held(events::text_reply("fix: return the right answer", events::usage(3, 0, 2))));
    let mut client = env.git_agent_in(repo.path(), args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    assert!(fake.wait_for_requests(1, DEADLINE), "the command reached the model");
    kill(env.daemon_pid().expect("the daemon answers"), libc::SIGKILL);
    wait_child(&mut client);
    let run = git_agent_tests::Run::from(client.wait_with_output().unwrap());
    (env, fake, repo, run)
}

/// A daemon killed while `commit-msg` runs: the client says the daemon
/// stopped and that running the command again is safe (it only reads),
/// not "h2 protocol error: error reading a body from connection".
#[test]
fn a_daemon_killed_mid_command_is_reported_as_stopped_with_retry_advice() {
    let (_env, _fake, _repo, run) = kill_the_daemon_mid_command(&["commit-msg"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "error: the daemon stopped before `git-agent commit-msg` finished\nhint: running it again is safe; it starts a new daemon\n"
    );
}

/// `commit` interrupted before the daemon handed the message over has
/// committed nothing, says so, and a second run commits.
#[test]
fn a_commit_interrupted_before_git_commit_ran_says_nothing_was_committed() {
    let (env, fake, repo, run) = kill_the_daemon_mid_command(&["commit"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.ends_with(
            "error: the daemon stopped before `git-agent commit` finished; nothing was committed\nhint: running it again is safe; it starts a new daemon\n"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]).trim(), "1", "nothing was committed");
    fake.push(Reply::Events(events::text_reply("fix: return the right answer", events::usage(3, 0, 2))));
    env.run_in(repo.path(), &["commit"]).success();
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]).trim(), "2");
}
