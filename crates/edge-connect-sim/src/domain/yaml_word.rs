//! What YAML makes of one word pasted unquoted after `- ` in a block sequence, as the
//! `kubernetes-basic` generator pastes `command` words and `command_args`
//! (edgexr/edge-cloud-platform@eb39b06ec `pkg/deploygen/kube.go:204-215` splits the command,
//! `kube.go:299-309` pastes each as `- {{.}}`). The manifest is read by the Kubernetes YAML
//! decoder: YAML 1.1 rules (go-yaml v2), then JSON into `[]string` fields.
//!
//! Only single-line words are classified; the rules are those of YAML 1.1 plain and quoted
//! scalars that a word can hit.

/// How a pasted word reads back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum YamlWord {
    /// The same string.
    Same,
    /// A string, but not the one written (quotes removed, comment cut, null read as "").
    Changed(String),
    /// Not a string at all: the decoder refuses the manifest. The text names what YAML read.
    NotAString(&'static str),
    /// Not valid YAML here; the text is go-yaml's complaint (shape, not verbatim).
    Invalid(&'static str),
}

/// YAML 1.1 booleans as go-yaml v2 resolves them.
const BOOLS: [&str; 22] = [
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
    "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
];

/// YAML 1.1 nulls.
const NULLS: [&str; 5] = ["", "~", "null", "Null", "NULL"];

fn is_number(w: &str) -> bool {
    let body = w.strip_prefix(['+', '-']).unwrap_or(w);
    if matches!(body, ".inf" | ".Inf" | ".INF") || matches!(w, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let digits =
        |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c == '_' || c.is_digit(radix));
    if let Some(hex) = body.strip_prefix("0x") {
        return digits(hex, 16);
    }
    if let Some(bin) = body.strip_prefix("0b") {
        return digits(bin, 2);
    }
    // Decimal integers, octal `0755`, floats `1.5`, `.5`, `1e3`, `6.8523015e+5`.
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e), 10));
    let mut parts = mantissa.splitn(2, '.');
    let int = parts.next().unwrap_or_default();
    let frac = parts.next();
    let mantissa_ok = match frac {
        None => digits(int, 10),
        Some(f) => {
            (int.is_empty() || digits(int, 10))
                && (f.is_empty() || digits(f, 10))
                && !(int.is_empty() && f.is_empty())
        }
    };
    mantissa_ok && exponent_ok && (exponent.is_none() || !mantissa.is_empty())
}

/// Reads `word` the way the decoder reads `- word`.
pub(crate) fn read(word: &str) -> YamlWord {
    let Some(first) = word.chars().next() else {
        return YamlWord::Changed(String::new());
    };
    match first {
        '[' => return YamlWord::NotAString("a sequence"),
        '{' => return YamlWord::NotAString("a mapping"),
        '#' => return YamlWord::Changed(String::new()),
        '*' => return YamlWord::Invalid("unknown anchor referenced"),
        '%' | '@' | '`' | ',' | ']' | '}' => {
            return YamlWord::Invalid("found character that cannot start any token")
        }
        '|' | '>' => {
            // A block scalar whose (absent) content lines would follow: an empty string.
            return if word[1..].chars().all(|c| "+-0123456789".contains(c)) {
                YamlWord::Changed(String::new())
            } else {
                YamlWord::Invalid("did not find expected comment or line break")
            };
        }
        '&' | '!' => {
            // An anchor or a tag, then (maybe) the node itself.
            let rest = word
                .split_once(' ')
                .map(|(_, r)| r.trim_start())
                .unwrap_or("");
            return match read(rest) {
                YamlWord::Same => YamlWord::Changed(rest.to_string()),
                other => other,
            };
        }
        '\'' => return single_quoted(word),
        '"' => return double_quoted(word),
        '-' | '?' | ':' if word.len() == 1 || word[1..].starts_with(' ') => {
            return YamlWord::NotAString(if first == '-' {
                "a sequence"
            } else {
                "a mapping"
            })
        }
        _ => {}
    }
    if word.contains(": ") || word.ends_with(':') {
        return YamlWord::NotAString("a mapping");
    }
    if let Some(i) = word.find(" #") {
        let kept = word[..i].trim_end();
        return match read(kept) {
            YamlWord::Same => YamlWord::Changed(kept.to_string()),
            other => other,
        };
    }
    if NULLS.contains(&word) {
        return YamlWord::Changed(String::new());
    }
    if BOOLS.contains(&word) {
        return YamlWord::NotAString("a boolean");
    }
    if is_number(word) {
        return YamlWord::NotAString("a number");
    }
    YamlWord::Same
}

