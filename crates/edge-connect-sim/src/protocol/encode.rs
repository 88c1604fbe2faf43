//! Writing replies: complete JSON bodies and the unary `{}`.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

/// A complete (non-streamed) JSON reply without trailing newline.
pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The unary success reply of App create/update/delete: exactly `{}`.
pub(crate) fn unary_ok() -> Response {
    json_response(StatusCode::OK, b"{}".to_vec())
}
