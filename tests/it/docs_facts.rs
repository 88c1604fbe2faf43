//! Facts about GARM that the docs state in several places, held to GARM's source.

use std::path::Path;

/// GARM's default `runner_bootstrap_timeout` is 20 minutes (GARM
/// `util/appdefaults/appdefaults.go:26`, `DefaultRunnerBootstrapTimeout = 20`, in minutes;
/// docs/operations.md, "Timeouts"). Every line of the docs that gives that default says 20
/// minutes, none a number of seconds such as the provider's own 900.
#[test]
fn every_stated_default_of_garms_bootstrap_timeout_is_20_minutes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![
        root.join("README.md"),
        root.join("config/provider.example.toml"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut stated = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable doc");
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let about_it =
                lower.contains("bootstrap timeout") || lower.contains("bootstrap_timeout");
            if about_it && lower.contains("default") {
                stated += 1;
                assert!(
                    lower.contains("20 min") || lower.contains("20-minute"),
                    "{}:{}: GARM's default bootstrap timeout is 20 minutes: {line}",
                    file.display(),
                    n + 1
                );
            }
        }
    }
    assert!(
        stated >= 3,
        "the docs state the default in {stated} places only"
    );
}

/// The string literals of the first `[...]` in `text` (`&["bash", "curl"]`).
fn literals_of_list(text: &str) -> Vec<String> {
    let Some(start) = text.find('[') else {
        return Vec::new();
    };
    let list = &text[start + 1..];
    let list = &list[..list.find(']').unwrap_or(list.len())];
    list.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every program a test that `#[ignore]`s itself for its needs runs or requires, every
/// variable it reads and every `.ci/` script its reason names, read from the tests' code.
fn needs_of_ignored_tests(root: &Path) -> std::collections::BTreeSet<String> {
    let mut needs = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(root.join("tests/it")).expect("tests/it") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("readable test");
        if !text.contains("#[ignore = \"needs") {
            continue;
        }
        for (at, _) in text.match_indices("#[ignore = \"needs") {
            let reason = &text[at..at + text[at..].find("\"]").unwrap_or(0)];
            needs.extend(
                reason
                    .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ')')
                    .filter(|w| w.starts_with(".ci/"))
                    .map(str::to_string),
            );
        }
        for marker in [
            "require_tools(",
            "ENTRYPOINT_TOOLS: &[&str] =",
            "Command::new(",
            "std::env::var(",
        ] {
            for (at, _) in text.match_indices(marker) {
                let rest = &text[at + marker.len()..];
                if marker.ends_with('(') && rest.starts_with('"') {
                    needs.extend(rest.split('"').nth(1).map(str::to_string));
                } else if !marker.ends_with('(') || rest.starts_with("&[") {
                    needs.extend(literals_of_list(rest));
                }
            }
        }
        // entrypoint_test!(name, &[tools], body): the tools of one test.
        for (at, _) in text.match_indices("entrypoint_test!(") {
            let head = &text[at..];
            let head = &head[..head.find("async").unwrap_or(0)];
            if head.contains("&[") {
                needs.extend(literals_of_list(head));
            }
        }
    }
    needs
}

/// README's first screen says what `cargo test -- --include-ignored` needs beyond Rust: each
/// program, variable and script the ignored tests require is named there.
#[test]
fn the_readme_names_everything_the_ignored_tests_need() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let first_screen = &readme[..readme.find("\n---\n").expect("README's first rule")];
    let needs = needs_of_ignored_tests(root);
    for need in ["python3", "prometheus", "docker", "GARM_TEST_DOCKER_HOST"] {
        assert!(
            needs.contains(need),
            "{need} not found in the tests: {needs:?}"
        );
    }
    let unnamed: Vec<&String> = needs
        .iter()
        .filter(|need| {
            !first_screen.contains(&format!("`{need}`"))
                && !first_screen.contains(&format!(" {need}`"))
        })
        .collect();
    assert!(
        unnamed.is_empty(),
        "README's first screen does not name {unnamed:?}, which the ignored tests need"
    );
}

