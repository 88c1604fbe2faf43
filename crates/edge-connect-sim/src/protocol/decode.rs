//! Reading requests the way the MC does: Go's `json.Unmarshal` judged syntax errors,
//! case-insensitive keys, unknown fields ignored, `null` = absent, the `Invalid JSON data`
//! texts naming the field, and the region rule.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::ApiError;
use crate::model::enums::ENUM_MARK;
use crate::model::json_kind;

/// Largest request body accepted (seeding and manifests stay far below this).
pub(crate) const BODY_LIMIT: usize = 32 * 1024 * 1024;

/// Parses a request body like Go's `json.Unmarshal` would judge it, with the MC's texts.
pub(crate) fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice::<Value>(body).map_err(|e| syntax_error(body, &e))
}

fn syntax_error(body: &[u8], err: &serde_json::Error) -> ApiError {
    let text = if err.is_eof() {
        format!(
            "Syntax error at offset {}, unexpected end of JSON input",
            body.len()
        )
    } else {
        // serde reports line/column of the offending byte; Go reports the offset after it.
        let mut index = 0usize;
        for (n, line) in body.split(|b| *b == b'\n').enumerate() {
            if n + 1 == err.line() {
                index += err.column().saturating_sub(1);
                break;
            }
            index += line.len() + 1;
        }
        let index = index.min(body.len().saturating_sub(1));
        let ch = body.get(index).map(|b| *b as char).unwrap_or(' ');
        let msg = err.to_string();
        let context =
            if msg.starts_with("key must be a string") || msg.starts_with("trailing comma") {
                "looking for beginning of object key string"
            } else if msg.starts_with("expected `:`") {
                "after object key"
            } else if msg.starts_with("expected `,` or `}`") {
                "after object key:value pair"
            } else if msg.starts_with("expected `,` or `]`") {
                "after array element"
            } else if msg.starts_with("trailing characters") {
                "after top-level value"
            } else if msg.starts_with("invalid number") || msg.starts_with("number out of range") {
                "in numeric literal"
            } else if msg.starts_with("invalid escape") || msg.starts_with("invalid unicode") {
                "in string escape code"
            } else if msg.starts_with("control character") {
                "in string literal"
            } else if msg.starts_with("expected ident") {
                "in literal"
            } else {
                "looking for beginning of value"
            };
        format!(
            "Syntax error at offset {}, invalid character '{}' {}",
            index + 1,
            ch,
            context
        )
    };
    ApiError::bad_request(format!("Invalid JSON data: {text}"))
}

/// Fields whose values are maps of user data: their keys are kept as sent.
const MAP_FIELDS: &[&str] = &[
    "env_vars",
    "secret_env_vars",
    "tags",
    "annotations",
    "app_annotations",
    "opt_res_map",
    "total_opt_res",
    "min_node_opt_res",
    "internal_port_to_lb_ip",
];

/// Lower-cases object keys (Go matches struct fields case-insensitively) except inside map
/// fields, and drops `null` members (Go leaves the field untouched). For duplicate keys the
/// later one wins, as in Go.
pub(crate) fn normalize(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, val) in map {
                if val.is_null() {
                    continue;
                }
                let lower = key.to_lowercase();
                let val = match val {
                    Value::Object(inner) if MAP_FIELDS.contains(&lower.as_str()) => {
                        Value::Object(inner.into_iter().filter(|(_, v)| !v.is_null()).collect())
                    }
                    other => normalize(other),
                };
                out.insert(lower, val);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(normalize).collect()),
        other => other,
    }
}

/// The request wrapper `{"region": ..., "<wrapper>": {...}}` after normalisation.
#[derive(Debug)]
pub(crate) struct Envelope {
    /// The `region` value (may be empty; checked later, as the MC does).
    pub region: String,
    /// The wrapped object (an empty object when absent).
    pub object: Value,
}

/// Splits a normalised request into region and wrapped object. `go_wrapper` is the Go field
/// name (`App`, `AppInst`, ...) used in unmarshal errors.
pub(crate) fn envelope(root: Value, wrapper: &str, go_wrapper: &str) -> Result<Envelope, ApiError> {
    let mut map = match root {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(unmarshal_error(
                &format!("Region{go_wrapper}"),
                json_kind(&other),
                "",
            ))
        }
    };
    let region = match map.remove("region") {
        None => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => return Err(unmarshal_error("string", json_kind(&other), "Region")),
    };
    let object = match map.remove(wrapper) {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(unmarshal_error(
                &format!("edgeproto.{go_wrapper}"),
                json_kind(&other),
                go_wrapper,
            ))
        }
    };
    Ok(Envelope { region, object })
}

fn unmarshal_error(expected: &str, got: &str, field: &str) -> ApiError {
    ApiError::bad_request(format!(
        "Invalid JSON data: Unmarshal error: expected {expected}, but got {got} for field \"{field}\""
    ))
}

