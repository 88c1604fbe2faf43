//! Typed Edge Connect errors.
//!
//! The Master Controller answers almost every controller error with HTTP 400 and a message; the
//! kind ("already exists", "not found", "busy") is only in the text. This module turns status and
//! text into a kind the provider can act on.

use std::fmt;
use std::time::Duration;

use crate::deadline::{backoff, Deadline};
use crate::rpc::Rpc;

/// What went wrong, as far as the provider's decisions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiErrorKind {
    /// `... already exists`.
    AlreadyExists,
    /// `... not found`.
    NotFound,
    /// The object is in a transient state (`AppInst busy, ...`, `... is being deleted`,
    /// `Application in use by static AppInst ...`).
    Busy,
    /// The site cannot take the AppInst (no resources, no edge sites, zone/cloudlet unusable).
    NoCapacity,
    /// 401: no, invalid or expired token, or wrong credentials at login.
    Auth,
    /// 403: not permitted for the organization.
    Forbidden,
    /// Any other 400: the request was refused.
    Rejected,
    /// 429.
    RateLimited,
    /// 5xx.
    Server,
    /// The host could not be reached at all (connection refused, no route, name not resolved):
    /// the request never left this machine. Final: the client has already retried it for
    /// [`ClientOptions::connect_retry`](crate::ClientOptions::connect_retry).
    Unreachable,
    /// Connection reset, timeout, broken stream, the command's deadline reached: the request
    /// may have reached the server.
    Transport,
    /// The server answered with a redirect (3xx). Redirects are never followed: the request
    /// carries the password, a token or an App's secrets, which must not go to another origin.
    Redirect,
    /// The server's TLS certificate was refused (retrying cannot help).
    Tls,
    /// The server's answer could not be understood.
    Protocol,
}

/// The kind of object a "not found" or refusal names, read from the controller's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// `Zone key {...}` (Gen3).
    Zone,
    /// `Cloudlet key {...}`, or Gen2's `Specified Cloudlet not found`.
    Cloudlet,
    /// `Flavor key {...}`.
    Flavor,
    /// `Region "..." not found`.
    Region,
}

/// An error from one Edge Connect call.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// Classification.
    pub kind: ApiErrorKind,
    /// The RPC that failed.
    pub rpc: Rpc,
    /// What came back.
    pub answer: Answer,
    /// The server's message (or the transport error) as it came, newlines and all: every
    /// writer masks it with the command's [`Scrubber`](crate::Scrubber) first and only then
    /// makes it one line, because a password the server quoted with a tab, a no-break space or
    /// two spaces in a row is no longer recognised once its whitespace has been folded.
    pub message: String,
}

/// What came back for a call that failed: it tells a request refused before any work from work
/// the controller accepted and then failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// No usable answer: the host unreachable, the connection broken, silence, the deadline, or
    /// an answer that could not be read.
    None,
    /// An answer with this HTTP status, not 200: the request was refused (a stream's before it
    /// started).
    Status(u16),
    /// A stream that began with HTTP 200 and ended in a `result` trailer with this code: the
    /// controller had accepted the request, so its work may have left something behind (an
    /// AppInst's CreateError).
    Trailer(u16),
}

impl ApiError {
    /// An error of `kind` with `message` as it came ([`ApiError::message`]).
    fn new(kind: ApiErrorKind, rpc: Rpc, answer: Answer, message: &str) -> Self {
        ApiError {
            kind,
            rpc,
            answer,
            message: message.to_string(),
        }
    }

    /// Builds an error from an HTTP status and the server's `message`.
    pub fn from_status(rpc: Rpc, status: u16, message: &str) -> Self {
        let kind = match status {
            401 => ApiErrorKind::Auth,
            // The Master Controller's "Missing OTP": the user has two-factor authentication.
            // Not a server fault: retrying cannot help.
            511 if rpc == Rpc::Login => {
                let message = format!("the Edge Connect user has two-factor authentication; use a user or API key without it ({message})");
                return Self::new(ApiErrorKind::Auth, rpc, Answer::Status(status), &message);
            }
            300..=399 => ApiErrorKind::Redirect,
            403 => ApiErrorKind::Forbidden,
            429 => ApiErrorKind::RateLimited,
            500..=599 => ApiErrorKind::Server,
            // Login refuses wrong credentials with 400.
            400 if rpc == Rpc::Login => ApiErrorKind::Auth,
            _ => classify_message(&one_line(message)),
        };
        Self::new(kind, rpc, Answer::Status(status), message)
    }