/// README's "What it does" table: the row of each GARM command names every Edge Connect call
/// the command makes, as the simulator's request log records them, on a zone and on a cloudlet
/// (Gen2 and Gen3) and for a pool with pull credentials (the create that reads its App back).
#[test]
fn the_readme_names_every_call_of_each_garm_command() {
    use crate::support::{fixture_with, Site, World, POOL};
    use edge_connect_sim::{ApiGeneration, SimConfig};

    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let row = |command: &str| -> String {
        readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{command}` |")))
            .unwrap_or_else(|| panic!("README has no row for {command}"))
            .split(" | ")
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    let pulled = serde_json::json!({
        "image_pull_username": "robot",
        "image_pull_password_env": "EDP_EDGE_CONNECT_PULL"
    });
    for (api, site) in [
        (ApiGeneration::Gen3, Site::Zone),
        (ApiGeneration::Gen3, Site::Cloudlet),
        (ApiGeneration::Gen2, Site::Cloudlet),
    ] {
        let w = World::with_sim(
            SimConfig {
                api,
                ..SimConfig::default()
            },
            site,
            "",
        );
        let mut seen = 0;
        let mut calls_of = |command: &str, run: &dyn Fn() -> crate::support::Run| {
            let r = run();
            assert_eq!(r.code, 0, "{command} on {api:?} {site:?}: {}", r.stderr);
            let log = w.sim.request_log();
            let named = row(command);
            for entry in &log[seen..] {
                if entry.rpc != "login" {
                    assert!(
                        named.contains(&entry.rpc),
                        "README's {command} row does not name {} (on {api:?} {site:?}): {named}",
                        entry.rpc
                    );
                }
            }
            seen = log.len();
        };
        let id = ("GARM_INSTANCE_ID", "garm-docs1");
        calls_of("CreateInstance", &|| {
            let mut v: serde_json::Value = serde_json::from_str(&fixture_with(
                "bootstrap-github-jit.json",
                "garm-docs1",
                POOL,
            ))
            .expect("fixture");
            v["extra_specs"] = pulled.clone();
            w.garm(
                "CreateInstance",
                &[
                    ("GARM_POOL_ID", POOL),
                    ("EDP_EDGE_CONNECT_PULL", "pull-secret"),
                ],
                Some(&v.to_string()),
            )
        });
        calls_of("GetInstance", &|| w.garm("GetInstance", &[id], None));
        calls_of("ListInstances", &|| {
            w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None)
        });
        calls_of("StopInstance", &|| w.garm("StopInstance", &[id], None));
        calls_of("StartInstance", &|| w.garm("StartInstance", &[id], None));
        calls_of("DeleteInstance", &|| w.garm("DeleteInstance", &[id], None));
        calls_of("CreateInstance", &|| {
            w.create("bootstrap-github-jit.json", "garm-docs2", POOL, &[])
        });
        calls_of("RemoveAllInstances", &|| {
            w.garm("RemoveAllInstances", &[], None)
        });
        w.assert_nothing_left();
    }
}

/// Every per-pool setting the provider takes (its extra specs schema, as `schema extra-specs`
/// prints it) is documented where the README documents pools' settings.
#[test]
fn the_readme_documents_every_extra_specs_key() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let start = readme
        .find("### Per-pool settings")
        .expect("README's pool settings");
    let end = start
        + readme[start..]
            .find("\n## ")
            .expect("the section after the pool settings");
    let section = &readme[start..end];
    let r = crate::support::run(
        crate::support::command().args(["schema", "extra-specs"]),
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let schema: serde_json::Value = serde_json::from_str(&r.stdout).expect("a JSON schema");
    let keys = schema["properties"].as_object().expect("properties");
    assert!(keys.len() > 10, "{keys:?}");
    let undocumented: Vec<&String> = keys
        .keys()
        .filter(|k| !section.contains(&format!("`{k}`")) && !section.contains(&format!("\"{k}\"")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "README's pool settings do not document {undocumented:?}"
    );
    // The sidecar images `docker_image` replaces, as the provider pins them.
    for image in [
        garm_provider_edge_connect::pod::DEFAULT_DIND_IMAGE,
        garm_provider_edge_connect::pod::DEFAULT_BUILDKIT_IMAGE,
    ] {
        assert!(
            section.contains(&format!("`{image}`")),
            "README lacks {image}"
        );
    }
}

/// The commit of GARM's development branch the docs' facts about it were read at
/// (docs/operations.md, "Supported GARM versions").
const GARM_READ_AT: &str = "afda4e76f1808e8b41d72edd0c17f99a51d84758";

/// The docs cite GARM's main at one commit, the one its facts were read at: every commit in a
/// link into cloudbase/garm, and every commit in backticks in a sentence about GARM, is that one.
#[test]
fn the_docs_cite_garms_main_at_one_commit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![
        root.join("README.md"),
        root.join("examples/runner-image/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let is_commit =
        |s: &str| (7..=40).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
    let mut cited = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable doc");
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let mut commits: Vec<&str> = line
                .match_indices("github.com/cloudbase/garm/blob/")
                .filter_map(|(at, m)| line[at + m.len()..].split('/').next())
                .filter(|r| is_commit(r))
                .collect();
            // A sentence about GARM may name the commit on its next line (not so a table's row).
            let prose_after_garm = n > 0
                && lines[n - 1].contains("GARM")
                && !line.starts_with('|')
                && !lines[n - 1].starts_with('|');
            if line.contains("GARM") || prose_after_garm {
                commits.extend(line.split('`').skip(1).step_by(2).filter(|s| is_commit(s)));
            }
            for commit in commits {
                cited += 1;
                assert!(
                    GARM_READ_AT.starts_with(commit),
                    "{}:{}: GARM at {commit}, not at {} where the docs' facts were read: {line}",
                    file.display(),
                    n + 1,
                    &GARM_READ_AT[..8]
                );
            }
        }
    }
    assert!(cited >= 4, "the docs cite GARM's main {cited} times only");
}
