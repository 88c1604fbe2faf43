//! `metrics serve`: the sidecar's HTTP side. `GET /metrics` folds what the commands appended
//! since the last scrape and answers every metric in the text exposition format; every
//! `compact` interval, and once more on SIGTERM or SIGINT, the events are folded into the
//! snapshot and the file truncated (`sidecar.rs`).
//!
//! HTTP is hyper's server (already built into the binary for the client): it parses requests,
//! answers a head past [`MAX_HEAD`] with 431 and closes a connection whose head has not come
//! within [`HEAD_TIMEOUT`]. Each connection is a task of its own, so slow clients never hold up
//! a scrape or the signals; at most [`MAX_CONNECTIONS`] are open at once (more are closed when
//! accepted), and none lives longer than [`CONNECTION_TIMEOUT`]. SIGTERM ends the process at
//! once, whatever connections are open: it compacts and exits.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use super::sidecar::Consumer;
use crate::error::Error;

/// The most bytes a request head may take (a scrape's is a few hundred); hyper's least.
const MAX_HEAD: usize = 8 * 1024;
/// A connection whose request head has not come by then is closed.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection that has not taken its answer by then is closed.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections open at once; one more is closed as soon as it is accepted. Far more than a
/// Prometheus or two and a person need, so clients that send their heads slowly still leave
/// room for the scrapes until [`HEAD_TIMEOUT`] ends them.
const MAX_CONNECTIONS: usize = 256;

/// Serves the metrics of `events` on `listen` until SIGTERM / SIGINT; the counters are kept in
/// `snapshot` every `every`. Run by `pipeline::block_on`, whose runtime, ended when this
/// returns, ends the connections still open.
pub async fn serve(
    events: &Path,
    snapshot: &Path,
    listen: SocketAddr,
    every: Duration,
) -> Result<(), Error> {
    let consumer = Consumer::open(events, snapshot).map_err(Error::failed)?;
    let consumer = Arc::new(Mutex::new(consumer));
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| Error::caused_by(format!("cannot listen on {listen}: {e}"), e))?;
    let bound = listener.local_addr().unwrap_or(listen);
    // The first line on stdout: a supervisor or a test learns the port (`--listen 127.0.0.1:0`).
    println!("serving metrics on http://{bound}/metrics");
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .keep_alive(false);
    let mut compaction = tokio::time::interval(every);
    compaction.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Error::caused_by(format!("cannot watch SIGTERM: {e}"), e))?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                // Never waited for: the loop must stay free for the signals.
                let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
                let consumer = consumer.clone();
                let service = hyper::service::service_fn(move |request| {
                    std::future::ready(Ok::<_, Infallible>(answer(&request, &consumer)))
                });
                let connection = http.serve_connection(TokioIo::new(stream), service);
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(CONNECTION_TIMEOUT, connection).await;
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

/// Nothing panics while holding the consumer; were it poisoned, its state is still whole
/// between two calls, and kept.
fn compact(consumer: &Mutex<Consumer>) {
    let mut consumer = consumer.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = consumer.compact() {
        eprintln!("metrics: cannot compact the events: {e}");
    }
}

/// The answer to one request: the metrics for `GET /metrics`, a short refusal otherwise.
fn answer<B>(request: &Request<B>, consumer: &Mutex<Consumer>) -> Response<String> {
    let (status, body) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics") => {
            let mut consumer = consumer.lock().unwrap_or_else(PoisonError::into_inner);
            match consumer.poll() {
                Ok(()) => (StatusCode::OK, consumer.metrics().render()),
                Err(e) => (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("cannot read the events: {e}\n"),
                ),
            }
        }
        (&Method::GET, _) => (StatusCode::NOT_FOUND, "only /metrics is served\n".into()),
        _ => (StatusCode::METHOD_NOT_ALLOWED, String::new()),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let text = HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");
    response.headers_mut().insert(CONTENT_TYPE, text);
    response
}
