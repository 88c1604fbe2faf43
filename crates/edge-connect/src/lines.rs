//! One line of a Master Controller stream: `{"data": ...}`, `{"result": {"message", "code"}}`
//! (an error trailer), or blank.

use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

#[derive(Deserialize)]
struct StreamResult {
    #[serde(default)]
    message: String,
    #[serde(default)]
    code: u16,
}

/// Parses one stream line: `Ok(None)` for a blank line (or an object without data),
/// `Ok(Some(data))` for a data line, `Err` for a result trailer or an unreadable line.
pub fn parse_line(rpc: &str, line: &[u8]) -> Result<Option<Value>, ApiError> {
    parse_typed_line::<Value>(rpc, line)
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "T: serde::de::DeserializeOwned"))]
struct TypedLine<T> {
    #[serde(default = "Option::default")]
    data: Option<T>,
    #[serde(default)]
    result: Option<StreamResult>,
}

/// Parses one stream line straight into `T` (no intermediate JSON tree: Show
/// answers can hold tens of thousands of objects).
pub fn parse_typed_line<T: serde::de::DeserializeOwned>(
    rpc: &str,
    line: &[u8],
) -> Result<Option<T>, ApiError> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let parsed: TypedLine<T> = serde_json::from_slice(line)
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

/// The progress text of a data line (`{"message": "..."}`), if it has one.
pub fn progress_message(data: &Value) -> Option<&str> {
    data.get("message").and_then(Value::as_str)
}

/// Hands every complete line of `buffer` to `f` and keeps the unfinished rest. A line longer
/// than `max_line` bytes, finished or not, is a protocol error: without the cap a server that
/// never sends a newline would make the process hold its whole answer.
pub(crate) fn for_each_line(
    buffer: &mut Vec<u8>,
    rpc: &str,
    max_line: usize,
    mut f: impl FnMut(&[u8]) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let too_long = || {
        ApiError::protocol(
            rpc,
            format!(
                "a stream line is longer than {} KiB (the cap for one object); answer not read further",
                max_line / 1024
            ),
        )
    };
    let mut start = 0;
    while let Some(len) = memchr::memchr(b'\n', &buffer[start..]) {
        if len > max_line {
            return Err(too_long());
        }
        f(&buffer[start..start + len])?;
        start += len + 1;
    }
    buffer.drain(..start);
    if buffer.len() > max_line {
        return Err(too_long());
    }
    Ok(())
}

/// The name in a data line that begins with its object's key, `{"data":{"key":{"name":"X"`, as
/// the Master Controller writes Show answers (Go encodes struct fields in declaration order and
/// `key` is the first field of App and AppInst). `None` when the line does not begin that way
/// or the name holds an escape: then only parsing tells, and a caller must not skip the line.
pub fn leading_key_name(line: &[u8]) -> Option<&str> {
    const PREFIX: &[u8] = b"{\"data\":{\"key\":{\"name\":\"";
    let rest = line.strip_prefix(PREFIX)?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_key_name_is_read_only_when_certain() {
        assert_eq!(
            leading_key_name(br#"{"data":{"key":{"name":"garm-a","organization":"o"}}}"#),
            Some("garm-a")
        );
        // An escape (Go writes & as \u0026) or another shape: only parsing can tell.
        assert_eq!(
            leading_key_name(br#"{"data":{"key":{"name":"a\u0026b"}}}"#),
            None
        );
        assert_eq!(
            leading_key_name(br#"{"data":{"app_key":{"name":"x"},"key":{"name":"y"}}}"#),
            None
        );
        assert_eq!(
            leading_key_name(br#"{"data":{"key":{"name":"unterminated"#),
            None
        );
    }
    use crate::ApiErrorKind;
    use proptest::prelude::*;

    #[test]
    fn data_result_and_blank_lines() {
        assert_eq!(parse_line("X", b"  \r\n").unwrap(), None);
        let data = parse_line("X", br#"{"data":{"message":"Creating"}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(progress_message(&data), Some("Creating"));
        let err = parse_line("X", br#"{"result":{"message":"AppInst key {\"name\":\"a\",\"organization\":\"o\"} already exists","code":400}}"#)
            .unwrap_err();
        assert_eq!(err.kind, ApiErrorKind::AlreadyExists);
        assert_eq!(
            parse_line("X", b"{not json").unwrap_err().kind,
            ApiErrorKind::Protocol
        );
    }

    #[test]
    fn typed_lines_parse_into_the_type() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Named {
            name: String,
        }
        let got: Option<Named> =
            parse_typed_line("X", br#"{"data":{"name":"a","other":[1,2]}}"#).unwrap();
        assert_eq!(got, Some(Named { name: "a".into() }));
        assert!(
            parse_typed_line::<Named>("X", br#"{"result":{"message":"Boom","code":400}}"#).is_err()
        );
        assert!(parse_typed_line::<Named>("X", br#"{"data":{"name":3}}"#).is_err());
        assert_eq!(parse_typed_line::<Named>("X", b"").unwrap(), None);
    }

    #[test]
    fn a_line_over_the_cap_is_an_error_naming_the_rpc_and_the_cap() {
        let mut seen = 0;
        let mut buffer = b"{}\n{}\n".to_vec();
        for_each_line(&mut buffer, "ShowApp", 4096, |_| {
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 2);
        assert!(buffer.is_empty());
        // Unfinished and too long already.
        let mut buffer = vec![b'x'; 4097];
        let e = for_each_line(&mut buffer, "ShowApp", 4096, |_| Ok(())).unwrap_err();
        assert_eq!(e.kind, ApiErrorKind::Protocol);
        assert!(e.to_string().contains("ShowApp"), "{e}");
        assert!(e.to_string().contains("4 KiB"), "{e}");
        // Finished but too long.
        let mut buffer = vec![b'x'; 5000];
        buffer.push(b'\n');
        assert!(for_each_line(&mut buffer, "ShowApp", 4096, |_| Ok(())).is_err());
    }

    proptest! {
        #[test]
        fn typed_parse_never_panics(line in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_typed_line::<crate::models::AppInst>("X", &line);
        }

        #[test]
        fn never_panics_on_any_bytes(line in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_line("X", &line);
        }

        #[test]
        fn never_panics_on_json_shaped_input(message in ".*", code in any::<u16>(), key in "(data|result|other)") {
            let line = serde_json::json!({ key.clone(): {"message": message, "code": code} }).to_string();
            let parsed = parse_line("X", line.as_bytes());
            if key == "result" {
                prop_assert!(parsed.is_err());
            }
        }
    }
}
