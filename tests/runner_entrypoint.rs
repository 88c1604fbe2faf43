//! Process-level tests of `examples/runner-image/entrypoint.sh`, without Docker:
//! the real script runs under bash against a fake GARM on 127.0.0.1 and stub
//! runner programs, and the tests assert the exact HTTP calls in order, the
//! exact runner command lines, and that no secret reaches the job or the log.
//!
//! Needs bash, curl, jq, coreutils, tar and shellcheck on the machine running the tests.

#[path = "support/runner_harness.rs"]
mod runner_harness;

use runner_harness::*;
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
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_registration_token_configures_ephemeral_runner_in_group() {
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
    let name = "actions-runner-linux-x64-2.330.0.tar.gz";
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
    let name = "actions-runner-linux-x64-2.330.0.tar.gz";
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
async fn gitea_registers_host_labels_and_keeps_garm_labels() {
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_gitea_stub("act_runner");
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
    let labels = format!(
        "ubuntu-latest:host,edge:docker://node:20-bookworm,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}"
    );
    assert_eq!(
        sandbox.argv("register").unwrap(),
        strings(&[
            "register",
            "--no-interactive",
            "--ephemeral",
            "--instance",
            "http://gitea.example.test/",
            "--token",
            REGISTRATION_TOKEN,
            "--name",
            RUNNER_NAME,
            "--labels",
            &labels,
        ])
    );
    assert_eq!(
        sandbox.argv("daemon").unwrap(),
        strings(&["daemon", "--once"])
    );
    let home = sandbox.home.display().to_string();
    assert_eq!(sandbox.recorded("register.cwd").unwrap().trim_end(), home);
    assert_eq!(sandbox.recorded("daemon.cwd").unwrap().trim_end(), home);
    assert_job_env_clean(&sandbox.recorded_env("daemon"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgejo_runner_is_preferred_and_callback_with_status_works() {
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_gitea_stub("act_runner");
    sandbox.install_gitea_stub("forgejo-runner");
    let env = sandbox.contract_env(Forge::Gitea, &garm, false, true);

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
    assert_eq!(sandbox.recorded("daemon.program").unwrap(), forgejo);
    assert_eq!(
        sandbox.argv("daemon").unwrap(),
        strings(&["daemon", "--once"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitea_runner_binary_is_downloaded_when_none_is_installed() {
    let sandbox = Sandbox::new();
    let name = "gitea-runner-0.3.0-linux-amd64";
    let garm = FakeGarm::start(Behaviour {
        download: Some(Download {
            name: name.into(),
            body: sandbox.gitea_stub_script().into_bytes(),
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
    let garm = FakeGarm::start(Behaviour::default()).await;
    let proxy = RecordingProxy::start().await;
    let sandbox = Sandbox::new();
    sandbox.install_gitea_stub("act_runner");
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
    sandbox.install_gitea_stub("act_runner");
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
    let garm = FakeGarm::start(Behaviour::default()).await;
    let sandbox = Sandbox::new();
    sandbox.install_gitea_stub("act_runner");
    let custom = sandbox.root.join("opt-runner");
    write_executable(&custom, &sandbox.gitea_stub_script());
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
    sandbox.install_gitea_stub("act_runner");
    let mut env = sandbox.contract_env(Forge::Gitea, &garm, false, false);
    env.insert("RUNNER_BIN".into(), "/nonexistent/runner".into());
    let run = sandbox.run_entrypoint(&env).await;
    run.assert_failure();
    assert_eq!(garm.summaries(), vec![installing(), failed()]);
    assert!(last_status_message(&garm).contains("RUNNER_BIN"));
    assert_eq!(sandbox.argv("register"), None);
}

/// The entrypoint is lint-clean. CI installs shellcheck (Debian package
/// `shellcheck`); a missing linter fails loudly rather than passing unseen.
#[test]
fn entrypoint_passes_shellcheck() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/runner-image/entrypoint.sh");
    let output = std::process::Command::new("shellcheck")
        .arg(&script)
        .output()
        .expect("shellcheck is not installed (apt-get install -y shellcheck)");
    assert!(
        output.status.success(),
        "shellcheck findings:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
