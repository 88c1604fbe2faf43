//! Helpers shared by the simulator tests: a small HTTP client that speaks the MC protocol
//! (login, POST with bearer token, NDJSON reading) and request bodies.

use std::time::Duration;

use edge_connect_sim::{spawn, ImageFault, ImageRule, SimConfig, SimHandle};
use serde_json::{json, Value};

/// The organization of the default configuration.
pub const ORG: &str = "edp-developer-framework";
/// The default user and password.
pub const USER: &str = "garm";
pub const PASSWORD: &str = "garm-password";

/// A started simulator with the default configuration.
pub fn sim() -> SimHandle {
    spawn(SimConfig::default()).expect("simulator starts")
}

/// A default simulator and a client logged in to it.
pub async fn started() -> (SimHandle, Client) {
    let sim = sim();
    let c = Client::login(&sim.url()).await;
    (sim, c)
}

/// A started simulator with a modified configuration.
pub fn sim_with(f: impl FnOnce(&mut SimConfig)) -> SimHandle {
    let mut config = SimConfig::default();
    f(&mut config);
    spawn(config).expect("simulator starts")
}

/// A simulator whose creates of `held_app` Apps stay `Creating` for an hour: their image
/// cannot be pulled, and the CRM waits for the pod (a create of any other image finishes).
pub fn sim_holding_creates() -> SimHandle {
    sim_with(|c| {
        c.images = vec![ImageRule::new(HELD_IMAGE, ImageFault::CannotPull)];
        c.crm_max_wait = Duration::from_secs(3600);
    })
}

/// The image of [`held_app`].
pub const HELD_IMAGE: &str = "registry.example.com/held:1";

/// A kubernetes App whose creates [`sim_holding_creates`] holds.
pub fn held_app(name: &str) -> Value {
    let mut a = app(ORG, name);
    a["image_path"] = json!(HELD_IMAGE);
    a
}

/// One HTTP reply, fully read.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Reply {
    async fn read(resp: reqwest::Response) -> Reply {
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = resp.text().await.expect("body reads");
        Reply {
            status,
            content_type,
            body,
        }
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// `message` of an error body.
    pub fn message(&self) -> String {
        self.json()["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no message in {}", self.body))
            .to_string()
    }

    /// NDJSON objects of a stream body (every line must end with a newline).
    pub fn lines(&self) -> Vec<Value> {
        if self.body.is_empty() {
            return Vec::new();
        }
        assert!(
            self.body.ends_with('\n'),
            "stream lines end with \\n: {:?}",
            self.body
        );
        self.body
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
            .collect()
    }

    /// The `data` objects of a stream.
    pub fn data(&self) -> Vec<Value> {
        self.lines()
            .into_iter()
            .map(|l| l["data"].clone())
            .collect()
    }

    /// The progress messages of an operation stream (data lines only).
    pub fn messages(&self) -> Vec<String> {
        self.lines()
            .iter()
            .filter_map(|l| l["data"]["message"].as_str().map(str::to_string))
            .collect()
    }

    /// The progress messages with each pod name (`pod <name>:`, random per instance) written
    /// as `POD`.
    pub fn messages_without_pod_names(&self) -> Vec<String> {
        self.messages()
            .iter()
            .map(|m| without_pod_name(m))
            .collect()
    }

    /// The `result` trailer of a stream, if any.
    pub fn result(&self) -> Option<Value> {
        self.lines()
            .into_iter()
            .find_map(|l| l.get("result").cloned())
    }

    /// Asserts the Gen3 refusal of a full site: the placement's lines, then the error as the
    /// stream's result.
    #[track_caller]
    pub fn assert_site_full(&self) {
        assert_eq!(self.status, 200, "{}", self.body);
        assert_eq!(
            self.messages(),
            [
                "Found 1 potential cloudlets for deployment",
                "Found 0 potential clusters for deployment, some skipped because not enough resources",
                "No existing cluster available",
            ]
        );
        assert_eq!(
            self.result(),
            Some(json!({"message": "No resources available for deployment", "code": 400}))
        );
    }

    /// Asserts an error reply with exactly this status and message.
    #[track_caller]
    pub fn assert_error(&self, status: u16, message: &str) {
        assert_eq!(self.status, status, "status of {}", self.body);
        assert_eq!(self.message(), message);
        assert_eq!(
            self.json().as_object().map(|m| m.len()),
            Some(1),
            "only a message: {}",
            self.body
        );
    }
}

