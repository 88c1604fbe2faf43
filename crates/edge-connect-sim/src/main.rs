//! `edge-connect-sim`: an in-memory Edge Connect (EdgeXR Master Controller) for tests, demos
//! and local trials. Prints its base URL as the first stdout line and runs until SIGINT or
//! SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::error::ErrorKind;
use clap::Parser;
use edge_connect_sim::{
    serve, write_trial_files, ApiGeneration, CloudletSettings, ImageFault, ImageRule, PodSecurity,
    ServerRelease, SimConfig,
};

/// An in-memory Edge Connect (EdgeXR Master Controller REST API) for tests, demos and local
/// trials of the GARM provider.
///
/// Prints its base URL (http://127.0.0.1:PORT) as the first line on stdout, writes it to
/// DIR/address when --state-dir is given, and runs until SIGINT or SIGTERM. Log in with
/// POST /api/v1/login and call /api/v1/auth/ctrl/<Rpc> as on the real Master Controller.
#[derive(Debug, Parser)]
#[command(name = "edge-connect-sim", version)]
struct Cli {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,

    /// Directory for the `address` file and the `requests.log` request log (JSON lines).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,

    /// API generation: gen3 (zones; Edge Connect today) or gen2 (cloudlet in the AppInst key,
    /// no ShowZone).
    #[arg(long, value_name = "GEN", default_value = "gen3")]
    api: ApiGeneration,

    /// Users that may log in, NAME:PASSWORD, comma separated or repeated
    /// [default: garm:garm-password].
    #[arg(long, value_name = "NAME:PASSWORD", value_delimiter = ',', value_parser = parse_user)]
    user: Vec<(String, String)>,

    /// Organizations every user belongs to [default: edp-developer-framework].
    #[arg(long, value_name = "ORG", value_delimiter = ',')]
    org: Vec<String>,

    /// Region names accepted in requests [default: EU].
    #[arg(long, value_name = "REGION", value_delimiter = ',')]
    region: Vec<String>,

    /// Flavor names; sizes follow the name (small, medium, large, ...)
    /// [default: EU.small,EU.medium,EU.large].
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    flavor: Vec<String>,

    /// Edge sites, OPERATOR-ORG/NAME [default: TelekomOP/Munich].
    #[arg(long, value_name = "ORG/NAME", value_delimiter = ',', value_parser = parse_site)]
    cloudlet: Vec<(String, String)>,

    /// Zones (gen3), OPERATOR-ORG/NAME; a zone holds the cloudlet of the same name, else the
    /// first cloudlet of its organization that no other zone holds [default: TelekomOP/Munich].
    #[arg(long, value_name = "ORG/NAME", value_delimiter = ',', value_parser = parse_site)]
    zone: Vec<(String, String)>,

    /// Platform release imitated: current, before-registry-credentials (drops App
    /// username/credentials, before 2025-10-17) or before-env-vars (also drops App
    /// env_vars/secret_env_vars and AppInst annotations, before 2024-03-28).
    #[arg(long, value_name = "RELEASE", default_value = "current")]
    release: ServerRelease,

    /// Cloudlets whose CRM runs centrally, OPERATOR-ORG/NAME: a client that closes a
    /// CreateAppInst stream early makes the controller undo the create.
    #[arg(long, value_name = "ORG/NAME", value_delimiter = ',', value_parser = parse_site)]
    central_crm: Vec<(String, String)>,

    /// Cloudlets whose cluster enforces a Pod Security level on the AppInsts' namespaces,
    /// OPERATOR-ORG/NAME=LEVEL, LEVEL as Kubernetes names it: privileged (what EdgeXR's own
    /// clusters admit), baseline or restricted. A pod the level forbids is never created and
    /// the AppInst fails with the admission's message: baseline refuses a privileged container
    /// and Unconfined seccomp or AppArmor profiles, restricted also a container that may run
    /// as root.
    #[arg(long, value_name = "ORG/NAME=LEVEL", value_delimiter = ',', value_parser = parse_pod_security)]
    pod_security: Vec<((String, String), PodSecurity)>,

    /// Images that cannot be pulled, as patterns where `*` matches anything
    /// (registry.example.com/*): Kubernetes pods wait in ErrImagePull/ImagePullBackOff,
    /// docker creates fail.
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    unpullable_image: Vec<String>,

    /// Images whose container exits at once (CrashLoopBackOff on Kubernetes), as patterns.
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    crashing_image: Vec<String>,

