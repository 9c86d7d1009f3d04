//! A tiny forwarding HTTP proxy on 127.0.0.1 for tests: it reads the head
//! of each connection's first request (absolute-form, as clients send to
//! an HTTP proxy for `http://` targets), records the target, and relays
//! the connection's bytes to that target's host and port both ways. It
//! knows no `CONNECT`, so it serves plain-HTTP upstreams only.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The running proxy; it stops accepting when dropped.
pub struct FakeProxy {
    address: std::net::SocketAddr,
    targets: Arc<Mutex<Vec<String>>>,
    stopped: Arc<AtomicBool>,
}

impl FakeProxy {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test proxy to 127.0.0.1");
        let address = listener.local_addr().expect("the test proxy has an address");
        let targets = Arc::new(Mutex::new(Vec::new()));
        let stopped = Arc::new(AtomicBool::new(false));
        let (seen, stop) = (Arc::clone(&targets), Arc::clone(&stopped));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || relay(client, &seen));
            }
        });
        Self { address, targets, stopped }
    }

    /// The proxy URL to put in `HTTP_PROXY`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The request targets (absolute URLs) of every connection so far.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().map(|targets| targets.clone()).unwrap_or_default()
    }
}

impl Drop for FakeProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// Reads the first request head, records its target and relays the
/// connection to the target's authority.
fn relay(mut client: TcpStream, seen: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match client.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buffer[..read]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let Some(target) = text.lines().next().and_then(|line| line.split(' ').nth(1)).map(str::to_string) else {
        return;
    };
    let Some(authority) = target.strip_prefix("http://").and_then(|rest| rest.split('/').next()) else {
        let _ = client.write_all(b"HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    if let Ok(mut targets) = seen.lock() {
        targets.push(target.clone());
    }
    let Ok(mut upstream) = TcpStream::connect(authority) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    if upstream.write_all(&head).is_err() {
        return;
    }
    let (Ok(mut client_reader), Ok(mut upstream_writer)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let forward = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_reader, &mut upstream_writer);
        let _ = upstream_writer.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut upstream, &mut client);
    let _ = client.shutdown(Shutdown::Both);
    let _ = forward.join();
}
