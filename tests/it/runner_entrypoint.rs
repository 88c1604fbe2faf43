//! Process-level tests of `examples/runner-image/entrypoint.sh`, without Docker:
//! the real script runs under bash against a fake GARM on 127.0.0.1 and stub
//! runner programs, and the tests assert the exact HTTP calls in order, the
//! exact runner command lines, that no secret reaches the job or the log, and
//! what the container does after its one job and when it starts again.
//!
//! The runner stubs speak the exact command lines of the real programs (see
//! `RunnerCli` in the harness, with the upstream source of every flag list).
//!
//! Every test here needs programs outside the Rust toolchain (bash, curl, jq,
//! coreutils; tar and shellcheck for two of them), so each is declared with
//! [`entrypoint_test!`]: a plain `cargo test` lists them as ignored, and
//! `cargo test -- --include-ignored` runs them and fails any whose tools are
//! missing, naming the tool.

use crate::runner_harness::*;
use crate::support::assert_has;
use sha2::Digest as _;

/// Declares an entrypoint test, in the manner of ripgrep's `rgtest!`: a tokio
/// test, `#[ignore]`d because it needs `$tools` (by default
/// [`ENTRYPOINT_TOOLS`]), whose body starts by requiring them. The setup every
/// test shares is [`World`].
macro_rules! entrypoint_test {
    ($name:ident, $body:expr) => {
        entrypoint_test!($name, ENTRYPOINT_TOOLS, $body);
    };
    ($name:ident, $tools:expr, $body:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        #[ignore = "needs programs beyond Rust (bash, curl, jq, timeout, tar, shellcheck; see the README): cargo test -- --include-ignored"]
        async fn $name() {
            require_tools($tools);
            $body.await
        }
    };
}

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
/// download test, which names it itself).
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

/// The GARM calls of a successful non-JIT bootstrap.
fn registered(agent_id: u64) -> Vec<String> {
    vec![
        installing(),
        get("/runner-registration-token"),
        system_info(agent_id),
        idle(agent_id),
    ]
}

/// The GARM calls of a successful GitHub JIT bootstrap (the runner's files, no token).
fn registered_jit(agent_id: u64) -> Vec<String> {
    vec![
        installing(),
        get("/credentials/runner"),
        get("/credentials/credentials"),
        get("/credentials/credentials_rsaparams"),
        system_info(agent_id),
        idle(agent_id),
    ]
}

/// Where the entrypoint notes that this container's runner is registered.
fn used_marker(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.home.join(".garm-runner-registered")
}

/// The line with which the entrypoint goes idle after the runner's job.
fn finished_line(exit_code: i32) -> String {
    format!(
        "garm-entrypoint: the runner finished its one job (exit code {exit_code}); nothing more to \
         do, {STAYING_UP}"
    )
}

/// The whole log of a container that starts again with its filesystem.
fn already_registered_log(sandbox: &Sandbox) -> String {
    format!(
        "garm-entrypoint: this container already registered its runner ({} exists) and takes no \
         second job; nothing to do, {STAYING_UP}\n",
        used_marker(sandbox).display()
    )
}

/// The whole log of a container whose instance token GARM refuses.
fn token_refused_log(garm: &FakeGarm) -> String {
    format!(
        "garm-entrypoint: reporting installing to GARM\n\
         garm-entrypoint: GARM no longer accepts this instance's token (HTTP 401 from {}{STATUS}): \
         its runner was already registered by an earlier start of this container, or its \
         bootstrap failed, or the instance is gone or the token expired; nothing to do, \
         {STAYING_UP}\n",
        garm.base_url
    )
}

/// How many times a runner stub was started for a job (`one-job`).
fn jobs_started(sandbox: &Sandbox) -> usize {
    sandbox
        .runner_runs()
        .iter()
        .filter(|c| c.starts_with("one-job"))
        .count()
}

fn last_status_message(garm: &FakeGarm) -> String {
    garm.calls()
        .iter()
        .rev()
        .find(|c| c.path == STATUS)
        .map(Call::message)
        .unwrap_or_default()
}

entrypoint_test!(
    github_jit_fetches_credentials_reports_idle_and_runs_one_job,
    async {
        // GARM hands out the callback URL both with and without /status.
        for callback_with_status in [false, true] {
            let mut w = World::new(
                Forge::GitHub,
                Behaviour {
                    jit: true,
                    ..Behaviour::default()
                },
            )
            .await;
            if callback_with_status {
                w.use_status_callback_url();
            }
            w.sandbox.install_github_stubs();

            w.run_stayed_up().await;

            assert_eq!(
                w.garm.summaries(),
                registered_jit(GITHUB_AGENT_ID),
                "callback URL with /status: {callback_with_status}"
            );
            assert_messages_clean(&w.garm);

            // The credential files land byte for byte in the runner directory.
            for (file, content) in [
                (".runner", JIT_RUNNER_FILE),
                (".credentials", JIT_CREDENTIALS_FILE),
                (".credentials_rsaparams", JIT_RSA_FILE),
            ] {
                assert_eq!(
                    std::fs::read_to_string(w.sandbox.home.join(file)).unwrap(),
                    content,
                    "{file}"
                );
            }
            // JIT needs no registration: config.sh never runs.
            assert_eq!(w.sandbox.argv("config"), None);
            assert_eq!(w.sandbox.argv("run"), Some(vec![]));
            assert_eq!(
                w.sandbox.recorded("run.cwd").unwrap().trim_end(),
                w.sandbox.home.display().to_string()
            );
            assert_job_env_clean(&w.sandbox.recorded_env("run"));
            // The JIT config has its own work folder: RUNNER_WORKDIR is unused
            // and must not be created.
            assert!(!w.sandbox.work.exists(), "RUNNER_WORKDIR created under JIT");
        }
    }
);