/// A status message with its pod name written as `POD`.
pub fn without_pod_name(message: &str) -> String {
    match message.split_once("pod ") {
        Some((before, rest)) => match rest.split_once(':') {
            Some((_, after)) => format!("{before}pod POD:{after}"),
            None => message.to_string(),
        },
        None => message.to_string(),
    }
}

/// A client for one simulator, logged in or not.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub token: Option<String>,
}

impl Client {
    /// A client without a token.
    pub fn anonymous(base: &str) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .expect("client"),
            base: base.to_string(),
            token: None,
        }
    }

    /// A client logged in as the default user.
    pub async fn login(base: &str) -> Client {
        Client::login_as(base, USER, PASSWORD).await
    }

    /// A client logged in as this user.
    pub async fn login_as(base: &str, user: &str, password: &str) -> Client {
        let mut c = Client::anonymous(base);
        let reply = c
            .raw_json(
                "/api/v1/login",
                &json!({"username": user, "password": password}),
            )
            .await;
        assert_eq!(reply.status, 200, "login: {}", reply.body);
        c.token = Some(reply.json()["token"].as_str().expect("token").to_string());
        c
    }

    /// POSTs a JSON body to a path (no token).
    pub async fn raw_json(&self, path: &str, body: &Value) -> Reply {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request sent");
        Reply::read(resp).await
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        req
    }

    /// POSTs raw bytes to `/api/v1/auth/ctrl/<rpc>` with the token.
    pub async fn post_raw(&self, rpc: &str, body: &str) -> Reply {
        let resp = self
            .request(reqwest::Method::POST, &format!("/api/v1/auth/ctrl/{rpc}"))
            .body(body.to_string())
            .send()
            .await
            .expect("request sent");
        Reply::read(resp).await
    }

    /// POSTs JSON to `/api/v1/auth/ctrl/<rpc>` with the token.
    pub async fn post(&self, rpc: &str, body: Value) -> Reply {
        self.post_raw(rpc, &body.to_string()).await
    }

    /// Sends the request and returns the live response (for reading streams line by line).
    pub async fn open(&self, rpc: &str, body: Value) -> reqwest::Response {
        self.request(reqwest::Method::POST, &format!("/api/v1/auth/ctrl/{rpc}"))
            .body(body.to_string())
            .send()
            .await
            .expect("request sent")
    }

    /// Any method on any path, with the token if there is one.
    pub async fn send(&self, method: reqwest::Method, path: &str, body: &str) -> Reply {
        let resp = self
            .request(method, path)
            .body(body.to_string())
            .send()
            .await
            .expect("request sent");
        Reply::read(resp).await
    }

    /// POSTs JSON to a `/__sim/` endpoint.
    pub async fn control(&self, endpoint: &str, body: Value) -> Reply {
        self.raw_json(&format!("/__sim/{endpoint}"), &body).await
    }

    /// GETs a `/__sim/` endpoint.
    pub async fn control_get(&self, endpoint: &str) -> Reply {
        let resp = self
            .http
            .get(format!("{}/__sim/{endpoint}", self.base))
            .send()
            .await
            .expect("request sent");
        Reply::read(resp).await
    }

    /// ShowAppInst filtered by key name; the single object or `None`.
    pub async fn show_inst(&self, name: &str) -> Option<Value> {
        let reply = self
            .post(
                "ShowAppInst",
                json!({"region": "EU", "appinst": {"key": {"name": name}}}),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let data = reply.data();
        assert!(data.len() <= 1, "{data:?}");
        data.into_iter().next()
    }

    /// State of the named instance as ShowAppInst reports it.
    pub async fn state_of(&self, name: &str) -> Option<String> {
        self.show_inst(name)
            .await
            .map(|i| i["state"].as_str().unwrap_or_default().to_string())
    }
}

