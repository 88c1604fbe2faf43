//! Output that may carry a server's words, scrubbed line by line before it leaves the process.
//!
//! The scrubber itself is [`edge_connect::Secret::scrub`]: every secret registers with it when
//! it is read. The log writer (`logging`), the stderr line (`front::say`) and the fault GARM
//! stores (`garm::instance`) call it directly; this module adapts it to a stream of lines, for
//! reports written piece by piece (`check`).

use std::io::Write;

/// Longest line held before it is written anyway (scrubbed as it stands): a report line is a
/// few hundred bytes.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// A writer that scrubs each complete line before passing it on, so that a secret written in
/// several pieces is still seen whole. What is left without a newline is written on flush.
pub struct ScrubbedLines<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> ScrubbedLines<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        ScrubbedLines {
            inner,
            pending: Vec::new(),
        }
    }

    fn emit(&mut self, upto: usize) -> std::io::Result<()> {
        let line: Vec<u8> = self.pending.drain(..upto).collect();
        let text = String::from_utf8_lossy(&line);
        self.inner
            .write_all(edge_connect::Secret::scrub(&text).as_bytes())
    }
}

impl<W: Write> Write for ScrubbedLines<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(at) = self.pending.iter().position(|&b| b == b'\n') {
            self.emit(at + 1)?;
        }
        if self.pending.len() > MAX_LINE_BYTES {
            self.emit(self.pending.len())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            self.emit(self.pending.len())?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for ScrubbedLines<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_written_in_pieces_is_masked_whole() {
        // A bearer header is masked by its shape, whatever the process registered before.
        let mut out = Vec::new();
        {
            let mut w = ScrubbedLines::new(&mut out);
            for piece in [
                "✗ login: echo Bearer abcdefgh",
                "ijklmnop ",
                "refused\nnext",
            ] {
                w.write_all(piece.as_bytes()).unwrap();
            }
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "✗ login: echo Bearer *** refused\nnext"
        );
    }
}