entrypoint_test!(
    github_registration_token_configures_ephemeral_runner_in_group,
    async {
        let mut w = World::new(Forge::GitHub, Behaviour::default()).await;
        w.sandbox.install_github_stubs();
        w.set("RUNNER_GROUP", "edge runners");

        w.run_stayed_up().await;

        assert_eq!(w.garm.summaries(), registered(GITHUB_AGENT_ID));
        assert_messages_clean(&w.garm);
        let work = w.sandbox.work.display().to_string();
        let labels =
            format!("edge,linux,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}");
        assert_eq!(
            w.sandbox.argv("config").unwrap(),
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
        assert!(w.sandbox.work.is_dir(), "RUNNER_WORKDIR is created");
        assert_eq!(w.sandbox.argv("run"), Some(vec![]));
        assert_job_env_clean(&w.sandbox.recorded_env("run"));
    }
);

entrypoint_test!(
    github_registration_without_group_omits_runnergroup_and_retries_config,
    async {
        let mut w = World::new(Forge::GitHub, Behaviour::default()).await;
        w.use_status_callback_url();
        w.sandbox.install_github_stubs();
        // The forge is briefly unreachable: config.sh fails once.
        w.sandbox.set_config_failures(1);

        w.run_stayed_up().await;

        // The single-use registration token is fetched once, not per attempt.
        assert_eq!(w.garm.summaries(), registered(GITHUB_AGENT_ID));
        assert_eq!(w.sandbox.recorded("config.count").unwrap().trim(), "2");
        let argv = w.sandbox.argv("config").unwrap();
        assert!(!argv.iter().any(|a| a == "--runnergroup"), "{argv:?}");
        assert_eq!(argv.last().map(String::as_str), Some("--no-default-labels"));
    }
);

entrypoint_test!(
    github_runner_is_downloaded_and_verified_when_not_bundled,
    &["bash", "curl", "jq", "timeout", "tar"],
    async {
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
        let behaviour = Behaviour {
            jit: true,
            download: Some(Download {
                name: name.into(),
                body,
            }),
            ..Behaviour::default()
        };
        let mut w = World::in_sandbox(sandbox, Forge::GitHub, behaviour).await;
        w.set("RUNNER_DOWNLOAD_URL", w.garm.download_url(name));
        w.set("RUNNER_DOWNLOAD_FILENAME", name);
        w.set("RUNNER_DOWNLOAD_SHA256", sha.to_uppercase());
        w.set("RUNNER_DOWNLOAD_TOKEN", DOWNLOAD_TOKEN);

        w.run_stayed_up().await;

        // The download uses its own token, never the GARM instance token.
        assert_eq!(
            w.garm.summaries(),
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
        assert!(w.sandbox.home.join("config.sh").is_file());
        assert_eq!(w.sandbox.argv("run"), Some(vec![]));
        assert_job_env_clean(&w.sandbox.recorded_env("run"));
    }
);

entrypoint_test!(github_download_with_wrong_checksum_reports_failed, async {
    let name = "actions-runner-linux-x64-2.336.0.tar.gz";
    let mut w = World::new(
        Forge::GitHub,
        Behaviour {
            download: Some(Download {
                name: name.into(),
                body: b"not the runner you are looking for".to_vec(),
            }),
            ..Behaviour::default()
        },
    )
    .await;
    w.set("RUNNER_DOWNLOAD_URL", w.garm.download_url(name));
    w.set("RUNNER_DOWNLOAD_FILENAME", name);
    w.set("RUNNER_DOWNLOAD_SHA256", "0".repeat(64));

    let run = w.run().await;
    run.assert_failed();
    run.assert_no_secrets_in_output();

    // Without a token the download carries no Authorization header at all.
    assert_eq!(
        w.garm.summaries(),
        vec![
            installing(),
            format!("GET /downloads/{name} auth=Missing"),
            format!("GET /blobs/{name} auth=Missing"),
            failed(),
        ]
    );
    assert_messages_clean(&w.garm);
    assert_has(&last_status_message(&w.garm), "RUNNER_DOWNLOAD_SHA256");
    // Nothing was unpacked or run, and the registration token was not spent.
    assert!(!w.sandbox.home.join("config.sh").exists());
    assert_eq!(w.sandbox.argv("run"), None);
});

entrypoint_test!(
    act_runner_registers_host_labels_and_runs_daemon_once,
    async {
        let w = World::new(Forge::Gitea, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::ActRunner0213);

        w.run_stayed_up().await;

        assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
        assert_messages_clean(&w.garm);
        // act_runner 0.2.13 has no token file option: the token is an argument.
        assert_eq!(
            w.sandbox.argv("register").unwrap(),
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
            w.sandbox.argv("daemon").unwrap(),
            strings(&["daemon", "--once"])
        );
        // Probed, registered, run: nothing else.
        let runs = w.sandbox.runner_runs();
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert!(runs[0].starts_with("register "), "{runs:?}");
        assert_eq!(runs[1], "daemon --once");
        let home = w.sandbox.home.display().to_string();
        assert_eq!(w.sandbox.recorded("register.cwd").unwrap().trim_end(), home);
        assert_eq!(w.sandbox.recorded("daemon.cwd").unwrap().trim_end(), home);
        assert_job_env_clean(&w.sandbox.recorded_env("daemon"));
        assert!(!w.sandbox.work.exists(), "RUNNER_WORKDIR is not used here");
    }
);

entrypoint_test!(
    forgejo_runner_is_preferred_and_callback_with_status_works,
    async {
        let mut w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.use_status_callback_url();
        w.sandbox.install_runner_stub(RunnerCli::ActRunner0213);
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);

        w.run_stayed_up().await;

        assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
        let forgejo = w.sandbox.bin.join("forgejo-runner").display().to_string();
        assert_eq!(w.sandbox.recorded("register.program").unwrap(), forgejo);
        assert_eq!(w.sandbox.recorded("one-job.program").unwrap(), forgejo);
        assert_eq!(
            w.sandbox.argv("one-job").unwrap(),
            strings(&["one-job", "--wait"])
        );
        assert_eq!(w.sandbox.argv("daemon"), None);
    }
);

entrypoint_test!(
    gitea_runner_binary_is_downloaded_when_none_is_installed,
    async {
        let sandbox = Sandbox::new();
        let name = "gitea-runner-3.3.0-linux-amd64";
        let behaviour = Behaviour {
            download: Some(Download {
                name: name.into(),
                body: sandbox
                    .runner_stub_script(RunnerCli::GiteaRunner3)
                    .into_bytes(),
            }),
            ..Behaviour::default()
        };
        let mut w = World::in_sandbox(sandbox, Forge::Gitea, behaviour).await;
        // Gitea tools come without a checksum.
        w.set("RUNNER_DOWNLOAD_URL", w.garm.download_url(name));
        w.set("RUNNER_DOWNLOAD_FILENAME", name);

        w.run_stayed_up().await;

        assert_eq!(
            w.garm.summaries(),
            vec![
                installing(),
                format!("GET /downloads/{name} auth=Missing"),
                format!("GET /blobs/{name} auth=Missing"),
                get("/runner-registration-token"),
                system_info(GITEA_AGENT_ID),
                idle(GITEA_AGENT_ID),
            ]
        );
        let program = w.sandbox.home.join("bin").join(name).display().to_string();
        assert_eq!(w.sandbox.recorded("daemon.program").unwrap(), program);
        assert_eq!(
            w.sandbox.argv("daemon").unwrap(),
            strings(&["daemon", "--once"])
        );
        assert_job_env_clean(&w.sandbox.recorded_env("daemon"));
    }
);

entrypoint_test!(https_garm_needs_the_ca_bundle, async {
    let pki = TestPki::generate();
    let jit = || Behaviour {
        jit: true,
        ..Behaviour::default()
    };

    // Without GARM_CA_BUNDLE curl rejects the certificate: nothing reaches
    // GARM (so nothing can be reported) and the entrypoint fails.
    let w = World::https(Forge::GitHub, jit(), &pki).await;
    w.sandbox.install_github_stubs();
    let run = w.run().await;
    run.assert_failed();
    run.assert_no_secrets_in_output();
    assert_eq!(w.garm.summaries(), Vec::<String>::new());
    // A certificate failure is permanent: one attempt, no retries. The
    // server counts the aborted handshake on its own time.
    let rejections = || {
        w.garm
            .tls_rejections
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    wait_until("the fake GARM to count the refused handshake", || {
        rejections() > 0
    })
    .await;
    assert_eq!(rejections(), 1);
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);
    assert!(run.stderr.contains("curl exit code 60"), "{}", run.stderr);
    assert_eq!(w.sandbox.argv("run"), None);

    // With it, the same bootstrap succeeds end to end over HTTPS.
    let mut w = World::https(Forge::GitHub, jit(), &pki).await;
    w.sandbox.install_github_stubs();
    w.sandbox.install_update_ca_stub();
    w.set("GARM_CA_BUNDLE", pki.ca_pem.clone());
    w.run_stayed_up().await;
    assert_eq!(w.garm.summaries(), registered_jit(GITHUB_AGENT_ID));

    // The runner and the job trust the bundle too.
    let job_env = w.sandbox.recorded_env("run");
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
    let stored: Vec<_> = std::fs::read_dir(&w.sandbox.system_ca)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(stored.len(), 1, "one file per certificate");
    assert_eq!(stored[0].trim(), pem);
    assert_eq!(
        w.sandbox.recorded("update-ca-certificates").as_deref(),
        Some("ran\n")
    );

    // Docker env files cannot carry line breaks: a bundle written with
    // literal "\n" sequences works as well.
    let mut w = World::https(Forge::GitHub, jit(), &pki).await;
    w.sandbox.install_github_stubs();
    w.set("GARM_CA_BUNDLE", pki.ca_pem.trim().replace('\n', "\\n"));
    w.run_stayed_up().await;
    assert_eq!(w.garm.calls().len(), 6);
});

entrypoint_test!(
    every_call_goes_through_the_proxy_unless_no_proxy_matches,
    async {
        let mut w = World::new(Forge::Gitea, Behaviour::default()).await;
        let proxy = RecordingProxy::start().await;
        w.sandbox.install_runner_stub(RunnerCli::ActRunner0213);
        for var in ["HTTP_PROXY", "http_proxy"] {
            w.set(var, proxy.url.clone());
        }
        for var in ["NO_PROXY", "no_proxy"] {
            w.set(var, "gitea.example.test,.internal.example.test");
        }

        w.run_stayed_up().await;

        let expected = registered(GITEA_AGENT_ID);
        assert_eq!(w.garm.summaries(), expected);
        let origin = &w.garm.base_url;
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
        let job_env = w.sandbox.recorded_env("daemon");
        assert_eq!(job_env.get("http_proxy"), Some(&proxy.url));
        assert_eq!(job_env.get("HTTP_PROXY"), Some(&proxy.url));

        // NO_PROXY naming GARM's host bypasses the proxy.
        let mut w = World::new(Forge::Gitea, Behaviour::default()).await;
        let proxy = RecordingProxy::start().await;
        w.sandbox.install_runner_stub(RunnerCli::ActRunner0213);
        for var in ["HTTP_PROXY", "http_proxy"] {
            w.set(var, proxy.url.clone());
        }
        for var in ["NO_PROXY", "no_proxy"] {
            w.set(var, "127.0.0.1");
        }
        w.run_stayed_up().await;
        assert_eq!(w.garm.summaries(), expected);
        assert_eq!(proxy.request_lines(), Vec::<String>::new());
    }
);

entrypoint_test!(upper_case_http_proxy_alone_is_honoured, async {
    // curl ignores upper-case HTTP_PROXY; the entrypoint copies it to http_proxy.
    let mut w = World::new(
        Forge::GitHub,
        Behaviour {
            jit: true,
            ..Behaviour::default()
        },
    )
    .await;
    let proxy = RecordingProxy::start().await;
    w.sandbox.install_github_stubs();
    w.set("HTTP_PROXY", proxy.url.clone());

    w.run_stayed_up().await;
    assert_eq!(
        proxy.request_lines().len(),
        6,
        "{:?}",
        proxy.request_lines()
    );
    assert_eq!(w.garm.calls().len(), 6);
    assert_eq!(
        w.sandbox.recorded_env("run").get("http_proxy"),
        Some(&proxy.url)
    );
});

entrypoint_test!(metadata_failure_is_retried_then_reported_as_failed, async {
    let w = World::new(
        Forge::GitHub,
        Behaviour {
            metadata_status: Some(500),
            ..Behaviour::default()
        },
    )
    .await;
    w.sandbox.install_github_stubs();

    let run = w.run().await;
    run.assert_failed();
    run.assert_no_secrets_in_output();

    // ENTRYPOINT_RETRIES=3 in the harness.
    let token = get("/runner-registration-token");
    assert_eq!(
        w.garm.summaries(),
        vec![installing(), token.clone(), token.clone(), token, failed()]
    );
    assert_messages_clean(&w.garm);
    let message = last_status_message(&w.garm);
    assert!(
        message.contains("registration token") && message.contains("HTTP 500"),
        "{message}"
    );
    assert_eq!(w.sandbox.argv("config"), None);
    assert_eq!(w.sandbox.argv("run"), None);
});

// A token GARM refuses (here: one of an earlier create attempt) will not
// heal, and there is nobody to report to: one call, no retries, no failure
// report, and the container stays up instead of exiting into a restart loop.
entrypoint_test!(
    refused_token_leaves_nothing_to_do_and_nothing_to_report,
    async {
        let mut w = World::new(
            Forge::GitHub,
            Behaviour {
                jit: true,
                ..Behaviour::default()
            },
        )
        .await;
        w.sandbox.install_github_stubs();
        w.set("BEARER_TOKEN", "token-of-an-earlier-create-attempt");

        let run = w.run_stayed_up().await;
        assert!(!run.stderr.contains("token-of-an-earlier-create-attempt"));
        assert_eq!(
            w.garm.summaries(),
            vec![format!("POST {STATUS} status=installing auth=Wrong")]
        );
        assert_eq!(run.stderr, token_refused_log(&w.garm));
        assert_eq!(w.sandbox.argv("run"), None);
    }
);

entrypoint_test!(unknown_forge_type_is_reported_as_failed, async {
    let mut w = World::new(Forge::GitHub, Behaviour::default()).await;
    w.set("FORGE_TYPE", "gitlab");

    let run = w.run().await;
    run.assert_failed();
    assert_eq!(w.garm.summaries(), vec![installing(), failed()]);
    assert!(last_status_message(&w.garm).contains("FORGE_TYPE"));
});

entrypoint_test!(runner_bin_overrides_the_runner_found_on_path, async {
    let mut w = World::new(Forge::Gitea, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    let custom = w.sandbox.root.join("opt-runner");
    write_executable(
        &custom,
        &w.sandbox.runner_stub_script(RunnerCli::ActRunner0213),
    );
    w.set("RUNNER_BIN", custom.display().to_string());

    w.run_stayed_up().await;
    let custom = custom.display().to_string();
    assert_eq!(w.sandbox.recorded("register.program").unwrap(), custom);
    assert_eq!(w.sandbox.recorded("daemon.program").unwrap(), custom);

    // A RUNNER_BIN that does not exist is a reported failure, not a fallback.
    let mut w = World::new(Forge::Gitea, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::ActRunner0213);
    w.set("RUNNER_BIN", "/nonexistent/runner");
    let run = w.run().await;
    run.assert_failed();
    assert_eq!(w.garm.summaries(), vec![installing(), failed()]);
    assert!(last_status_message(&w.garm).contains("RUNNER_BIN"));
    assert_eq!(w.sandbox.argv("register"), None);
});

// The entrypoint (and the image's download check) are lint-clean
// (shellcheck: Debian package `shellcheck`, which .ci/run installs).
entrypoint_test!(entrypoint_passes_shellcheck, &["shellcheck"], async {
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
});

// ---------------------------------------------------------------------------
// Forgejo

// The call a current forgejo-runner gets: an ephemeral host-mode
// registration against the instance URL (GARM's `/api/v1/` cut off), then
// exactly one job with `one-job --wait`. Never `--once`, which no
// forgejo-runner has.
entrypoint_test!(
    forgejo_runner_registers_ephemeral_host_runner_and_runs_one_job,
    async {
        for (cli, api_url) in [
            (RunnerCli::Forgejo13, FORGEJO_API_URL),
            (
                RunnerCli::Forgejo12_8,
                "https://forgejo.example.test/api/v1",
            ),
        ] {
            let mut w = World::new(Forge::Forgejo, Behaviour::default()).await;
            w.sandbox.install_runner_stub(cli);
            w.set("FORGE_URL", api_url);

            w.run_stayed_up().await;

            assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID), "{cli:?}");
            assert_messages_clean(&w.garm);
            assert_eq!(
                w.sandbox.argv("register").unwrap(),
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
                w.sandbox.argv("one-job").unwrap(),
                strings(&["one-job", "--wait"]),
                "{cli:?}"
            );
            assert_eq!(
                w.sandbox.recorded("register.token").as_deref(),
                Some(REGISTRATION_TOKEN)
            );
            let runs = w.sandbox.runner_runs();
            assert_eq!(runs.len(), 2, "{cli:?}: {runs:?}");
            assert_eq!(runs[1], "one-job --wait");
            assert!(
                !w.sandbox
                    .runner_calls()
                    .iter()
                    .any(|c| c.contains("--once")),
                "{:?}",
                w.sandbox.runner_calls()
            );
            assert_eq!(w.sandbox.argv("daemon"), None);
            assert_job_env_clean(&w.sandbox.recorded_env("one-job"));
            assert!(!w.sandbox.work.exists(), "RUNNER_WORKDIR is not used here");
        }
    }
);

