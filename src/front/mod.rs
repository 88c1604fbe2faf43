//! The two front doors: GARM's protocol ([`garm`]) and the command line for people ([`cli`]).
//! Both turn their input into a `provider::Operation` and hand it to the one
//! `pipeline`; they differ only in how they read input and print the outcome.
//!
//! Output goes through [`print()`] and [`say`], never `println!`/`eprintln!`: those panic
//! when the stream cannot be written (stdout to a closed pipe, stderr to a full disk), which
//! would turn a clean exit code into 101.

use std::io::Write;

use crate::error::Error;
use crate::garm::{exit, ProtocolError};
use crate::pipeline::scrubber;

pub mod cli;
pub mod garm;
mod table;

/// The exit code of a failed command, the same through both doors: GARM's codes for "not
/// found" (30) and "duplicate" (31), a shell's for Ctrl-C, 1 for everything else.
pub fn exit_code(e: &Error) -> u8 {
    match e {
        Error::NotFound(_) => exit::NOT_FOUND,
        Error::Duplicate(_) => exit::DUPLICATE,
        // 128 + SIGINT, what a shell reports of a command stopped by Ctrl-C.
        Error::Interrupted(_) => 130,
        Error::Failed { .. } => exit::FAILURE,
    }
}

/// GARM's input was not what the protocol promises: a failure with that one line, which echoes
/// what GARM sent as one short line and words a parse error without the value it refused (the
/// bootstrap holds the instance token, proxy credentials and download tokens).
impl From<ProtocolError> for Error {
    fn from(e: ProtocolError) -> Self {
        use crate::garm::{env::SUPPORTED_INTERFACE_VERSIONS, GarmCommand};
        use crate::text::echo;
        Error::failed(match e {
            ProtocolError::Refused(line) => line,
            ProtocolError::UnknownCommand(name) => format!(
                "unknown command: GARM_COMMAND={} (GARM's commands: {})",
                echo(&name),
                GarmCommand::NAMES.join(", ")
            ),
            ProtocolError::UnsupportedVersion(version) => format!(
                "unsupported GARM_INTERFACE_VERSION={} (supported: {})",
                echo(&version),
                SUPPORTED_INTERFACE_VERSIONS.join(", ")
            ),
            ProtocolError::Bootstrap(key, e) => {
                let what = describe_json(&e);
                match key {
                    Some(key) => format!("invalid bootstrap params: `{key}`: {what}"),
                    None => format!("invalid bootstrap params: {what}"),
                }
            }
        })
    }
}

/// serde_json's message without any value, with its position.
fn describe_json(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&position).unwrap_or(&full);
    let what = if e.is_syntax() || e.is_eof() {
        // Syntax messages describe the text ("expected value", "trailing characters"), not a value.
        crate::text::echo_max(message, 200)
    } else {
        crate::text::describe_serde(message, false, &[])
    };
    if e.line() == 0 {
        what
    } else {
        format!("{what} at line {} column {}", e.line(), e.column())
    }
}

/// Writes to stdout through `write`, buffered, and flushes. What is written is a table (its
/// cells already escaped), a JSON document or a version line; any
/// `text::is_terminal_control` character still in it (serde_json writes DEL, C1
/// controls and bidirectional overrides as they are) is written as its JSON escape (`\u009b`),
/// which a JSON reader decodes to the same character and a terminal shows as text.
pub fn print(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<(), Error> {
    let failed =
        |e: std::io::Error| Error::caused_by(format!("cannot write the result to stdout: {e}"), e);
    // The whole document first, then masked by the command's scrubber like every other writer: a server
    // can put a secret in any field it answers (an AppInst's uri, a site name, an App's
    // environment), and a secret split across two writes would not be recognised.
    let mut document = Vec::new();
    write(&mut document).map_err(failed)?;
    // Checked first: a JSON document is UTF-8, which from_utf8 tells at a fraction of the lossy
    // read's cost (0.7 M instructions for a List of 1,000 runners, 1 % of the command).
    let text = std::str::from_utf8(&document)
        .map_or_else(|_| String::from_utf8_lossy(&document), Into::into);
    let mut out = std::io::stdout().lock();
    out.write_all(visible(&scrubber().scrub(&text)).as_bytes())
        .and_then(|()| out.flush())
        .map_err(failed)
}

/// `text` with each terminal control but newline and tab written as JSON escapes it.
fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    // Printable ASCII, newlines and tabs (nearly every document) go through as they are.
    let plain = |b| matches!(b, b' '..=b'~' | b'\n' | b'\t');
    if text.bytes().all(plain) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c != '\n' && c != '\t' && crate::text::is_terminal_control(c) {
            true => out.push_str(&format!("\\u{:04x}", c as u32)),
            false => out.push(c),
        }
    }
    out.into()
}

/// Longest stderr line, in characters: a server's message is kept whole by the client (so
/// that it is masked before it is cut) and may be 64 KiB.
const MAX_LINE_CHARS: usize = 4000;

/// Writes one line to stderr: masked by the command's scrubber (`pipeline::scrubber`), then made one line of text a terminal
/// shows as it is (`text::echo_max`: control characters and bidirectional overrides
/// escaped) and cut. A failure is ignored: stderr is where failures are reported, so there is
/// nowhere left to report this one, and the exit code still tells the caller.
pub fn say(line: &str) {
    // Masked before it is cut or made one line: half a secret would no longer be recognised,
    // nor one whose whitespace was changed. A server's message may end in a newline.
    let line = crate::text::echo_max(scrubber().scrub(line).trim_end(), MAX_LINE_CHARS);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}").and_then(|()| err.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_garm_provider_common() {
        assert_eq!(exit_code(&Error::NotFound("x".into())), 30);
        assert_eq!(exit_code(&Error::Duplicate("x".into())), 31);
        assert_eq!(exit_code(&Error::Interrupted("x".into())), 130);
        assert_eq!(exit_code(&Error::failed("x")), 1);
    }

    #[test]
    fn stdout_shows_controls_as_json_escapes() {
        let text = "{\"a\":\"x\u{9b}2J\u{202e}\u{7f}ü\u{1b}[2J\r\"}\n";
        let written = visible(text);
        assert_eq!(
            written,
            "{\"a\":\"x\\u009b2J\\u202e\\u007fü\\u001b[2J\\u000d\"}\n"
        );
        let value: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert_eq!(value["a"], "x\u{9b}2J\u{202e}\u{7f}ü\u{1b}[2J\r");
        assert!(matches!(
            visible("{\"a\": 1}\n\t"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