fn single_quoted(word: &str) -> YamlWord {
    let inner = &word[1..];
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            return if chars.next().is_none() {
                YamlWord::Changed(out)
            } else {
                YamlWord::Invalid("did not find expected key")
            };
        }
        out.push(c);
    }
    // Unterminated: the scalar runs on into the following lines.
    YamlWord::Invalid("found unexpected end of stream")
}

fn double_quoted(word: &str) -> YamlWord {
    let inner = &word[1..];
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some(' ') => out.push(' '),
                Some('0') => out.push('\0'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('a') => out.push('\u{7}'),
                Some('v') => out.push('\u{b}'),
                Some('e') => out.push('\u{1b}'),
                Some('N') => out.push('\u{85}'),
                Some('_') => out.push('\u{a0}'),
                Some('L') => out.push('\u{2028}'),
                Some('P') => out.push('\u{2029}'),
                Some(kind @ ('x' | 'u' | 'U')) => {
                    let len = match kind {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = chars.by_ref().take(len).collect();
                    let ch = u32::from_str_radix(&hex, 16)
                        .ok()
                        .filter(|_| hex.len() == len)
                        .and_then(char::from_u32);
                    match ch {
                        Some(ch) => out.push(ch),
                        None => {
                            return YamlWord::Invalid("did not find expected hexdecimal number")
                        }
                    }
                }
                _ => {
                    return YamlWord::Invalid(
                        "found unknown escape character while parsing a quoted scalar",
                    )
                }
            },
            '"' => {
                return if chars.next().is_none() {
                    YamlWord::Changed(out)
                } else {
                    YamlWord::Invalid("did not find expected key")
                };
            }
            other => out.push(other),
        }
    }
    YamlWord::Invalid("found unexpected end of stream")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay() {
        for w in [
            "/home/runner/run.sh",
            "--once",
            "a:b",
            "x#y",
            "-x",
            "v1.2.3",
            "1.2.3",
            "a[[b]]",
        ] {
            assert_eq!(read(w), YamlWord::Same, "{w}");
        }
    }

    #[test]
    fn yaml_types_are_not_strings() {
        for w in ["yes", "No", "on", "OFF", "true", "y"] {
            assert_eq!(read(w), YamlWord::NotAString("a boolean"), "{w}");
        }
        for w in ["5", "-3", "0755", "0x1F", "1.5", ".5", "1e3", ".inf"] {
            assert_eq!(read(w), YamlWord::NotAString("a number"), "{w}");
        }
        assert_eq!(read("[[x]]"), YamlWord::NotAString("a sequence"));
        assert_eq!(read("{a}"), YamlWord::NotAString("a mapping"));
        assert_eq!(read("key: value"), YamlWord::NotAString("a mapping"));
        assert_eq!(read("key:"), YamlWord::NotAString("a mapping"));
    }

    #[test]
    fn some_words_change_silently() {
        assert_eq!(read("~"), YamlWord::Changed(String::new()));
        assert_eq!(read("null"), YamlWord::Changed(String::new()));
        assert_eq!(read("#x"), YamlWord::Changed(String::new()));
        assert_eq!(read("a #b"), YamlWord::Changed("a".into()));
        assert_eq!(
            read("\"--once now\""),
            YamlWord::Changed("--once now".into())
        );
        assert_eq!(read("'it''s'"), YamlWord::Changed("it's".into()));
        assert_eq!(
            read(r#""a\u0026b\n\"c\"""#),
            YamlWord::Changed("a&b\n\"c\"".into())
        );
        assert_eq!(read("&a"), YamlWord::Changed(String::new()));
        assert_eq!(read("|"), YamlWord::Changed(String::new()));
    }

    #[test]
    fn some_words_are_not_yaml() {
        for w in ["*a", "%x", "@x", "`x", "'open", "\"open", "|x"] {
            assert!(matches!(read(w), YamlWord::Invalid(_)), "{w}");
        }
    }
}
