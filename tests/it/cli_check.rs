//! `check`: one ✓/✗ line per step against the simulator, and the exit code.

use crate::support::*;

fn check(w: &World, args: &[&str]) -> (i32, String) {
    let r = w.cli(&[&["check"], args].concat());
    (r.code, r.stdout)
}

fn replace_in_config(w: &World, from: &str, to: &str) {
    let text = std::fs::read_to_string(&w.config).unwrap();
    assert!(text.contains(from), "{from} not in config");
    std::fs::write(&w.config, text.replace(from, to)).unwrap();
}

#[test]
fn all_good() {
    let w = World::new();
    let (code, out) = check(&w, &["--image", "ghcr.io/example-org/garm-runner:2.330.0"]);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.iter().all(|l| l.starts_with('✓')), "{out}");
    for expected in [
        "✓ region: EU known (3 flavors)",
        "✓ organization: edp-developer-framework: the user may manage Apps there",
        "✓ API generation: Gen3 (zones)",
        "✓ zone TelekomOP/Munich: exists; addressed as zone_key TelekomOP/Munich",
        "✓ flavor EU.small: available in zone TelekomOP/Munich",
        "✓ image: ghcr.io/example-org/garm-runner:2.330.0 is well formed",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?} in:\n{out}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("✓ credentials: user garm and password from credentials_file ")),
        "{out}"
    );
    assert!(w.app_names().is_empty(), "check creates nothing");
    // The generation and the zones come from one ShowZone.
    assert_eq!(w.calls("ShowZone"), 1);
}

#[test]
fn deploy_test_runs_the_commands_create_and_delete_on_a_throwaway_runner() {
    let w = World::new();
    let (code, out) = check(&w, &["--deploy-test"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.lines().any(|l| l.starts_with(
            "✓ deploy test zone TelekomOP/Munich: docker.io/library/nginx:1.27-alpine runs there (CreateInstance "
        )),
        "{out}"
    );
    // CreateInstance's own path: the name is looked up before CreateApp (a second create path
    // would not), and DeleteInstance reads the AppInst before deleting it.
    assert_eq!(w.calls("CreateApp"), 1);
    assert_eq!(w.calls("CreateAppInst"), 1);
    assert_eq!(w.calls("DeleteAppInst"), 1);
    assert_eq!(
        w.calls("DeleteApp"),
        2,
        "the membership probe and the runner's App"
    );
    assert!(
        w.calls("ShowApp") >= 2,
        "exists check and the delete's lookup"
    );
    w.assert_nothing_left();
}

#[test]
fn bad_password() {
    let w = World::new();
    w.write_credentials("nope-not-the-password", 0o600);
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "✗ login: Edge Connect login (HTTP 400): Invalid username or password (check credentials_file or EDP_EDGE_CONNECT_USERNAME/EDP_EDGE_CONNECT_PASSWORD)",
            "- skipped: region, organization, API generation, cloudlets, sites and flavors (each needs what the failed step above would have found)",
        ],
        "{out}"
    );
}

/// Each credential's true source is named (a variable overrides the file value by value), and
/// a failed step is followed by the names of the steps it made `check` skip.
#[test]
fn check_names_where_each_credential_came_from_and_what_it_skipped() {
    let w = World::new();
    let run = |vars: &[(&str, &str)], args: &[&str]| {
        let out = w
            .person(CONTROLLER)
            .arg("check")
            .args(args)
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let creds = w.dir.path().join("credentials.toml");
    let (code, out) = run(&[("EDP_EDGE_CONNECT_PASSWORD", PASSWORD)], &[]);
    assert_eq!(code, Some(0), "{out}");
    let expected = format!(
        "✓ credentials: user garm from credentials_file {}, password from EDP_EDGE_CONNECT_PASSWORD",
        creds.display()
    );
    assert!(out.lines().any(|l| l == expected), "{expected}\n{out}");
    let (code, out) = run(
        &[
            ("EDP_EDGE_CONNECT_USERNAME", USER),
            ("EDP_EDGE_CONNECT_PASSWORD", PASSWORD),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.lines().any(|l| l == "✓ credentials: user garm and password from EDP_EDGE_CONNECT_PASSWORD"
            || l == "✓ credentials: user garm from EDP_EDGE_CONNECT_USERNAME, password from EDP_EDGE_CONNECT_PASSWORD"),
        "{out}"
    );
    // A wrong password: login fails; every later step, the deploy test too, is named skipped.
    let (code, out) = run(
        &[("EDP_EDGE_CONNECT_PASSWORD", "not-the-password")],
        &["--deploy-test"],
    );
    assert_eq!(code, Some(1), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[lines.len() - 3].starts_with("✗ login: "), "{out}");
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "- skipped: region, organization, API generation, cloudlets, sites and flavors (each needs what the failed step above would have found)",
            "- skipped: deploy test (each needs what the failed step above would have found)",
        ],
        "{out}"
    );
    assert_eq!(w.calls("CreateApp"), 0);
}

