//! Reading answers that come as NDJSON streams: Show answers and AppInst operations.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::client::Client;
use crate::error::ApiError;
use crate::transport::{MAX_LINE, MAX_SHOW_OBJECTS};

/// How a streamed AppInst operation ended without an error trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The stream ended normally; the last progress message is kept.
    Completed(String),
    /// The MC gave up waiting (`Timed out while work still in progress ...`): the work may still
    /// finish, so the caller must look at the object's state.
    StillInProgress(String),
}

impl Client {
    /// A Show call: every `{"data": ...}` line, parsed as `T`. An empty body means no match.
    pub async fn show<T: DeserializeOwned>(
        &self,
        rpc: &str,
        wrapper: &str,
        filter: &Value,
    ) -> Result<Vec<T>, ApiError> {
        self.show_where(rpc, wrapper, filter, None, |_| true).await
    }

    /// A Show call that keeps only the objects `keep` accepts. Lines are parsed straight into `T`
    /// as they arrive and dropped unless kept, so memory follows what is kept, not the size of
    /// the organization's inventory. With `needle`, a data line that does not contain those bytes
    /// is dropped without being parsed at all (a quick pre-filter for `keep`, which must reject
    /// every object whose line lacks the needle).
    pub async fn show_where<T: DeserializeOwned>(
        &self,
        rpc: &str,
        wrapper: &str,
        filter: &Value,
        needle: Option<&[u8]>,
        keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        let finder = needle.map(memchr::memmem::Finder::new);
        let skip = |line: &[u8]| finder.as_ref().is_some_and(|f| f.find(line).is_none());
        self.show_filtered(rpc, wrapper, filter, skip, keep).await
    }

    /// A Show call like [`Client::show_where`] whose data lines first go to `skip`: a line it
    /// returns true for is dropped unparsed. `skip` must only accept lines that `keep` would
    /// reject (e.g. a line whose leading key names an object the caller does not hold, see
    /// [`crate::leading_key_name`]); a `result` trailer never reaches it.
    pub async fn show_filtered<T: DeserializeOwned>(
        &self,
        rpc: &str,
        wrapper: &str,
        filter: &Value,
        mut skip: impl FnMut(&[u8]) -> bool,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        let mut response = self.send(rpc, wrapper, filter, self.wait(true)).await?;
        let mut items = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut take = |line: &[u8]| -> Result<(), ApiError> {
            // Only data lines are skipped: a `result` trailer must always be read.
            if line.starts_with(b"{\"data\"") && skip(line) {
                return Ok(());
            }
            if let Some(item) = crate::lines::parse_typed_line::<T>(rpc, line)? {
                if keep(&item) {
                    if items.len() >= MAX_SHOW_OBJECTS {
                        return Err(ApiError::protocol(
                            rpc,
                            format!(
                                "answered more than {MAX_SHOW_OBJECTS} objects; not read further"
                            ),
                        ));
                    }
                    items.push(item);
                }
            }
            Ok(())
        };
        let wait = self.wait(true);
        while let Some(chunk) = crate::transport::next_chunk(&mut response, rpc, wait).await? {
            pending.extend_from_slice(&chunk);
            crate::lines::for_each_line(&mut pending, rpc, MAX_LINE, &mut take)?;
        }
        take(&pending)?;
        Ok(items)
    }

    /// A streamed AppInst operation: progress messages go to `progress` as they arrive; a
    /// `result` trailer becomes an error.
    ///
    /// Silence does not end the stream: the controller runs the work under the request, and a
    /// client that hangs up makes it undo a create ("Deleting AppInst due to failure",
    /// docs/edge-connect-behaviours.md B7). Only the deadline ends it, headers included (the
    /// controller sends them with the first progress line).
    pub async fn stream(
        &self,
        rpc: &str,
        wrapper: &str,
        object: &Value,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamEnd, ApiError> {
        let mut response = self.send(rpc, wrapper, object, self.wait(false)).await?;
        let mut buffer: Vec<u8> = Vec::new();
        let mut last = String::new();
        let mut timed_out = None;
        let mut handle_line = |line: &[u8], last: &mut String| -> Result<(), ApiError> {
            let data = crate::lines::parse_line(rpc, line)?;
            if let Some(message) = data.as_ref().and_then(crate::lines::progress_message) {
                tracing::debug!(rpc, message, "progress");
                progress(message);
                if message.starts_with("Timed out while work still in progress") {
                    timed_out = Some(message.to_string());
                }
                *last = message.to_string();
            }
            Ok(())
        };
        let wait = self.wait(false);
        while let Some(chunk) = crate::transport::next_chunk(&mut response, rpc, wait).await? {
            buffer.extend_from_slice(&chunk);
            crate::lines::for_each_line(&mut buffer, rpc, MAX_LINE, |line| {
                handle_line(line, &mut last)
            })?;
        }
        handle_line(&buffer, &mut last)?;
        Ok(match timed_out {
            Some(message) => StreamEnd::StillInProgress(message),
            None => StreamEnd::Completed(last),
        })
    }
}
