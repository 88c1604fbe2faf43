//! A wrapper for values that must never reach stdout, stderr or the log, and the one scrubber
//! that removes every such value from text on its way out of the process.
//!
//! Every [`Secret`] registers its value with the process-wide scrubber when it is made (read
//! from a file, the environment, GARM's stdin, a login answer), so whatever writes output (the
//! log writer, the stderr line, the fault GARM stores) can remove it with [`Secret::scrub`],
//! whichever of its encodings a server echoed it in.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::Deserialize;
use serde_json::Value;

/// A secret string (password, Edge Connect token, GARM instance token, proxy URL with credentials).
///
/// `Debug` and `Display` print `***`, so a secret that slips into a log line or an error message is
/// still not disclosed. The value is only reachable through [`Secret::expose`], which makes every
/// place that hands the secret on visible in review.
///
/// Deserializing one accepts only a string, and an error never repeats the value (serde's own
/// "invalid type: integer `424242`" would put a numeric password into the message).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Read as any value (with `deserialize_string`, serde_json reports a wrong type itself,
        // value included); an error names the type only.
        let what = match Value::deserialize(deserializer)? {
            Value::String(s) => return Ok(Secret::new(s)),
            Value::Bool(_) => "a boolean",
            Value::Number(n) if n.is_f64() => "a number",
            Value::Number(_) => "an integer",
            Value::Null => "nothing",
            Value::Array(_) => "a list",
            Value::Object(_) => "a table",
        };
        Err(serde::de::Error::custom(format!(
            "expected a string for a secret, got {what} (value not shown)"
        )))
    }
}

impl Secret {
    /// Wraps a value, and registers it with the scrubber ([`Secret::scrub`]).
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        known().add(&value);
        Secret(value)
    }

    /// `text` with every registered secret, in every form a server or an encoder may give it,
    /// and anything shaped like a bearer token or a JWT, replaced by `***`. Every line that
    /// leaves the process passes through here: what a server echoes is not under our control.
    pub fn scrub(text: &str) -> Cow<'_, str> {
        known().scrub(text)
    }

    /// The secret value, for the one place that must send it somewhere.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when no value was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Every secret this process has seen.
static KNOWN: Mutex<Redactor> = Mutex::new(Redactor::new());

/// The registered secrets. A panic while registering cannot leave the lists unusable: the
/// scrubber keeps working with what they hold.
fn known() -> MutexGuard<'static, Redactor> {
    KNOWN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Shorter values are not redacted: a three-letter password would blank every word that
/// contains it, and no message would be readable. (The login refuses nothing for it; such a
/// password is simply not protected in output, which docs/operations.md says.)
const MIN_SECRET_CHARS: usize = 4;

/// Distinct values kept. A command holds a handful (password, token, instance token, proxy
/// URLs, a registry password); the bound keeps a hostile input from making every line slow.
const MAX_SECRETS: usize = 64;

/// Longest value registered in full; a longer one is matched by its first this-many bytes
/// (enough to hide it, and the forms stay small).
const MAX_SECRET_BYTES: usize = 4 * 1024;

/// Bound of the forms kept, in bytes (a few KiB in practice).
const MAX_FORM_BYTES: usize = 2 * 1024 * 1024;

/// The text that replaces a secret.
const MASK: &str = "***";

/// The forms of every registered secret, longest first.
struct Redactor {
    values: Vec<String>,
    forms: Vec<String>,
}

impl Redactor {
    const fn new() -> Self {
        Redactor {
            values: Vec::new(),
            forms: Vec::new(),
        }
    }

    /// Registers a value and the forms it can come back in.
    fn add(&mut self, value: &str) {
        let mut value = value;
        if value.len() > MAX_SECRET_BYTES {
            let mut end = MAX_SECRET_BYTES;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value = &value[..end];
        }
        if value.chars().count() < MIN_SECRET_CHARS
            || self.values.len() >= MAX_SECRETS
            || self.values.iter().any(|v| v == value)
        {
            return;
        }
        let mut forms = forms(value);
        forms.retain(|f| !self.forms.contains(f));
        let held: usize = self.forms.iter().map(String::len).sum();
        if held + forms.iter().map(String::len).sum::<usize>() > MAX_FORM_BYTES {
            return;
        }
        self.forms.extend(forms);
        // Longest first: a form that contains another is replaced whole.
        self.forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        self.values.push(value.to_string());
    }

    fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for form in &self.forms {
            if out.contains(form.as_str()) {
                out = Cow::Owned(out.replace(form.as_str(), MASK));
            }
        }
        if let Some(masked) = mask_spans(&out, "bearer", bearer_token) {
            out = Cow::Owned(masked);
        }
        if let Some(masked) = mask_spans(&out, "eyj", jwt) {
            out = Cow::Owned(masked);
        }
        out
    }
}

/// The spellings a value can reach output in: as is; JSON-escaped as serde_json writes it
/// (`"` and `\` escaped), as Go's encoder writes it (also `&`, `<`, `>` as `\u0026`...; the
/// Master Controller is Go, docs/edge-connect-behaviours.md B2), with non-ASCII as `\u00fc`
/// or `\u00FC` (encoders that write ASCII only); URL-encoded (a query, a form, a proxy URL's
/// user info); the password inside a URL, as written and decoded; and each of those
/// JSON-escaped once more (a server message quoted inside a JSON log line).
fn forms(value: &str) -> Vec<String> {
    let mut base = vec![value.to_string()];
    if let Some(password) = reqwest::Url::parse(value)
        .ok()
        .and_then(|u| u.password().map(String::from))
    {
        let decoded = percent_encoding::percent_decode_str(&password).decode_utf8_lossy();
        base.extend([decoded.into_owned(), password]);
    }
    let mut once = Vec::new();
    for b in &base {
        let url = percent_encoding::utf8_percent_encode(b, URL_ESCAPED).to_string();
        once.push(b.clone());
        once.extend(ESCAPES.map(|e| json_escape(b, e)));
        // `+` for a space: HTML forms, Go's `url.QueryEscape`.
        once.extend([url.replace("%20", "+"), url]);
    }
    let mut all = once.clone();
    for f in &once {
        all.extend([Escape::Serde, Escape::Go].map(|e| json_escape(f, e)));
    }
    all.retain(|f| f.chars().count() >= MIN_SECRET_CHARS);
    all.sort();
    all.dedup();
    all
}

/// Bytes percent-encoded in a URL: all but the unreserved ones (RFC 3986 2.3).
const URL_ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What a JSON encoder escapes beyond `"`, `\` and control characters; each level escapes what
/// the one before does, and more.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Escape {
    /// serde_json: nothing more.
    Serde,
    /// Go's encoding/json: `&`, `<`, `>`, U+2028, U+2029.
    Go,
    /// Every non-ASCII character too (UTF-16 `\u00fc`).
    Ascii,
    /// The same with upper-case hex digits (`\u00FC`).
    AsciiUpper,
}

const ESCAPES: [Escape; 4] = [Escape::Serde, Escape::Go, Escape::Ascii, Escape::AsciiUpper];

fn json_escape(s: &str, escape: Escape) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '\\' | '\n' | '\r' | '\t' => out.extend(c.escape_default()),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20
                || escape >= Escape::Go
                    && matches!(c, '&' | '<' | '>' | '\u{2028}' | '\u{2029}')
                || escape >= Escape::Ascii && !c.is_ascii() =>
            {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&match escape {
                        Escape::AsciiUpper => format!("\\u{unit:04X}"),
                        _ => format!("\\u{unit:04x}"),
                    });
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` with each span that `span(bytes, at)` finds at an occurrence `at` of `marker` (ASCII,
/// lower case, matched in any case) replaced by the mask; `None` when there is none.
fn mask_spans(
    text: &str,
    marker: &str,
    span: fn(&[u8], usize) -> Option<Range<usize>>,
) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let (mut out, mut copied, mut search) = (String::new(), 0, 0);
    while let Some(found) = lower[search..].find(marker) {
        let at = search + found;
        search = at + marker.len();
        if let Some(masked) = span(text.as_bytes(), at) {
            out.push_str(&text[copied..masked.start]);
            out.push_str(MASK);
            (copied, search) = (masked.end, masked.end);
        }
    }
    // A masked span is never empty, so `copied` moved if anything was masked.
    (copied > 0).then(|| out + &text[copied..])
}