    /// A `{"result": {...}}` trailer at the end of a stream (code 0 read as 400).
    pub fn from_stream_result(rpc: Rpc, code: u16, message: &str) -> Self {
        let code = if code == 0 { 400 } else { code };
        ApiError {
            answer: Answer::Trailer(code),
            ..Self::from_status(rpc, code, message)
        }
    }

    /// A transport failure (no usable response).
    pub fn transport(rpc: Rpc, message: impl Into<String>) -> Self {
        Self::new(ApiErrorKind::Transport, rpc, Answer::None, &message.into())
    }

    /// A redirect answer (never followed). Names the status and the target's host and port only:
    /// a `Location` query can carry anything.
    pub fn redirect(rpc: Rpc, status: u16, target: Option<&str>) -> Self {
        let target = target.unwrap_or("an unreadable location");
        let message = format!(
            "redirect to {target} refused (redirects are never followed, so that no \
             credentials go to another address; set edge_connect.url to the address that \
             answers)"
        );
        let answer = Answer::Status(status);
        Self::new(ApiErrorKind::Redirect, rpc, answer, &message)
    }

    /// A host that cannot be reached (refused, no route, name not resolved), after retrying
    /// for `tried` until `bound` (what ended the retries, e.g. `edge_connect.connect_retry_secs`);
    /// `None`: one attempt.
    pub fn host_unreachable(
        rpc: Rpc,
        host: &str,
        detail: &str,
        tried: Option<(std::time::Duration, &str)>,
    ) -> Self {
        let tried = tried.map_or_else(String::new, |(t, bound)| {
            format!(" (tried for {} s; {bound})", t.as_secs())
        });
        let message = format!("cannot connect to {host}: {detail}{tried}");
        Self::new(ApiErrorKind::Unreachable, rpc, Answer::None, &message)
    }

    /// An answer we could not parse.
    pub fn protocol(rpc: Rpc, message: impl Into<String>) -> Self {
        Self::new(ApiErrorKind::Protocol, rpc, Answer::None, &message.into())
    }

    /// Which object a "not found" names (`Zone key {...} not found`, `Specified Cloudlet not
    /// found`, `Region "X" not found`); `None` for other errors.
    pub fn missing(&self) -> Option<Subject> {
        if self.kind != ApiErrorKind::NotFound {
            return None;
        }
        let m = one_line(&self.message).to_ascii_lowercase();
        [
            ("zone key", Subject::Zone),
            ("cloudlet key", Subject::Cloudlet),
            ("specified cloudlet", Subject::Cloudlet),
            ("flavor key", Subject::Flavor),
            ("region", Subject::Region),
        ]
        .into_iter()
        .find_map(|(prefix, subject)| m.starts_with(prefix).then_some(subject))
    }

    /// `Zone not specified`: a Gen3 controller was asked for an AppInst without a zone (it drops
    /// a cloudlet key it does not know in that place).
    pub fn zone_not_specified(&self) -> bool {
        self.kind == ApiErrorKind::Rejected
            && one_line(&self.message).eq_ignore_ascii_case("zone not specified")
    }

    /// What a CreateAppInst that the controller accepted and the site failed to make says about
    /// the start (`None` for any other error).
    pub fn not_started(&self) -> Option<crate::appinst_start::NotStarted> {
        let made = matches!(self.answer, Answer::Trailer(_))
            && matches!(self.kind, ApiErrorKind::Rejected | ApiErrorKind::Server);
        made.then(|| crate::appinst_start::not_started(&self.message))?
    }

    /// `AppInst busy, already under deletion`: another client is deleting it; wait until gone.
    pub fn already_being_deleted(&self) -> bool {
        self.kind == ApiErrorKind::Busy
            && self
                .message
                .to_ascii_lowercase()
                .contains("already under deletion")
    }

    /// True for errors worth retrying on an idempotent call. An unreachable host is not: the
    /// client has already retried it for its bound.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            ApiErrorKind::Transport | ApiErrorKind::RateLimited | ApiErrorKind::Server
        )
    }
}

/// The failures of a call retried within a deadline ([`retry`](crate::deadline::retry)): the
/// pause before each next attempt, or the error that ends them. A transient failure (transport,
/// 429, 5xx) is tried again after a [`backoff`] while the deadline leaves room for the pause; any
/// other ends it. An attempt the deadline cut off after an earlier failure ends with that
/// earlier failure: it says what went wrong, while the cut says only that time ran out, and
/// whether the last attempt is cut depends on how fast the machine was (docs/reliability.md,
/// the first row of its table).
#[derive(Debug)]
pub struct Retries {
    deadline: Deadline,
    earlier: Option<ApiError>,
}

