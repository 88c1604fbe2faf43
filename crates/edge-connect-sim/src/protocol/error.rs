//! The MC's error reply `{"message": ...}` and its capitalisation rule.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::encode::json_response;
use crate::gojson::go_json;

/// An early error reply: HTTP status plus the `{"message": ...}` text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    /// HTTP status of the reply.
    pub status: StatusCode,
    /// Text of the `message` field.
    pub message: String,
}

impl ApiError {
    /// Any status with a message used verbatim.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// A controller/validation error: HTTP 400, first letter capitalised like the MC does.
    pub(crate) fn bad_request(message: impl AsRef<str>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, capitalize(message.as_ref()))
    }

    /// RBAC refusal.
    pub(crate) fn forbidden() -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "Forbidden")
    }

    /// Unknown route.
    pub(crate) fn not_found() -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "Not Found")
    }

    /// Known route, wrong method.
    pub(crate) fn method_not_allowed() -> Self {
        ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
    }

    /// `Invalid field specified: X, this field is only for internal use`.
    pub(crate) fn internal_field(field: &str) -> Self {
        ApiError::bad_request(format!(
            "Invalid field specified: {field}, this field is only for internal use"
        ))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = go_json(&serde_json::json!({ "message": self.message }));
        json_response(self.status, body)
    }
}

/// Upper-cases the first character (`util.CapitalizeMessage`).
pub(crate) fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