// forgejo-runner before 12.8 can register neither ephemeral nor wait for
// one job: refused before the registration token is spent, naming the
// version that works.
entrypoint_test!(
    early_forgejo_runner_12_is_refused_naming_the_minimum_version,
    async {
        let w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::ForgejoEarly12);

        let run = w.run().await;
        run.assert_failed();
        run.assert_no_secrets_in_output();
        assert_eq!(w.garm.summaries(), vec![installing(), failed()]);
        let message = last_status_message(&w.garm);
        assert!(
            message.contains("forgejo-runner 12.8 or newer is required"),
            "{message}"
        );
        assert!(!message.contains('\n'), "one line: {message}");
        assert_eq!(w.sandbox.runner_runs(), Vec::<String>::new());
    }
);

// Forgejo < 15 registers the runner non-ephemeral and then fails: one
// registration, no retry (each would leave another stale runner), and GARM
// hears what to upgrade.
entrypoint_test!(forgejo_before_15_fails_once_without_retrying, async {
    let w = World::new(Forge::Forgejo, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_register_mode("forgejo14");

    let run = w.run().await;
    run.assert_failed();
    run.assert_no_secrets_in_output();
    assert_eq!(
        w.garm.summaries(),
        vec![installing(), get("/runner-registration-token"), failed()]
    );
    let message = last_status_message(&w.garm);
    assert!(
        message.contains("Forgejo 15 or newer is required for ephemeral runners"),
        "{message}"
    );
    assert!(message.contains(FORGEJO_URL), "{message}");
    let registers: Vec<_> = w
        .sandbox
        .runner_runs()
        .into_iter()
        .filter(|c| c.starts_with("register "))
        .collect();
    assert_eq!(registers.len(), 1, "{registers:?}");
    assert_eq!(w.sandbox.argv("one-job"), None);
});

// A forge the container cannot reach: the runner's register pings forever.
// The entrypoint gives up after ENTRYPOINT_REGISTER_TIMEOUT and says which
// forge it could not reach.
entrypoint_test!(unreachable_forge_ends_registration_after_the_bound, async {
    let mut w = World::new(Forge::Forgejo, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_register_mode("hang");
    w.set("ENTRYPOINT_REGISTER_TIMEOUT", "2");

    let started = std::time::Instant::now();
    let run = w.run().await;
    let took = started.elapsed();
    run.assert_failed();
    run.assert_no_secrets_in_output();
    // It waited out its bound (how much longer it took depends on the machine).
    assert!(took >= std::time::Duration::from_secs(2), "took {took:?}");
    assert_eq!(
        w.garm.summaries(),
        vec![installing(), get("/runner-registration-token"), failed()]
    );
    let message = last_status_message(&w.garm);
    assert!(
        message.contains(FORGEJO_URL) && message.contains("within 2s"),
        "{message}"
    );
    assert_eq!(w.sandbox.argv("one-job"), None);
});

// Any other registration failure is retried (ENTRYPOINT_RETRIES=3 in the
// harness) with the one token GARM handed out, then reported.
entrypoint_test!(failing_registration_is_retried_then_reported, async {
    let w = World::new(Forge::Forgejo, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_register_mode("fail");

    let run = w.run().await;
    run.assert_failed();
    run.assert_no_secrets_in_output();
    assert_eq!(
        w.garm.summaries(),
        vec![installing(), get("/runner-registration-token"), failed()]
    );
    let registers = w
        .sandbox
        .runner_runs()
        .into_iter()
        .filter(|c| c.starts_with("register "))
        .count();
    assert_eq!(registers, 3);
    let message = last_status_message(&w.garm);
    assert!(
        message.contains("failed after 3 attempt(s)") && message.contains(FORGEJO_URL),
        "{message}"
    );
});

// The runner's output is relayed to the container log and its last line to
// GARM: a runner that prints the registration token must not leak it.
entrypoint_test!(registration_output_is_relayed_without_the_token, async {
    let w = World::new(Forge::Forgejo, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_register_mode("leaky");

    let run = w.run().await;
    run.assert_failed();
    run.assert_no_secrets_in_output();
    assert_messages_clean(&w.garm);
    // The output did reach the log and GARM, with the token blanked out.
    assert!(
        run.stderr
            .contains("stub: registering with token [registration token]"),
        "{}",
        run.stderr
    );
    assert_has(&last_status_message(&w.garm), "[registration token]");
});

// ---------------------------------------------------------------------------
// Gitea's runner, labels, flavors

// gitea-runner 3.x reads the token from a file: the token is in no
// process's argv, the file is private and gone once the runner starts.
entrypoint_test!(gitea_runner_3_gets_the_token_from_a_file_not_argv, async {
    let w = World::new(Forge::Gitea, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::GiteaRunner3);

    w.run_stayed_up().await;
    assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));

    let argv = w.sandbox.argv("register").unwrap();
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
    for call in w.sandbox.runner_calls() {
        assert!(!call.contains(REGISTRATION_TOKEN), "token in argv: {call}");
    }
    assert_eq!(
        w.sandbox.recorded("register.token").as_deref(),
        Some(REGISTRATION_TOKEN)
    );
    assert_eq!(
        w.sandbox
            .recorded("register.token-file-mode")
            .unwrap()
            .trim(),
        "600"
    );
    assert!(!token_file.exists(), "the token file outlived registration");
    assert_eq!(
        w.sandbox.argv("daemon").unwrap(),
        strings(&["daemon", "--once"])
    );
    assert_job_env_clean(&w.sandbox.recorded_env("daemon"));
});

// A label asking for Docker or LXC cannot be honoured in a container
// without either: refused before the registration token is fetched.
entrypoint_test!(labels_with_another_scheme_are_refused, async {
    for (label, scheme) in [
        ("ubuntu-latest:docker://node:20-bookworm", "docker"),
        ("debian:lxc://debian:bookworm", "lxc"),
        ("edge:host:extra", "host"),
    ] {
        let mut w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.set(
            "RUNNER_LABELS",
            format!("{label},runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}"),
        );

        let run = w.run().await;
        run.assert_failed();
        assert_eq!(w.garm.summaries(), vec![installing(), failed()], "{label}");
        let message = last_status_message(&w.garm);
        assert!(
            message.contains(&format!("label '{label}'"))
                && message.contains(&format!("'{scheme}' scheme"))
                && message.contains("NAME:host"),
            "{message}"
        );
        assert_eq!(w.sandbox.argv("register"), None, "{label}");
    }
});

// RUNNER_FLAVOR names the CLI when probing is not wanted; a binary that
// lacks what that flavor needs is refused all the same.
entrypoint_test!(
    runner_flavor_override_is_checked_against_the_binary,
    async {
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
            let mut w = World::new(Forge::Gitea, Behaviour::default()).await;
            w.sandbox.install_runner_stub(cli);
            w.set("RUNNER_FLAVOR", flavor);
            let run = w.run().await;
            run.assert_failed();
            assert_eq!(w.garm.summaries(), vec![installing(), failed()], "{flavor}");
            let message = last_status_message(&w.garm);
            assert!(message.contains(expect), "{flavor}: {message}");
            assert_eq!(w.sandbox.runner_runs(), Vec::<String>::new());
        }

        // The override agreeing with the binary works like probing.
        let mut w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.set("RUNNER_FLAVOR", "forgejo");
        w.run_stayed_up().await;
        assert_eq!(
            w.sandbox.argv("one-job").unwrap(),
            strings(&["one-job", "--wait"])
        );
    }
);

// ---------------------------------------------------------------------------
// After the one job: the container's second life. Edge Connect restarts a
// container that exits (docker --restart=unless-stopped, a kubernetes
// Deployment), so a container that has had its job never exits on its own,
// and one that starts again finds nothing to do.

// After its job the runner container stays up, idle and quiet, whatever the
// job's exit code, and GARM hears no failure; the process left behind (PID 1
// in a container, whose environment the job could read) holds no GARM secret.
entrypoint_test!(finished_runner_stays_up_quietly_until_deleted, async {
    for (mode, exit_code) in [("done", 0), ("exit=1", 1)] {
        let w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.sandbox.set_job_mode(mode);

        let run = w.run_stayed_up().await;
        assert_eq!(run.last_line(), finished_line(exit_code), "{mode}");
        assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID), "{mode}");
        assert_eq!(jobs_started(&w.sandbox), 1, "{mode}");
        assert!(used_marker(&w.sandbox).is_file(), "{mode}");
        assert_job_env_clean(&run.environ);
    }
});