impl Retries {
    /// Retries that end by `deadline`.
    pub fn within(deadline: Deadline) -> Self {
        Retries {
            deadline,
            earlier: None,
        }
    }

    /// The pause before attempt `attempts + 1` after `failure` (told to `tell` first), or the
    /// error to end with.
    pub fn after(
        &mut self,
        failure: ApiError,
        attempts: u32,
        tell: impl FnOnce(&ApiError, Duration),
    ) -> Result<Duration, ApiError> {
        // Only a failure that says nothing final gives way to the earlier one: an answer that
        // came as the deadline passed (a 400, a 404) is what the call ends with.
        if self.deadline.expired() && failure.is_transient() {
            return Err(self.earlier.take().unwrap_or(failure));
        }
        let pause = backoff(attempts);
        if !failure.is_transient() || !self.deadline.has_room_for(pause) {
            return Err(failure);
        }
        tell(&failure, pause);
        self.earlier = Some(failure);
        Ok(pause)
    }
}

fn classify_message(message: &str) -> ApiErrorKind {
    let m = message.to_ascii_lowercase();
    if m.ends_with(" already exists")
        || m.contains("already exists") && m.starts_with("appinst key")
    {
        ApiErrorKind::AlreadyExists
    } else if m.contains("no resources available")
        || m.contains("no available edge sites")
        || m.contains("not enough resources")
        || m.contains("under maintenance")
        || m.contains("cloudlet") && m.contains("not ready")
    {
        ApiErrorKind::NoCapacity
    } else if m.ends_with(" not found") || m.starts_with("specified cloudlet not found") {
        ApiErrorKind::NotFound
    } else if m.contains("busy, cannot be deleted")
        || m.contains("busy, already under deletion")
        || m.contains("is being deleted")
        || m.starts_with("application in use by static appinst")
    {
        ApiErrorKind::Busy
    } else {
        ApiErrorKind::Rejected
    }
}