/// The end of the run of `allowed` bytes that starts at `from`.
fn run(bytes: &[u8], from: usize, allowed: fn(u8) -> bool) -> usize {
    from + bytes[from..].iter().take_while(|&&b| allowed(b)).count()
}

/// Shortest word after `Bearer` that is masked: real tokens are far longer, and "Bearer token
/// expired" should stay readable.
const MIN_BEARER_CHARS: usize = 12;

/// Characters of an RFC 6750 `b64token` (what follows `Bearer `).
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b)
}

/// At `Bearer` (any case), the token after one or more separators (spaces, `%20`, `+`),
/// whatever the token is: an echoed Authorization header.
fn bearer_token(bytes: &[u8], at: usize) -> Option<Range<usize>> {
    let after = at + "bearer".len();
    let mut start = after;
    loop {
        if matches!(bytes.get(start), Some(b' ' | b'+')) {
            start += 1;
        } else if bytes[start..].starts_with(b"%20") {
            start += 3;
        } else {
            break;
        }
    }
    let end = run(bytes, start, is_token_char);
    (start > after && end - start >= MIN_BEARER_CHARS).then_some(start..end)
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// At `eyJ`, a JWT-shaped word (header, `.`, payload[, `.`, signature]), known or not: a token
/// the provider never saw (another user's, a refreshed one) is still a credential. Header and
/// payload suffice: a JWT cut short (a message cut at its length limit) still carries its claims.
fn jwt(bytes: &[u8], at: usize) -> Option<Range<usize>> {
    if !bytes[at..].starts_with(b"eyJ") || at > 0 && is_base64url(bytes[at - 1]) {
        return None;
    }
    let header = run(bytes, at, is_base64url);
    if header - at < 10 || bytes.get(header) != Some(&b'.') {
        return None;
    }
    let payload = run(bytes, header + 1, is_base64url);
    if payload - header - 1 < 2 {
        return None;
    }
    match bytes.get(payload) {
        Some(b'.') => Some(at..run(bytes, payload + 1, is_base64url)),
        _ => Some(at..payload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn a_secret_of_the_wrong_type_is_not_echoed() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct F {
            password: Secret,
        }
        for text in [
            r#"{"password": 424242424242}"#,
            r#"{"password": 4242.4242}"#,
            r#"{"password": [424242]}"#,
            r#"{"password": {"v": "hunter2"}}"#,
        ] {
            let e = serde_json::from_str::<F>(text).unwrap_err().to_string();
            assert!(e.contains("value not shown"), "{e}");
            assert!(!e.contains("4242") && !e.contains("hunter2"), "{e}");
        }
        let f: F = serde_json::from_str(r#"{"password": "hunter2"}"#).unwrap();
        assert_eq!(f.password.expose(), "hunter2");
    }

    fn redactor(values: &[&str]) -> Redactor {
        let mut r = Redactor::new();
        for v in values {
            r.add(v);
        }
        r
    }

    #[test]
    fn every_encoding_of_a_secret_is_masked() {
        let secret = "p\"w\\ü&<>x y";
        let r = redactor(&[secret]);
        for (form, wire, masked) in [
            ("raw", secret.to_string(), "***"),
            (
                "serde_json",
                serde_json::to_string(secret).unwrap(),
                "\"***\"",
            ),
            (
                "go",
                r#""p\"w\\ü\u0026\u003c\u003ex y""#.to_string(),
                "\"***\"",
            ),
            (
                "ascii",
                r#""p\"w\\\u00fc\u0026\u003c\u003ex y""#.to_string(),
                "\"***\"",
            ),
            (
                "ASCII",
                r#""p\"w\\\u00FC\u0026\u003C\u003Ex y""#.to_string(),
                "\"***\"",
            ),
            ("url", "p%22w%5C%C3%BC%26%3C%3Ex%20y".to_string(), "***"),
            ("form", "p%22w%5C%C3%BC%26%3C%3Ex+y".to_string(), "***"),
            (
                "json twice",
                serde_json::to_string(&serde_json::to_string(secret).unwrap()).unwrap(),
                r#""\"***\"""#,
            ),
        ] {
            let out = r.scrub(&format!("echo: {wire} end")).into_owned();
            assert_eq!(out, format!("echo: {masked} end"), "{form}");
        }
    }

    #[test]
    fn a_proxy_urls_password_is_masked_alone_too() {
        let r = redactor(&["http://squid:s3cr%40t@proxy.internal:3128"]);
        assert_eq!(r.scrub("auth s3cr%40t failed"), "auth *** failed");
        assert_eq!(r.scrub("auth s3cr@t failed"), "auth *** failed");
        assert_eq!(
            r.scrub("via http://squid:s3cr%40t@proxy.internal:3128 refused"),
            "via *** refused"
        );
    }

    #[test]
    fn bearer_headers_and_jwts_are_masked_unknown() {
        let r = Redactor::new();
        assert_eq!(
            r.scrub("header Authorization: Bearer abcdefghijklmnop rejected"),
            "header Authorization: Bearer *** rejected"
        );
        assert_eq!(
            r.scrub("authorization=bearer%20abcdefghijklmnop"),
            "authorization=bearer%20***"
        );
        assert_eq!(r.scrub("Bearer token expired"), "Bearer token expired");
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_x";
        assert_eq!(
            r.scrub(&format!("token {jwt}, again:{jwt}")),
            "token ***, again:***"
        );
        assert_eq!(
            r.scrub("keyJhbGciOiJIUzI1NiJ9.x.y"),
            "keyJhbGciOiJIUzI1NiJ9.x.y"
        );
        assert_eq!(r.scrub("eyJ alone"), "eyJ alone");
        assert_eq!(r.scrub("cut eyJhbGciOiJIUzI1NiJ9.eyJzdWIi…"), "cut ***…");
        assert_eq!(
            r.scrub("header eyJhbGciOiJIUzI1NiJ9 only"),
            "header eyJhbGciOiJIUzI1NiJ9 only"
        );
    }

    #[test]
    fn short_values_and_values_past_the_bound_are_not_registered() {
        let mut r = redactor(&["abc", ""]);
        assert_eq!(r.scrub("abc abcd"), "abc abcd");
        for i in 0..MAX_SECRETS + 5 {
            r.add(&format!("value-{i:04}"));
        }
        assert_eq!(r.values.len(), MAX_SECRETS);
        assert_eq!(r.scrub("value-0000"), MASK);
    }

    #[test]
    fn a_new_secret_is_scrubbed_process_wide() {
        let s = Secret::new("registered-once-7f3a");
        assert_eq!(Secret::scrub("x registered-once-7f3a y"), "x *** y");
        let _ = s;
    }

    proptest::proptest! {
        #[test]
        fn a_secret_in_any_encoding_between_any_words_becomes_the_mask(
            secret in "[a-zA-Z0-9\"\\\\&<> üé€%+/]{4,24}",
            before in "[;:,!]{0,8}",
            after in "[;:,!]{0,8}",
            encoding in 0usize..5,
        ) {
            let r = redactor(&[&secret]);
            let wire = match encoding {
                0 => secret.clone(),
                1 => json_escape(&secret, Escape::Serde),
                2 => json_escape(&secret, Escape::Go),
                3 => json_escape(&secret, Escape::Ascii),
                _ => percent_encoding::utf8_percent_encode(&secret, URL_ESCAPED).to_string(),
            };
            let out = r.scrub(&format!("{before}{wire}{after}")).into_owned();
            proptest::prop_assert_eq!(out, format!("{before}{MASK}{after}"));
        }
    }
}
