//! Process-level tests of `examples/runner-image/entrypoint.sh`, without Docker:
//! the real script runs under bash against a fake GARM on 127.0.0.1 and stub
//! runner programs, and the tests assert the exact HTTP calls in order, the
//! exact runner command lines, and that no secret reaches the job or the log.
//!
//! The runner stubs speak the exact command lines of the real programs (see
//! `RunnerCli` in the harness, with the upstream source of every flag list).
//!
//! Needs bash, curl, jq, coreutils and tar (and shellcheck for the lint test).
//! Where one is missing a test prints `skipped: <test>: <tool> is not
//! installed` and passes, except under `CI=true`, where it fails.

use crate::runner_harness::*;
use sha2::Digest as _;

const STATUS: &str = "/api/v1/callbacks/status";
const SYSTEM_INFO: &str = "/api/v1/callbacks/system-info";

fn installing() -> String {
    format!("POST {STATUS} status=installing")
}

fn system_info(agent_id: u64) -> String {
    format!("POST {SYSTEM_INFO} os_name=\"Test Linux\" os_version=\"42.1\" agent_id={agent_id}")
}

fn idle(agent_id: u64) -> String {
    format!("POST {STATUS} status=idle agent_id={agent_id}")
}

fn failed() -> String {
    format!("POST {STATUS} status=failed")
}

fn get(path: &str) -> String {
    format!("GET /api/v1/metadata{path}")
}

/// What every entrypoint run needs on the machine (tar only for the GitHub
/// download test, which checks for it itself).
const ENTRYPOINT_TOOLS: &[&str] = &["bash", "curl", "jq", "timeout"];