    /// Images whose container exits with an error every time and is seen terminated at every
    /// poll (`Error`, never CrashLoopBackOff, on Kubernetes), as patterns.
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    terminating_image: Vec<String>,

    /// Images whose pod no node can take (Pending without containers), as patterns.
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    unschedulable_image: Vec<String>,

    /// Seconds the CRM waits for a pod that does not come up before it reports the AppInst
    /// Ready anyway (the real one: 900); the rest of that wait is scaled alike.
    #[arg(long, value_name = "SECS", default_value = "900", value_parser = parse_secs)]
    crm_max_wait: Duration,

    /// Lifetime of login tokens in seconds.
    #[arg(long, value_name = "SECS", default_value = "86400", value_parser = parse_secs)]
    token_ttl: Duration,

    /// Total duration of an AppInst create/delete stream in seconds (fractions allowed),
    /// spread over its progress lines.
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = parse_secs)]
    create_delay: Duration,

    /// Milliseconds added to every API call before it is answered.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    latency_ms: u64,

    /// Milliseconds to wait before answering a wrong password (the real MC waits ~3000).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    bad_auth_delay_ms: u64,

    /// Write DIR/provider.toml and DIR/credentials.toml (mode 0600) for this simulator, with
    /// its URL, user, organization, region, flavor and site, so the provider's CLI works
    /// against it at once: `garm-provider-edge-connect --config DIR/provider.toml ...`.
    #[arg(long, value_name = "DIR")]
    write_provider_config: Option<PathBuf>,

    /// Enable the /__sim/* control endpoints (fault injection, seeding, state dump, reset,
    /// request log, capacity, containers). They need no token: use only for tests.
    #[arg(long)]
    faults: bool,
}

fn parse_user(s: &str) -> Result<(String, String), String> {
    match s.split_once(':') {
        Some((name, password)) if !name.is_empty() && !password.is_empty() => {
            Ok((name.to_string(), password.to_string()))
        }
        _ => Err(format!("expected NAME:PASSWORD, got '{s}'")),
    }
}

fn parse_site(s: &str) -> Result<(String, String), String> {
    match s.split_once('/') {
        Some((org, name)) if !org.is_empty() && !name.is_empty() => {
            Ok((org.to_string(), name.to_string()))
        }
        _ => Err(format!("expected ORG/NAME, got '{s}'")),
    }
}

fn parse_pod_security(s: &str) -> Result<((String, String), PodSecurity), String> {
    let (site, level) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("expected ORG/NAME=LEVEL, got '{s}'"))?;
    Ok((parse_site(site)?, level.parse()?))
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("expected a number of seconds, got '{s}'"))?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("expected a non-negative number of seconds, got '{s}'"))
}

/// The given list, or the default when the flag was not used.
fn or_default<T>(given: Vec<T>, default: Vec<T>) -> Vec<T> {
    if given.is_empty() {
        default
    } else {
        given
    }
}

/// One entry per cloudlet that a flag sets something of, all its flags in it. A level for a
/// site the simulator does not have would leave the trial silently permissive: refused.
fn cloudlet_settings(
    cloudlets: &[(String, String)],
    central_crm: &[(String, String)],
    pod_security: &[((String, String), PodSecurity)],
) -> Result<Vec<CloudletSettings>, String> {
    let mut settings: Vec<CloudletSettings> = Vec::new();
    for (org, name) in central_crm {
        settings_of(&mut settings, org, name).crm_on_edge = false;
    }
    for ((org, name), level) in pod_security {
        if !cloudlets.iter().any(|(o, n)| o == org && n == name) {
            let known: Vec<String> = cloudlets.iter().map(|(o, n)| format!("{o}/{n}")).collect();
            return Err(format!(
                "--pod-security: {org}/{name} is not a cloudlet of this simulator (its cloudlets: {}; see --cloudlet)",
                known.join(", ")
            ));
        }
        settings_of(&mut settings, org, name).pod_security = *level;
    }
    Ok(settings)
}

/// The settings entry of a cloudlet, added when it has none yet.
fn settings_of<'a>(
    settings: &'a mut Vec<CloudletSettings>,
    organization: &str,
    name: &str,
) -> &'a mut CloudletSettings {
    let at = match settings
        .iter()
        .position(|s| s.organization == organization && s.name == name)
    {
        Some(at) => at,
        None => {
            settings.push(CloudletSettings::new(organization, name));
            settings.len() - 1
        }
    };
    &mut settings[at]
}

