//! `check`: verifies, step by step, that a config will work before the first runner fails.
//!
//! Each step prints one `✓` or `✗` line; a failed step that later steps depend on stops the run.
//! Nothing is created on Edge Connect unless `--deploy-test` is given. The client, the runtime
//! and (for `--deploy-test`) the create and delete are the commands' own (`crate::pipeline`),
//! so that what `check` says is what the commands will meet.
//!
//! The deploy test's runners belong to [`CHECK_CONTROLLER`], one id for every config, so that
//! `list` and `remove-all` reach them with `--controller-id garm-provider-edge-connect-check` and
//! each deploy test first removes what earlier ones left (docs/operations.md).

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::config::{Config, ENV_PASSWORD, ENV_USERNAME};
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::provider::Progress;

mod deploy_test;
pub(crate) mod leftovers;
mod remote;

/// The GARM controller id, and the pool id, of the deploy test's runners: no GARM controller
/// uses it (GARM's are UUIDs), and every check of an organization shares it, so that one finds
/// what another left.
pub const CHECK_CONTROLLER: &str = "garm-provider-edge-connect-check";

/// What to check besides the config itself: the `check` subcommand's arguments.
#[derive(Debug, clap::Args)]
pub struct CheckOptions {
    /// A pool's extra specs JSON file to check as well.
    #[arg(long)]
    pub extra_specs: Option<PathBuf>,
    /// A runner image reference to check (and to deploy with --deploy-test).
    #[arg(long)]
    pub image: Option<String>,
    /// Create and delete a throw-away App + AppInst and report the timings.
    #[arg(long)]
    pub deploy_test: bool,
}

/// Longest detail of a step line, in characters (a server's message may be 64 KiB).
const MAX_DETAIL_CHARS: usize = 2000;

/// Prints step lines on stdout as they come, and counts the failed steps.
pub(crate) struct Report {
    failed: usize,
}

impl Report {
    /// Names the steps not run because one before them failed (never none: the last step that
    /// can stop the run is followed by others).
    pub(crate) fn skipped(&mut self, stages: &[&str]) {
        let names = stages.join(", ");
        let _ = writeln!(
            std::io::stdout(),
            "- skipped: {names} (each needs what the failed step above would have found)"
        );
    }

    pub(crate) fn pass(&mut self, what: &str, detail: impl AsRef<str>) {
        self.line('✓', what, detail.as_ref());
    }

    pub(crate) fn fail(&mut self, what: &str, detail: impl AsRef<str>) {
        self.failed += 1;
        self.line('✗', what, detail.as_ref());
    }

    /// One line: the step's name (a site or flavor as the extra specs file or the server spells
    /// it) and its detail (often the controller's text) masked, then shown as text a terminal
    /// cannot take for commands, and cut.
    fn line(&mut self, mark: char, what: &str, detail: &str) {
        let scrubber = crate::pipeline::scrubber();
        let what = crate::text::echo_max(&scrubber.scrub(what), MAX_DETAIL_CHARS);
        let detail = crate::text::echo_max(&scrubber.scrub(detail), MAX_DETAIL_CHARS);
        let _ = writeln!(std::io::stdout(), "{mark} {what}: {detail}");
    }
}

/// Runs every check and returns the number of failed steps (0: all good), or
/// [`Error::Interrupted`] when SIGINT, SIGTERM or SIGHUP stopped the deploy test (after its cleanup).
/// `extra_specs` is the content of `options.extra_specs`; `progress` receives what the deploy
/// test's create, delete and cleanup are doing. Every line, on stdout, is masked by the
/// command's scrubber.
pub fn run(
    config_path: &Path,
    controller_id: Option<&str>,
    options: &CheckOptions,
    extra_specs: Option<&serde_json::Value>,
    progress: Progress,
) -> Result<usize, Error> {
    let environment = &crate::pipeline::process_environment();
    let mut report = Report { failed: 0 };
    // A failed step of these two: every later one is named skipped, and the run ends.
    let stop = |report: &mut Report, what: &str, e: Error, skipped: &[&str]| {
        report.fail(what, e.to_string());
        let mut skipped = [skipped, &remote::REMOTE_STAGES].concat();
        skipped.extend(options.deploy_test.then_some("deploy test"));
        report.skipped(&skipped);
        Ok(report.failed)
    };
    // The commands' own path: config, logging, credentials, client, runtime.
    let (session, log) = match crate::pipeline::open(config_path) {
        Ok(opened) => opened,
        Err(e) => return stop(&mut report, "config", e, &["credentials"]),
    };
    let retired: String = session.retired.iter().map(|w| format!("; {w}")).collect();
    let line = format!("{} parses and validates{retired}", config_path.display());
    report.pass("config", line);
    let config = session.config.clone();
    let c = match config.credentials(environment) {
        Ok(c) => c,
        Err(e) => return stop(&mut report, "credentials", e, &[]),
    };
    // Each value comes from its variable when that is set, else from the file.
    let source = |var: &'static str| match &config.credentials_file {
        _ if environment.get(var).is_some_and(|v| !v.is_empty()) => var.to_string(),
        Some(path) => format!("credentials_file {}", path.display()),
        None => "credentials_file".to_string(),
    };
    let (user, password) = (source(ENV_USERNAME), source(ENV_PASSWORD));
    let line = if user == password {
        format!("user {} and password from {user}", c.username)
    } else {
        format!("user {} from {user}, password from {password}", c.username)
    };
    report.pass("credentials", line);
    // The pool as CreateInstance will judge it, over this config.
    let specs = ExtraSpecs::judge(extra_specs, Some(&config));
    match &specs {
        Ok(_) if extra_specs.is_some() => report.pass("extra specs", "valid"),
        Err(e) => report.fail("extra specs", e.to_string()),
        Ok(_) => {}
    }
    let specs = specs.unwrap_or_default();
    report_size(&specs, &config, &mut report);
    if let Some(image) = &options.image {
        check_image(image, &specs, &mut report);
    }
    let sites = crate::provider::placement::candidates(&config, &specs, "check");
    let remove_all = remove_all_command(config_path);
    let ran = crate::pipeline::run(
        session,
        CHECK_CONTROLLER,
        environment.clone(),
        progress,
        Vec::from_iter(crate::pipeline::pull_password(&specs, environment)),
        async |provider| {
            remote::remote_checks(&config, provider, &specs, &sites, &mut report).await;
            if config.site_cache.enabled() && report.failed == 0 {
                site_caches(
                    &config,
                    provider,
                    controller_id,
                    &sites,
                    environment,
                    &mut report,
                )
                .await;
            }
            if !options.deploy_test {
                return Ok(());
            }
            if report.failed > 0 {
                report.skipped(&["deploy test"]);
                return Ok(());
            }
            deploy_test::deploy_test(
                provider,
                &sites,
                options.image.as_deref(),
                extra_specs,
                &remove_all,
                &mut report,
            )
            .await
        },
    );
    drop(log);
    match ran {
        Err(e @ Error::Interrupted(_)) => return Err(e),
        Err(e) => report.fail("client", e.to_string()),
        Ok(_) => {}
    }
    Ok(report.failed)
}