// A docker restart (a crash, a node restart) keeps the container's
// filesystem: the container says in one line that its runner was registered,
// asks GARM nothing, starts no runner and stays up.
entrypoint_test!(
    restarted_container_keeping_its_filesystem_has_nothing_to_do,
    async {
        let forgejo = World::new(Forge::Forgejo, Behaviour::default()).await;
        forgejo.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        let github_jit = World::new(
            Forge::GitHub,
            Behaviour {
                jit: true,
                ..Behaviour::default()
            },
        )
        .await;
        github_jit.sandbox.install_github_stubs();
        for w in [forgejo, github_jit] {
            w.run().await.assert_stayed_up();
            let calls = w.garm.summaries();
            let runner_calls = w.sandbox.runner_calls();
            std::fs::remove_file(w.sandbox.log.join("run.argv")).ok();

            let again = w.run().await;
            again.assert_stayed_up();
            assert_eq!(again.stderr, already_registered_log(&w.sandbox));
            assert_eq!(w.garm.summaries(), calls);
            assert_eq!(w.sandbox.runner_calls(), runner_calls);
            assert_eq!(w.sandbox.argv("run"), None, "run.sh started again");
        }
    }
);

// Kubernetes restarts a container with a fresh filesystem (the Deployment
// has no volume), but with the same environment: GARM refuses the token once
// the runner reported idle. The container says so in one line, reports no
// failure, touches no runner and stays up.
entrypoint_test!(
    restarted_container_with_a_fresh_filesystem_has_nothing_to_do,
    async {
        let w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.run().await.assert_stayed_up();

        let fresh = Sandbox::new();
        fresh.install_runner_stub(RunnerCli::Forgejo13);
        let again = fresh.run_entrypoint(&w.env).await;
        again.assert_stayed_up();
        assert_eq!(again.stderr, token_refused_log(&w.garm));
        let mut expected = registered(GITEA_AGENT_ID);
        expected.push(installing());
        assert_eq!(w.garm.summaries(), expected);
        assert_eq!(w.garm.calls().last().map(|c| c.answer), Some(401));
        assert_eq!(fresh.runner_calls(), Vec::<String>::new());
    }
);

