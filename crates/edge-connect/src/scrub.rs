//! The scrubber: what one command masks in every text it writes (the log, stderr, GARM's fault
//! line, a runner's fault, the CLI's lines). It is built from the secrets the command holds, by
//! the one function that gathers them (the provider's `pipeline::protect`), and handed to every
//! writer; nothing is registered behind anyone's back.
//!
//! What a server echoes is not under our control, nor the encoding it echoes it in. Instead of
//! listing every spelling of every secret, the scrubber decodes its own copy of the text (JSON
//! escapes, `%XX`), layer by layer, finds the secrets as they are in each decoded copy (a few
//! one by one, more with one multi-pattern pass), and masks the part of the text each one came
//! from. So a password written wholly as `\uXXXX` escapes, or URL-encoded after JSON escaping,
//! is found as surely as the raw one, and a thousand secrets cost one pass per copy.
//! docs/reliability.md lists what is covered and what is not.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use secret::Secret;

/// Shorter values are not masked: a three-letter value would blank every word that contains
/// it, and no message would be readable. The provider refuses an Edge Connect password shorter
/// than 8 characters for that reason (docs/operations.md, Logs).
pub const MIN_SECRET_CHARS: usize = 4;

/// Most bytes of secrets one command protects (every value, plus the password of each proxy URL).
/// The automaton of many values takes about 13 bytes per byte of secret (0.85 MB for one 64 KiB
/// secret), so this bounds it near 14 MB; real commands hold a few KiB (a thousand download
/// tokens are 40 KB). Past it [`Scrubber::protect`] refuses, and the command with it: nothing is
/// sent unprotected.
pub const MAX_PROTECTED_BYTES: usize = 1024 * 1024;

/// How many layers of encoding are taken off: a JSON-escaped password, URL-encoded, quoted in a
/// server's JSON message, quoted again in a JSON log line is four.
const MAX_LAYERS: usize = 4;

/// The text that replaces a secret.
const MASK: &str = "***";

/// What one command masks: its secrets, and anything shaped like a bearer token or a JWT.
/// Cloning gives another handle to the same scrubber (the log writer, stderr and the client
/// share one); [`Scrubber::protect`] adds to it for all of them.
#[derive(Clone, Default)]
pub struct Scrubber(Arc<RwLock<Patterns>>);

/// More secrets than the scrubber protects ([`MAX_PROTECTED_BYTES`]).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the command holds {bytes} bytes of secrets, more than the {max} bytes whose masking in output can be guaranteed; nothing was sent (fewer or shorter tokens in the bootstrap, or a shorter proxy URL)", max = MAX_PROTECTED_BYTES)]
pub struct TooManySecrets {
    /// Bytes of secrets the command would protect.
    pub bytes: usize,
}

#[derive(Default)]
struct Patterns {
    /// Every protected value, sorted and without repeats, with `+` written as a space ([`fold`]).
    values: Vec<Vec<u8>>,
    /// How `values` are searched for, made by the first scrub after they changed: a command
    /// learns its secrets in steps (the config's, then the session token) and often writes
    /// nothing in between.
    matcher: OnceLock<Matcher>,
}

/// Values up to this many, each at most [`FEW_BYTES`] long, are searched for one by one
/// (`memmem`): nothing to build, where an automaton for one password and one session token
/// cost a quarter of a GetInstance's instructions to build. More take one automaton, one pass
/// per copy whatever their number.
const FEW_VALUES: usize = 8;
/// See [`FEW_VALUES`]; it also bounds what a search one by one may cost where a text repeats
/// a periodic secret (each match is looked for again from the next byte).
const FEW_BYTES: usize = 4096;

/// How the protected values are searched for.
enum Matcher {
    /// A few values, each on its own.
    Each(Vec<memchr::memmem::Finder<'static>>),
    /// Many values, one automaton.
    Automaton(AhoCorasick),
    /// Values past the automaton's own limits (which the bound keeps far away): nothing of a
    /// text is let through.
    Unsearchable,
}

impl Matcher {
    fn new(values: &[Vec<u8>]) -> Matcher {
        if values.len() <= FEW_VALUES && values.iter().all(|v| v.len() <= FEW_BYTES) {
            let each = values
                .iter()
                .map(|v| memchr::memmem::Finder::new(v).into_owned());
            return Matcher::Each(each.collect());
        }
        AhoCorasick::builder()
            // Not the DFA the builder picks for few patterns: building one for a 64 KiB secret
            // takes minutes; the contiguous NFA takes milliseconds and a third of the memory.
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .match_kind(MatchKind::Standard)
            .build(values)
            .map_or(Matcher::Unsearchable, Matcher::Automaton)
    }