/// The site cache of `controller_id` on each site (absent, starting, Ready at its address,
/// failed with the reason; docs/site-cache.md), and the actions cache's secret.
async fn site_caches(
    config: &Config,
    provider: &crate::provider::Provider,
    controller_id: Option<&str>,
    sites: &[crate::config::Placement],
    environment: &HashMap<String, String>,
    report: &mut Report,
) {
    use crate::provider::site_cache::CacheState;
    if config.site_cache.actions_cache {
        match config.site_cache_secret(environment) {
            Ok(_) => report.pass("site cache secret", "set"),
            Err(e) => report.fail("site cache secret", e.to_string()),
        }
    }
    let Some(controller_id) = controller_id else {
        report.pass(
            "site cache",
            "give --controller-id (GARM's controller id) to see its caches",
        );
        return;
    };
    match provider.site_cache_states(controller_id, sites).await {
        Ok(states) => {
            for (site, service, state) in states {
                let what = format!("site cache {} on {site}", service.word());
                match state {
                    CacheState::Failed(_) => report.fail(&what, state.to_string()),
                    CacheState::Absent => report.pass(
                        &what,
                        "absent: the site's first runner starts it, or run site-cache up",
                    ),
                    _ => report.pass(&what, state.to_string()),
                }
            }
        }
        Err(e) => report.fail("site cache", e.to_string()),
    }
}

/// The command line that removes every runner of the deploy test with this config: this
/// program as it was started, each word quoted for a POSIX shell where it needs it.
fn remove_all_command(config_path: &Path) -> String {
    let program = std::env::args_os()
        .next()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "garm-provider-edge-connect".to_string());
    let config = config_path.display().to_string();
    let (program, config) = (shell_word(&program), shell_word(&config));
    format!("{program} --config {config} --controller-id {CHECK_CONTROLLER} remove-all --yes")
}

/// `word` as one word of a POSIX shell: as it is when it holds nothing the shell reads,
/// otherwise in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The one line of a pool sized by `resources` (none for another pool): the size a create
/// sends, and that no flavor is used (neither the config's default nor GARM's pool flavor,
/// which `check` cannot see).
fn report_size(specs: &ExtraSpecs, config: &Config, report: &mut Report) {
    let Some(resources) = &specs.resources else {
        return;
    };
    let not_used = match &config.edge_connect.default_flavor {
        Some(f) => format!("neither edge_connect.default_flavor {f} nor the pool's flavor in GARM"),
        None => "not the pool's flavor in GARM either".into(),
    };
    let line = format!(
        "extra_specs.resources: cpu {}, memory {} MB, disk {} GB for the whole pod; no flavor is used ({not_used})",
        edge_connect::models::vcpus(resources.milli_cpu()),
        resources.memory,
        resources.disk
    );
    // Judged already (`ExtraSpecs::judge`), so the split holds.
    match resources.split(specs.docker.unwrap_or_default()) {
        Ok(_) => report.pass("size", line),
        Err(e) => report.fail("size", e),
    }
}

/// The image as a person's reference and as this pool's create will take it
/// ([`crate::pod::Asked::check_runner_image`]): one verdict.
fn check_image(image: &str, specs: &ExtraSpecs, report: &mut Report) {
    let well_formed = !image.is_empty()
        && !image.contains(char::is_whitespace)
        && !image.starts_with('-')
        && image.split('/').all(|p| !p.is_empty())
        && !image.ends_with(':');
    let verdict = match well_formed {
        true => specs.pod().check_runner_image(image),
        false => Err(format!(
            "{image:?} is not an image reference like registry.example.com/team/runner:tag"
        )),
    };
    match verdict {
        Ok(()) => report.pass("image", format!("{image} is well formed")),
        Err(why) => report.fail("image", why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_reads_each_quoted_word_back_as_it_was() {
        let words = [
            "plain/path-1.toml",
            "with space",
            "it's",
            "a\\b$HOME`x`",
            "",
            "ü",
        ];
        for word in words {
            let quoted = shell_word(word);
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s {quoted}")])
                .output()
                .expect("sh runs");
            assert_eq!(String::from_utf8_lossy(&out.stdout), word, "{quoted}");
        }
        assert_eq!(shell_word("plain/path-1.toml"), "plain/path-1.toml");
    }
}
