//! Answers that come as NDJSON streams: Show answers as a typed [`Show`] stream, and AppInst
//! operations (CreateAppInst, DeleteAppInst) read to their end.

use std::pin::Pin;

use futures_util::stream::{self, Stream, TryStreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::appinst_start::{pod_statuses, Progress, CREATED};
use crate::client::Client;
use crate::error::ApiError;
use crate::lines::Lines;
use crate::rpc::Rpc;

/// How a streamed AppInst operation ended without an error trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// A CreateAppInst stream ended with the line that says the AppInst was created.
    Created,
    /// The stream ended otherwise, its last progress message kept (the MC's `Timed out while
    /// work still in progress ...` when it gave up waiting): the work may still finish or may
    /// not have been done, so the caller must look at the object's state
    /// (docs/edge-connect-behaviours.md B20).
    Completed(String),
}

/// The objects of one Show answer, each `{"data": ...}` line parsed into `T` as it arrives: a
/// [`Stream`] of `Result<T, ApiError>` that holds one line at a time, so what stays in memory is
/// what the caller keeps. It ends after its first error: a `result` trailer, an unreadable or
/// over-long line, silence, the deadline, or a body cut inside a line.
pub type Show<T> = Pin<Box<dyn Stream<Item = Result<T, ApiError>> + Send>>;

/// Every object of the Show answer `show` of `rpc`, at most `limit` of them: more is an error
/// naming the bound (an endless answer must not grow memory until the deadline).
pub async fn collect<T>(rpc: Rpc, mut show: Show<T>, limit: usize) -> Result<Vec<T>, ApiError> {
    let mut all = Vec::new();
    while let Some(item) = show.try_next().await? {
        if all.len() >= limit {
            return Err(ApiError::protocol(
                rpc,
                format!("answered more than {limit} objects; not read further"),
            ));
        }
        all.push(item);
    }
    Ok(all)
}

/// A progress line of an AppInst operation, as sent.
#[derive(Deserialize)]
struct ProgressLine {
    message: Option<String>,
}

impl Client {
    /// Sends a Show request and returns its answer as a stream, once the answer's headers are in.
    pub(crate) async fn show<T: DeserializeOwned + Send + 'static>(
        &self,
        rpc: Rpc,
        filter: &impl Serialize,
    ) -> Result<Show<T>, ApiError> {
        let wait = self.wait(true);
        let response = self.send(rpc, filter, wait).await?;
        let lines = Lines::new(rpc, response, wait);
        let items = stream::try_unfold(lines, |mut lines| async move {
            Ok(lines.next::<T>().await?.map(|item| (item, lines)))
        });
        Ok(Box::pin(items))
    }

    /// A streamed AppInst operation: progress lines go to `progress` as they arrive, read; a
    /// `result` trailer becomes an error.
    ///
    /// Silence does not end the stream: the controller runs the work under the request, and a
    /// client that hangs up makes it undo a create ("Deleting AppInst due to failure",
    /// docs/edge-connect-behaviours.md B7). Only the deadline ends it, headers included (the
    /// controller sends them with the first progress line).
    pub(crate) async fn operation(
        &self,
        rpc: Rpc,
        object: &impl Serialize,
        progress: &mut (dyn FnMut(Progress<'_>) + Send),
    ) -> Result<StreamEnd, ApiError> {
        let wait = self.wait(false);
        let response = self.send(rpc, object, wait).await?;
        let mut lines = Lines::new(rpc, response, wait);
        let mut last = String::new();
        while let Some(line) = lines.next::<ProgressLine>().await? {
            let Some(message) = line.message else {
                continue;
            };
            tracing::debug!(rpc = rpc.name(), message, "progress");
            let pods = pod_statuses(&message);
            progress(Progress {
                line: &message,
                pods,
            });
            last = message;
        }
        Ok(if last == CREATED {
            StreamEnd::Created
        } else {
            StreamEnd::Completed(last)
        })
    }
}