/// The contract's labels as the entrypoint registers them with a Forgejo or
/// Gitea runner: every label without a scheme as NAME:host, GARM's own
/// included; `edge:host` already has the scheme and stays.
fn host_labels() -> String {
    format!("ubuntu-latest:host,edge:host,runner-controller-id={CONTROLLER_ID}:host,runner-pool-id={POOL_ID}:host")
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every status callback carries a non-empty message without secrets.
fn assert_messages_clean(garm: &FakeGarm) {
    for call in garm.calls().iter().filter(|c| c.path == STATUS) {
        let message = call.message();
        assert!(!message.is_empty(), "status callback without a message");
        for secret in [INSTANCE_TOKEN, REGISTRATION_TOKEN, DOWNLOAD_TOKEN] {
            assert!(
                !message.contains(secret),
                "secret in status message: {message}"
            );
        }
    }
}

fn last_status_message(garm: &FakeGarm) -> String {
    garm.calls()
        .iter()
        .rev()
        .find(|c| c.path == STATUS)
        .map(Call::message)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_jit_fetches_credentials_reports_idle_and_runs_one_job() {
    if !tools_present(
        "github_jit_fetches_credentials_reports_idle_and_runs_one_job",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    // GARM hands out the callback URL both with and without /status.
    for callback_with_status in [false, true] {
        let garm = FakeGarm::start(Behaviour {
            jit: true,
            ..Behaviour::default()
        })
        .await;
        let sandbox = Sandbox::new();
        sandbox.install_github_stubs();
        let env = sandbox.contract_env(Forge::GitHub, &garm, true, callback_with_status);

        let run = sandbox.run_entrypoint(&env).await;
        run.assert_success();
        run.assert_no_secrets_in_output();

        assert_eq!(
            garm.summaries(),
            vec![
                installing(),
                get("/credentials/runner"),
                get("/credentials/credentials"),
                get("/credentials/credentials_rsaparams"),
                system_info(GITHUB_AGENT_ID),
                idle(GITHUB_AGENT_ID),
            ],
            "callback URL with /status: {callback_with_status}"
        );
        assert_messages_clean(&garm);

        // The credential files land byte for byte in the runner directory.
        for (file, content) in [
            (".runner", JIT_RUNNER_FILE),
            (".credentials", JIT_CREDENTIALS_FILE),
            (".credentials_rsaparams", JIT_RSA_FILE),
        ] {
            assert_eq!(
                std::fs::read_to_string(sandbox.home.join(file)).unwrap(),
                content,
                "{file}"
            );
        }
        // JIT needs no registration: config.sh never runs.
        assert_eq!(sandbox.argv("config"), None);
        assert_eq!(sandbox.argv("run"), Some(vec![]));
        assert_eq!(
            sandbox.recorded("run.cwd").unwrap().trim_end(),
            sandbox.home.display().to_string()
        );
        assert_job_env_clean(&sandbox.recorded_env("run"));
        // The JIT config has its own work folder: RUNNER_WORKDIR is unused
        // and must not be created.
        assert!(!sandbox.work.exists(), "RUNNER_WORKDIR created under JIT");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_registration_token_configures_ephemeral_runner_in_group() {
    if !tools_present(
        "github_registration_token_configures_ephemeral_runner_in_group",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, false, false);
    env.insert("RUNNER_GROUP".into(), "edge runners".into());

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();

    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            get("/runner-registration-token"),
            system_info(GITHUB_AGENT_ID),
            idle(GITHUB_AGENT_ID),
        ]
    );
    assert_messages_clean(&garm);
    let work = sandbox.work.display().to_string();
    let labels =
        format!("edge,linux,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}");
    assert_eq!(
        sandbox.argv("config").unwrap(),
        strings(&[
            "--unattended",
            "--url",
            "https://github.com/example-org",
            "--token",
            REGISTRATION_TOKEN,
            "--name",
            RUNNER_NAME,
            "--labels",
            &labels,
            "--work",
            &work,
            "--ephemeral",
            "--disableupdate",
            "--no-default-labels",
            "--runnergroup",
            "edge runners",
        ])
    );
    assert!(sandbox.work.is_dir(), "RUNNER_WORKDIR is created");
    assert_eq!(sandbox.argv("run"), Some(vec![]));
    assert_job_env_clean(&sandbox.recorded_env("run"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_registration_without_group_omits_runnergroup_and_retries_config() {
    if !tools_present(
        "github_registration_without_group_omits_runnergroup_and_retries_config",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    // The forge is briefly unreachable: config.sh fails once.
    sandbox.set_config_failures(1);
    let env = sandbox.contract_env(Forge::GitHub, &garm, false, true);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();

    // The single-use registration token is fetched once, not per attempt.
    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            get("/runner-registration-token"),
            system_info(GITHUB_AGENT_ID),
            idle(GITHUB_AGENT_ID),
        ]
    );
    assert_eq!(sandbox.recorded("config.count").unwrap().trim(), "2");
    let argv = sandbox.argv("config").unwrap();
    assert!(!argv.iter().any(|a| a == "--runnergroup"), "{argv:?}");
    assert_eq!(argv.last().map(String::as_str), Some("--no-default-labels"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_runner_is_downloaded_and_verified_when_not_bundled() {
    if !tools_present(
        "github_runner_is_downloaded_and_verified_when_not_bundled",
        &["bash", "curl", "jq", "timeout", "tar"],
    ) {
        return;
    }
    let sandbox = Sandbox::new();
    // Pack the stubs as the runner release tarball; RUNNER_HOME stays empty.
    let staging = sandbox.root.join("release");
    std::fs::create_dir_all(&staging).unwrap();
    for (name, text) in sandbox.github_stub_scripts() {
        write_executable(&staging.join(name), &text);
    }
    let tarball = sandbox.root.join("actions-runner.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&staging)
        .args(["config.sh", "run.sh"])
        .status()
        .expect("tar");
    assert!(status.success());
    let body = std::fs::read(&tarball).unwrap();
    let sha = format!("{:x}", sha2::Sha256::digest(&body));
    let name = "actions-runner-linux-x64-2.336.0.tar.gz";
    let garm = FakeGarm::start(Behaviour {
        jit: true,
        download: Some(Download {
            name: name.into(),
            body,
        }),
        ..Behaviour::default()
    })
    .await;
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, true, false);
    env.insert("RUNNER_DOWNLOAD_URL".into(), garm.download_url(name));
    env.insert("RUNNER_DOWNLOAD_FILENAME".into(), name.into());
    env.insert("RUNNER_DOWNLOAD_SHA256".into(), sha.to_uppercase());
    env.insert("RUNNER_DOWNLOAD_TOKEN".into(), DOWNLOAD_TOKEN.into());

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();

    // The download uses its own token, never the GARM instance token.
    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            format!("GET /downloads/{name} auth=Download"),
            format!("GET /blobs/{name} auth=Download"),
            get("/credentials/runner"),
            get("/credentials/credentials"),
            get("/credentials/credentials_rsaparams"),
            system_info(GITHUB_AGENT_ID),
            idle(GITHUB_AGENT_ID),
        ]
    );
    assert!(sandbox.home.join("config.sh").is_file());
    assert_eq!(sandbox.argv("run"), Some(vec![]));
    assert_job_env_clean(&sandbox.recorded_env("run"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_download_with_wrong_checksum_reports_failed() {
    if !tools_present(
        "github_download_with_wrong_checksum_reports_failed",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let name = "actions-runner-linux-x64-2.336.0.tar.gz";
    let garm = FakeGarm::start(Behaviour {
        download: Some(Download {
            name: name.into(),
            body: b"not the runner you are looking for".to_vec(),
        }),
        ..Behaviour::default()
    })
    .await;
    let sandbox = Sandbox::new();
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, false, false);
    env.insert("RUNNER_DOWNLOAD_URL".into(), garm.download_url(name));
    env.insert("RUNNER_DOWNLOAD_FILENAME".into(), name.into());
    env.insert("RUNNER_DOWNLOAD_SHA256".into(), "0".repeat(64));

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    run.assert_no_secrets_in_output();

    // Without a token the download carries no Authorization header at all.
    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            format!("GET /downloads/{name} auth=Missing"),
            format!("GET /blobs/{name} auth=Missing"),
            failed(),
        ]
    );
    assert_messages_clean(&garm);
    assert!(
        last_status_message(&garm).contains("RUNNER_DOWNLOAD_SHA256"),
        "{}",
        last_status_message(&garm)
    );
    // Nothing was unpacked or run, and the registration token was not spent.
    assert!(!sandbox.home.join("config.sh").exists());
    assert_eq!(sandbox.argv("run"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn act_runner_registers_host_labels_and_runs_daemon_once() {
    if !tools_present(
        "act_runner_registers_host_labels_and_runs_daemon_once",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    let env = sandbox.contract_env(Forge::Gitea, &garm, false, false);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();

    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            get("/runner-registration-token"),
            system_info(GITEA_AGENT_ID),
            idle(GITEA_AGENT_ID),
        ]
    );
    assert_messages_clean(&garm);
    // act_runner 0.2.13 has no token file option: the token is an argument.
    assert_eq!(
        sandbox.argv("register").unwrap(),
        strings(&[
            "register",
            "--no-interactive",
            "--ephemeral",
            "--instance",
            GITEA_URL,
            "--token",
            REGISTRATION_TOKEN,
            "--name",
            RUNNER_NAME,
            "--labels",
            &host_labels(),
        ])
    );
    assert_eq!(
        sandbox.argv("daemon").unwrap(),
        strings(&["daemon", "--once"])
    );
    // Probed, registered, run: nothing else.
    let runs = sandbox.runner_runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].starts_with("register "), "{runs:?}");
    assert_eq!(runs[1], "daemon --once");
    let home = sandbox.home.display().to_string();
    assert_eq!(sandbox.recorded("register.cwd").unwrap().trim_end(), home);
    assert_eq!(sandbox.recorded("daemon.cwd").unwrap().trim_end(), home);
    assert_job_env_clean(&sandbox.recorded_env("daemon"));
    assert!(!sandbox.work.exists(), "RUNNER_WORKDIR is not used here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgejo_runner_is_preferred_and_callback_with_status_works() {
    if !tools_present(
        "forgejo_runner_is_preferred_and_callback_with_status_works",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    sandbox.install_runner_stub(RunnerCli::Forgejo13);
    let env = sandbox.contract_env(Forge::Forgejo, &garm, false, true);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();

    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            get("/runner-registration-token"),
            system_info(GITEA_AGENT_ID),
            idle(GITEA_AGENT_ID),
        ]
    );
    let forgejo = sandbox.bin.join("forgejo-runner").display().to_string();
    assert_eq!(sandbox.recorded("register.program").unwrap(), forgejo);
    assert_eq!(sandbox.recorded("one-job.program").unwrap(), forgejo);
    assert_eq!(
        sandbox.argv("one-job").unwrap(),
        strings(&["one-job", "--wait"])
    );
    assert_eq!(sandbox.argv("daemon"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitea_runner_binary_is_downloaded_when_none_is_installed() {
    if !tools_present(
        "gitea_runner_binary_is_downloaded_when_none_is_installed",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let sandbox = Sandbox::new();
    let name = "gitea-runner-3.3.0-linux-amd64";
    let garm = FakeGarm::start(Behaviour {
        download: Some(Download {
            name: name.into(),
            body: sandbox
                .runner_stub_script(RunnerCli::GiteaRunner3)
                .into_bytes(),
        }),
        ..Behaviour::default()
    })
    .await;
    let mut env = sandbox.contract_env(Forge::Gitea, &garm, false, false);
    // Gitea tools come without a checksum.
    env.insert("RUNNER_DOWNLOAD_URL".into(), garm.download_url(name));
    env.insert("RUNNER_DOWNLOAD_FILENAME".into(), name.into());

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();

    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            format!("GET /downloads/{name} auth=Missing"),
            format!("GET /blobs/{name} auth=Missing"),
            get("/runner-registration-token"),
            system_info(GITEA_AGENT_ID),
            idle(GITEA_AGENT_ID),
        ]
    );
    let program = sandbox.home.join("bin").join(name).display().to_string();
    assert_eq!(sandbox.recorded("daemon.program").unwrap(), program);
    assert_eq!(
        sandbox.argv("daemon").unwrap(),
        strings(&["daemon", "--once"])
    );
    assert_job_env_clean(&sandbox.recorded_env("daemon"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_garm_needs_the_ca_bundle() {
    if !tools_present("https_garm_needs_the_ca_bundle", ENTRYPOINT_TOOLS) {
        return;
    }
    let pki = TestPki::generate();

    // Without GARM_CA_BUNDLE curl rejects the certificate: nothing reaches
    // GARM (so nothing can be reported) and the entrypoint fails.
    let garm = FakeGarm::start_https(
        Behaviour {
            jit: true,
            ..Behaviour::default()
        },
        &pki,
    )
    .await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    let env = sandbox.contract_env(Forge::GitHub, &garm, true, false);
    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    run.assert_no_secrets_in_output();
    assert_eq!(garm.summaries(), Vec::<String>::new());
    // A certificate failure is permanent: one attempt, no retries. The
    // server notices the aborted handshake asynchronously, so wait briefly.
    let rejections = || {
        garm.tls_rejections
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    for _ in 0..100 {
        if rejections() > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(rejections(), 1);
    assert_eq!(sandbox.argv("run"), None);

    // With it, the same bootstrap succeeds end to end over HTTPS.
    let garm = FakeGarm::start_https(
        Behaviour {
            jit: true,
            ..Behaviour::default()
        },
        &pki,
    )
    .await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    sandbox.install_update_ca_stub();
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, true, false);
    env.insert("GARM_CA_BUNDLE".into(), pki.ca_pem.clone());
    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();
    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            get("/credentials/runner"),
            get("/credentials/credentials"),
            get("/credentials/credentials_rsaparams"),
            system_info(GITHUB_AGENT_ID),
            idle(GITHUB_AGENT_ID),
        ]
    );

    // The runner and the job trust the bundle too.
    let job_env = sandbox.recorded_env("run");
    assert_job_env_clean(&job_env);
    let pem = pki.ca_pem.trim();
    let extra = std::fs::read_to_string(&job_env["NODE_EXTRA_CA_CERTS"]).unwrap();
    assert_eq!(extra.trim(), pem);
    for var in [
        "SSL_CERT_FILE",
        "CURL_CA_BUNDLE",
        "GIT_SSL_CAINFO",
        "REQUESTS_CA_BUNDLE",
    ] {
        let bundle = std::fs::read_to_string(&job_env[var]).unwrap();
        assert!(bundle.contains(pem), "{var} lacks the GARM CA");
    }
    // Best effort: added to the (writable, sandboxed) system store.
    let stored: Vec<_> = std::fs::read_dir(&sandbox.system_ca)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(stored.len(), 1, "one file per certificate");
    assert_eq!(stored[0].trim(), pem);
    assert_eq!(
        sandbox.recorded("update-ca-certificates").as_deref(),
        Some("ran\n")
    );

    // Docker env files cannot carry line breaks: a bundle written with
    // literal "\n" sequences works as well.
    let garm = FakeGarm::start_https(
        Behaviour {
            jit: true,
            ..Behaviour::default()
        },
        &pki,
    )
    .await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, true, false);
    env.insert(
        "GARM_CA_BUNDLE".into(),
        pki.ca_pem.trim().replace('\n', "\\n"),
    );
    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    assert_eq!(garm.calls().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_goes_through_the_proxy_unless_no_proxy_matches() {
    if !tools_present(
        "every_call_goes_through_the_proxy_unless_no_proxy_matches",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let proxy = RecordingProxy::start().await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    let mut env = sandbox.contract_env(Forge::Gitea, &garm, false, false);
    for var in ["HTTP_PROXY", "http_proxy"] {
        env.insert(var.into(), proxy.url.clone());
    }
    for var in ["NO_PROXY", "no_proxy"] {
        env.insert(
            var.into(),
            "gitea.example.test,.internal.example.test".into(),
        );
    }

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();

    let expected = vec![
        installing(),
        get("/runner-registration-token"),
        system_info(GITEA_AGENT_ID),
        idle(GITEA_AGENT_ID),
    ];
    assert_eq!(garm.summaries(), expected);
    let origin = &garm.base_url;
    assert_eq!(
        proxy.request_lines(),
        vec![
            format!("POST {origin}{STATUS} HTTP/1.1"),
            format!("GET {origin}/api/v1/metadata/runner-registration-token HTTP/1.1"),
            format!("POST {origin}{SYSTEM_INFO} HTTP/1.1"),
            format!("POST {origin}{STATUS} HTTP/1.1"),
        ]
    );
    // The runner keeps the proxy settings (it needs them to reach the forge).
    let job_env = sandbox.recorded_env("daemon");
    assert_eq!(job_env.get("http_proxy"), Some(&proxy.url));
    assert_eq!(job_env.get("HTTP_PROXY"), Some(&proxy.url));

    // NO_PROXY naming GARM's host bypasses the proxy.
    let garm = FakeGarm::start(Behaviour::default()).await;
    let proxy = RecordingProxy::start().await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    let mut env = sandbox.contract_env(Forge::Gitea, &garm, false, false);
    for var in ["HTTP_PROXY", "http_proxy"] {
        env.insert(var.into(), proxy.url.clone());
    }
    for var in ["NO_PROXY", "no_proxy"] {
        env.insert(var.into(), "127.0.0.1".into());
    }
    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    assert_eq!(garm.summaries(), expected);
    assert_eq!(proxy.request_lines(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upper_case_http_proxy_alone_is_honoured() {
    if !tools_present("upper_case_http_proxy_alone_is_honoured", ENTRYPOINT_TOOLS) {
        return;
    }
    // curl ignores upper-case HTTP_PROXY; the entrypoint copies it to http_proxy.
    let garm = FakeGarm::start(Behaviour {
        jit: true,
        ..Behaviour::default()
    })
    .await;
    let proxy = RecordingProxy::start().await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, true, false);
    env.insert("HTTP_PROXY".into(), proxy.url.clone());

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    assert_eq!(
        proxy.request_lines().len(),
        6,
        "{:?}",
        proxy.request_lines()
    );
    assert_eq!(garm.calls().len(), 6);
    assert_eq!(
        sandbox.recorded_env("run").get("http_proxy"),
        Some(&proxy.url)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_failure_is_retried_then_reported_as_failed() {
    if !tools_present(
        "metadata_failure_is_retried_then_reported_as_failed",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour {
        metadata_status: Some(500),
        ..Behaviour::default()
    })
    .await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    let env = sandbox.contract_env(Forge::GitHub, &garm, false, false);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    run.assert_no_secrets_in_output();

    // ENTRYPOINT_RETRIES=3 in the harness.
    let token = get("/runner-registration-token");
    assert_eq!(
        garm.summaries(),
        vec![installing(), token.clone(), token.clone(), token, failed()]
    );
    assert_messages_clean(&garm);
    let message = last_status_message(&garm);
    assert!(
        message.contains("registration token") && message.contains("HTTP 500"),
        "{message}"
    );
    assert_eq!(sandbox.argv("config"), None);
    assert_eq!(sandbox.argv("run"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_token_stops_at_once_without_retries() {
    if !tools_present(
        "rejected_token_stops_at_once_without_retries",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour {
        jit: true,
        ..Behaviour::default()
    })
    .await;
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, true, false);
    env.insert(
        "BEARER_TOKEN".into(),
        "token-of-an-earlier-create-attempt".into(),
    );

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    assert!(!run.stderr.contains("token-of-an-earlier-create-attempt"));

    // A 401 does not heal: one call, and no failure report GARM would reject too.
    assert_eq!(
        garm.summaries(),
        vec![format!("POST {STATUS} status=installing auth=Wrong")]
    );
    assert!(run.stderr.contains("HTTP 401"), "{}", run.stderr);
    assert_eq!(sandbox.argv("run"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_forge_type_is_reported_as_failed() {
    if !tools_present("unknown_forge_type_is_reported_as_failed", ENTRYPOINT_TOOLS) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    let mut env = sandbox.contract_env(Forge::GitHub, &garm, false, false);
    env.insert("FORGE_TYPE".into(), "gitlab".into());

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    assert_eq!(garm.summaries(), vec![installing(), failed()]);
    assert!(last_status_message(&garm).contains("FORGE_TYPE"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_bin_overrides_the_runner_found_on_path() {
    if !tools_present(
        "runner_bin_overrides_the_runner_found_on_path",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    let custom = sandbox.root.join("opt-runner");
    write_executable(
        &custom,
        &sandbox.runner_stub_script(RunnerCli::ActRunner0213),
    );
    let mut env = sandbox.contract_env(Forge::Gitea, &garm, false, false);
    env.insert("RUNNER_BIN".into(), custom.display().to_string());

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    let custom = custom.display().to_string();
    assert_eq!(sandbox.recorded("register.program").unwrap(), custom);
    assert_eq!(sandbox.recorded("daemon.program").unwrap(), custom);

    // A RUNNER_BIN that does not exist is a reported failure, not a fallback.
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    let mut env = sandbox.contract_env(Forge::Gitea, &garm, false, false);
    env.insert("RUNNER_BIN".into(), "/nonexistent/runner".into());
    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    assert_eq!(garm.summaries(), vec![installing(), failed()]);
    assert!(last_status_message(&garm).contains("RUNNER_BIN"));
    assert_eq!(sandbox.argv("register"), None);
}

/// The entrypoint (and the image's download check) are lint-clean. CI
/// installs shellcheck (Debian package `shellcheck`) and sets CI=true, so
/// there a missing linter fails; elsewhere the test says it skipped.
#[test]
fn entrypoint_passes_shellcheck() {
    if !tools_present("entrypoint_passes_shellcheck", &["shellcheck"]) {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/runner-image");
    for script in ["entrypoint.sh", "fetch-verified.sh"] {
        let output = std::process::Command::new("shellcheck")
            .arg(dir.join(script))
            .output()
            .expect("run shellcheck");
        assert!(
            output.status.success(),
            "shellcheck findings in {script}:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

// ---------------------------------------------------------------------------
// Forgejo

/// The call a current forgejo-runner gets: an ephemeral host-mode
/// registration against the instance URL (GARM's `/api/v1/` cut off), then
/// exactly one job with `one-job --wait`. Never `--once`, which no
/// forgejo-runner has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgejo_runner_registers_ephemeral_host_runner_and_runs_one_job() {
    if !tools_present(
        "forgejo_runner_registers_ephemeral_host_runner_and_runs_one_job",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    for (cli, api_url) in [
        (RunnerCli::Forgejo13, FORGEJO_API_URL),
        (
            RunnerCli::Forgejo12_8,
            "https://forgejo.example.test/api/v1",
        ),
    ] {
        let garm = FakeGarm::start(Behaviour::default()).await;
        let sandbox = Sandbox::new();
        sandbox.install_runner_stub(cli);
        let mut env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);
        env.insert("FORGE_URL".into(), api_url.into());

        let run = sandbox.run_entrypoint(&env).await;
        run.assert_success();
        run.assert_no_secrets_in_output();

        assert_eq!(
            garm.summaries(),
            vec![
                installing(),
                get("/runner-registration-token"),
                system_info(GITEA_AGENT_ID),
                idle(GITEA_AGENT_ID),
            ],
            "{cli:?}"
        );
        assert_messages_clean(&garm);
        assert_eq!(
            sandbox.argv("register").unwrap(),
            strings(&[
                "register",
                "--no-interactive",
                "--ephemeral",
                "--instance",
                FORGEJO_URL,
                "--token",
                REGISTRATION_TOKEN,
                "--name",
                RUNNER_NAME,
                "--labels",
                &host_labels(),
            ]),
            "{cli:?}"
        );
        assert_eq!(
            sandbox.argv("one-job").unwrap(),
            strings(&["one-job", "--wait"]),
            "{cli:?}"
        );
        assert_eq!(
            sandbox.recorded("register.token").as_deref(),
            Some(REGISTRATION_TOKEN)
        );
        let runs = sandbox.runner_runs();
        assert_eq!(runs.len(), 2, "{cli:?}: {runs:?}");
        assert_eq!(runs[1], "one-job --wait");
        assert!(
            !sandbox.runner_calls().iter().any(|c| c.contains("--once")),
            "{:?}",
            sandbox.runner_calls()
        );
        assert_eq!(sandbox.argv("daemon"), None);
        assert_job_env_clean(&sandbox.recorded_env("one-job"));
        assert!(!sandbox.work.exists(), "RUNNER_WORKDIR is not used here");
    }
}

/// forgejo-runner before 12.8 can register neither ephemeral nor wait for
/// one job: refused before the registration token is spent, naming the
/// version that works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_forgejo_runner_12_is_refused_naming_the_minimum_version() {
    if !tools_present(
        "early_forgejo_runner_12_is_refused_naming_the_minimum_version",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ForgejoEarly12);
    let env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    run.assert_no_secrets_in_output();
    assert_eq!(garm.summaries(), vec![installing(), failed()]);
    let message = last_status_message(&garm);
    assert!(
        message.contains("forgejo-runner 12.8 or newer is required"),
        "{message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
    assert_eq!(sandbox.runner_runs(), Vec::<String>::new());
}

/// Forgejo < 15 registers the runner non-ephemeral and then fails: one
/// registration, no retry (each would leave another stale runner), and GARM
/// hears what to upgrade.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgejo_before_15_fails_once_without_retrying() {
    if !tools_present(
        "forgejo_before_15_fails_once_without_retrying",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::Forgejo13);
    sandbox.set_register_mode("forgejo14");
    let env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    run.assert_no_secrets_in_output();
    assert_eq!(
        garm.summaries(),
        vec![installing(), get("/runner-registration-token"), failed()]
    );
    let message = last_status_message(&garm);
    assert!(
        message.contains("Forgejo 15 or newer is required for ephemeral runners"),
        "{message}"
    );
    assert!(message.contains(FORGEJO_URL), "{message}");
    let registers: Vec<_> = sandbox
        .runner_runs()
        .into_iter()
        .filter(|c| c.starts_with("register "))
        .collect();
    assert_eq!(registers.len(), 1, "{registers:?}");
    assert_eq!(sandbox.argv("one-job"), None);
}

/// A forge the container cannot reach: the runner's register pings forever.
/// The entrypoint gives up after ENTRYPOINT_REGISTER_TIMEOUT and says which
/// forge it could not reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_forge_ends_registration_after_the_bound() {
    if !tools_present(
        "unreachable_forge_ends_registration_after_the_bound",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::Forgejo13);
    sandbox.set_register_mode("hang");
    let mut env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);
    env.insert("ENTRYPOINT_REGISTER_TIMEOUT".into(), "2".into());

    let started = std::time::Instant::now();
    let run = sandbox.run_entrypoint(&env).await;
    let took = started.elapsed();
    run.assert_failure();
    run.assert_no_secrets_in_output();
    assert!(
        took >= std::time::Duration::from_secs(2) && took < std::time::Duration::from_secs(15),
        "took {took:?}"
    );
    assert_eq!(
        garm.summaries(),
        vec![installing(), get("/runner-registration-token"), failed()]
    );
    let message = last_status_message(&garm);
    assert!(
        message.contains(FORGEJO_URL) && message.contains("within 2s"),
        "{message}"
    );
    assert_eq!(sandbox.argv("one-job"), None);
}

/// Any other registration failure is retried (ENTRYPOINT_RETRIES=3 in the
/// harness) with the one token GARM handed out, then reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_registration_is_retried_then_reported() {
    if !tools_present(
        "failing_registration_is_retried_then_reported",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::Forgejo13);
    sandbox.set_register_mode("fail");
    let env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    run.assert_no_secrets_in_output();
    assert_eq!(
        garm.summaries(),
        vec![installing(), get("/runner-registration-token"), failed()]
    );
    let registers = sandbox
        .runner_runs()
        .into_iter()
        .filter(|c| c.starts_with("register "))
        .count();
    assert_eq!(registers, 3);
    let message = last_status_message(&garm);
    assert!(
        message.contains("failed after 3 attempt(s)") && message.contains(FORGEJO_URL),
        "{message}"
    );
}

/// The runner's output is relayed to the container log and its last line to
/// GARM: a runner that prints the registration token must not leak it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_output_is_relayed_without_the_token() {
    if !tools_present(
        "registration_output_is_relayed_without_the_token",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::Forgejo13);
    sandbox.set_register_mode("leaky");
    let env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    run.assert_no_secrets_in_output();
    assert_messages_clean(&garm);
    // The output did reach the log and GARM, with the token blanked out.
    assert!(
        run.stderr
            .contains("stub: registering with token [registration token]"),
        "{}",
        run.stderr
    );
    assert!(
        last_status_message(&garm).contains("[registration token]"),
        "{}",
        last_status_message(&garm)
    );
}

// ---------------------------------------------------------------------------
// Gitea's runner, labels, flavors

/// gitea-runner 3.x reads the token from a file: the token is in no
/// process's argv, the file is private and gone once the runner starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitea_runner_3_gets_the_token_from_a_file_not_argv() {
    if !tools_present(
        "gitea_runner_3_gets_the_token_from_a_file_not_argv",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::GiteaRunner3);
    let env = sandbox.contract_env(Forge::Gitea, &garm, false, false);

    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    run.assert_no_secrets_in_output();
    assert_eq!(
        garm.summaries(),
        vec![
            installing(),
            get("/runner-registration-token"),
            system_info(GITEA_AGENT_ID),
            idle(GITEA_AGENT_ID),
        ]
    );

    let argv = sandbox.argv("register").unwrap();
    let file_at = argv
        .iter()
        .position(|a| a == "--token-file")
        .expect("--token-file");
    let token_file = std::path::PathBuf::from(&argv[file_at + 1]);
    let mut expected = strings(&[
        "register",
        "--no-interactive",
        "--ephemeral",
        "--instance",
        GITEA_URL,
        "--token-file",
    ]);
    expected.push(argv[file_at + 1].clone());
    expected.extend(strings(&[
        "--name",
        RUNNER_NAME,
        "--labels",
        &host_labels(),
    ]));
    assert_eq!(argv, expected);
    for call in sandbox.runner_calls() {
        assert!(!call.contains(REGISTRATION_TOKEN), "token in argv: {call}");
    }
    assert_eq!(
        sandbox.recorded("register.token").as_deref(),
        Some(REGISTRATION_TOKEN)
    );
    assert_eq!(
        sandbox.recorded("register.token-file-mode").unwrap().trim(),
        "600"
    );
    assert!(!token_file.exists(), "the token file outlived registration");
    assert_eq!(
        sandbox.argv("daemon").unwrap(),
        strings(&["daemon", "--once"])
    );
    assert_job_env_clean(&sandbox.recorded_env("daemon"));
}

/// A label asking for Docker or LXC cannot be honoured in a container
/// without either: refused before the registration token is fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_with_another_scheme_are_refused() {
    if !tools_present("labels_with_another_scheme_are_refused", ENTRYPOINT_TOOLS) {
        return;
    }
    for (label, scheme) in [
        ("ubuntu-latest:docker://node:20-bookworm", "docker"),
        ("debian:lxc://debian:bookworm", "lxc"),
        ("edge:host:extra", "host"),
    ] {
        let garm = FakeGarm::start(Behaviour::default()).await;
        let sandbox = Sandbox::new();
        sandbox.install_runner_stub(RunnerCli::Forgejo13);
        let mut env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);
        env.insert(
            "RUNNER_LABELS".into(),
            format!("{label},runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}"),
        );

        let run = sandbox.run_entrypoint(&env).await;
        run.assert_failure();
        assert_eq!(garm.summaries(), vec![installing(), failed()], "{label}");
        let message = last_status_message(&garm);
        assert!(
            message.contains(&format!("label '{label}'"))
                && message.contains(&format!("'{scheme}' scheme"))
                && message.contains("NAME:host"),
            "{message}"
        );
        assert_eq!(sandbox.argv("register"), None, "{label}");
    }
}

/// RUNNER_FLAVOR names the CLI when probing is not wanted; a binary that
/// lacks what that flavor needs is refused all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_flavor_override_is_checked_against_the_binary() {
    if !tools_present(
        "runner_flavor_override_is_checked_against_the_binary",
        ENTRYPOINT_TOOLS,
    ) {
        return;
    }
    for (cli, flavor, expect) in [
        (RunnerCli::Forgejo13, "gitea", "act_runner 0.2.12 or newer"),
        (
            RunnerCli::ActRunner0213,
            "forgejo",
            "forgejo-runner 12.8 or newer",
        ),
        (
            RunnerCli::Forgejo13,
            "woodpecker",
            "unsupported RUNNER_FLAVOR",
        ),
    ] {
        let garm = FakeGarm::start(Behaviour::default()).await;
        let sandbox = Sandbox::new();
        sandbox.install_runner_stub(cli);
        let mut env = sandbox.contract_env(Forge::Gitea, &garm, false, false);
        env.insert("RUNNER_FLAVOR".into(), flavor.into());
        let run = sandbox.run_entrypoint(&env).await;
        run.assert_failure();
        assert_eq!(garm.summaries(), vec![installing(), failed()], "{flavor}");
        let message = last_status_message(&garm);
        assert!(message.contains(expect), "{flavor}: {message}");
        assert_eq!(sandbox.runner_runs(), Vec::<String>::new());
    }

    // The override agreeing with the binary works like probing.
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::Forgejo13);
    let mut env = sandbox.contract_env(Forge::Forgejo, &garm, false, false);
    env.insert("RUNNER_FLAVOR".into(), "forgejo".into());
    let run = sandbox.run_entrypoint(&env).await;
    run.assert_success();
    assert_eq!(
        sandbox.argv("one-job").unwrap(),
        strings(&["one-job", "--wait"])
    );
}

// ---------------------------------------------------------------------------
// The stubs themselves: they must answer like the real programs, or the tests
// above prove nothing.

fn run_stub(sandbox: &Sandbox, cli: RunnerCli, args: &[&str]) -> std::process::Output {
    std::process::Command::new("bash")
        .arg(sandbox.bin.join(cli.program()))
        .args(args)
        .current_dir(&sandbox.home)
        .output()
        .expect("run stub")
}

#[test]
fn runner_stubs_answer_like_cobra() {
    if !tools_present("runner_stubs_answer_like_cobra", &["bash"]) {
        return;
    }
    for cli in [
        RunnerCli::ForgejoEarly12,
        RunnerCli::Forgejo12_8,
        RunnerCli::Forgejo13,
    ] {
        let sandbox = Sandbox::new();
        sandbox.install_runner_stub(cli);
        // The command the old entrypoint ended with.
        let out = run_stub(&sandbox, cli, &["daemon", "--once"]);
        assert_eq!(out.status.code(), Some(1), "{cli:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            "Error: unknown flag: --once",
            "{cli:?}"
        );
        let help = run_stub(&sandbox, cli, &["one-job", "--help"]);
        assert!(help.status.success());
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        assert!(help.contains("forgejo-runner one-job [flags]"), "{help}");
        assert_eq!(
            help.contains("-w, --wait"),
            cli != RunnerCli::ForgejoEarly12
        );
        let help = run_stub(&sandbox, cli, &["register", "--help"]);
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        assert_eq!(
            help.contains("--ephemeral"),
            cli != RunnerCli::ForgejoEarly12,
            "{help}"
        );
        assert!(!help.contains("--token-file"), "{help}");
    }
    let has_daemon_flags = |cli| {
        let sandbox = Sandbox::new();
        sandbox.install_runner_stub(cli);
        let out = run_stub(&sandbox, cli, &["daemon", "--help"]);
        String::from_utf8_lossy(&out.stdout).contains("--token-url")
    };
    assert!(has_daemon_flags(RunnerCli::Forgejo13));
    assert!(!has_daemon_flags(RunnerCli::Forgejo12_8));

    // act_runner's root command takes an event name: `one-job --help` is
    // its root help, exit 0, without a one-job usage line.
    let sandbox = Sandbox::new();
    sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    let out = run_stub(&sandbox, RunnerCli::ActRunner0213, &["one-job", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Available Commands:") && !text.contains(" one-job"),
        "{text}"
    );
    let out = run_stub(
        &sandbox,
        RunnerCli::ActRunner0213,
        &["register", "--token-file", "x"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error: unknown flag: --token-file"
    );

    // gitea-runner's root takes no arguments: an unknown subcommand fails.
    sandbox.install_runner_stub(RunnerCli::GiteaRunner3);
    let out = run_stub(&sandbox, RunnerCli::GiteaRunner3, &["one-job", "--help"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("Error: unknown command \"one-job\""));
    let out = run_stub(
        &sandbox,
        RunnerCli::GiteaRunner3,
        &["daemon", "--once", "--labels", "a:host"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_stub(&sandbox, RunnerCli::GiteaRunner3, &["daemon", "extra"]);
    assert_eq!(out.status.code(), Some(1));
}

/// config.sh refuses what the real runner does not know, so a misspelt
/// option in the entrypoint fails a test.
#[test]
fn github_config_stub_refuses_unknown_options() {
    if !tools_present("github_config_stub_refuses_unknown_options", &["bash"]) {
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.install_github_stubs();
    let out = std::process::Command::new("bash")
        .arg(sandbox.home.join("config.sh"))
        .args(["--unattended", "--once-only"])
        .current_dir(&sandbox.home)
        .output()
        .expect("config.sh");
    assert_eq!(out.status.code(), Some(1));
    assert!(!sandbox.home.join(".runner").exists());
}