/// One line to classify a message by: control characters become spaces, runs of spaces one.
/// Only for reading the text; what is kept and shown is the message as it came.
fn one_line(s: &str) -> String {
    let words: Vec<&str> = s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    words.join(" ")
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Edge Connect {}", self.rpc)?;
        if let Answer::Status(status) = self.answer {
            write!(f, " (HTTP {status})")?;
        }
        write!(f, ": {}", self.message)?;
        match self.kind {
            ApiErrorKind::Auth if self.answer != Answer::Status(511) => f.write_str(
                " (check credentials_file or EDP_EDGE_CONNECT_USERNAME/EDP_EDGE_CONNECT_PASSWORD)",
            ),
            ApiErrorKind::Forbidden => {
                f.write_str(" (the user is not permitted in edge_connect.organization)")
            }
            _ => Ok(()),
        }
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_the_deadline_cut_off_ends_with_the_failure_before_it() {
        let mut retries = Retries::within(Deadline::after(Duration::from_secs(60)));
        let server = ApiError::from_status(Rpc::ShowApp, 500, "Internal error reading apps");
        let mut told = 0;
        assert!(retries.after(server, 1, |_, _| told += 1).is_ok());
        assert_eq!(told, 1);
        // The next attempt runs into the deadline.
        retries.deadline = Deadline::after(Duration::ZERO);
        let cut = ApiError::transport(Rpc::ShowApp, "the command's deadline was reached");
        let end = retries.after(cut, 2, |_, _| told += 1).unwrap_err();
        assert_eq!(end.message, "Internal error reading apps");
        assert_eq!(told, 1);
        // Without an earlier failure the cut is what there is to say.
        let mut first = Retries::within(Deadline::after(Duration::ZERO));
        let cut = ApiError::transport(Rpc::ShowApp, "the command's deadline was reached");
        let end = first.after(cut, 1, |_, _| {}).unwrap_err();
        assert_eq!(end.message, "the command's deadline was reached");
        // A final answer that came as the deadline passed is the call's end, not the earlier
        // failure.
        let mut late = Retries::within(Deadline::after(Duration::from_secs(60)));
        let server = ApiError::from_status(Rpc::ShowApp, 503, "overloaded");
        assert!(late.after(server, 1, |_, _| {}).is_ok());
        late.deadline = Deadline::after(Duration::ZERO);
        let gone = ApiError::from_status(Rpc::ShowApp, 400, "App key not found");
        let end = late.after(gone, 2, |_, _| {}).unwrap_err();
        assert_eq!(end.message, "App key not found");
        // A final failure is never retried.
        let mut final_ = Retries::within(Deadline::after(Duration::from_secs(60)));
        let refused = ApiError::from_status(Rpc::ShowApp, 400, "bad request");
        assert!(final_.after(refused, 1, |_, _| {}).is_err());
    }

    #[test]
    fn classifies_the_masters_400_messages() {
        let k = |m: &str| ApiError::from_status(Rpc::ShowApp, 400, m).kind;
        assert_eq!(
            k(r#"App key {"organization":"o","name":"n","version":"1"} already exists"#),
            ApiErrorKind::AlreadyExists
        );
        assert_eq!(
            k(r#"AppInst key {"name":"n","organization":"o"} not found"#),
            ApiErrorKind::NotFound
        );
        assert_eq!(k("AppInst busy, cannot be deleted"), ApiErrorKind::Busy);
        assert_eq!(
            k(r#"Application in use by static AppInst {"name":"n","organization":"o"}"#),
            ApiErrorKind::Busy
        );
        assert_eq!(
            k("No resources available for deployment"),
            ApiErrorKind::NoCapacity
        );
        assert_eq!(k("Invalid app name"), ApiErrorKind::Rejected);
        assert_eq!(
            ApiError::from_status(Rpc::Login, 400, "Invalid username or password").kind,
            ApiErrorKind::Auth
        );
        assert_eq!(
            ApiError::from_status(Rpc::ShowApp, 503, "x").kind,
            ApiErrorKind::Server
        );
    }

    #[test]
    fn names_what_is_missing() {
        let missing = |m: &str| ApiError::from_status(Rpc::ShowApp, 400, m).missing();
        assert_eq!(
            missing(r#"Zone key {"organization":"o","name":"z"} not found"#),
            Some(Subject::Zone)
        );
        assert_eq!(
            missing("Specified Cloudlet not found"),
            Some(Subject::Cloudlet)
        );
        assert_eq!(
            missing(r#"Flavor key {"name":"f"} not found"#),
            Some(Subject::Flavor)
        );
        assert_eq!(missing(r#"Region "XX" not found"#), Some(Subject::Region));
        assert_eq!(missing("AppInst busy, cannot be deleted"), None);
        assert!(
            ApiError::from_status(Rpc::ShowApp, 400, "Zone not specified").zone_not_specified()
        );
    }

    #[test]
    fn two_factor_login_is_final_and_says_so() {
        let e = ApiError::from_status(Rpc::Login, 511, "Missing OTP");
        assert_eq!(e.kind, ApiErrorKind::Auth);
        assert!(!e.is_transient());
        assert!(
            e.to_string().contains("the Edge Connect user has two-factor authentication; use a user or API key without it"),
            "{e}"
        );
        // A 511 elsewhere (a captive portal in front of a Show) stays a server error.
        assert_eq!(
            ApiError::from_status(Rpc::ShowApp, 511, "x").kind,
            ApiErrorKind::Server
        );
    }

    #[test]
    fn redirects_and_unreachable_hosts_are_final() {
        let e = ApiError::redirect(Rpc::Login, 307, Some("evil.example:8443"));
        assert_eq!(e.kind, ApiErrorKind::Redirect);
        assert!(!e.is_transient());
        assert!(e.to_string().contains("HTTP 307"), "{e}");
        assert!(e.to_string().contains("evil.example:8443"), "{e}");
        let e = ApiError::host_unreachable(
            Rpc::ShowApp,
            "h:1",
            "connection refused",
            Some((
                std::time::Duration::from_secs(20),
                "edge_connect.connect_retry_secs",
            )),
        );
        assert!(!e.is_transient());
        assert!(e.to_string().contains("cannot connect to h:1"), "{e}");
    }

    #[test]
    fn server_texts_are_kept_as_they_came_for_the_writers_to_mask_first() {
        let text = "bad password \"a\tb  c\u{a0}d\n\"\r\n";
        let e = ApiError::from_status(Rpc::Login, 400, text);
        assert_eq!(e.message, text);
        assert_eq!(e.kind, ApiErrorKind::Auth);
        let e = ApiError::from_stream_result(Rpc::ShowApp, 400, &"word\n".repeat(1000));
        assert_eq!(e.answer, Answer::Trailer(400));
        assert_eq!(e.message, "word\n".repeat(1000), "whole");
        // Read as one line all the same.
        let e = ApiError::from_status(Rpc::ShowApp, 400, "  Zone key\n{} not found\n");
        assert_eq!(e.missing(), Some(Subject::Zone));
    }

    #[test]
    fn auth_errors_say_what_to_check() {
        let e = ApiError::from_status(Rpc::Login, 400, "Invalid username or password");
        assert!(e.to_string().contains("check credentials_file"), "{e}");
    }
}
