//! `check`: verifies, step by step, that a config will work before the first runner fails.
//!
//! Each step prints one `✓` or `✗` line; a failed step that later steps depend on stops the run.
//! Nothing is created on Edge Connect unless `--deploy-test` is given. The client, the runtime
//! and (for `--deploy-test`) the create and delete are the commands' own (`crate::pipeline`),
//! so that what `check` says is what the commands will meet.

use std::collections::HashMap;
use std::path::Path;

use crate::error::Error;
use crate::extra_specs::ExtraSpecs;

mod deploy_test;
mod remote;

/// What to check besides the config itself.
#[derive(Debug, Default)]
pub struct CheckOptions {
    /// A pool's extra specs (flavor and sites are checked too).
    pub extra_specs: Option<serde_json::Value>,
    /// A runner image to check for form (and to deploy with `deploy_test`).
    pub image: Option<String>,
    /// Run CreateInstance and DeleteInstance for a throw-away runner on each configured site,
    /// reporting the timings (or why the image does not run there).
    pub deploy_test: bool,
}

/// The outcome of one step.
pub(crate) struct Step {
    ok: bool,
    line: String,
}

/// Collects step lines and prints them as they come.
pub(crate) struct Report<'a> {
    out: &'a mut dyn std::io::Write,
    failed: usize,
}

impl Report<'_> {
    pub(crate) fn pass(&mut self, what: &str, detail: impl AsRef<str>) {
        let _ = writeln!(self.out, "✓ {what}: {}", detail.as_ref());
    }

    pub(crate) fn fail(&mut self, what: &str, detail: impl AsRef<str>) {
        self.failed += 1;
        let _ = writeln!(self.out, "✗ {what}: {}", detail.as_ref());
    }

    pub(crate) fn step(&mut self, what: &str, step: Step) -> bool {
        if step.ok {
            self.pass(what, step.line);
        } else {
            self.fail(what, step.line);
        }
        step.ok
    }
}

/// Runs every check and returns the number of failed steps (0: all good).
pub fn run(
    config_path: &Path,
    options: &CheckOptions,
    environment: &HashMap<String, String>,
    out: &mut dyn std::io::Write,
) -> usize {
    let mut report = Report { out, failed: 0 };
    // The commands' own path: config, logging, credentials, client, runtime.
    let session = match crate::pipeline::open(config_path) {
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
    let pool = ExtraSpecs::from_value(options.extra_specs.as_ref()).and_then(|specs| {
        let container = specs.container(config.edge_connect.container());
        container.map(|_| specs).map_err(Error::failed)
    });
    let specs = match pool {
        Ok(s) => {
            if options.extra_specs.is_some() {
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
        report.step("image", check_image(image));
    }
    // The deploy test's runners belong to no GARM controller: no ListInstances ever sees them.
    let controller = format!("garm-provider-edge-connect-check-{}", std::process::id());
    let quiet: crate::provider::Progress = std::sync::Arc::new(|_: &str| {});
    let ran = crate::pipeline::run(
        config.clone(),
        session.deadline,
        &controller,
        environment.clone(),
        quiet,
        async |provider| {
            remote::remote_checks(&config, provider, &specs, options, &mut report).await;
            Ok(())
        },
    );
    if let Err(e) = ran {
        report.fail("client", e.to_string());
    }
    drop(session);
    report.failed
}

fn check_image(image: &str) -> Step {
    let well_formed = !image.is_empty()
        && !image.contains(char::is_whitespace)
        && !image.starts_with('-')
        && image.split('/').all(|p| !p.is_empty())
        && !image.ends_with(':');
    Step {
        ok: well_formed,
        line: if well_formed {
            format!("{image} is well formed")
        } else {
            format!("{image:?} is not an image reference like registry.example.com/team/runner:tag")
        },
    }
}

/// Reads a JSON file for `--extra-specs`.
pub fn read_json(path: &Path) -> Result<serde_json::Value, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::failed(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::failed(format!("{}: not JSON: {e}", path.display())))
}