    /// Calls `found` with every span of `haystack` that is a value, overlapping ones too: of two
    /// secrets that overlap in the text, both are masked whole.
    fn find(&self, haystack: &[u8], mut found: impl FnMut(Range<usize>)) {
        match self {
            Matcher::Each(finders) => {
                for finder in finders {
                    let mut from = 0;
                    while let Some(at) = finder.find(&haystack[from..]) {
                        let start = from + at;
                        found(start..start + finder.needle().len());
                        from = start + 1;
                    }
                }
            }
            Matcher::Automaton(automaton) => {
                for m in automaton.find_overlapping_iter(haystack) {
                    found(m.start()..m.end());
                }
            }
            Matcher::Unsearchable => found(0..haystack.len()),
        }
    }
}

impl Scrubber {
    /// A scrubber that masks only bearer tokens and JWT-shaped words, until secrets are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Masks `secrets` from now on in every text this scrubber (and each of its clones) cleans,
    /// and, for a URL holding a password (a proxy URL), that password alone too, as written and
    /// decoded. Values shorter than [`MIN_SECRET_CHARS`] are not masked. Refuses, adding
    /// nothing, when all secrets together would exceed [`MAX_PROTECTED_BYTES`].
    pub fn protect<'a>(
        &self,
        secrets: impl IntoIterator<Item = &'a Secret>,
    ) -> Result<(), TooManySecrets> {
        self.add(secrets, Some(MAX_PROTECTED_BYTES))
    }

    /// Masks the session token the client just learnt, whatever the bound: the provider's own
    /// credentials are always protected (a token is no longer than the login answer's size
    /// limit, 1 MiB), and the command's secrets were bounded before anything was sent.
    pub fn protect_token(&self, token: &Secret) {
        // Only an automaton past its own limits fails, with tens of MiB of patterns.
        let _ = self.add([token], None);
    }

    fn add<'a>(
        &self,
        secrets: impl IntoIterator<Item = &'a Secret>,
        bound: Option<usize>,
    ) -> Result<(), TooManySecrets> {
        let mut patterns = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let mut values = patterns.values.clone();
        for secret in secrets {
            let value = secret.expose();
            values.push(fold(value.as_bytes()));
            // Only a URL with `@` has a password (a session token has none: no parse for it).
            if let Some(password) = Some(value)
                .filter(|v| v.contains('@'))
                .and_then(|v| reqwest::Url::parse(v).ok())
                .and_then(|u| u.password().map(String::from))
            {
                let decoded = percent_encoding::percent_decode_str(&password).collect::<Vec<u8>>();
                values.extend([fold(password.as_bytes()), fold(&decoded)]);
            }
        }
        values.retain(|v| String::from_utf8_lossy(v).chars().count() >= MIN_SECRET_CHARS);
        values.sort_unstable();
        values.dedup();
        let bytes = values.iter().map(Vec::len).sum();
        if bound.is_some_and(|max| bytes > max) {
            return Err(TooManySecrets { bytes });
        }
        if values != patterns.values {
            *patterns = Patterns {
                values,
                matcher: OnceLock::new(),
            };
        }
        Ok(())
    }

    /// How many values are masked (secrets, and proxy URLs' passwords).
    pub fn len(&self) -> usize {
        self.read().values.len()
    }

    /// True when no value is masked (only bearer tokens and JWT-shaped words are).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `text` with every protected secret, in any of the encodings `decode_json` and
    /// `decode_url` take off (layered up to `MAX_LAYERS` deep), and anything shaped like a
    /// bearer token or a JWT, replaced by `***`. The whole encoded span is replaced, so no part of
    /// an escape is left.
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let patterns = self.read();
        let mut found = Vec::new();
        let raw = View {
            bytes: Cow::Borrowed(text.as_bytes()),
            from: None,
        };
        let mut views = vec![(raw, 0)];
        while let Some((view, layer)) = views.pop() {
            patterns.find(&view, &mut found);
            // Spans are kept as u32: a longer text is searched as it is only.
            if layer < MAX_LAYERS && text.len() <= u32::MAX as usize {
                let decoded = [decode_json, decode_url].map(|decode| decode(&view));
                views.extend(decoded.into_iter().flatten().map(|d| (d, layer + 1)));
            }
        }
        mask(text, found)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Patterns> {
        // A panic while adding leaves the previous, complete patterns in place.
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scrubber({} values)", self.len())
    }
}