// A bootstrap that failed was reported as failed; the restarted container
// (GARM now refuses its token) stays up instead of failing again and again.
entrypoint_test!(restart_after_a_reported_failure_stays_quiet, async {
    let w = World::new(Forge::Forgejo, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_register_mode("fail");
    w.run().await.assert_failed();
    let mut expected = vec![installing(), get("/runner-registration-token"), failed()];
    assert_eq!(w.garm.summaries(), expected);
    assert!(!used_marker(&w.sandbox).exists());

    let again = w.run().await;
    again.assert_stayed_up();
    assert_eq!(again.stderr, token_refused_log(&w.garm));
    expected.push(installing());
    assert_eq!(w.garm.summaries(), expected);
});

// A crash in the middle of the job (every process of the container killed,
// its filesystem kept, as a docker restart does): the restarted container
// holds the runner's registration files, and still never starts the runner
// for a second job.
entrypoint_test!(a_crash_during_the_job_never_starts_a_second_job, async {
    let w = World::new(Forge::Forgejo, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_job_mode("busy");
    let running = w.start();
    let busy = w.sandbox.log.join("one-job.busy");
    wait_until("the runner to be running its job", || busy.exists()).await;
    let crashed = running.crash().await;
    assert_eq!(crashed.status.code(), None, "killed by a signal");
    assert!(w.sandbox.home.join(".runner").is_file());

    w.sandbox.set_job_mode("done");
    let again = w.run().await;
    again.assert_stayed_up();
    assert_eq!(again.stderr, already_registered_log(&w.sandbox));
    assert_eq!(jobs_started(&w.sandbox), 1);
    assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
});

// The runner is no longer PID 1: a stop request (docker stop, the pod's
// deletion) during the job reaches it, and the container then ends rather
// than staying up. While the job runs, the entrypoint's own environment holds
// no GARM secret either.
entrypoint_test!(a_stop_during_the_job_reaches_the_runner, async {
    let w = World::new(Forge::Forgejo, Behaviour::default()).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_job_mode("busy");
    let running = w.start();
    let busy = w.sandbox.log.join("one-job.busy");
    wait_until("the runner to be running its job", || busy.exists()).await;
    assert_job_env_clean(&running.environ());

    let run = running.stop().await;
    assert_eq!(
        w.sandbox.recorded("one-job.signal").as_deref(),
        Some("TERM\n")
    );
    assert!(!run.stayed_up);
    assert_eq!(run.status.code(), Some(143));
    assert_eq!(
        run.last_line(),
        "garm-entrypoint: stopped while the runner was running (exit code 143)"
    );
    assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
});

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

entrypoint_test!(runner_stubs_answer_like_cobra, &["bash"], async {
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
});

// config.sh refuses what the real runner does not know, so a misspelt
// option in the entrypoint fails a test.
entrypoint_test!(
    github_config_stub_refuses_unknown_options,
    &["bash"],
    async {
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
);

// ---------------------------------------------------------------------------
// Docker (RUNNER_DOCKER; docs/runner-contract.md "What the example image does
// with Docker")

/// The job image the provider sets by default in dind mode.
const DEFAULT_JOB_IMAGE: &str = "docker.io/library/node:22-bookworm";

/// A world for `RUNNER_DOCKER=dind` with a Docker daemon answering on a socket
/// in the sandbox (started by the caller when wanted).
async fn dind_world(forge: Forge) -> (World, std::path::PathBuf) {
    let mut w = World::new(forge, Behaviour::default()).await;
    let socket = w.sandbox.root.join("dind/docker.sock");
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    w.set("RUNNER_DOCKER", "dind");
    w.set("DOCKER_HOST", format!("unix://{}", socket.display()));
    w.set("RUNNER_DEFAULT_JOB_IMAGE", DEFAULT_JOB_IMAGE);
    (w, socket)
}

/// The contract's labels registered as Docker labels, with `ubuntu-latest`
/// mapped by RUNNER_JOB_IMAGES and a pool tag that names its own image.
const DIND_LABELS_IN: &str =
    "ubuntu-latest, edge:host,debian:docker://docker.io/library/debian:trixie";

fn dind_labels() -> String {
    format!(
        "ubuntu-latest:docker://docker.io/library/ubuntu:24.04,edge:host,\
         debian:docker://docker.io/library/debian:trixie,\
         runner-controller-id={CONTROLLER_ID}:docker://{DEFAULT_JOB_IMAGE},\
         runner-pool-id={POOL_ID}:docker://{DEFAULT_JOB_IMAGE}"
    )
}

entrypoint_test!(
    dind_forge_runner_registers_docker_labels_with_a_config_naming_the_daemon,
    async {
        for cli in [RunnerCli::Forgejo13, RunnerCli::GiteaRunner3] {
            let (mut w, socket) = dind_world(Forge::Forgejo).await;
            let daemon = FakeDockerDaemon::start(&socket);
            w.sandbox.install_runner_stub(cli);
            w.set(
                "RUNNER_LABELS",
                format!("{DIND_LABELS_IN},runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}"),
            );
            w.set(
                "RUNNER_JOB_IMAGES",
                r#"{"ubuntu-latest": "docker.io/library/ubuntu:24.04", "unused": "docker.io/library/alpine:3"}"#,
            );

            w.run_stayed_up().await;

            assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID), "{cli:?}");
            assert_messages_clean(&w.garm);
            assert!(daemon.pings.load(std::sync::atomic::Ordering::SeqCst) >= 1);
            let config = w.sandbox.home.join("garm-runner-config.yaml");
            let config_arg = config.display().to_string();
            let token: Vec<&str> = if cli == RunnerCli::GiteaRunner3 {
                vec![]
            } else {
                vec!["--token", REGISTRATION_TOKEN]
            };
            let mut register = strings(&[
                "register",
                "--no-interactive",
                "--ephemeral",
                "--instance",
                FORGEJO_URL,
                "--config",
                &config_arg,
            ]);
            if cli == RunnerCli::GiteaRunner3 {
                let argv = w.sandbox.argv("register").unwrap();
                // The token file's temporary name is the entrypoint's own.
                let at = argv
                    .iter()
                    .position(|a| a == "--token-file")
                    .expect("--token-file");
                register.extend(strings(&["--token-file", &argv[at + 1]]));
            }
            register.extend(strings(&token));
            register.extend(strings(&[
                "--name",
                RUNNER_NAME,
                "--labels",
                &dind_labels(),
            ]));
            assert_eq!(w.sandbox.argv("register").unwrap(), register, "{cli:?}");
            let (sub, run) = if cli == RunnerCli::GiteaRunner3 {
                (
                    "daemon",
                    strings(&["daemon", "--once", "--config", &config_arg]),
                )
            } else {
                (
                    "one-job",
                    strings(&["one-job", "--wait", "--config", &config_arg]),
                )
            };
            assert_eq!(w.sandbox.argv(sub).unwrap(), run, "{cli:?}");
            let written: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
            assert_eq!(
                written,
                serde_json::json!({"container": {
                    "docker_host": format!("unix://{}", socket.display()),
                    "network": "",
                    "privileged": false,
                    "valid_volumes": [],
                }}),
                "{cli:?}"
            );
            // The job reaches the daemon the same way.
            let env = w.sandbox.recorded_env(sub);
            assert_job_env_clean(&env);
            assert_eq!(
                env.get("DOCKER_HOST"),
                Some(&format!("unix://{}", socket.display()))
            );
        }
    }
);

// The sidecar starts after the runner container: the entrypoint waits for its
// daemon, and only then spends the registration token.
entrypoint_test!(dind_waits_for_the_daemon_before_registering, async {
    let (w, socket) = dind_world(Forge::Forgejo).await;
    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);

    let mut running = w.start();
    let line = running
        .until_line("for the Docker daemon at")
        .await
        .expect("the entrypoint says it waits");
    assert_eq!(
        line,
        format!(
            "garm-entrypoint: waiting up to 300s for the Docker daemon at unix://{}",
            socket.display()
        )
    );
    assert_eq!(w.garm.summaries(), vec![installing()], "nothing spent yet");
    let daemon = FakeDockerDaemon::start(&socket);
    assert!(running.until_line(STAYING_UP).await.is_some());
    assert!(running.wait_until_idle().await);
    let run = running.stop().await;
    run.assert_no_secrets_in_output();
    assert!(daemon.pings.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
});

// A sidecar that never answers: GARM hears which daemon did not, within the
// bound, and the registration token is not spent.
entrypoint_test!(dind_daemon_that_never_answers_is_reported_failed, async {
    for forge in [Forge::Forgejo, Forge::GitHub] {
        let (mut w, socket) = dind_world(forge).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.sandbox.install_github_stubs();
        w.set("ENTRYPOINT_DOCKER_TIMEOUT", "1");

        let run = w.run().await;
        run.assert_failed();
        run.assert_no_secrets_in_output();
        assert_eq!(
            w.garm.summaries(),
            vec![installing(), failed()],
            "{forge:?}"
        );
        assert_messages_clean(&w.garm);
        assert_eq!(
            last_status_message(&w.garm),
            format!(
                "the Docker daemon at unix://{0} did not answer within 1s: check the dind sidecar \
                 of this runner's pod (its status and log; it runs privileged and listens on {0})",
                socket.display()
            )
        );
        assert_eq!(w.sandbox.argv("register"), None);
        assert_eq!(w.sandbox.recorded("config.count"), None);
    }
});

// The entrypoint's numeric knobs are bounded before bash reads them as numbers:
// a timeout of 20 digits wraps in bash arithmetic (2^64 - 1 reads as -1, a
// deadline already past) and used to fail the runner with a message naming
// that number of seconds. Each is refused naming the knob and its range, before
// anything is spent.
entrypoint_test!(numeric_knobs_out_of_range_are_refused_by_name, async {
    for (knob, value, range) in [
        (
            "ENTRYPOINT_DOCKER_TIMEOUT",
            "18446744073709551615",
            "a whole number of seconds from 1 to 86400",
        ),
        (
            "ENTRYPOINT_DOCKER_TIMEOUT",
            "86401",
            "a whole number of seconds from 1 to 86400",
        ),
        (
            "ENTRYPOINT_REGISTER_TIMEOUT",
            "99999999999999999999",
            "a whole number of seconds from 1 to 86400",
        ),
        (
            "ENTRYPOINT_RETRIES",
            "9223372036854775808",
            "a number of attempts from 1 to 20",
        ),
        (
            "ENTRYPOINT_RETRY_DELAY",
            "010",
            "a whole number of seconds from 0 to 3600",
        ),
    ] {
        let (mut w, _socket) = dind_world(Forge::Forgejo).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.set(knob, value);
        let run = w.run().await;
        run.assert_failed();
        assert_eq!(
            run.last_line().split_once("error: ").map(|(_, m)| m),
            Some(format!("{knob} must be {range}, not '{value}'").as_str()),
            "{}",
            run.stderr
        );
        assert!(
            w.garm.summaries().is_empty(),
            "{knob}={value}: {:?}",
            w.garm.summaries()
        );
    }
});

// What dind needs from the provider is checked and named before anything is
// spent.
entrypoint_test!(dind_settings_are_checked_before_registering, async {
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("DOCKER_HOST", None, "RUNNER_DOCKER=dind but DOCKER_HOST is not set"),
        (
            "DOCKER_HOST",
            Some("tcp://127.0.0.1:2375"),
            "RUNNER_DOCKER=dind needs DOCKER_HOST to be a unix:// socket, not 'tcp://127.0.0.1:2375'",
        ),
        (
            "RUNNER_DEFAULT_JOB_IMAGE",
            None,
            "RUNNER_DOCKER=dind but RUNNER_DEFAULT_JOB_IMAGE is not set",
        ),
        (
            "RUNNER_DEFAULT_JOB_IMAGE",
            Some("node 22"),
            "RUNNER_DEFAULT_JOB_IMAGE 'node 22' is not an image reference",
        ),
        ("RUNNER_JOB_IMAGES", Some("not json"), "RUNNER_JOB_IMAGES is not a JSON object"),
        ("RUNNER_JOB_IMAGES", Some(r#"["a"]"#), "RUNNER_JOB_IMAGES is not a JSON object"),
        ("RUNNER_JOB_IMAGES", Some(r#"{"a": 1}"#), "RUNNER_JOB_IMAGES is not a JSON object"),
        (
            "RUNNER_JOB_IMAGES",
            Some(r#"{"a": "x,y"}"#),
            "RUNNER_JOB_IMAGES is not a JSON object",
        ),
        (
            "RUNNER_LABELS",
            Some("debian:lxc://debian:bookworm"),
            "label 'debian:lxc://debian:bookworm' asks for the 'lxc' scheme: with RUNNER_DOCKER=dind",
        ),
        (
            "RUNNER_LABELS",
            Some("debian:docker://"),
            "label 'debian:docker://' asks for the 'docker' scheme",
        ),
        ("RUNNER_DOCKER", Some("podman"), "unsupported RUNNER_DOCKER 'podman'"),
    ];
    for (var, value, expected) in cases {
        let (mut w, socket) = dind_world(Forge::Forgejo).await;
        let _daemon = FakeDockerDaemon::start(&socket);
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        match value {
            Some(v) => w.set(var, *v),
            None => {
                w.env.remove(*var);
            }
        }

        let run = w.run().await;
        run.assert_failed();
        assert_eq!(
            w.garm.summaries(),
            vec![installing(), failed()],
            "{var}={value:?}"
        );
        let message = last_status_message(&w.garm);
        assert!(message.starts_with(expected), "{var}={value:?}: {message}");
        assert!(!message.contains('\n'), "one line: {message}");
        assert_eq!(w.sandbox.argv("register"), None, "{var}={value:?}");
    }
});

// GitHub's runner needs only the daemon's address, which reaches the job.
entrypoint_test!(
    dind_github_runner_keeps_its_labels_and_gets_docker_host,
    async {
        let (w, socket) = dind_world(Forge::GitHub).await;
        let daemon = FakeDockerDaemon::start(&socket);
        w.sandbox.install_github_stubs();

        w.run_stayed_up().await;

        assert_eq!(w.garm.summaries(), registered(GITHUB_AGENT_ID));
        assert!(daemon.pings.load(std::sync::atomic::Ordering::SeqCst) >= 1);
        let argv = w.sandbox.argv("config").unwrap();
        let at = argv.iter().position(|a| a == "--labels").unwrap();
        assert_eq!(
            argv[at + 1],
            format!("edge,linux,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}")
        );
        let env = w.sandbox.recorded_env("run");
        assert_job_env_clean(&env);
        assert_eq!(
            env.get("DOCKER_HOST"),
            Some(&format!("unix://{}", socket.display()))
        );
        assert!(!w.sandbox.home.join("garm-runner-config.yaml").exists());
    }
);

// buildkit: host labels as without Docker, and the runner user's default
// buildx builder drives the BuildKit sidecar.
entrypoint_test!(
    buildkit_makes_the_default_buildx_builder_and_keeps_host_labels,
    async {
        for forge in [Forge::Forgejo, Forge::GitHub] {
            let mut w = World::new(forge, Behaviour::default()).await;
            w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
            w.sandbox.install_github_stubs();
            w.sandbox.install_docker_stub();
            w.set("RUNNER_DOCKER", "buildkit");
            w.set("BUILDKIT_HOST", "tcp://127.0.0.1:1234");

            w.run_stayed_up().await;

            assert_eq!(
                w.sandbox.argv("docker").unwrap(),
                strings(&[
                    "buildx",
                    "create",
                    "--name",
                    "garm-buildkit",
                    "--driver",
                    "remote",
                    "--use",
                    "tcp://127.0.0.1:1234",
                ]),
                "{forge:?}"
            );
            // The builder belongs to the user the runner and its jobs run as.
            assert_eq!(
                w.sandbox.recorded("docker.home").unwrap(),
                w.sandbox.root.join("home").display().to_string()
            );
            if forge == Forge::Forgejo {
                assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
                let argv = w.sandbox.argv("register").unwrap();
                assert_eq!(argv.last().unwrap(), &host_labels());
                assert!(!argv.iter().any(|a| a == "--config"), "{argv:?}");
                assert_eq!(
                    w.sandbox.argv("one-job").unwrap(),
                    strings(&["one-job", "--wait"])
                );
            } else {
                assert_eq!(w.garm.summaries(), registered(GITHUB_AGENT_ID));
            }
        }
    }
);

entrypoint_test!(buildkit_builder_failures_are_reported, async {
    for (host, expected) in [
        (
            Some("tcp://127.0.0.1:1234"),
            "could not make the docker buildx builder on tcp://127.0.0.1:1234: \
             ERROR: failed to find driver \"remote\"",
        ),
        (
            Some("unix:///run/buildkit/buildkitd.sock"),
            "could not make the docker buildx builder on unix:///run/buildkit/buildkitd.sock: \
             ERROR: failed to find driver \"remote\"",
        ),
        (
            None,
            "RUNNER_DOCKER=buildkit but BUILDKIT_HOST is not set: the provider sets it to the \
             BuildKit sidecar's address on the pod's loopback (tcp://127.0.0.1:1234)",
        ),
        (
            Some("127.0.0.1:1234"),
            "RUNNER_DOCKER=buildkit needs BUILDKIT_HOST to be a tcp:// address or a unix:// \
             socket, not '127.0.0.1:1234'",
        ),
    ] {
        let mut w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.sandbox.install_docker_stub();
        std::fs::write(w.sandbox.log.join("docker.mode"), "fail").unwrap();
        w.set("RUNNER_DOCKER", "buildkit");
        if let Some(host) = host {
            w.set("BUILDKIT_HOST", host);
        }

        let run = w.run().await;
        run.assert_failed();
        assert_eq!(w.garm.summaries(), vec![installing(), failed()]);
        assert_eq!(last_status_message(&w.garm), expected);
        assert_eq!(w.sandbox.argv("register"), None);
    }
});

// RUNNER_DOCKER=none is the same as a runner made by an earlier release,
// which has no RUNNER_DOCKER at all: host labels, no config, no Docker.
entrypoint_test!(docker_none_is_the_behaviour_without_docker, async {
    for value in [None, Some("none")] {
        let mut w = World::new(Forge::Forgejo, Behaviour::default()).await;
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.sandbox.install_docker_stub();
        if let Some(v) = value {
            w.set("RUNNER_DOCKER", v);
        }
        // Ignored without dind: the provider does not set it then, and it
        // must not change anything if it is there.
        w.set("RUNNER_DEFAULT_JOB_IMAGE", DEFAULT_JOB_IMAGE);

        w.run_stayed_up().await;

        assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
        let argv = w.sandbox.argv("register").unwrap();
        assert_eq!(argv.last().unwrap(), &host_labels(), "{value:?}");
        assert!(!argv.iter().any(|a| a == "--config"), "{argv:?}");
        assert_eq!(w.sandbox.argv("docker"), None, "{value:?}");
        assert!(!w.sandbox.home.join("garm-runner-config.yaml").exists());
    }
});

/// The job of the test against a real daemon, as `log/job.sh` for the runner
/// stub (its `$1` is the runner's `--config`): it reaches the daemon the way
/// forgejo-runner does, through the config's `container.docker_host`, runs
/// its first step in the image the `ubuntu-latest` label was registered with,
/// and builds an image in its second. `DOCKER_BUILDKIT=0`: podman's API
/// serves the classic builder's `/build`, not BuildKit's session.
const REAL_DAEMON_JOB: &str = r#"set -euo pipefail
log=$(dirname "$0")
DOCKER_HOST=$(jq -er .container.docker_host "$1")
export DOCKER_HOST DOCKER_BUILDKIT=0
labels=$(tr '\0' '\n' < "$log/register.argv" | grep -x -A1 -- --labels | tail -n 1)
image=""
IFS=, read -r -a parts <<<"$labels"
for l in "${parts[@]}"; do
  if [[ $l == ubuntu-latest:docker://* ]]; then image=${l#ubuntu-latest:docker://}; fi
done
[[ -n $image ]]
echo "step 1: $(docker run --rm "$image" sh -c 'echo ran in a container')"
mkdir -p "$log/context"
printf 'FROM %s\nRUN echo built by the daemon > /built\n' "$image" > "$log/context/Dockerfile"
# The legacy builder warns on stderr; kept out of the job's output unless it fails.
if ! docker build -q -t "$image-built" "$log/context" >/dev/null 2>"$log/build.err"; then
  cat "$log/build.err"
  exit 1
fi
echo "step 2: $(docker run --rm "$image-built" cat /built)"
docker rmi "$image-built" >/dev/null
"#;

// The dind path for real: the entrypoint waits for a real Docker-compatible
// daemon (podman's Docker API service, started by .ci/docker-daemon.sh),
// registers the Docker labels and hands the runner its config; the stand-in
// runner's job runs a container step and a build step through that daemon
// with the real Docker CLI. The base image is busybox-static's binary alone,
// imported through the CLI: nothing is pulled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Docker-compatible daemon (podman's API service); .ci/run starts one"]
async fn dind_entrypoint_runs_a_container_step_and_a_build_step_against_a_real_daemon() {
    require_tools(&["bash", "curl", "jq", "timeout", "tar", "docker", "busybox"]);
    let docker_host = std::env::var("GARM_TEST_DOCKER_HOST").expect(
        "GARM_TEST_DOCKER_HOST is not set: start podman's Docker API service with \
         `. .ci/docker-daemon.sh` (as .ci/run does) or point it at another daemon",
    );
    let (mut w, _) = dind_world(Forge::Forgejo).await;
    w.set("DOCKER_HOST", docker_host.as_str());

    // A name of this test run's own, removed again at the end.
    let suffix = w
        .sandbox
        .root
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let image = format!("localhost/garm-test-busybox:{suffix}");
    let rootfs = w.sandbox.root.join("rootfs");
    std::fs::create_dir_all(rootfs.join("bin")).unwrap();
    let busybox = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("busybox"))
        .find(|p| p.is_file())
        .unwrap();
    std::fs::copy(&busybox, rootfs.join("bin/busybox")).unwrap();
    for applet in ["sh", "echo", "cat"] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).unwrap();
    }
    let tarball = w.sandbox.root.join("rootfs.tar");
    let cli_home = w.sandbox.root.join("home");
    let docker = |args: &[&str]| {
        std::process::Command::new("docker")
            .args(args)
            .env("DOCKER_HOST", &docker_host)
            .env("HOME", &cli_home)
            .output()
            .expect("run docker")
    };
    let tar = std::process::Command::new("tar")
        .arg("-C")
        .arg(&rootfs)
        .arg("-cf")
        .arg(&tarball)
        .arg(".")
        .status()
        .unwrap();
    assert!(tar.success());
    let imported = docker(&["import", &tarball.display().to_string(), &image]);
    assert!(
        imported.status.success(),
        "docker import: {}",
        String::from_utf8_lossy(&imported.stderr)
    );

    w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
    w.sandbox.set_job_mode("script");
    std::fs::write(w.sandbox.log.join("job.sh"), REAL_DAEMON_JOB).unwrap();
    w.set(
        "RUNNER_JOB_IMAGES",
        format!(r#"{{"ubuntu-latest": "{image}"}}"#),
    );
    w.set("RUNNER_DEFAULT_JOB_IMAGE", image.as_str());

    let run = w.run().await;
    let _ = docker(&["rmi", &image]);

    run.assert_stayed_up();
    run.assert_no_secrets_in_output();
    let job = w.sandbox.recorded("job.out").unwrap_or_default();
    assert!(
        run.stderr.contains(&finished_line(0)),
        "the job failed:\n{job}\nentrypoint:\n{}",
        run.stderr
    );
    assert_eq!(
        job, "step 1: ran in a container\nstep 2: built by the daemon\n",
        "(a dynamically linked busybox cannot run alone in the image: install busybox-static)"
    );
    assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
}

// ---------------------------------------------------------------------------
// The site's actions cache (RUNNER_CACHE_SERVER, RUNNER_CACHE_SECRET;
// docs/runner-contract.md "The site's actions cache", docs/site-cache.md "What
// the runner image does with the site cache")

const CACHE_SERVER: &str = "http://127.0.0.1:5000";
/// Distinctive, so that a leak is found by a plain substring search.
const CACHE_SECRET: &str = "site-cache-secret-K8dQ2wL5";

/// Labels that all run jobs in containers of the dind sidecar's daemon.
fn docker_only_labels_in() -> String {
    format!("ubuntu-latest,debian:docker://docker.io/library/debian:trixie,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}")
}

/// GARM's labels and one pool tag, without a scheme.
fn plain_labels_in() -> String {
    format!("ubuntu-latest,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}")
}

fn docker_only_labels() -> String {
    format!(
        "ubuntu-latest:docker://{DEFAULT_JOB_IMAGE},\
         debian:docker://docker.io/library/debian:trixie,\
         runner-controller-id={CONTROLLER_ID}:docker://{DEFAULT_JOB_IMAGE},\
         runner-pool-id={POOL_ID}:docker://{DEFAULT_JOB_IMAGE}"
    )
}

/// Sets the two variables as the provider does for a site whose cache is
/// Ready, and records what the entrypoint hands jq and curl.
fn with_site_cache(w: &mut World) {
    w.set("RUNNER_CACHE_SERVER", CACHE_SERVER);
    w.set("RUNNER_CACHE_SECRET", CACHE_SECRET);
    w.sandbox.install_argv_recorder("jq");
    w.sandbox.install_argv_recorder("curl");
}

/// Every file under `dir` whose content holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).unwrap_or_default();
            if String::from_utf8_lossy(&bytes).contains(needle) {
                found.push(path);
            }
        }
    }
    found
}

/// The cache secret is in no log line, no argv of any program the
/// entrypoint ran (the runner's, jq's, curl's), no status message, neither
/// the environment the runner's job run (`job_sub`) got nor the entrypoint's
/// own (/proc/1/environ while it stays up), and in no file but `only_in`.
fn assert_cache_secret_only_in(
    w: &World,
    run: &Run,
    job_sub: &str,
    only_in: Option<&std::path::Path>,
) {
    assert!(
        !run.stdout.contains(CACHE_SECRET) && !run.stderr.contains(CACHE_SECRET),
        "the cache secret reached the log:\n{}",
        run.stderr
    );
    for program in ["jq", "curl"] {
        let calls = w
            .sandbox
            .recorded(&format!("{program}.calls"))
            .unwrap_or_default();
        assert!(!calls.is_empty(), "{program} was not recorded");
        assert!(
            !calls.contains(CACHE_SECRET),
            "the cache secret in {program}'s argv:\n{calls}"
        );
    }
    for call in w.sandbox.runner_calls() {
        assert!(
            !call.contains(CACHE_SECRET),
            "the cache secret in the runner's argv: {call}"
        );
    }
    for call in w.garm.calls().iter().filter(|c| c.path == STATUS) {
        assert!(
            !call.message().contains(CACHE_SECRET),
            "the cache secret sent to GARM"
        );
    }
    for (what, env) in [
        ("the runner's job run", w.sandbox.recorded_env(job_sub)),
        ("the entrypoint's /proc/PID/environ", run.environ.clone()),
    ] {
        assert!(!env.is_empty(), "{what}: no environment recorded");
        assert!(
            !env.contains_key("RUNNER_CACHE_SECRET"),
            "{what} has RUNNER_CACHE_SECRET"
        );
        for (k, v) in &env {
            assert!(
                !v.contains(CACHE_SECRET),
                "{what} has the cache secret in {k}"
            );
        }
    }
    let holding = files_holding(&w.sandbox.root, CACHE_SECRET);
    assert_eq!(
        holding,
        only_in
            .map(|p| p.to_path_buf())
            .into_iter()
            .collect::<Vec<_>>()
    );
}

entrypoint_test!(
    site_cache_goes_into_the_forgejo_runners_config_only_for_a_dind_runner_of_docker_labels,
    async {
        let (mut w, socket) = dind_world(Forge::Forgejo).await;
        let _daemon = FakeDockerDaemon::start(&socket);
        w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
        w.set("RUNNER_LABELS", docker_only_labels_in());
        with_site_cache(&mut w);

        let run = w.run_stayed_up().await;

        assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID));
        assert_messages_clean(&w.garm);
        let config = w.sandbox.home.join("garm-runner-config.yaml");
        let config_arg = config.display().to_string();
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        assert_eq!(
            written,
            serde_json::json!({
                "container": {
                    "docker_host": format!("unix://{}", socket.display()),
                    "network": "",
                    "privileged": false,
                    "valid_volumes": [],
                },
                "cache": {"external_server": CACHE_SERVER, "secret": CACHE_SECRET},
            })
        );
        let meta = std::fs::metadata(&config).unwrap();
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        assert_eq!(
            meta.permissions().mode() & 0o777,
            0o600,
            "the config is private"
        );
        // SAFETY: getuid(2) cannot fail and touches no memory.
        assert_eq!(
            meta.uid(),
            unsafe { libc::getuid() },
            "owned by the runner's user"
        );
        let argv = w.sandbox.argv("register").unwrap();
        let at = argv.iter().position(|a| a == "--labels").unwrap();
        assert_eq!(argv[at + 1], docker_only_labels());
        assert_eq!(
            w.sandbox.argv("one-job").unwrap(),
            strings(&["one-job", "--wait", "--config", &config_arg])
        );
        assert_has(
            &run.stderr,
            &format!("garm-entrypoint: using the site's actions cache at {CACHE_SERVER}\n"),
        );
        assert_job_env_clean(&w.sandbox.recorded_env("one-job"));
        assert_cache_secret_only_in(&w, &run, "one-job", Some(&config));
    }
);

