//! Text that reaches an operator: echoed input made safe for one line, parse errors reworded so
//! they never repeat a value that may be secret, and local files read without surprises.
//!
//! It imports nothing of the crate, so every layer can use it; the protocol layer does not (it
//! is a leaf): the front door words what GARM sent.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// How many characters of an input are echoed in a message: enough to recognise it, short
/// enough that a 100 KB value cannot flood GARM's fault field.
pub const ECHO_CHARS: usize = 64;

/// Upper bound for a config or credentials file: real ones are a few hundred bytes.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// `value` as one printable line of at most [`ECHO_CHARS`] characters: control characters
/// (newline, escape sequences, C1 controls) are shown escaped, and a longer value is cut with
/// a note of its full size.
pub fn echo(value: &str) -> String {
    echo_max(value, ECHO_CHARS)
}

/// [`echo`] with another length limit.
pub fn echo_max(value: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (count, c) in value.chars().enumerate() {
        if count == max_chars {
            out.push_str(&format!("… ({} bytes in all)", value.len()));
            return out;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_terminal_control(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `value` in double quotes with Rust's escapes (`"yes"`, `"a\nb"`), cut after [`ECHO_CHARS`]
/// characters with a note of its full size: for messages that must show exactly which word
/// was refused.
pub fn quoted(value: &str) -> String {
    match value.char_indices().nth(ECHO_CHARS) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes in all)", &value[..cut], value.len()),
    }
}

/// `text` with every control character escaped, so that it stays one line whatever it holds.
pub fn one_line(text: &str) -> String {
    echo_max(text, usize::MAX)
}

/// Whether a terminal may take `c` for a command, or show the text around it other than it is:
/// C0 controls (ESC starts OSC and CSI sequences, CR returns to the line's start to draw over
/// it), DEL, C1 controls (U+009B is a one-character CSI, U+009D an OSC), the bidirectional
/// embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and marks (U+061C,
/// U+200E, U+200F) that reorder a line, and the line and paragraph separators (U+2028,
/// U+2029). Every text a person is shown passes through [`echo_max`] (stderr lines, `check`'s
/// lines, table cells), which writes these escaped (`\u{1b}`), and stdout through
/// `front::print`, which writes any left (in a JSON document) as JSON escapes.
pub fn is_terminal_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// What went wrong with a value, in words, from a serde error message — without the value.
///
/// serde's messages quote the offending value (`invalid type: string "http://user:pass@proxy",
/// expected struct ProxyConfig`); in a credentials file or GARM's bootstrap that value can be a
/// password or a token. This keeps the kind of value and what was expected and drops the rest.
/// With `show_value`, a short escaped excerpt of a string value is kept, for files that hold no
/// secret (the provider config), because "got the string \"60s\"" is what lets the operator fix it.
/// An unknown name is offered neither `retired` nor, as the nearest, any of them: names a type
/// still reads, so that an old file loads, but no one should write.
pub fn describe_serde(message: &str, show_value: bool, retired: &[&str]) -> String {
    // "invalid type: <unexpected>, expected <expected>" and "invalid value: ..."
    let mut typed = ["invalid type: ", "invalid value: "].into_iter();
    let typed = typed.find_map(|prefix| message.strip_prefix(prefix)?.rsplit_once(", expected "));
    if let Some((unexpected, expected)) = typed {
        return format!(
            "expected {}, got {}",
            expected_in_words(expected),
            unexpected_in_words(unexpected, show_value)
        );
    }
    let length = message.strip_prefix("invalid length ");
    if let Some((_, expected)) = length.and_then(|rest| rest.rsplit_once(", expected ")) {
        return format!("expected {}", expected_in_words(expected));
    }
    // Messages that name a key, a variant or a field (`unknown field `x``, `missing field `x``,
    // `unknown variant `x``, `duplicate key`) carry no value of a secret field: keep them, as
    // one short line.
    let known = [
        "unknown field",
        "missing field",
        "duplicate field",
        "duplicate key",
        "unknown variant",
        "EOF while parsing",
        "expected",
        "trailing",
        "key must be a string",
        "control character",
        "invalid escape",
        "invalid number",
        "invalid unicode",
        "lone leading surrogate",
        "recursion limit",
    ];
    if let Some(line) = unknown_name(message, retired) {
        return line;
    }
    if known.iter().any(|k| message.starts_with(k)) {
        // `unknown field `x`` and `unknown variant `x`` echo the given name: never a secret,
        // but still input: each quoted name is cut like any echo, and the whole line bounded.
        let pieces: Vec<String> = message
            .split('`')
            .enumerate()
            .map(|(i, piece)| {
                if i % 2 == 1 {
                    echo(piece)
                } else {
                    piece.to_string()
                }
            })
            .collect();
        return echo_max(&pieces.join("`"), 300);
    }
    "a value of the wrong form".to_string()
}

/// serde's `unknown field `x`, expected one of `a`, `b`` (or `unknown variant`): the name given
/// (echoed, it is input), the nearest allowed name when one is close (`did you mean`), and every
/// allowed name but the `retired` ones. Those are ours and few, so the list is never cut: a cut
/// could hide the right one.
fn unknown_name(message: &str, retired: &[&str]) -> Option<String> {
    let (kind, rest) = ["unknown field `", "unknown variant `"]
        .into_iter()
        .find_map(|k| Some((k.trim_end_matches(" `"), message.strip_prefix(k)?)))?;
    let (given, rest) = rest.split_once('`')?;
    // serde_json ends its messages with where it was in the text.
    let rest = rest.rsplit_once(" at line ").map_or(rest, |(r, _)| r);
    // `expected one of `a`, `b``, `expected `a``, or no list (`there are no fields`).
    let list = rest.split_once("expected ").map_or("", |(_, list)| list);
    let list = list.strip_prefix("one of ").unwrap_or(list).split(", ");
    let allowed: Vec<&str> = list
        .map(|name| name.trim_matches('`'))
        .filter(|name| !name.is_empty() && !retired.contains(name))
        .collect();
    let mut line = format!("{kind} `{}`", echo(given));
    let given = given.to_lowercase();
    let distance = |name: &str| strsim::levenshtein(&given, &name.to_lowercase());
    let nearest = allowed.iter().map(|name| (distance(name), *name)).min();
    if let Some((_, name)) = nearest.filter(|(d, name)| *d <= (name.chars().count() / 3).max(2)) {
        line.push_str(&format!("; did you mean `{name}`?"));
    }
    if !allowed.is_empty() {
        let all: Vec<String> = allowed.iter().map(|n| format!("`{n}`")).collect();
        line.push_str(&format!(" (allowed here: {})", all.join(", ")));
    }
    Some(line)
}

/// `what` prefixed with the key it is about (`edge_connect.request_timeout_secs: ...`), as
/// serde_path_to_error names it. An unknown field names itself in the message, so it is
/// prefixed with the table that holds it, if any; the top level (".") gets no prefix.
pub fn keyed(path: &str, what: &str) -> String {
    let path = if what.starts_with("unknown field") {
        path.rsplit_once('.').map_or("", |(parent, _)| parent)
    } else {
        path
    };
    if path.is_empty() || path == "." {
        what.to_string()
    } else {
        format!("{path}: {what}")
    }
}

fn expected_in_words(expected: &str) -> String {
    let e = expected.trim();
    match e {
        "u64" | "u32" | "u16" | "u8" | "usize" => "a whole number (0 or more)".to_string(),
        "i64" | "i32" => "a whole number".to_string(),
        "a boolean" => "true or false".to_string(),
        "a string" | "a borrowed string" => "a string".to_string(),
        _ if e.starts_with("struct ") || e.starts_with("a map") => "a table / object".to_string(),
        _ if e.starts_with("a sequence") => "a list".to_string(),
        _ if e.starts_with("enum ") => "one of the allowed names".to_string(),
        _ => echo_max(e, 120),
    }
}

fn unexpected_in_words(unexpected: &str, show_value: bool) -> String {
    let u = unexpected.trim();
    let (kind, value) = u.split_once(' ').unwrap_or((u, ""));
    let kind = match kind {
        "string" => "a string",
        "integer" => "a number",
        "floating" => "a decimal number",
        "boolean" => "a boolean",
        "character" => "a character",
        "sequence" => return "a list".to_string(),
        "map" => return "a table / object".to_string(),
        "unit" | "null" => return "null".to_string(),
        _ => return "a value of another type".to_string(),
    };
    if show_value && kind == "a string" && !value.is_empty() {
        // serde quotes the string with Rust's Debug escapes: keep that, escaped and cut.
        return format!("the string {}", echo(value));
    }
    if show_value && (kind == "a number" || kind == "a decimal number" || kind == "a boolean") {
        let value = value.trim_start_matches("point ").trim_matches('`');
        return format!("{kind} ({})", echo(value));
    }
    kind.to_string()
}

/// Reads a local file the provider is given (config, credentials, bootstrap): only a regular
/// file, at most `max_bytes`, of UTF-8 text. A FIFO would block forever and `/dev/zero` would never end; both
/// are refused with a line that says why. Symlinks are followed (Kubernetes mounts Secrets and
/// ConfigMaps through them).
pub fn read_regular_file(path: &Path, max_bytes: u64) -> Result<String, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK);
    let file = open_regular(path, &options).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut raw)
        .map_err(|e| e.to_string())?;
    if raw.len() as u64 > max_bytes {
        return Err(format!(
            "larger than {max_bytes} bytes; not a file this provider reads"
        ));
    }
    String::from_utf8(raw).map_err(|_| "not valid UTF-8 text".to_string())
}