/// Polls ShowAppInst until the named instance is in state `want` (`None`: gone) and returns
/// the distinct states seen on the way. No time limit: the state is what the test waits for.
pub async fn states_until(c: &Client, name: &str, want: Option<&str>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    loop {
        let state = c.state_of(name).await;
        if state.as_deref() == want {
            return seen;
        }
        if let Some(state) = state {
            if seen.last() != Some(&state) {
                seen.push(state);
            }
        }
        tokio::task::yield_now().await;
    }
}

/// Reads an NDJSON response one line at a time.
pub struct LineReader {
    resp: reqwest::Response,
    buf: Vec<u8>,
}

impl LineReader {
    pub fn new(resp: reqwest::Response) -> Self {
        LineReader {
            resp,
            buf: Vec::new(),
        }
    }

    /// The next complete line as JSON, `Ok(None)` at a clean end, `Err` on a transport error.
    pub async fn next(&mut self) -> Result<Option<Value>, reqwest::Error> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Ok(Some(serde_json::from_slice(&line).expect("JSON line")));
            }
            match self.resp.chunk().await? {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None => {
                    assert!(self.buf.is_empty(), "unterminated line {:?}", self.buf);
                    return Ok(None);
                }
            }
        }
    }

    /// The next progress message.
    pub async fn next_message(&mut self) -> Option<String> {
        let line = self.next().await.expect("stream readable")?;
        Some(
            line["data"]["message"]
                .as_str()
                .expect("a message line")
                .to_string(),
        )
    }
}

/// A minimal kubernetes App in `org`.
pub fn app(org: &str, name: &str) -> Value {
    json!({
        "key": {"organization": org, "name": name, "version": "1"},
        "image_type": "Docker",
        "image_path": "ghcr.io/actions/actions-runner:2.321.0",
        "deployment": "kubernetes",
        "default_flavor": {"name": "EU.small"}
    })
}

/// `{"region":"EU","app":<app>}`.
pub fn app_req(app: Value) -> Value {
    json!({"region": "EU", "app": app})
}

/// A Gen3 AppInst of App `name` in the default zone.
pub fn inst3(org: &str, name: &str) -> Value {
    json!({
        "key": {"name": name, "organization": org},
        "app_key": {"organization": org, "name": name, "version": "1"},
        "zone_key": {"organization": "TelekomOP", "name": "Munich"}
    })
}

/// A Gen2 AppInst of App `name` on the default cloudlet.
pub fn inst2(org: &str, name: &str) -> Value {
    json!({
        "key": {"name": name, "organization": org,
                "cloudlet_key": {"organization": "TelekomOP", "name": "Munich"}},
        "app_key": {"organization": org, "name": name, "version": "1"}
    })
}

/// A request naming only the key of Gen3 AppInst `name` in the default org.
pub fn inst_key_req(name: &str) -> Value {
    inst_req(json!({"key": {"name": name, "organization": ORG}}))
}

/// `{"region":"EU","appinst":<inst>}`.
pub fn inst_req(inst: Value) -> Value {
    json!({"region": "EU", "appinst": inst})
}

/// Creates App `name` in the default org and checks it worked.
pub async fn create_app(c: &Client, name: &str) {
    let reply = c.post("CreateApp", app_req(app(ORG, name))).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
}

/// Creates App + Gen3 AppInst `name` and waits for the stream to end successfully.
pub async fn create_app_and_inst(c: &Client, name: &str) {
    create_app(c, name).await;
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, name))).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.messages().last().map(String::as_str),
        Some("Created AppInst successfully"),
        "{}",
        reply.body
    );
}

/// The `(method, rpc, status)` rows of the request log, for compact assertions.
pub fn log_rows(sim: &SimHandle) -> Vec<(String, String, u16)> {
    sim.request_log()
        .into_iter()
        .map(|e| (e.method, e.rpc, e.status))
        .collect()
}