impl Cli {
    /// The simulator these flags describe, or why a flag names something it does not hold.
    fn config(self) -> Result<SimConfig, String> {
        let defaults = SimConfig::default();
        let cloudlets = or_default(self.cloudlet, defaults.cloudlets);
        let cloudlet_settings =
            cloudlet_settings(&cloudlets, &self.central_crm, &self.pod_security)?;
        let images = [
            (&self.unpullable_image, ImageFault::CannotPull),
            (&self.crashing_image, ImageFault::Crashes),
            (&self.terminating_image, ImageFault::Terminates),
            (&self.unschedulable_image, ImageFault::Unschedulable),
        ]
        .into_iter()
        .flat_map(|(patterns, fault)| patterns.iter().map(move |p| ImageRule::new(p, fault)))
        .collect();
        Ok(SimConfig {
            api: self.api,
            users: or_default(self.user, defaults.users),
            orgs: or_default(self.org, defaults.orgs),
            regions: or_default(self.region, defaults.regions),
            flavors: or_default(self.flavor, defaults.flavors),
            cloudlets,
            zones: or_default(self.zone, defaults.zones),
            token_ttl: self.token_ttl,
            create_delay: self.create_delay,
            latency: Duration::from_millis(self.latency_ms),
            bad_auth_delay: Duration::from_millis(self.bad_auth_delay_ms),
            release: self.release,
            cloudlet_settings,
            cloudlet_pools: defaults.cloudlet_pools,
            images,
            crm_max_wait: self.crm_max_wait,
            two_factor_users: defaults.two_factor_users,
            faults_enabled: self.faults,
            state_dir: self.state_dir,
        })
    }
}

/// Parses the command line; usage errors become one line on stderr and exit code 2.
fn parse_cli() -> Result<Cli, ExitCode> {
    match Cli::try_parse() {
        Ok(cli) => Ok(cli),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            Err(ExitCode::SUCCESS)
        }
        Err(e) => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("edge-connect-sim: {first} (see --help)");
            Err(ExitCode::from(2))
        }
    }
}

/// SIGTERM and SIGINT, registered when this is called (not when the future is first polled):
/// whoever reads the printed URL may stop the simulator at once, and a signal that arrived
/// before its handler would kill the process instead of stopping it cleanly.
#[cfg(unix)]
fn stop_signals() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

#[cfg(not(unix))]
fn stop_signals() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

async fn run(config: SimConfig, listen: SocketAddr, trial: Option<PathBuf>) -> anyhow::Result<()> {
    let stop = stop_signals()?;
    let server = serve(config.clone(), listen).await?;
    if let Some(dir) = trial {
        let files = write_trial_files(&dir, &server.url(), &config)
            .with_context(|| format!("cannot write the provider config into {}", dir.display()))?;
        eprintln!(
            "edge-connect-sim: wrote {} and {}; try: garm-provider-edge-connect --config {} check",
            files.config.display(),
            files.credentials.display(),
            files.config.display()
        );
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", server.url())?;
    stdout.flush()?;
    drop(stdout);
    stop.await;
    server.shutdown_and_wait(Duration::from_secs(2)).await;
    Ok(())
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let (listen, trial) = (cli.listen, cli.write_provider_config.clone());
    let config = match cli.config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("edge-connect-sim: {e} (see --help)");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("edge-connect-sim: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config, listen, trial)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("edge-connect-sim: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(s: &str) -> (String, String) {
        parse_site(s).unwrap()
    }

    #[test]
    fn a_site_named_by_two_flags_gets_both_settings_in_one_entry() {
        let settings = cloudlet_settings(
            &[site("TelekomOP/Munich"), site("TelekomOP/Berlin")],
            &[site("TelekomOP/Munich")],
            &[parse_pod_security("TelekomOP/Munich=restricted").unwrap()],
        )
        .unwrap();
        assert_eq!(
            settings,
            [CloudletSettings {
                crm_on_edge: false,
                pod_security: PodSecurity::Restricted,
                ..CloudletSettings::new("TelekomOP", "Munich")
            }]
        );
    }

    #[test]
    fn a_level_for_a_site_the_simulator_lacks_is_refused_naming_its_sites() {
        assert_eq!(
            cloudlet_settings(
                &[site("TelekomOP/Munich")],
                &[],
                &[parse_pod_security("TelekomOP/Berlin=baseline").unwrap()],
            ),
            Err("--pod-security: TelekomOP/Berlin is not a cloudlet of this simulator (its cloudlets: TelekomOP/Munich; see --cloudlet)".into())
        );
    }
}
