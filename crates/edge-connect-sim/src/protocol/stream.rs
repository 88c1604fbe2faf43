//! NDJSON streaming replies (docs/edge-connect-behaviours.md B15): `{"data":...}\n` per object, a
//! `{"result":{"message":...,"code":400}}\n` trailer on failure, chunked transfer encoding.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use futures_util::stream;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::gojson::{go_json, write_go_json};

/// What an AppInst operation tells the HTTP stream watching it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StreamEvent {
    /// A progress message: `{"data":{"message":...}}`.
    Line(String),
    /// The failure trailer `{"result":{"message":...,"code":400}}`; the stream ends.
    Fail(String),
    /// Cut the connection without a proper end (fault injection).
    Drop,
}

/// Appends `{"data":<obj>}\n`. Our types always serialise; should one not, the partial line
/// is removed so the stream stays valid NDJSON.
pub(crate) fn push_data_line<T: Serialize + ?Sized>(buf: &mut Vec<u8>, obj: &T) {
    let start = buf.len();
    buf.extend_from_slice(b"{\"data\":");
    if write_go_json(buf, obj) {
        buf.extend_from_slice(b"}\n");
    } else {
        buf.truncate(start);
    }
}

#[derive(Serialize)]
struct Message<'a> {
    message: &'a str,
}

#[derive(Serialize)]
struct ResultBody<'a> {
    message: &'a str,
    code: u16,
}

#[derive(Serialize)]
struct ResultLine<'a> {
    result: ResultBody<'a>,
}

/// `{"data":{"message":"..."}}\n`.
pub(crate) fn message_line(message: &str) -> Bytes {
    let mut buf = Vec::with_capacity(message.len() + 24);
    push_data_line(&mut buf, &Message { message });
    Bytes::from(buf)
}

/// `{"result":{"message":"...","code":400}}\n`.
pub(crate) fn result_line(message: &str) -> Bytes {
    let mut buf = go_json(&ResultLine {
        result: ResultBody { message, code: 400 },
    });
    buf.push(b'\n');
    Bytes::from(buf)
}

/// A 200 streaming reply around `body`.
pub(crate) fn ndjson_response(body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Show replies are produced in chunks of about this size, so 10,000 objects never sit in
/// memory as one buffer.
const CHUNK: usize = 64 * 1024;

/// A Show stream over already-selected objects, serialised lazily chunk by chunk. No objects
/// gives an empty body.
pub(crate) fn show_body<T: Serialize + Send + Sync + 'static>(items: Vec<Arc<T>>) -> Body {
    let chunks = stream::unfold((items, 0usize), |(items, mut next)| async move {
        if next >= items.len() {
            return None;
        }
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        while next < items.len() && buf.len() < CHUNK {
            push_data_line(&mut buf, items[next].as_ref());
            next += 1;
        }
        Some((Ok::<_, Infallible>(Bytes::from(buf)), (items, next)))
    });
    Body::from_stream(chunks)
}

/// A Show stream from bytes built up front (small lists: flavors, zones, cloudlets).
pub(crate) fn bytes_body(buf: Vec<u8>) -> Body {
    let once = (!buf.is_empty()).then(|| Ok::<_, Infallible>(Bytes::from(buf)));
    Body::from_stream(stream::iter(once))
}

/// The body of an AppInst operation stream: `first` (already received, so the 200 header
/// goes out with the first object) followed by whatever the operation sends.
pub(crate) fn event_body(first: StreamEvent, rx: UnboundedReceiver<StreamEvent>) -> Body {
    struct Pending {
        first: Option<StreamEvent>,
        rx: UnboundedReceiver<StreamEvent>,
        done: bool,
    }
    let events = stream::unfold(
        Pending {
            first: Some(first),
            rx,
            done: false,
        },
        |mut pending| async move {
            if pending.done {
                return None;
            }
            let event = match pending.first.take() {
                Some(e) => e,
                None => pending.rx.recv().await?,
            };
            let item = match event {
                StreamEvent::Line(m) => Ok(message_line(&m)),
                StreamEvent::Fail(m) => {
                    pending.done = true;
                    Ok(result_line(&m))
                }
                StreamEvent::Drop => {
                    pending.done = true;
                    Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "connection dropped by fault injection",
                    ))
                }
            };
            Some((item, pending))
        },
    );
    Body::from_stream(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_mc_shape() {
        assert_eq!(
            message_line("Creating").as_ref(),
            b"{\"data\":{\"message\":\"Creating\"}}\n"
        );
        assert_eq!(
            result_line("Boom").as_ref(),
            b"{\"result\":{\"message\":\"Boom\",\"code\":400}}\n"
        );
    }
}
