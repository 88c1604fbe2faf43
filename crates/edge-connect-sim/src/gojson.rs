//! JSON as Go's `encoding/json` writes it: compact, with HTML-safe string escaping. A leaf:
//! keys in messages (`json.Marshal` in `GetKeyString`) and every reply body use it.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

/// Compact JSON with Go's HTML-safe string escaping. The MC writes every reply with
/// `json.NewEncoder` (stream lines: edgexr/edge-cloud-platform@c39faca8f
/// `pkg/mc/orm/server.go:1459`; stream error results: `pkg/mc/orm/auditlog.go:343`; unary
/// replies and errors through echo's `c.JSON`, `auditlog.go:345`), and Go's encoder escapes
/// `<`, `>`, `&` as `\u003c`, `\u003e`, `\u0026` and U+2028/U+2029 as `\u2028`/`\u2029`
/// inside strings (the `escapeHTML` default of `encoding/json`).
struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            let escaped = match c {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            writer.write_all(&fragment.as_bytes()[start..i])?;
            writer.write_all(escaped.as_bytes())?;
            start = i + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// Appends `value` as Go would encode it; false (and nothing reliable appended) if it cannot
/// be serialised.
pub(crate) fn write_go_json<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) -> bool {
    let mut ser = serde_json::Serializer::with_formatter(&mut *buf, GoFormatter);
    value.serialize(&mut ser).is_ok()
}

/// `value` as Go would encode it (empty if it cannot be serialised).
pub(crate) fn go_json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut buf = Vec::new();
    if !write_go_json(&mut buf, value) {
        buf.clear();
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_like_go() {
        let out = go_json(&serde_json::json!({"m": "a&b <c> \u{2028}\u{2029} \"q\" é\n"}));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"m":"a\u0026b \u003cc\u003e \u2028\u2029 \"q\" é\n"}"#
        );
    }
}