/// Opens `path` with `options` if it is a regular file. `options` must not block on a FIFO
/// (O_NONBLOCK); the type is checked on the opened file, so it cannot change in between.
pub fn open_regular(path: &Path, options: &std::fs::OpenOptions) -> std::io::Result<std::fs::File> {
    let file = options.open(path)?;
    not_regular(&file.metadata()?).map_or(Ok(file), Err)
}

/// "not a regular file (a FIFO)", ... for a path that is not a regular file; `None` for one.
pub fn not_regular(meta: &std::fs::Metadata) -> Option<std::io::Error> {
    let t = meta.file_type();
    let kind = [
        (t.is_dir(), "a directory"),
        (t.is_symlink(), "a symbolic link"),
        (t.is_fifo(), "a FIFO"),
        (t.is_char_device(), "a character device"),
        (t.is_block_device(), "a block device"),
        (t.is_socket(), "a socket"),
    ]
    .into_iter()
    .find_map(|(is, kind)| is.then_some(kind))
    .unwrap_or("not a regular file");
    (!t.is_file()).then(|| std::io::Error::other(format!("not a regular file ({kind})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_escapes_and_cuts() {
        assert_eq!(echo("Frobnicate"), "Frobnicate");
        assert_eq!(echo("a\nb\x1b[31m"), "a\\nb\\u{1b}[31m");
        let long = "x".repeat(100_000);
        let e = echo(&long);
        assert!(e.starts_with(&"x".repeat(64)), "{e}");
        assert!(e.ends_with("… (100000 bytes in all)"), "{e}");
        assert_eq!(echo("\u{9b}2J"), "\\u{9b}2J");
    }

    #[test]
    fn quoted_values_are_cut_too() {
        assert_eq!(quoted("yes"), "\"yes\"");
        assert_eq!(quoted("a\nb"), "\"a\\nb\"");
        let long = "y".repeat(100);
        assert_eq!(
            quoted(&long),
            format!("\"{}\"… (100 bytes in all)", "y".repeat(64))
        );
    }

    #[test]
    fn serde_type_errors_lose_their_value() {
        let m = describe_serde(
            "invalid type: integer `424242424242`, expected a string",
            false,
            &[],
        );
        assert_eq!(m, "expected a string, got a number");
        let m = describe_serde(
            "invalid type: string \"http://u:s3cret@proxy\", expected struct ProxyConfig",
            false,
            &[],
        );
        assert_eq!(m, "expected a table / object, got a string");
        let m = describe_serde("invalid type: string \"60s\", expected u64", true, &[]);
        assert_eq!(
            m,
            "expected a whole number (0 or more), got the string \"60s\""
        );
        assert_eq!(
            describe_serde(
                "unknown field `surprise`, expected one of `a`, `b`",
                false,
                &[]
            ),
            "unknown field `surprise` (allowed here: `a`, `b`)"
        );
        // The nearest allowed name, and every one of them (serde_json's position dropped).
        assert_eq!(
            describe_serde(
                "unknown field `Flavour`, expected one of `flavor`, `zones`, `env` at line 1 column 10",
                false,
                &[]
            ),
            "unknown field `Flavour`; did you mean `flavor`? (allowed here: `flavor`, `zones`, `env`)"
        );
        let long = "k".repeat(100_000);
        assert_eq!(
            describe_serde(
                &format!("unknown field `{long}`, expected `flavor`"),
                false,
                &[]
            ),
            format!(
                "unknown field `{}… (100000 bytes in all)` (allowed here: `flavor`)",
                "k".repeat(64)
            )
        );
        assert_eq!(
            describe_serde("something new with s3cret", false, &[]),
            "a value of the wrong form"
        );
    }

    proptest::proptest! {
        /// An echo is the escaped input when it is short, else its first 64 characters
        /// escaped and the marker with the full size; always one line.
        #[test]
        fn echo_is_the_input_cut_at_64_characters(v in ".{0,100}") {
            let e = echo(&v);
            proptest::prop_assert!(!e.contains('\n') && !e.contains('\r'), "{}", e);
            if v.chars().count() <= ECHO_CHARS {
                proptest::prop_assert_eq!(e, one_line(&v));
            } else {
                let head: String = v.chars().take(ECHO_CHARS).collect();
                proptest::prop_assert_eq!(e, format!("{}… ({} bytes in all)", one_line(&head), v.len()));
            }
        }

        #[test]
        fn describe_never_repeats_a_value(v in "[a-z0-9:@/]{8,40}") {
            for msg in [
                format!("invalid type: string {v:?}, expected a string"),
                format!("invalid value: string {v:?}, expected a URL"),
                format!("invalid type: integer `{v}`, expected a string"),
                format!("custom error {v}"),
            ] {
                let d = describe_serde(&msg, false, &[]);
                proptest::prop_assert!(!d.contains(&v), "{d}");
            }
        }
    }
}
