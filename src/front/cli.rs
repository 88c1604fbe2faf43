//! CLI mode: subcommands for people. They build the same [`Operation`] as GARM mode and run it
//! through the same provider; only the output is friendlier (pretty JSON, progress on stderr).

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};

use crate::config::Config;
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::BootstrapInstance;
use crate::provider::{Operation, Outcome};

/// garm-provider-edge-connect: GARM runners as Edge Connect Apps + AppInsts.
///
/// Run by GARM with no arguments and GARM_COMMAND set (the external-provider protocol), or by a
/// person with one of the subcommands below.
#[derive(Debug, Parser)]
#[command(name = "garm-provider-edge-connect", version = crate::VERSION, about, long_about)]
pub struct Cli {
    /// Provider config file (TOML).
    #[arg(long, short, global = true, env = "GARM_PROVIDER_CONFIG_FILE")]
    pub config: Option<PathBuf>,
    /// GARM controller id the runners belong to.
    #[arg(long, global = true, env = "GARM_CONTROLLER_ID")]
    pub controller_id: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a runner from a GARM bootstrap JSON file (as GARM's CreateInstance).
    Create {
        /// Bootstrap JSON (see examples/).
        #[arg(long)]
        bootstrap: PathBuf,
        /// Pool id; default: the bootstrap's pool_id.
        #[arg(long)]
        pool_id: Option<String>,
    },
    /// Show one runner by provider id or GARM name.
    Get {
        /// Provider id or GARM instance name.
        id: String,
    },
    /// List this controller's runners (of one pool with --pool-id).
    List {
        /// Only this pool.
        #[arg(long)]
        pool_id: Option<String>,
    },
    /// Delete a runner (App and AppInst); succeeds when it is already gone.
    Delete {
        /// Provider id or GARM instance name.
        id: String,
    },
    /// Delete every runner of this controller, in every pool.
    RemoveAll {
        /// Confirm.
        #[arg(long)]
        yes: bool,
    },
    /// Redeploy a stopped runner's AppInst.
    Start {
        /// Provider id or GARM instance name.
        id: String,
    },
    /// Remove a runner's AppInst, keeping its App.
    Stop {
        /// Provider id or GARM instance name.
        id: String,
    },
    /// Check config, credentials, reachability, login, organization, region, placement and flavors.
    Check {
        /// A pool's extra specs JSON file to check as well.
        #[arg(long)]
        extra_specs: Option<PathBuf>,
        /// A runner image reference to check (and to deploy with --deploy-test).
        #[arg(long)]
        image: Option<String>,
        /// Create and delete a throw-away App + AppInst and report the timings.
        #[arg(long)]
        deploy_test: bool,
    },
    /// Print a JSON Schema.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaKind,
    },
    /// Validate a pool's extra specs JSON file.
    ValidateExtraSpecs {
        /// JSON file.
        file: PathBuf,
    },
    /// Print the version.
    Version,
    /// Run a whole runner lifecycle against the built-in Edge Connect simulator.
    #[cfg(feature = "demo")]
    Demo,
}

/// Schemas the CLI prints.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    /// The provider config file.
    Config,
    /// Pool extra specs.
    ExtraSpecs,
}

/// Runs CLI mode; returns the exit code.
pub fn run() -> u8 {
    let cli = Cli::parse();
    match execute(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn execute(cli: Cli) -> Result<(), Error> {
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let operation = match cli.command {
        Command::Version => {
            println!("garm-provider-edge-connect {}", crate::VERSION);
            return Ok(());
        }
        Command::Schema { which } => {
            let schema = match which {
                SchemaKind::Config => Config::json_schema(),
                SchemaKind::ExtraSpecs => ExtraSpecs::json_schema(),
            };
            println!("{}", pretty(&schema));
            return Ok(());
        }
        Command::ValidateExtraSpecs { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| Error::input(format!("cannot read {}: {e}", file.display())))?;
            let value: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Error::input(format!("{}: not JSON: {e}", file.display())))?;
            ExtraSpecs::from_value(Some(&value))?;
            eprintln!("✓ {} is valid", file.display());
            return Ok(());
        }
        #[cfg(feature = "demo")]
        Command::Demo => return crate::demo::run(),
        Command::Check {
            extra_specs,
            image,
            deploy_test,
        } => {
            let config_path = cli.config.ok_or_else(|| {
                Error::input("--config (or GARM_PROVIDER_CONFIG_FILE) is required")
            })?;
            let options = crate::check::CheckOptions {
                extra_specs: extra_specs
                    .as_deref()
                    .map(crate::check::read_json)
                    .transpose()?,
                image,
                deploy_test,
            };
            let failed = crate::check::run(
                &config_path,
                &options,
                &crate::pipeline::process_environment(),
                &mut std::io::stdout(),
            );
            return if failed == 0 {
                Ok(())
            } else {
                Err(Error::Other(format!("{failed} check(s) failed")))
            };
        }
        Command::Create { bootstrap, pool_id } => {
            let file = std::fs::File::open(&bootstrap)
                .map_err(|e| Error::input(format!("cannot read {}: {e}", bootstrap.display())))?;
            Operation::create(BootstrapInstance::from_reader(file)?, pool_id, None)
        }
        Command::Get { id } => Operation::Get { instance: id },
        Command::List { pool_id: Some(p) } => Operation::List { pool_id: p },
        Command::List { pool_id: None } => Operation::ListAll,
        Command::Delete { id } => Operation::Delete { instance: id },
        Command::RemoveAll { yes } => {
            if !yes {
                return Err(Error::input(
                    "remove-all deletes every runner of this controller; add --yes to confirm",
                ));
            }
            Operation::RemoveAll
        }
        Command::Start { id } => Operation::Start { instance: id },
        Command::Stop { id } => Operation::Stop { instance: id },
    };
    let config_path = cli
        .config
        .ok_or_else(|| Error::input("--config (or GARM_PROVIDER_CONFIG_FILE) is required"))?;
    let controller_id = cli
        .controller_id
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Error::input("--controller-id (or GARM_CONTROLLER_ID) is required"))?;
    let session = crate::pipeline::open(&config_path)?;
    let summary = summary(&operation);
    let progress: crate::provider::Progress = Arc::new(|m: &str| eprintln!("  … {m}"));
    let finished = crate::pipeline::run(session.config, &controller_id, operation, progress)?;
    match finished.outcome {
        Outcome::Instance(i) => {
            println!("{}", pretty(&serde_json::to_value(&i).unwrap_or_default()))
        }
        Outcome::Instances(list) => println!(
            "{}",
            pretty(&serde_json::to_value(&list).unwrap_or_default())
        ),
        Outcome::Done => {}
    }
    eprintln!("✓ {summary} ({} Edge Connect requests)", finished.requests);
    Ok(())
}

fn summary(operation: &Operation) -> String {
    match operation {
        Operation::Create { bootstrap, .. } => format!("created {}", bootstrap.name),
        Operation::Delete { instance } => format!("deleted {instance}"),
        Operation::Get { instance } => format!("found {instance}"),
        Operation::List { pool_id } => format!("listed pool {pool_id}"),
        Operation::ListAll => "listed all pools".to_string(),
        Operation::RemoveAll => "removed all runners of this controller".to_string(),
        Operation::Start { instance } => format!("started {instance}"),
        Operation::Stop { instance } => format!("stopped {instance}"),
    }
}