// Where a job could read the secret (host labels), and for Gitea's runner,
// which does not speak the cache server's protocol, the runner keeps its own
// cache and the secret is written nowhere.
entrypoint_test!(
    site_cache_is_not_used_where_a_job_could_read_its_secret_nor_by_gitea_runners,
    async {
        let host = "not using the site's actions cache at http://127.0.0.1:5000: jobs";
        let cases = [
            (
                RunnerCli::Forgejo13,
                false,
                plain_labels_in(),
                format!("{host} run in this container as the runner's user (RUNNER_DOCKER=none) and could read the cache's secret, and with it every repository's cache entries; only runners whose jobs all run in containers of a dind sidecar use it; the runner keeps its own cache"),
            ),
            (
                RunnerCli::Forgejo13,
                true,
                format!("{},edge:host,more:host", docker_only_labels_in()),
                format!("{host} of the label(s) edge,more run in this container as the runner's user and could read the cache's secret, and with it every repository's cache entries; the runner keeps its own cache"),
            ),
            (
                RunnerCli::GiteaRunner3,
                true,
                docker_only_labels_in(),
                "not using the site's actions cache at http://127.0.0.1:5000: it is forgejo-runner's cache server, whose protocol Gitea's runner does not speak; the runner keeps its own cache".to_string(),
            ),
            (
                RunnerCli::ActRunner0213,
                false,
                plain_labels_in(),
                "not using the site's actions cache at http://127.0.0.1:5000: it is forgejo-runner's cache server, whose protocol Gitea's runner does not speak; the runner keeps its own cache".to_string(),
            ),
        ];
        for (cli, dind, labels, expected) in cases {
            let (mut w, socket) = dind_world(Forge::Forgejo).await;
            let _daemon = FakeDockerDaemon::start(&socket);
            if !dind {
                for var in ["RUNNER_DOCKER", "DOCKER_HOST", "RUNNER_DEFAULT_JOB_IMAGE"] {
                    w.env.remove(var);
                }
            }
            w.sandbox.install_runner_stub(cli);
            w.set("RUNNER_LABELS", labels);
            with_site_cache(&mut w);

            let run = w.run_stayed_up().await;

            assert_eq!(w.garm.summaries(), registered(GITEA_AGENT_ID), "{cli:?}");
            assert_has(&run.stderr, &format!("garm-entrypoint: {expected}\n"));
            let config = w.sandbox.home.join("garm-runner-config.yaml");
            if dind {
                let written: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
                assert_eq!(written.get("cache"), None, "{cli:?}");
                assert!(written.get("container").is_some(), "{cli:?}");
            } else {
                assert!(!config.exists(), "{cli:?}: no config without dind");
            }
            let sub = match cli {
                RunnerCli::Forgejo13 => "one-job",
                _ => "daemon",
            };
            assert_cache_secret_only_in(&w, &run, sub, None);
        }
    }
);

