//! A tiny forwarding HTTP proxy on 127.0.0.1 for tests: it reads the head
//! of each connection's first request, records its target and relays the
//! connection's bytes to that target's host and port both ways. An
//! absolute-form request (what clients send for `http://` targets) is
//! forwarded as it came; a `CONNECT host:port` (what clients send for
//! `https://` targets) is answered `200` and becomes a tunnel, recorded as
//! `CONNECT host:port`.

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
    let mut words = text.lines().next().unwrap_or_default().split(' ');
    let (Some(method), Some(target)) = (words.next(), words.next().map(str::to_string)) else {
        return;
    };
    let tunnel = method == "CONNECT";
    let authority = if tunnel {
        Some(target.as_str())
    } else {
        target.strip_prefix("http://").and_then(|rest| rest.split('/').next())
    };
    let Some(authority) = authority else {
        let _ = client.write_all(b"HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    if let Ok(mut targets) = seen.lock() {
        targets.push(if tunnel { format!("CONNECT {target}") } else { target.clone() });
    }
    let Ok(mut upstream) = TcpStream::connect(authority) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    let opened = if tunnel {
        // The client speaks first (its TLS hello) once the tunnel is up;
        // nothing after the CONNECT head was read yet in practice, and
        // anything that was belongs to the tunnel.
        let after = head.windows(4).position(|window| window == b"\r\n\r\n").map_or(head.len(), |at| at + 4);
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").is_ok()
            && upstream.write_all(&head[after..]).is_ok()
    } else {
        upstream.write_all(&head).is_ok()
    };
    if !opened {
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