#[test]
fn plain_http_is_not_called_tls() {
    let w = World::new();
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 0, "{out}");
    let login = out
        .lines()
        .find(|l| l.starts_with("✓ login: "))
        .unwrap_or_default();
    assert!(login.contains(", plain http, no TLS, logged in"), "{out}");
    assert!(!out.contains("TLS valid"), "{out}");
}

#[test]
fn an_organization_the_user_is_not_in_fails() {
    let w = World::new();
    replace_in_config(
        &w,
        "organization = \"edp-developer-framework\"",
        "organization = \"someone-elses-org\"",
    );
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 1, "{out}");
    // The failed step, then the steps it made `check` skip.
    assert_eq!(
        out.lines().rev().nth(1),
        Some("✗ organization: someone-elses-org: the user may not manage Apps there (HTTP 403) — check edge_connect.organization and the user's role in it"),
        "{out}"
    );
    assert_eq!(
        out.lines().last(),
        Some("- skipped: API generation, cloudlets, sites and flavors (each needs what the failed step above would have found)"),
        "{out}"
    );
    assert!(w.app_names().is_empty(), "check creates nothing");
}

#[test]
fn missing_zone_lists_the_zones() {
    let w = World::new();
    replace_in_config(&w, "name = \"Munich\"", "name = \"Atlantis\"");
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 1);
    assert!(
        out.lines()
            .any(|l| l == "✗ zone TelekomOP/Atlantis: not found; zones here: TelekomOP/Munich"),
        "{out}"
    );
}

#[test]
fn missing_cloudlet_lists_the_cloudlets() {
    let w = World::with(edge_connect_sim::ApiGeneration::Gen2, Site::Cloudlet, "");
    replace_in_config(&w, "name = \"Munich\"", "name = \"Atlantis\"");
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 1);
    assert!(
        out.lines()
            .any(|l| l == "✓ API generation: Gen2 (cloudlet keys, no zones)"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l
                == "✗ cloudlet TelekomOP/Atlantis: not found; cloudlets here: TelekomOP/Munich"),
        "{out}"
    );
}

#[test]
fn unknown_flavor_lists_the_flavors() {
    let w = World::new();
    replace_in_config(
        &w,
        "default_flavor = \"EU.small\"",
        "default_flavor = \"EU.huge\"",
    );
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 1);
    assert!(
        out.lines().any(|l| l == "✗ flavor EU.huge: not available in zone TelekomOP/Munich; flavors there: EU.small, EU.medium, EU.large"),
        "{out}"
    );
}

#[test]
fn unreachable_url() {
    let w = World::new();
    let (_reserved, port) = hostile_server::refusing_port();
    let url = w.sim.url();
    replace_in_config(&w, &url, &format!("http://127.0.0.1:{port}"));
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 1);
    let reach = out
        .lines()
        .find(|l| l.starts_with("✗ reach: "))
        .unwrap_or_default();
    assert!(
        reach.starts_with(&format!("✗ reach: http://127.0.0.1:{port}: cannot connect")),
        "{out}"
    );
    assert!(
        reach.ends_with("check edge_connect.url and the network path"),
        "{out}"
    );
}

