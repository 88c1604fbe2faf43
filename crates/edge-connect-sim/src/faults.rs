//! Injected faults: what a test asks the simulator to get wrong, and the queue that hands
//! each fault to the next matching calls.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A fault for the next `count` calls of one RPC. Also the JSON body of `POST /__sim/faults`,
/// e.g. `{"rpc":"CreateAppInst","count":1,"kind":"stream_error","after_lines":2,"message":"boom"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    /// RPC name as in the URL (`CreateAppInst`, `ShowApp`, ...), `login`, or `*`
    /// for any call. Matched case-insensitively.
    pub rpc: String,
    /// How many matching calls the fault applies to (default 1).
    #[serde(default = "one")]
    pub count: usize,
    /// What goes wrong.
    #[serde(flatten)]
    pub kind: FaultKind,
}

fn one() -> usize {
    1
}

fn default_ready_after_ms() -> u64 {
    500
}

/// The kinds of fault (`"kind"` in JSON, snake_case).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultKind {
    /// An early error reply `{"message": ...}` with this status before anything else happens.
    /// Without `message`: 429 `<path> is rejected, please retry later. ...`,
    /// 503 `Service temporarily unavailable`, others the HTTP reason phrase.
    HttpStatus {
        /// HTTP status code.
        status: u16,
        /// Reply text; a status-specific default when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// AppInst create/delete: stream `after_lines` progress lines, then fail with
    /// `{"result":{"message":...,"code":400}}` after undoing (create: instance removed; delete:
    /// back to Ready). With `leave_create_error` a failed create stays in `CreateError`.
    StreamError {
        /// Progress lines before the failure (clamped so the operation never succeeds).
        #[serde(default)]
        after_lines: usize,
        /// The error text of the result trailer (first letter capitalised).
        message: String,
        /// Keep a failed create as `CreateError` with `errors: [message]` instead of undoing.
        #[serde(default)]
        leave_create_error: bool,
    },
    /// AppInst create/delete: close the connection after `after_lines` lines without a
    /// proper end; the operation still completes server-side.
    DropConnection {
        /// Progress lines written before the connection is cut.
        #[serde(default)]
        after_lines: usize,
    },
    /// AppInst create/delete: end the stream cleanly with `Timed out while work still in
    /// progress state <State>. Please use ShowAppInst to check current status`; the operation
    /// finishes `ready_after_ms` later. On a cloudlet whose CRM runs centrally
    /// (`CloudletSettings::crm_on_edge` false) a create instead fails with `Context deadline
    /// exceeded` and is undone, as the real controller does.
    Timeout {
        /// Delay between the timeout line and the operation completing (default 500 ms).
        #[serde(default = "default_ready_after_ms")]
        ready_after_ms: u64,
    },
    /// Delay the reply by `delay_ms` (then answer normally).
    Slow {
        /// Added delay in milliseconds.
        delay_ms: u64,
    },
    /// Invalidate every token issued so far (applies at once; `rpc`/`count` are ignored).
    ExpireTokens,
}

impl Fault {
    /// A fault for the next call of `rpc`.
    pub fn new(rpc: impl Into<String>, kind: FaultKind) -> Self {
        Fault {
            rpc: rpc.into(),
            count: 1,
            kind,
        }
    }

    /// The same fault for the next `count` calls instead of one.
    pub fn times(mut self, count: usize) -> Self {
        self.count = count;
        self
    }

    /// Early HTTP error with the status' default message.
    pub fn http_status(rpc: impl Into<String>, status: u16) -> Self {
        Fault::new(
            rpc,
            FaultKind::HttpStatus {
                status,
                message: None,
            },
        )
    }

    /// Stream failure after `after_lines` progress lines (undone by the server).
    pub fn stream_error(
        rpc: impl Into<String>,
        after_lines: usize,
        message: impl Into<String>,
    ) -> Self {
        Fault::new(
            rpc,
            FaultKind::StreamError {
                after_lines,
                message: message.into(),
                leave_create_error: false,
            },
        )
    }

    /// CreateAppInst fails after `after_lines` progress lines and the AppInst stays in
    /// `CreateError` with `message` as its error, instead of being undone.
    pub fn create_error_left(after_lines: usize, message: impl Into<String>) -> Self {
        Fault::new(
            "CreateAppInst",
            FaultKind::StreamError {
                after_lines,
                message: message.into(),
                leave_create_error: true,
            },
        )
    }

    /// Clean "Timed out while work still in progress" ending; done 500 ms later.
    pub fn timeout(rpc: impl Into<String>) -> Self {
        Fault::new(
            rpc,
            FaultKind::Timeout {
                ready_after_ms: default_ready_after_ms(),
            },
        )
    }