impl Patterns {
    /// Adds to `found` the spans of `view`'s text where a secret, a bearer token or a JWT is.
    fn find(&self, view: &View<'_>, found: &mut Vec<Range<usize>>) {
        if !self.values.is_empty() && !view.bytes.is_empty() {
            let matcher = self.matcher.get_or_init(|| Matcher::new(&self.values));
            let folded;
            let haystack = if view.bytes.contains(&b'+') {
                folded = fold(&view.bytes);
                &folded[..]
            } else {
                &view.bytes[..]
            };
            matcher.find(haystack, |r| found.push(view.origin(r)));
        }
        for (marker, span) in [("bearer", bearer_token as Shape), ("eyj", jwt)] {
            shapes(&view.bytes, marker, span, |r| found.push(view.origin(r)));
        }
    }
}

/// `+` as a space, in secrets and in what is searched: a URL query writes a space as `+` and
/// leaves a `+` as it is (Go's `url.PathEscape`), so the two cannot be told apart in a decoded
/// copy. A secret with a space then also matches the same text with `+`, which only masks more.
fn fold(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'+' { b' ' } else { b })
        .collect()
}

/// A copy of the text with some layer of encoding taken off, and where each of its bytes came from.
struct View<'t> {
    bytes: Cow<'t, [u8]>,
    /// For each byte, the span of the text it was decoded from (start, end); `None` for the
    /// text itself. `u32`: half the memory, and no text written out is 4 GiB long.
    from: Option<Vec<(u32, u32)>>,
}

impl View<'_> {
    /// The span of the text that the bytes `r` of this copy came from.
    fn origin(&self, r: Range<usize>) -> Range<usize> {
        match &self.from {
            None => r,
            Some(from) if r.is_empty() => from[r.start].0 as usize..from[r.start].0 as usize,
            Some(from) => from[r.start].0 as usize..from[r.end - 1].1 as usize,
        }
    }

    /// A decoded copy: at each `escape` byte, `decode(bytes, at, out)` appends to `out` the
    /// bytes the escape at `at` stands for and returns its length, or returns `None` (appending
    /// nothing) where there is no escape. `None` when nothing was decoded.
    fn decoded(
        &self,
        escape: u8,
        decode: impl Fn(&[u8], usize, &mut Vec<u8>) -> Option<usize>,
    ) -> Option<View<'static>> {
        if !self.bytes.contains(&escape) {
            return None;
        }
        let (mut bytes, mut from) = (Vec::with_capacity(self.bytes.len()), Vec::new());
        let mut at = 0;
        while at < self.bytes.len() {
            let escaped = (self.bytes[at] == escape).then(|| decode(&self.bytes, at, &mut bytes));
            let len = escaped.flatten().unwrap_or_else(|| {
                bytes.push(self.bytes[at]);
                1
            });
            let span = self.origin(at..at + len);
            from.resize(bytes.len(), (span.start as u32, span.end as u32));
            at += len;
        }
        // Every escape is longer than what it stands for: a shorter copy decoded something.
        (bytes.len() < self.bytes.len()).then_some(View {
            bytes: Cow::Owned(bytes),
            from: Some(from),
        })
    }
}

/// The copy with JSON's string escapes taken off: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`
/// and `\uXXXX` in either case (a UTF-16 surrogate pair as one character), whatever an encoder
/// chose to escape: serde_json escapes little, Go's encoder also `&`, `<`, `>`, U+2028, U+2029
/// (the Master Controller is Go, docs/edge-connect-behaviours.md B2), others every non-ASCII
/// character or every character.
fn decode_json(view: &View<'_>) -> Option<View<'static>> {
    view.decoded(b'\\', |b, at, out| {
        let simple = match b.get(at + 1)? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = hex(b, at + 2, 4)?;
                if let Some(c) = char::from_u32(unit.into()) {
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    return Some(6);
                }
                // A high surrogate and the low one after it: one character, twelve bytes.
                let low = b
                    .get(at + 6..at + 8)
                    .filter(|p| p == b"\\u")
                    .and(hex(b, at + 8, 4))?;
                let c = char::decode_utf16([unit, low]).next()?.ok()?;
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                return Some(12);
            }
            _ => return None,
        };
        out.push(simple);
        Some(2)
    })
}