#[test]
fn world_readable_credentials() {
    let w = World::new();
    let creds = w.write_credentials(PASSWORD, 0o644);
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        out.lines().rev().nth(1).map(String::from),
        Some(format!(
            "✗ credentials: credentials_file {} is readable by group and others (mode 644); run: chmod 600 {}",
            creds.display(),
            creds.display()
        ))
    );
    // The advice, run as printed, is what the check wanted.
    let advice = out
        .split_once("run: ")
        .and_then(|(_, c)| c.lines().next())
        .unwrap_or_default()
        .trim();
    let ran = std::process::Command::new("sh")
        .args(["-c", advice])
        .status()
        .expect("sh runs");
    assert!(ran.success(), "{advice}");
    let (code, out) = check(&w, &[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn bad_extra_specs_and_image() {
    let w = World::new();
    let specs = w.dir.path().join("specs.json");
    std::fs::write(&specs, r#"{"flavor":"EU.medium","colour":"blue"}"#).unwrap();
    let (code, out) = check(
        &w,
        &[
            "--extra-specs",
            &specs.display().to_string(),
            "--image",
            "not an image",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        out.lines()
            .any(|l| l.starts_with("✗ extra specs: invalid extra_specs: unknown field `colour`")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("✗ image: \"not an image\"")),
        "{out}"
    );
}

#[test]
fn deploy_test_reports_an_image_that_cannot_run_on_each_site() {
    let w = World::with_sim(two_zones(), Site::Zone, "deployment = \"docker\"");
    let specs = w.dir.path().join("specs.json");
    std::fs::write(
        &specs,
        r#"{"zones":[{"organization":"TelekomOP","name":"Munich"},{"organization":"TelekomOP","name":"Berlin"}]}"#,
    )
    .unwrap();
    // Munich's docker cannot pull the image (docs/edge-connect-behaviours.md B13); Berlin can.
    let image = "registry.example.com/ci/runner:13";
    w.sim.inject(edge_connect_sim::Fault::stream_error(
        "CreateAppInst",
        3,
        format!("Create App Inst failed: error pulling docker image: {image}, Error response from daemon: manifest for {image} not found: manifest unknown: manifest unknown, Process exited with status 1"),
    ));
    let (code, out) = check(
        &w,
        &[
            "--extra-specs",
            &specs.display().to_string(),
            "--image",
            image,
            "--deploy-test",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.lines().any(|l| l.starts_with(&format!(
            "✗ deploy test zone TelekomOP/Munich: image {image} cannot be pulled on TelekomOP/Munich ("
        )) && l.ends_with("check the image name and tag, and image_pull_username / image_pull_password_env for a private registry")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with(&format!(
            "✓ deploy test zone TelekomOP/Berlin: {image} runs there (CreateInstance "
        ))),
        "{out}"
    );
    w.assert_nothing_left();
}

/// `check` names what a create of the pool uses: for a pool sized by `resources` its size,
/// once, and that no flavor is used (issue 44); for a pool with a flavor that flavor only, not
/// the config's default beside it.
#[test]
fn check_names_the_size_or_the_flavor_a_create_uses_once() {
    let w = World::new();
    let specs = w.dir.path().join("specs.json");
    let specs_arg = specs.display().to_string();
    std::fs::write(&specs, r#"{"resources":{"cpu":2,"memory":4096,"disk":20}}"#).unwrap();
    let (code, out) = check(&w, &["--extra-specs", &specs_arg]);
    assert_eq!(code, 0, "{out}");
    let sizes: Vec<&str> = out.lines().filter(|l| l.contains("size")).collect();
    assert_eq!(
        sizes,
        ["✓ size: extra_specs.resources: cpu 2, memory 4096 MB, disk 20 GB for the whole pod; no flavor is used (neither edge_connect.default_flavor EU.small nor the pool's flavor in GARM)"],
        "{out}"
    );
    assert!(!out.contains("flavor EU.small:"), "{out}");

    std::fs::write(&specs, r#"{"flavor":"EU.medium"}"#).unwrap();
    let (code, out) = check(&w, &["--extra-specs", &specs_arg]);
    assert_eq!(code, 0, "{out}");
    let flavors: Vec<&str> = out.lines().filter(|l| l.contains(" flavor ")).collect();
    assert_eq!(
        flavors,
        ["✓ flavor EU.medium: available in zone TelekomOP/Munich"],
        "{out}"
    );
}

/// `--image` gets the verdict the pool's create gives it: a short name is refused for a pool
/// whose pod the provider writes, once, and the deploy test is not run (issue 44).
#[test]
fn check_gives_an_image_the_verdict_of_the_pools_create() {
    let w = World::new();
    let specs = w.dir.path().join("specs.json");
    std::fs::write(&specs, r#"{"docker":"dind"}"#).unwrap();
    let (code, out) = check(
        &w,
        &[
            "--extra-specs",
            &specs.display().to_string(),
            "--image",
            "node:22",
            "--deploy-test",
        ],
    );
    assert_eq!(code, 1, "{out}");
    let images: Vec<&str> = out.lines().filter(|l| l.contains("node:22")).collect();
    assert_eq!(
        images,
        ["✗ image: the pool's image `node:22` does not name its registry; a pool with docker or resources needs it fully qualified (docker.io/..., ghcr.io/...), as Edge Connect reads the registry of every image of the pod"],
        "{out}"
    );
    assert_has(&out, "- skipped: deploy test");
    assert_eq!(w.calls("CreateApp"), 0);
    // A pool without a pod of the provider's takes the short name, as its create does.
    let (code, out) = check(&w, &["--image", "node:22"]);
    assert_eq!(code, 0, "{out}");
    assert_has(&out, "✓ image: node:22 is well formed");
}
