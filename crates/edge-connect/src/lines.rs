//! The lines of a Master Controller stream, read one at a time: `{"data": ...}`,
//! `{"result": {"message", "code"}}` (an error trailer), or blank.
//!
//! The controller writes every object of a stream with Go's `json.Encoder`, which ends each one
//! with a newline (docs/edge-connect-behaviours.md B15; EdgeXR `pkg/mc/orm/server.go`
//! `WriteStream`, c39faca8f). So a body that ends inside a line was cut short: that is a transport
//! error (retried or reported), never the end of a shorter answer.

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::ApiError;
use crate::rpc::Rpc;
use crate::transport::{next_chunk, Wait};

/// One stream line (one App or AppInst) larger than this is a protocol error. An App with many
/// environment variables and configs is tens of KiB; 8 MiB leaves room for any real object.
pub(crate) const MAX_LINE: usize = 8 * 1024 * 1024;

#[derive(Deserialize)]
struct StreamResult {
    #[serde(default)]
    message: String,
    #[serde(default)]
    code: u16,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "T: DeserializeOwned"))]
struct TypedLine<T> {
    data: Option<T>,
    result: Option<StreamResult>,
}

/// Parses one stream line straight into `T` (no intermediate JSON tree): `Ok(None)` for a blank
/// line or an object without data, `Err` for a result trailer or a line that is not `T`.
pub(crate) fn parse_line<T: DeserializeOwned>(
    rpc: Rpc,
    line: &[u8],
) -> Result<Option<T>, ApiError> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    // One UTF-8 check for the whole line: parsing from `&str` then skips the check of each
    // string and of each raw value (an App's environment) that parsing from bytes would repeat.
    let parsed: TypedLine<T> = std::str::from_utf8(line)
        .map_err(|e| e.to_string())
        .and_then(|line| serde_json::from_str(line).map_err(|e| e.to_string()))
        .map_err(|e| ApiError::protocol(rpc, format!("unreadable stream line: {e}")))?;
    if let Some(result) = parsed.result {
        return Err(ApiError::from_stream_result(
            rpc,
            result.code,
            &result.message,
        ));
    }
    Ok(parsed.data)
}

/// A response body read line by line under the call's [`Wait`], holding at most one line.
/// A line that lies within one piece of the body is parsed where it lies; only a line split
/// across pieces is copied, to join it.
pub(crate) struct Lines {
    rpc: Rpc,
    /// `None` once the body has ended.
    response: Option<reqwest::Response>,
    wait: Wait,
    /// What is left of the piece of the body being read.
    chunk: bytes::Bytes,
    /// The beginning of a line that continues in the next piece.
    partial: Vec<u8>,
}

impl Lines {
    pub(crate) fn new(rpc: Rpc, response: reqwest::Response, wait: Wait) -> Self {
        Lines {
            rpc,
            response: Some(response),
            wait,
            chunk: bytes::Bytes::new(),
            partial: Vec::new(),
        }
    }

    /// The next data line parsed as `T`; `None` at the clean end of the body. A result trailer,
    /// an unreadable line, a line over [`MAX_LINE`] and a body that ends inside a line are errors.
    pub(crate) async fn next<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ApiError> {
        loop {
            if let Some(len) = memchr::memchr(b'\n', &self.chunk) {
                let line = self.chunk.split_to(len + 1);
                if self.partial.len() + len > MAX_LINE {
                    return Err(self.too_long());
                }
                let parsed = if self.partial.is_empty() {
                    parse_line(self.rpc, &line[..len])
                } else {
                    self.partial.extend_from_slice(&line[..len]);
                    let parsed = parse_line(self.rpc, &self.partial);
                    self.partial.clear();
                    parsed
                };
                if let Some(item) = parsed? {
                    return Ok(Some(item));
                }
                continue;
            }
            // The rest of the piece starts a line that the next piece continues.
            self.partial.extend_from_slice(&self.chunk);
            self.chunk.clear();
            if self.partial.len() > MAX_LINE {
                return Err(self.too_long());
            }
            let Some(response) = self.response.as_mut() else {
                return Ok(None);
            };
            match next_chunk(response, self.rpc, self.wait).await? {
                Some(chunk) => self.chunk = chunk,
                None => {
                    self.response = None;
                    if !self.partial.iter().all(u8::is_ascii_whitespace) {
                        return Err(ApiError::transport(
                            self.rpc,
                            format!(
                                "the answer ended inside a line ({} bytes after the last newline): it was cut short",
                                self.partial.len()
                            ),
                        ));
                    }
                    self.partial.clear();
                    return Ok(None);
                }
            }
        }
    }