/// The `len` hex digits at `at`: a `\uXXXX` escape's UTF-16 code unit, a `%XX` escape's byte.
fn hex(b: &[u8], at: usize, len: usize) -> Option<u16> {
    let digits = std::str::from_utf8(b.get(at..at + len)?).ok()?;
    u16::from_str_radix(digits, 16)
        .ok()
        .filter(|_| digits.bytes().all(|d| d.is_ascii_hexdigit()))
}

/// The copy with URL encoding (`%XX`, either case) taken off; `+` is [`fold`]ed instead.
fn decode_url(view: &View<'_>) -> Option<View<'static>> {
    view.decoded(b'%', |b, at, out| {
        out.push(hex(b, at + 1, 2)? as u8);
        Some(3)
    })
}

/// `text` with the spans `found` replaced by the mask, spans that overlap or touch as one.
fn mask(text: &str, mut found: Vec<Range<usize>>) -> Cow<'_, str> {
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    found.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in found {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    let (mut out, mut copied) = (String::with_capacity(text.len()), 0);
    for r in merged {
        // Spans end where an escape or a character ends; kept on character boundaries anyway.
        let (mut start, mut end) = (r.start.max(copied), r.end.min(text.len()));
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push_str(&text[copied..start]);
        out.push_str(MASK);
        copied = end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Where a shape starts and ends, given the bytes and an occurrence of its marker.
type Shape = fn(&[u8], usize) -> Option<Range<usize>>;

/// Calls `found` with each span that `span(bytes, at)` finds at an occurrence `at` of `marker`
/// (ASCII, lower case) in `bytes`, in any case. Found without a lower-case copy of the text:
/// that copy was most of what a log line without secrets cost to scrub.
fn shapes(bytes: &[u8], marker: &str, span: Shape, mut found: impl FnMut(Range<usize>)) {
    let marker = marker.as_bytes();
    let (lower, upper) = (marker[0], marker[0].to_ascii_uppercase());
    let mut search = 0;
    while let Some(at) = memchr::memchr2(lower, upper, &bytes[search..]) {
        let at = search + at;
        search = at + 1;
        let here = bytes.get(at..at + marker.len());
        if !here.is_some_and(|h| h.eq_ignore_ascii_case(marker)) {
            continue;
        }
        search = at + marker.len();
        if let Some(masked) = span(bytes, at) {
            search = masked.end;
            found(masked);
        }
    }
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

    fn scrubber(values: &[&str]) -> Scrubber {
        let s = Scrubber::new();
        let secrets: Vec<Secret> = values.iter().map(|v| Secret::new(*v)).collect();
        s.protect(&secrets).unwrap();
        s
    }

    /// `s` JSON-escaped with every character written as `\uXXXX`.
    fn all_unicode_escapes(s: &str, upper: bool) -> String {
        s.encode_utf16()
            .map(|u| match upper {
                true => format!("\\u{u:04X}"),
                false => format!("\\u{u:04x}"),
            })
            .collect()
    }

    fn url(s: &str) -> String {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
    }

    #[test]
    fn every_encoding_of_a_secret_is_masked() {
        let secret = "p\"w\\ü&<>x y";
        let serde = serde_json::to_string(secret).unwrap();
        let serde = serde.trim_matches('"');
        let go = r#"p\"w\\ü\u0026\u003c\u003ex y"#;
        let s = scrubber(&[secret]);
        for (form, wire) in [
            ("raw", secret.to_string()),
            ("serde_json", serde.to_string()),
            ("go", go.to_string()),
            ("ascii", r#"p\"w\\\u00fc\u0026\u003c\u003ex y"#.to_string()),
            ("ASCII", r#"p\"w\\\u00FC\u0026\u003C\u003Ex y"#.to_string()),
            ("every char \\u", all_unicode_escapes(secret, false)),
            ("every char \\U", all_unicode_escapes(secret, true)),
            ("url", "p%22w%5C%C3%BC%26%3C%3Ex%20y".to_string()),
            ("url lower", "p%22w%5c%c3%bc%26%3c%3ex%20y".to_string()),
            ("form", "p%22w%5C%C3%BC%26%3C%3Ex+y".to_string()),
            ("url of serde", url(serde)),
            ("url of go", url(go)),
            (
                "url of every char \\u",
                url(&all_unicode_escapes(secret, false)),
            ),
            (
                "json twice",
                serde_json::to_string(&serde_json::to_string(secret).unwrap())
                    .unwrap()
                    .trim_matches('"')
                    .trim_matches(|c| c == '\\' || c == '"')
                    .to_string(),
            ),
            (
                "url of serde in a json log",
                serde_json::to_string(&url(serde))
                    .unwrap()
                    .trim_matches('"')
                    .to_string(),
            ),
            (
                "go of url of serde, in a json log",
                serde_json::to_string(&all_unicode_escapes(&url(serde), false))
                    .unwrap()
                    .trim_matches('"')
                    .to_string(),
            ),
        ] {
            let out = s.scrub(&format!("echo: {wire} end")).into_owned();
            assert_eq!(out, "echo: *** end", "{form}: {wire}");
        }
        // Whole quoted forms keep their quotes.
        let twice = serde_json::to_string(&serde_json::to_string(secret).unwrap()).unwrap();
        assert_eq!(s.scrub(&twice), r#""\"***\"""#);
    }

    #[test]
    fn a_proxy_urls_password_is_masked_alone_too() {
        let s = scrubber(&["http://squid:s3cr%40t@proxy.internal:3128"]);
        assert_eq!(s.scrub("auth s3cr%40t failed"), "auth *** failed");
        assert_eq!(s.scrub("auth s3cr@t failed"), "auth *** failed");
        assert_eq!(
            s.scrub("via http://squid:s3cr%40t@proxy.internal:3128 refused"),
            "via *** refused"
        );
    }

    #[test]
    fn bearer_headers_and_jwts_are_masked_unknown() {
        let s = Scrubber::new();
        assert_eq!(
            s.scrub("header Authorization: Bearer abcdefghijklmnop rejected"),
            "header Authorization: Bearer *** rejected"
        );
        assert_eq!(
            s.scrub("authorization=bearer%20abcdefghijklmnop"),
            "authorization=bearer%20***"
        );
        assert_eq!(
            s.scrub("Bearer abc+def/ghi=jklmnop"),
            "Bearer ***",
            "a b64token with `+` is one token"
        );
        assert_eq!(s.scrub("Bearer token expired"), "Bearer token expired");
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_x";
        assert_eq!(
            s.scrub(&format!("token {jwt}, again:{jwt}")),
            "token ***, again:***"
        );
        assert_eq!(
            s.scrub(&format!("escaped {}", all_unicode_escapes(jwt, false))),
            "escaped ***"
        );
        assert_eq!(
            s.scrub("keyJhbGciOiJIUzI1NiJ9.x.y"),
            "keyJhbGciOiJIUzI1NiJ9.x.y"
        );
        assert_eq!(s.scrub("eyJ alone"), "eyJ alone");
        assert_eq!(s.scrub("cut eyJhbGciOiJIUzI1NiJ9.eyJzdWIi…"), "cut ***…");
        assert_eq!(
            s.scrub("header eyJhbGciOiJIUzI1NiJ9 only"),
            "header eyJhbGciOiJIUzI1NiJ9 only"
        );
    }

    #[test]
    fn short_values_are_not_masked_and_long_ones_whole() {
        let s = scrubber(&["abc", ""]);
        assert_eq!(s.scrub("abc abcd"), "abc abcd");
        assert!(s.is_empty());
        let long: String = (0..64 * 1024)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let s = scrubber(&[&long]);
        assert_eq!(s.scrub(&format!("<{long}>")), "<***>");
        let escaped = all_unicode_escapes(&long, false);
        assert_eq!(s.scrub(&format!("<{escaped}>")), "<***>");
    }

    #[test]
    fn thousands_of_secrets_are_all_masked_and_overlaps_whole() {
        let values: Vec<String> = (0..5000).map(|i| format!("token-{i:05}-x")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let s = scrubber(&refs);
        assert_eq!(s.len(), 5000);
        let text = values.join(",");
        let expected = vec![MASK; 5000].join(",");
        assert_eq!(s.scrub(&text), expected);
        let s = scrubber(&["abcdef", "defghi"]);
        assert_eq!(s.scrub("xabcdefghix"), "x***x");
    }

    #[test]
    fn too_many_secrets_are_refused_and_nothing_is_added() {
        let s = scrubber(&["kept-secret"]);
        let big = Secret::new("x".repeat(MAX_PROTECTED_BYTES + 1));
        let e = s.protect([&big]).unwrap_err();
        assert!(e.to_string().contains("nothing was sent"), "{e}");
        assert_eq!(s.len(), 1);
        assert_eq!(s.scrub("kept-secret"), MASK);
        // The provider's own session token is added whatever the bound.
        let s = scrubber(&[&"s".repeat(MAX_PROTECTED_BYTES - 10)]);
        s.protect_token(&Secret::new("session-token-over-the-bound"));
        assert_eq!(s.scrub("x session-token-over-the-bound"), "x ***");
    }

    #[test]
    fn the_matcher_is_made_once_by_the_first_scrub_after_secrets_change() {
        let s = scrubber(&["config-password"]);
        s.protect_token(&Secret::new("session-token-9c1e"));
        assert!(s.read().matcher.get().is_none(), "made before any scrub");
        assert_eq!(s.scrub("a session-token-9c1e b"), "a *** b");
        let made = s.read().matcher.get().map(|m| m as *const Matcher);
        assert!(made.is_some());
        assert_eq!(s.scrub("config-password"), MASK);
        let again = s.read().matcher.get().map(|m| m as *const Matcher);
        assert_eq!(made, again, "made again without a new secret");
        s.protect_token(&Secret::new("session-token-9c1e"));
        assert!(
            s.read().matcher.get().is_some(),
            "a known secret dropped it"
        );
        s.protect_token(&Secret::new("renewed-token-5d2a"));
        assert!(
            s.read().matcher.get().is_none(),
            "a new secret kept the old one"
        );
        assert_eq!(s.scrub("renewed-token-5d2a config-password"), "*** ***");
    }

    #[test]
    fn few_values_are_searched_one_by_one_and_many_by_one_automaton() {
        let few: Vec<String> = (0..FEW_VALUES).map(|i| format!("value-{i}-x")).collect();
        let many: Vec<String> = (0..=FEW_VALUES).map(|i| format!("value-{i}-x")).collect();
        let long = "y".repeat(FEW_BYTES + 1);
        for (values, one_by_one) in [
            (few.iter().map(String::as_str).collect::<Vec<_>>(), true),
            (many.iter().map(String::as_str).collect(), false),
            (vec![long.as_str()], false),
        ] {
            let s = scrubber(&values);
            let text = format!("<{}>", values.join("|"));
            let expected = format!("<{}>", vec![MASK; values.len()].join("|"));
            assert_eq!(s.scrub(&text), expected);
            let kind = s
                .read()
                .matcher
                .get()
                .map(|m| matches!(m, Matcher::Each(_)));
            assert_eq!(kind, Some(one_by_one), "{} values", values.len());
        }
    }

    #[test]
    fn clones_share_what_is_protected() {
        let s = Scrubber::new();
        let writer = s.clone();
        s.protect([&Secret::new("learnt-later-7f3a")]).unwrap();
        assert_eq!(writer.scrub("x learnt-later-7f3a y"), "x *** y");
    }

    #[test]
    fn text_without_secrets_is_left_as_it_is() {
        let s = scrubber(&["hunter22"]);
        for text in [
            "plain",
            r#"{"a":"b\"c\\d\u0041"}"#,
            "100% %zz %4 \\u12 \\uD800 \\",
            "ü€ and a+b",
        ] {
            assert!(
                matches!(s.scrub(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn a_secret_in_any_encoding_between_any_words_becomes_the_mask(
            secret in "[a-zA-Z0-9\"\\\\&<> üé€%+/😀]{4,24}",
            before in "[;:,!]{0,8}",
            after in "[;:,!]{0,8}",
            encoding in 0usize..6,
        ) {
            let s = scrubber(&[&secret]);
            let serde = serde_json::to_string(&secret).unwrap();
            let serde = &serde[1..serde.len() - 1];
            let wire = match encoding {
                0 => secret.clone(),
                1 => serde.to_string(),
                2 => all_unicode_escapes(&secret, false),
                3 => url(&secret),
                4 => url(serde),
                _ => url(&all_unicode_escapes(&secret, true)),
            };
            let out = s.scrub(&format!("{before}{wire}{after}")).into_owned();
            proptest::prop_assert_eq!(&out, &format!("{before}{MASK}{after}"));
            // The same through the automaton that more values take.
            let fillers: Vec<String> = (0..FEW_VALUES).map(|i| format!("filler-{i}-§")).collect();
            let mut values: Vec<&str> = fillers.iter().map(String::as_str).collect();
            values.push(&secret);
            let many = scrubber(&values);
            let through_automaton = many.scrub(&format!("{before}{wire}{after}")).into_owned();
            proptest::prop_assert_eq!(through_automaton, out);
        }
    }
}