    fn applies_to(&self, rpc: &str) -> bool {
        self.count > 0 && (self.rpc == "*" || self.rpc.eq_ignore_ascii_case(rpc))
    }
}

/// Early faults for one call: a delay to add and maybe an error reply to give instead.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct EarlyFaults {
    /// Sum of matching `slow` faults.
    pub delay: Duration,
    /// `(status, message)` of the first matching `http_status` fault.
    pub reply: Option<(u16, Option<String>)>,
}

/// A fault that changes how an AppInst operation streams.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StreamFault {
    /// Fail after some lines.
    Error {
        after_lines: usize,
        message: String,
        leave_create_error: bool,
        /// The site's CRM reported it (`CreateError` shows as a message first).
        by_crm: bool,
    },
    /// Cut the connection after some lines.
    Drop { after_lines: usize },
    /// End cleanly with the timeout message; complete later.
    Timeout { ready_after: Duration },
}

/// Pending faults in injection order.
#[derive(Debug, Default)]
pub(crate) struct FaultTable {
    pending: Vec<Fault>,
}

impl FaultTable {
    /// Queues a fault (ignored when `count` is 0). `expire_tokens` is handled by the caller.
    pub(crate) fn push(&mut self, fault: Fault) {
        if fault.count > 0 && fault.kind != FaultKind::ExpireTokens {
            self.pending.push(fault);
        }
    }

    /// Consumes the `slow` and the first `http_status` faults that match `rpc`.
    pub(crate) fn take_early(&mut self, rpc: &str) -> EarlyFaults {
        let mut out = EarlyFaults::default();
        for fault in self.pending.iter_mut().filter(|f| f.applies_to(rpc)) {
            match &fault.kind {
                FaultKind::Slow { delay_ms } => {
                    out.delay += Duration::from_millis(*delay_ms);
                    fault.count -= 1;
                }
                FaultKind::HttpStatus { status, message } if out.reply.is_none() => {
                    out.reply = Some((*status, message.clone()));
                    fault.count -= 1;
                }
                _ => {}
            }
        }
        self.pending.retain(|f| f.count > 0);
        out
    }

    /// Consumes the first stream fault that matches `rpc`.
    pub(crate) fn take_stream(&mut self, rpc: &str) -> Option<StreamFault> {
        let fault = self.pending.iter_mut().find(|f| {
            f.applies_to(rpc)
                && matches!(
                    f.kind,
                    FaultKind::StreamError { .. }
                        | FaultKind::DropConnection { .. }
                        | FaultKind::Timeout { .. }
                )
        })?;
        fault.count -= 1;
        let taken = match &fault.kind {
            FaultKind::StreamError {
                after_lines,
                message,
                leave_create_error,
            } => StreamFault::Error {
                after_lines: *after_lines,
                message: message.clone(),
                leave_create_error: *leave_create_error,
                by_crm: false,
            },
            FaultKind::DropConnection { after_lines } => StreamFault::Drop {
                after_lines: *after_lines,
            },
            FaultKind::Timeout { ready_after_ms } => StreamFault::Timeout {
                ready_after: Duration::from_millis(*ready_after_ms),
            },
            _ => return None,
        };
        self.pending.retain(|f| f.count > 0);
        Some(taken)
    }

    /// Faults still waiting, with their remaining counts.
    pub(crate) fn list(&self) -> Vec<Fault> {
        self.pending.clone()
    }

    /// Forgets every pending fault.
    pub(crate) fn clear(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_json_round_trip() {
        let f: Fault = serde_json::from_str(
            r#"{"rpc":"CreateAppInst","count":2,"kind":"http_status","status":503}"#,
        )
        .unwrap();
        assert_eq!(f, Fault::http_status("CreateAppInst", 503).times(2));
        let f: Fault = serde_json::from_str(r#"{"rpc":"x","kind":"timeout"}"#).unwrap();
        assert_eq!(
            f.kind,
            FaultKind::Timeout {
                ready_after_ms: 500
            }
        );
        assert_eq!(f.count, 1);
    }

    #[test]
    fn faults_are_consumed_per_call() {
        let mut table = FaultTable::default();
        table.push(Fault::http_status("ShowApp", 500).times(2));
        table.push(Fault::stream_error("*", 1, "boom"));
        assert!(table.take_early("CreateApp").reply.is_none());
        assert_eq!(table.take_early("showapp").reply, Some((500, None)));
        assert_eq!(table.take_early("ShowApp").reply, Some((500, None)));
        assert!(table.take_early("ShowApp").reply.is_none());
        assert!(matches!(
            table.take_stream("DeleteAppInst"),
            Some(StreamFault::Error { after_lines: 1, .. })
        ));
        assert!(table.take_stream("DeleteAppInst").is_none());
        assert!(table.list().is_empty());
    }
}