    fn too_long(&self) -> ApiError {
        ApiError::protocol(
            self.rpc,
            format!(
                "a stream line is longer than {} KiB (the cap for one object); answer not read further",
                MAX_LINE / 1024
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiErrorKind;
    use proptest::prelude::*;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Named {
        name: String,
    }

    #[test]
    fn data_result_and_blank_lines() {
        assert_eq!(parse_line::<Named>(Rpc::ShowApp, b"  \r").unwrap(), None);
        assert_eq!(
            parse_line::<Named>(Rpc::ShowApp, br#"{"data":{"name":"a","other":[1,2]}}"#).unwrap(),
            Some(Named { name: "a".into() })
        );
        let err = parse_line::<Named>(Rpc::CreateAppInst, br#"{"result":{"message":"AppInst key {\"name\":\"a\",\"organization\":\"o\"} already exists","code":400}}"#)
            .unwrap_err();
        assert_eq!(err.kind, ApiErrorKind::AlreadyExists);
        let err = parse_line::<Named>(Rpc::ShowApp, b"{not json").unwrap_err();
        assert_eq!(err.kind, ApiErrorKind::Protocol);
        assert!(
            err.to_string()
                .starts_with("Edge Connect ShowApp: unreadable stream line: "),
            "{err}"
        );
        assert!(parse_line::<Named>(Rpc::ShowApp, br#"{"data":{"name":3}}"#).is_err());
    }

    #[test]
    fn app_insts_with_go_escapes_without_app_key_and_any_created_at() {
        let line = br#"{"data":{"key":{"name":"r \u0026 \"q\" \u003c","organization":"o\u0026p"},"state":"Ready","errors":["e \"1\""],"created_at":{"seconds":5}}}"#;
        let inst = parse_line::<crate::models::AppInst>(Rpc::ShowAppInst, line)
            .unwrap()
            .unwrap();
        assert_eq!(inst.key.name, "r & \"q\" <");
        assert_eq!(inst.key.organization, "o&p");
        assert_eq!(inst.app_key, None, "no app_key: nothing to match as ours");
        assert_eq!(inst.errors, ["e \"1\""]);
        assert_eq!(inst.created_at, "");
        let line = br#"{"data":{"key":{"name":"r"},"app_key":{"organization":"o","name":"a\u0026b","version":"1"},"created_at":"2026-01-02T03:04:05Z"}}"#;
        let inst = parse_line::<crate::models::AppInst>(Rpc::ShowAppInst, line)
            .unwrap()
            .unwrap();
        assert_eq!(inst.app_key.map(|k| k.name), Some("a&b".to_string()));
        assert_eq!(inst.created_at, "2026-01-02T03:04:05Z");
        // A line that is not UTF-8 is unreadable, like any other broken line.
        let err = parse_line::<Named>(Rpc::ShowApp, b"{\"data\":{\"name\":\"\xff\"}}").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Edge Connect ShowApp: unreadable stream line: "),
            "{err}"
        );
    }

    proptest! {
        /// Any bytes: a value, nothing, or an error that names the RPC and says why.
        #[test]
        fn any_line_is_a_value_nothing_or_a_named_error(line in proptest::collection::vec(any::<u8>(), 0..256)) {
            match parse_line::<crate::models::AppInst>(Rpc::ShowAppInst, &line) {
                Ok(_) => prop_assert!(serde_json::from_slice::<serde_json::Value>(&line).is_ok() || line.iter().all(u8::is_ascii_whitespace)),
                Err(e) => {
                    prop_assert_eq!(e.kind, ApiErrorKind::Protocol);
                    prop_assert!(e.to_string().starts_with("Edge Connect ShowAppInst: unreadable stream line: "), "{}", e);
                }
            }
        }

        /// A result trailer is always an error carrying the server's message; data is the value.
        #[test]
        fn trailers_are_errors_and_data_is_the_value(message in "[a-z ]{1,40}", code in 400u16..600, key in "(data|result)") {
            let line = serde_json::json!({ key.clone(): {"message": message, "code": code} }).to_string();
            let parsed = parse_line::<serde_json::Value>(Rpc::DeleteAppInst, line.as_bytes());
            if key == "result" {
                let e = parsed.unwrap_err();
                prop_assert_eq!(e.message, message);
            } else {
                let value = parsed.unwrap().unwrap();
                prop_assert_eq!(value["message"].as_str(), Some(message.as_str()));
            }
        }
    }
}