entrypoint_test!(
    site_cache_settings_the_provider_must_not_send_are_refused,
    async {
        let long = "s".repeat(1025);
        let cases: &[(Option<&str>, Option<&str>, String)] = &[
        (
            Some(CACHE_SERVER),
            None,
            "RUNNER_CACHE_SERVER is set but RUNNER_CACHE_SECRET is not: the provider sets both for a runner whose site cache is Ready, or neither; this is a bug of the provider, report it".into(),
        ),
        (
            Some(CACHE_SERVER),
            Some(""),
            "RUNNER_CACHE_SERVER is set but RUNNER_CACHE_SECRET is not: the provider sets both for a runner whose site cache is Ready, or neither; this is a bug of the provider, report it".into(),
        ),
        (
            None,
            Some(CACHE_SECRET),
            "RUNNER_CACHE_SECRET is set but RUNNER_CACHE_SERVER is not: the provider sets both for a runner whose site cache is Ready, or neither; this is a bug of the provider, report it".into(),
        ),
        (Some("ftp://127.0.0.1:5000"), Some(CACHE_SECRET), bad_server("ftp://127.0.0.1:5000")),
        (Some("127.0.0.1:5000"), Some(CACHE_SECRET), bad_server("127.0.0.1:5000")),
        (Some("http://"), Some(CACHE_SECRET), bad_server("http://")),
        (Some("http://127.0.0.1 :5000"), Some(CACHE_SECRET), bad_server("http://127.0.0.1 :5000")),
        (Some("http://127.0.0.1:5000/cache"), Some(CACHE_SECRET), bad_server("http://127.0.0.1:5000/cache")),
        (Some("http://127.0.0.1:5000\u{1}"), Some(CACHE_SECRET), bad_server("http://127.0.0.1:5000?")),
        (
            Some(CACHE_SERVER),
            Some(long.as_str()),
            "RUNNER_CACHE_SECRET is longer than 1024 characters; the provider sends the site cache's secret as it is configured, which must be shorter".into(),
        ),
        (
            Some(CACHE_SERVER),
            Some("site-cache-secret-K8dQ2wL5\n"),
            "RUNNER_CACHE_SECRET holds a control character (a line break?); the site cache's secret must be one line of printable characters".into(),
        ),
    ];
        for (server, secret, expected) in cases {
            let (mut w, socket) = dind_world(Forge::Forgejo).await;
            let _daemon = FakeDockerDaemon::start(&socket);
            w.sandbox.install_runner_stub(RunnerCli::Forgejo13);
            w.set("RUNNER_LABELS", docker_only_labels_in());
            if let Some(v) = server {
                w.set("RUNNER_CACHE_SERVER", *v);
            }
            if let Some(v) = secret {
                w.set("RUNNER_CACHE_SECRET", *v);
            }

            let run = w.run().await;

            run.assert_failed();
            assert_eq!(
                w.garm.summaries(),
                vec![installing(), failed()],
                "{server:?}"
            );
            assert_eq!(&last_status_message(&w.garm), expected);
            assert_eq!(
                run.last_line(),
                format!("garm-entrypoint: error: {expected}")
            );
            assert!(!run.stderr.contains(CACHE_SECRET), "{}", run.stderr);
            assert_eq!(w.sandbox.argv("register"), None, "nothing spent");
        }
    }
);

fn bad_server(shown: &str) -> String {
    format!("RUNNER_CACHE_SERVER must be the cache server's URL, http:// or https:// and its host[:port] only, without blanks or control characters, not '{shown}'")
}

// GitHub's runner has no external cache: the values are not even looked at,
// and the secret goes nowhere.
entrypoint_test!(site_cache_is_ignored_by_the_github_runner, async {
    for server in [CACHE_SERVER, "not a URL"] {
        let (mut w, socket) = dind_world(Forge::GitHub).await;
        let _daemon = FakeDockerDaemon::start(&socket);
        w.sandbox.install_github_stubs();
        with_site_cache(&mut w);
        w.set("RUNNER_CACHE_SERVER", server);

        let run = w.run_stayed_up().await;

        assert_eq!(w.garm.summaries(), registered(GITHUB_AGENT_ID), "{server}");
        assert_has(
            &run.stderr,
            "garm-entrypoint: not using the site's actions cache: GitHub's runner has no external cache (it takes the cache's address from GitHub's service); a dind sidecar still pulls Docker Hub images through the site's registry mirror\n",
        );
        assert!(!w.sandbox.home.join("garm-runner-config.yaml").exists());
        assert_cache_secret_only_in(&w, &run, "run", None);
    }
});
