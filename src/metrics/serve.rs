//! `metrics serve`: the sidecar's HTTP side. `GET /metrics` folds what the commands appended
//! since the last scrape and answers every metric in the text exposition format; every
//! `compact` interval, and once more on SIGTERM or SIGINT, the events are folded into the
//! snapshot and the file truncated (`sidecar.rs`). A plain HTTP/1.1 server on tokio: one
//! request per connection, a bounded request head, a bounded number of connections.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::sidecar::Consumer;
use crate::error::Error;

/// A request head larger than this is refused (a scrape's is a few hundred bytes).
const MAX_HEAD: usize = 8 * 1024;
/// A connection that has not sent its request head, or not taken its answer, by then is closed.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 32;

/// Serves the metrics of `events` on `listen` until SIGTERM / SIGINT; the counters are kept in
/// `snapshot` every `compact`.
pub fn serve(
    events: &Path,
    snapshot: &Path,
    listen: SocketAddr,
    compact: Duration,
) -> Result<(), Error> {
    let consumer = Consumer::open(events, snapshot).map_err(Error::failed)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::caused_by(format!("cannot start the async runtime: {e}"), e))?;
    runtime.block_on(run(Arc::new(Mutex::new(consumer)), listen, compact))
}

async fn run(
    consumer: Arc<Mutex<Consumer>>,
    listen: SocketAddr,
    every: Duration,
) -> Result<(), Error> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| Error::caused_by(format!("cannot listen on {listen}: {e}"), e))?;
    let bound = listener.local_addr().unwrap_or(listen);
    // The first line on stdout: a supervisor or a test learns the port (`--listen 127.0.0.1:0`).
    println!("serving metrics on http://{bound}/metrics");
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut compaction = tokio::time::interval(every);
    compaction.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Error::caused_by(format!("cannot watch SIGTERM: {e}"), e))?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Ok(slot) = slots.clone().acquire_owned().await else { continue };
                let consumer = consumer.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(CONNECTION_TIMEOUT, answer(stream, &consumer)).await;
                    drop(slot);
                });
            }
            _ = compaction.tick() => compact(&consumer),
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    compact(&consumer);
    Ok(())
}

fn compact(consumer: &Mutex<Consumer>) {
    if let Ok(mut c) = consumer.lock() {
        if let Err(e) = c.compact() {
            eprintln!("metrics: cannot compact the events: {e}");
        }
    }
}

/// Reads one request head and answers it.
async fn answer(mut stream: TcpStream, consumer: &Mutex<Consumer>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            respond(&mut stream, "431 Request Header Fields Too Large", "").await?;
            // Read what the client still sends (bounded) before closing: closing with unread
            // bytes resets the connection, and the client could lose the answer.
            let mut rest = (&mut stream).take(64 * 1024);
            let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
            return Ok(());
        }
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|b| *b == b' ');
    let (method, target) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    let path = target.split(|b| *b == b'?').next().unwrap_or_default();
    match (method, path) {
        (b"GET", b"/metrics") => {
            let body = match consumer.lock() {
                Ok(mut c) => match c.poll() {
                    Ok(()) => Ok(c.metrics().render()),
                    Err(e) => Err(format!("cannot read the events: {e}\n")),
                },
                Err(_) => Err("the sidecar's state is poisoned\n".to_string()),
            };
            match body {
                Ok(body) => respond(&mut stream, "200 OK", &body).await,
                Err(e) => respond(&mut stream, "500 Internal Server Error", &e).await,
            }
        }
        (b"GET", _) => respond(&mut stream, "404 Not Found", "only /metrics is served\n").await,
        _ => respond(&mut stream, "405 Method Not Allowed", "").await,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