/// Decodes a normalised object into a typed input struct; errors name the field the way the
/// MC does (`for field "App.key.name"`).
pub(crate) fn decode<T: DeserializeOwned>(object: Value, go_wrapper: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(object).map_err(|err| {
        let path = strip_indices(&err.path().to_string());
        let path = if path == "." { String::new() } else { path };
        let field = match (go_wrapper.is_empty(), path.is_empty()) {
            (_, true) => go_wrapper.to_string(),
            (true, false) => path,
            (false, false) => format!("{go_wrapper}.{path}"),
        };
        let inner = err.into_inner().to_string();
        ApiError::bad_request(format!("Invalid JSON data: {}", describe(&inner, &field)))
    })
}

/// `configs[0].kind` → `configs.kind` (Go's field paths carry no indices).
fn strip_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Turns a serde error into the Go `Unmarshal error: expected X, but got Y for field "F"` text.
fn describe(inner: &str, field: &str) -> String {
    if let Some(pos) = inner.find(ENUM_MARK) {
        let rest = &inner[pos + ENUM_MARK.len()..];
        let (main, help) = rest.split_once('|').unwrap_or((rest, ""));
        return format!("Unmarshal error: {main} for field \"{field}\"{help}");
    }
    let (parsed, with_literal) = match inner.strip_prefix("invalid type: ") {
        Some(rest) => (rest.split_once(", expected "), false),
        None => (
            inner
                .strip_prefix("invalid value: ")
                .and_then(|rest| rest.split_once(", expected ")),
            true,
        ),
    };
    match parsed {
        Some((got, expected)) => {
            let expected = expected.split(" at line ").next().unwrap_or(expected);
            format!(
                "Unmarshal error: expected {}, but got {} for field \"{field}\"",
                go_type(expected),
                go_value(got, with_literal)
            )
        }
        None => format!("Unmarshal error: {inner} for field \"{field}\""),
    }
}

fn go_type(expected: &str) -> String {
    match expected {
        "a string" => "string".into(),
        "a boolean" => "bool".into(),
        "u8" | "u16" | "u32" | "u64" => format!("uint{}", &expected[1..]),
        "i8" | "i16" | "i32" | "i64" => format!("int{}", &expected[1..]),
        "f32" | "f64" => format!("float{}", &expected[1..]),
        "a sequence" => "[]string".into(),
        "a map" => "map[string]string".into(),
        other => other
            .strip_prefix("struct ")
            .map(|s| s.trim_end_matches("In").to_string())
            .unwrap_or_else(|| other.to_string()),
    }
}

/// Go's name for the offending value: the kind, plus the literal for out-of-range numbers.
fn go_value(got: &str, with_literal: bool) -> String {
    let (kind, literal) = match got.split_once(' ') {
        Some((k, l)) => (k, l.trim_matches('`')),
        None => (got, ""),
    };
    let kind = match kind {
        "integer" | "floating" => "number",
        "boolean" => "bool",
        "sequence" => "array",
        "map" => "object",
        "unit" => "null",
        other => other,
    };
    if with_literal && kind == "number" && !literal.is_empty() {
        format!("number {literal}")
    } else {
        kind.to_string()
    }
}

/// The region rule of the MC (`No region specified`, `Region "X" not found`).
pub(crate) fn check_region(regions: &[String], region: &str) -> Result<(), ApiError> {
    if region.is_empty() {
        return Err(ApiError::bad_request("No region specified"));
    }
    if !regions.iter().any(|r| r == region) {
        return Err(ApiError::bad_request(format!(
            "Region \"{region}\" not found"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AppIn;
    use serde_json::json;

    #[test]
    fn empty_body_has_the_mc_text() {
        let err = parse_json(b"").unwrap_err();
        assert_eq!(
            err.message,
            "Invalid JSON data: Syntax error at offset 0, unexpected end of JSON input"
        );
    }

    #[test]
    fn malformed_body_names_the_character() {
        let err = parse_json(b"{x").unwrap_err();
        assert!(
            err.message
                .starts_with("Invalid JSON data: Syntax error at offset 2, invalid character 'x'"),
            "{}",
            err.message
        );
    }

    #[test]
    fn keys_are_case_insensitive_except_map_keys() {
        let v = normalize(
            json!({"Region": "EU", "App": {"Key": {"Name": "a"}, "Env_Vars": {"MyVar": "1"}, "x": null}}),
        );
        assert_eq!(
            v,
            json!({"region": "EU", "app": {"key": {"name": "a"}, "env_vars": {"MyVar": "1"}}})
        );
    }

    #[test]
    fn type_errors_name_the_field() {
        let err = decode::<AppIn>(json!({"key": {"name": 5}}), "App").unwrap_err();
        assert_eq!(
            err.message,
            "Invalid JSON data: Unmarshal error: expected string, but got number for field \"App.key.name\""
        );
        let err = decode::<AppIn>(json!({"image_type": "Dockr"}), "App").unwrap_err();
        assert!(
            err.message.starts_with(
                "Invalid JSON data: Unmarshal error: expected ImageType, but got string Dockr for field \"App.image_type\", valid values are one of"
            ),
            "{}",
            err.message
        );
    }

    #[test]
    fn region_rules() {
        let regions = vec!["EU".to_string()];
        assert_eq!(
            check_region(&regions, "").unwrap_err().message,
            "No region specified"
        );
        assert_eq!(
            check_region(&regions, "US").unwrap_err().message,
            "Region \"US\" not found"
        );
        assert!(check_region(&regions, "EU").is_ok());
    }
}
