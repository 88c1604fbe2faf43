//! `check`: verifies, step by step, that a config will work before the first runner fails.
//!
//! Each step prints one `✓` or `✗` line; a failed step that later steps depend on stops the run.
//! Nothing is created on Edge Connect unless `--deploy-test` is given. The client, the runtime
//! and (for `--deploy-test`) the create and delete are the commands' own (`crate::pipeline`),
//! so that what `check` says is what the commands will meet.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use edge_connect::Scrubber;

use crate::error::Error;
use crate::extra_specs::ExtraSpecs;

mod deploy_test;
mod remote;

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

/// Collects step lines and prints them as they come.
pub(crate) struct Report<'a> {
    out: &'a mut dyn std::io::Write,
    failed: usize,
    scrubber: &'a Scrubber,
}

impl Report<'_> {
    pub(crate) fn pass(&mut self, what: &str, detail: impl AsRef<str>) {
        self.line('✓', what, detail.as_ref());
    }

    pub(crate) fn fail(&mut self, what: &str, detail: impl AsRef<str>) {
        self.failed += 1;
        self.line('✗', what, detail.as_ref());
    }

    /// One line: the detail (often the controller's text) masked, then shown as text a
    /// terminal cannot take for commands, and cut.
    fn line(&mut self, mark: char, what: &str, detail: &str) {
        let detail = crate::text::echo_max(&self.scrubber.scrub(detail), MAX_DETAIL_CHARS);
        let _ = writeln!(self.out, "{mark} {what}: {detail}");
    }
}

/// Runs every check and returns the number of failed steps (0: all good). `extra_specs` is the
/// content of `options.extra_specs`. Every line is masked by `scrubber`, the command's.
pub fn run(
    config_path: &Path,
    options: &CheckOptions,
    extra_specs: Option<&serde_json::Value>,
    environment: &HashMap<String, String>,
    scrubber: &Scrubber,
    out: &mut dyn std::io::Write,
) -> usize {
    let mut report = Report {
        out,
        failed: 0,
        scrubber,
    };
    // The commands' own path: config, logging, credentials, client, runtime.
    let session = match crate::pipeline::open(config_path, scrubber) {
        Ok(s) => {
            report.pass(
                "config",
                format!("{} parses and validates", config_path.display()),
            );
            s
        }
        Err(e) => {
            report.fail("config", e.to_string());
            return report.failed;
        }
    };
    let config = session.config.clone();
    match config.credentials(environment) {
        Ok(c) => {
            let source = if environment.contains_key(crate::config::ENV_USERNAME) {
                "from the environment"
            } else {
                "from credentials_file"
            };
            report.pass("credentials", format!("user {} {source}", c.username));
        }
        Err(e) => {
            report.fail("credentials", e.to_string());
            return report.failed;
        }
    }
    // The pool's container as CreateInstance will resolve it, over this config's values.
    let pool = ExtraSpecs::from_value(extra_specs).and_then(|specs| {
        let container = specs.container(config.edge_connect.container());
        container.map(|_| specs).map_err(Error::failed)
    });
    let specs = match pool {
        Ok(s) => {
            if extra_specs.is_some() {
                report.pass("extra specs", "valid");
            }
            s
        }
        Err(e) => {
            report.fail("extra specs", e.to_string());
            ExtraSpecs::default()
        }
    };
    if let Some(image) = &options.image {
        check_image(image, &mut report);
    }
    let sites = crate::provider::placement::candidates(&config, &specs, "check");
    // The deploy test's runners belong to no GARM controller: no ListInstances ever sees them.
    let controller = format!("garm-provider-edge-connect-check-{}", std::process::id());
    let quiet: crate::provider::Progress = std::sync::Arc::new(|_: &str| {});
    let secrets = crate::pipeline::Secrets {
        extra_specs: extra_specs.cloned(),
        ..crate::pipeline::Secrets::none(scrubber)
    };
    let ran = crate::pipeline::run(
        config.clone(),
        session.deadline,
        secrets,
        &controller,
        environment.clone(),
        quiet,
        async |provider| {
            remote::remote_checks(&config, provider, &specs, &sites, &mut report).await;
            if options.deploy_test && report.failed == 0 {
                let image = options.image.as_deref();
                deploy_test::deploy_test(provider, &sites, image, extra_specs, &mut report).await;
            }
            Ok(())
        },
    );
    if let Err(e) = ran {
        report.fail("client", e.to_string());
    }
    drop(session);
    report.failed
}

fn check_image(image: &str, report: &mut Report<'_>) {
    let well_formed = !image.is_empty()
        && !image.contains(char::is_whitespace)
        && !image.starts_with('-')
        && image.split('/').all(|p| !p.is_empty())
        && !image.ends_with(':');
    if well_formed {
        report.pass("image", format!("{image} is well formed"));
    } else {
        report.fail(
            "image",
            format!(
                "{image:?} is not an image reference like registry.example.com/team/runner:tag"
            ),
        );
    }
}
