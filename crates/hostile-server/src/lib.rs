//! Tests only: a tiny HTTP/1.1 server on 127.0.0.1 that misbehaves exactly as a test scripts it,
//! shared by the client's unit tests and the provider's integration tests. Each request (one per
//! connection) is answered as `handler(path, nth request to that path)` says, as a list of
//! [`Step`]s: bytes, pauses, endless or drip-fed bytes, so a test can send a redirect, an endless
//! or newline-free body, a body cut inside a line, or nothing at all. The paths asked for are
//! recorded (for a proxy, the "path" is the CONNECT target). Plain threads, no runtime: usable
//! from synchronous and async tests alike.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A JWT-shaped token (exp in 2100) that [`token_reply`] hands out; a test checks that it is
/// never printed.
pub const TOKEN: &str = "eyJhbGciOiJIUzUxMiJ9.eyJleHAiOjQxMDI0NDQ4MDB9.c2lnbmF0dXJl";

/// One thing the server does while answering.
#[derive(Clone)]
pub enum Step {
    /// Write these bytes.
    Write(Vec<u8>),
    /// Wait (a slow or silent server).
    Sleep(Duration),
    /// Write these bytes again and again until the client hangs up.
    Forever(Vec<u8>),
    /// Write these bytes with a pause between each, until the client hangs up.
    Drip(Vec<u8>, Duration),
}

type Handler = dyn Fn(&str, usize) -> Vec<Step> + Send + Sync;

/// A server on 127.0.0.1, running until the test process ends.
pub struct Server {
    /// Its port.
    pub port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts a server answering as `handler` says.
    pub fn start(handler: impl Fn(&str, usize) -> Vec<Step> + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = seen.clone();
        std::thread::spawn(move || {
            for socket in listener.incoming() {
                let Ok(socket) = socket else { continue };
                let handler = handler.clone();
                let log = log.clone();
                std::thread::spawn(move || answer(socket, &*handler, &log));
            }
        });
        Server { port, seen }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The paths requested so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many requests went to `path`.
    pub fn count(&self, path: &str) -> usize {
        self.seen().iter().filter(|p| *p == path).count()
    }
}

fn answer(mut socket: TcpStream, handler: &Handler, log: &Mutex<Vec<String>>) {
    let Some(path) = read_request(&mut socket)
        .and_then(|(head, _)| Some(head.split_whitespace().nth(1)?.to_string()))
    else {
        return;
    };
    let nth = {
        let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
        log.push(path.clone());
        log.iter().filter(|p| **p == path).count()
    };
    for step in handler(&path, nth) {
        let ok = match step {
            Step::Write(b) => socket.write_all(&b).is_ok(),
            Step::Sleep(d) => {
                std::thread::sleep(d);
                true
            }
            Step::Forever(b) => {
                while socket.write_all(&b).is_ok() {}
                false
            }
            Step::Drip(b, every) => {
                while socket.write_all(&b).is_ok() {
                    std::thread::sleep(every);
                }
                false
            }
        };
        if !ok {
            return;
        }
    }
    // Dropping the socket closes it: a body without a length ends here, cleanly.
}

/// Reads one request whole: its head (request line and headers, as text) and its body (up to
/// `Content-Length`, or what came before the connection closed).
pub fn read_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match socket.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = buf.split_off(head_end.min(buf.len()));
    Some((head, body))
}

/// Status line and headers of an answer whose body runs until the connection closes; `extra`
/// is more header lines, each ending in `\r\n`.
pub fn head(status: &str, extra: &str) -> Step {
    Step::Write(
        format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n{extra}\r\n")
            .into_bytes(),
    )
}

/// A whole JSON answer with its length.
pub fn reply(status: &str, body: &str) -> Vec<Step> {
    vec![Step::Write(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )]
}

/// A login that works, handing out [`TOKEN`].
pub fn token_reply() -> Vec<Step> {
    reply("200 OK", &format!(r#"{{"token":"{TOKEN}"}}"#))
}

/// A loopback port that refuses connections for as long as the returned socket lives: bound, never
/// listening. A port bound and closed again can be taken by a server of another test (or another
/// suite) before the client connects, which then answers instead of refusing.
pub fn refusing_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bind a loopback port");
    let port = socket.local_addr().expect("its address").port();
    (socket, port)
}
