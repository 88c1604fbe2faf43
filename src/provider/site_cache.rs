//! The site caches of this controller on Edge Connect: found with one ShowAppInst by their mark,
//! started beside a runner's create or by `site-cache up`, removed by `site-cache remove`,
//! `prune` and a person's `remove-all` (docs/site-cache.md, "How the provider runs it"). No
//! runner command ever finds one: their Apps carry no runner marker.

use std::time::Duration;

use edge_connect::models::{AppInst, AppKey, NewAppInst};
use edge_connect::{ApiError, ApiErrorKind, AppInstState, Rpc, MAX_COLLECTED};
use futures_util::TryStreamExt;
use tokio::sync::oneshot::Sender;

use super::delete::{creating, Busy};
use super::placement::{self, Target};
use super::wait::retry_transient;
use super::Provider;
use crate::config::Placement;
use crate::error::Error;
use crate::site_cache::{self as cache, Service, Use};

/// At most this many cache AppInsts are kept from one answer (two services on 500 sites).
const MAX_CACHE_INSTS: usize = 1000;
/// At most this many bytes of each text kept of a cache AppInst.
const MAX_TEXT: usize = 1024;

/// Where one service's cache of one site stands, as Edge Connect's record says (in words as
/// `check` and `site-cache` show it).
#[derive(Debug, Clone, PartialEq, Eq, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum CacheState {
    /// No AppInst of it.
    Absent,
    /// An AppInst on its way (or Ready without its address yet).
    Starting,
    /// Ready at this URL.
    #[strum(to_string = "Ready at {0}")]
    Ready(String),
    /// Its AppInst failed, with the controller's reason.
    #[strum(to_string = "failed: {0}")]
    Failed(String),
}

/// One service's cache on a site, in the state the AppInsts of its App name say (the best of
/// them: Ready before starting before failed).
pub fn state_of(insts: &[AppInst], app_name: &str, service: Service) -> CacheState {
    let mine = || {
        insts
            .iter()
            .filter(move |i| i.app_key.as_ref().is_some_and(|k| k.name == app_name))
    };
    // Reached as ShowAppInst reports its access port (B36, B37): `http://host:port`,
    // `https://` where the load balancer terminates TLS.
    let mut ready = mine().filter(|i| i.state == AppInstState::Ready);
    if let Some((address, tls)) = ready.find_map(|i| i.address(service.port())) {
        return CacheState::Ready(cache::mirror_url(&address, tls));
    }
    if mine().any(|i| !i.state.is_error() && (creating(&i.state) || i.state == AppInstState::Ready))
    {
        return CacheState::Starting;
    }
    match mine().find(|i| i.state.is_error()) {
        Some(i) => CacheState::Failed(i.failure()),
        None => CacheState::Absent,
    }
}

impl Provider {
    /// The services of the site cache a runner of a pool with `docker` on a forge `forge` uses
    /// (a pool's `site_cache = false` asks for none): the mirror for a Docker or BuildKit
    /// sidecar, the actions cache for a `dind` runner of Forgejo or Gitea (GitHub's runner has
    /// no external cache; the image's entrypoint decides between forgejo-runner and Gitea's).
    pub(super) fn cache_services(
        &self,
        docker: crate::pod::DockerMode,
        forge: &str,
        opted_out: bool,
    ) -> Vec<Service> {
        use crate::pod::DockerMode;
        if opted_out {
            return Vec::new();
        }
        Service::ALL
            .into_iter()
            .filter(|s| s.enabled(&self.config))
            .filter(|s| match s {
                Service::Registry => docker != DockerMode::None,
                Service::Actions => docker == DockerMode::Dind && forge != "github",
            })
            .collect()
    }

    /// Every cache AppInst of the controller `controller_id`, on every site: one ShowAppInst by
    /// the mark (a server older than annotations answers with the organization's AppInsts, of
    /// which only those of that controller's cache Apps are kept, B23).
    pub(super) async fn cache_app_insts(&self, controller_id: &str) -> Result<Vec<AppInst>, Error> {
        let filter = AppKey {
            organization: self.organization().to_string(),
            ..AppKey::default()
        };
        let mark = [(cache::MARK_CACHE_CONTROLLER, controller_id)];
        let (client, filter, mark) = (&self.client, &filter, &mark);
        Ok(retry_transient(client, "ShowAppInst", || async move {
            let mut found = Vec::new();
            let mut insts = client.show_app_insts(filter, mark).await?;
            while let Some(mut inst) = insts.try_next().await? {
                let app = inst.app_key.as_ref();
                if app.is_none_or(|k| cache::service_of(controller_id, &k.name).is_none()) {
                    continue;
                }
                if found.len() == MAX_CACHE_INSTS {
                    // Past the bound, a cache left out would look absent: refused, not cut.
                    let what = format!(
                        "more than {MAX_CACHE_INSTS} site cache AppInsts of this controller"
                    );
                    return Err(ApiError::protocol(Rpc::ShowAppInst, what));
                }
                // What is kept of each is bounded, whatever the server sends: a DNS name, a few
                // ports, a few errors of a line each.
                // A longer name is no DNS name: no address (a new String: `clear` would keep
                // the long one's memory).
                if inst.uri.len() > MAX_TEXT {
                    inst.uri = String::new();
                }
                inst.errors.truncate(4);
                for error in &mut inst.errors {
                    if error.len() > MAX_TEXT {
                        *error = crate::text::echo_max(error, MAX_TEXT);
                    }
                }
                inst.mapped_ports
                    .retain(|p| p.fqdn_prefix.len() <= MAX_TEXT);
                inst.mapped_ports.truncate(4);
                // Its names are kept whole (they say which cache it is), and no real one is
                // this long: refused like the answer past the bound.
                if names(&inst).any(|name| name.len() > MAX_TEXT) {
                    let what = format!(
                        "a site cache AppInst of this controller names itself, its App, its site, its state or its creation time with more than {MAX_TEXT} bytes"
                    );
                    return Err(ApiError::protocol(Rpc::ShowAppInst, what));
                }
                found.push(inst);
            }
            Ok(found)
        })
        .await?)
    }

    /// Every cache App of this controller, any site and version (ShowApp by the marker).
    async fn cache_apps(&self) -> Result<Vec<AppKey>, Error> {
        let filter = AppKey {
            organization: self.organization().to_string(),
            ..AppKey::default()
        };
        let marker = [(cache::ENV_CACHE_CONTROLLER, self.controller_id.as_str())];
        let (client, filter, marker) = (&self.client, &filter, &marker);
        let controller_id = self.controller_id.as_str();
        Ok(retry_transient(client, "ShowApp", || async move {
            let mut found = Vec::new();
            let mut apps = client.show_apps(filter, marker).await?;
            while let Some(app) = apps.try_next().await? {
                let [owner] = app.env([cache::ENV_CACHE_CONTROLLER]);
                if owner.as_deref() != Some(controller_id)
                    || cache::service_of(controller_id, &app.key.name).is_none()
                    || cache::slot_of(&app.key.version).is_none()
                {
                    continue;
                }
                if found.len() == MAX_COLLECTED {
                    let what =
                        format!("more than {MAX_COLLECTED} site cache Apps of this controller");
                    return Err(ApiError::protocol(Rpc::ShowApp, what));
                }
                found.push(app.key);
            }
            Ok(found)
        })
        .await?)
    }

    /// What a runner on `site` is given of its Ready caches among `services`, and the services
    /// to start there (absent or failed), read from `insts`.
    pub(super) fn cache_use(
        &self,
        insts: &[AppInst],
        site: &Placement,
        services: &[Service],
    ) -> (Use, Vec<Service>) {
        let mut used = Use::default();
        let mut start = Vec::new();
        for &service in services {
            let name = cache::app_name(&self.controller_id, site, service);
            let state = state_of(insts, &name, service);
            let word = match &state {
                CacheState::Ready(_) => "ready",
                CacheState::Starting => "starting",
                CacheState::Absent => "absent",
                CacheState::Failed(_) => "failed",
            };
            self.metrics
                .site_cache(&super::deploy::site_name(site), service.word(), word);
            match state {
                CacheState::Ready(url) => match service {
                    Service::Registry => used.mirror = Some(url),
                    Service::Actions => used.actions = Some(url),
                },
                CacheState::Starting => {}
                CacheState::Absent | CacheState::Failed(_) => start.push(service),
            }
        }
        (used, start)
    }

    /// Starts `service`'s cache on `site` (addressed as `target`): a new App version for this
    /// 10-minute slot, then its AppInst, the create stream held until it ends or the caller
    /// drops this; `sent` (a runner's start) is dropped once the controller has taken the create
    /// up. A runner's start (not `site-cache up`, which has no `sent`) tries nothing when
    /// Edge Connect records an attempt from the last 10 minutes (the newest App version's
    /// slot); a CreateApp that finds the version made is another process's attempt of this
    /// slot, which `site-cache up` joins and a runner leaves alone.
    pub(super) async fn start_cache(
        &self,
        site: &Placement,
        target: &Target,
        service: Service,
        mut sent: Option<Sender<()>>,
    ) -> Result<(), Error> {
        let patient = sent.is_none();
        let name = cache::app_name(&self.controller_id, site, service);
        let now = cache::now_secs();
        if !patient {
            let versions = self.cache_versions(&name).await?;
            let last = versions.iter().filter_map(|v| cache::slot_of(v)).max();
            if last.is_some_and(|last| !cache::may_try_again(last, now)) {
                return Ok(());
            }
        }
        let secret = self.site_cache_secret.as_ref().map(|s| s.expose());
        if service == Service::Actions && secret.is_none() {
            return Err(Error::failed(
                "site_cache.actions_cache has no secret: set site_cache_secret in the credentials file or EDP_SITE_CACHE_SECRET",
            ));
        }
        let version = cache::version_at(now, cache::nonce());
        let app = cache::new_app(
            &self.config,
            &self.controller_id,
            site,
            service,
            secret,
            version,
        );
        self.report(&format!(
            "starting the site cache's {} on {site} (App {name})",
            service.word()
        ));
        self.client.create_app(&app).await?;
        // Concurrent attempts each made an App version of their own; the first of them is the
        // one attempt, the others go (never a CreateApp of a name and version that exists: B8).
        let slot = cache::slot_of(&app.key.version);
        let versions = self.cache_versions(&name).await?;
        let key = AppKey {
            version: cache::first_attempt(&versions, &app.key.version, u64::from(!patient)),
            ..app.key.clone()
        };
        if key != app.key {
            self.delete_app(&app.key).await?;
            if !patient {
                return Ok(());
            }
        }
        let inst_name = format!("{name}-{}", slot.unwrap_or_default());
        let request = NewAppInst {
            annotations: cache::marks(&self.controller_id),
            ..placement::new_app_inst(&inst_name, self.organization(), key, target)
        };
        let mut progress = |p: edge_connect::appinst_start::Progress<'_>| {
            sent.take();
            self.report(p.line);
        };
        match self.client.create_app_inst(&request, &mut progress).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind == ApiErrorKind::AlreadyExists && patient => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Starts each of `services` on `site` as a runner's create does ([`Provider::start_cache`]),
    /// a failure logged: the runner runs without its cache.
    /// Each of `sent` is dropped once its service's create has its first line or has ended.
    pub(super) async fn start_caches(
        &self,
        site: &Placement,
        services: &[Service],
        sent: Vec<Sender<()>>,
    ) {
        let targets = self
            .targets(std::slice::from_ref(site))
            .await
            .inspect_err(|e| {
                tracing::warn!(error = %e, "the site cache could not be started");
            });
        let Some(target) = targets.ok().and_then(|mut targets| targets.pop()) else {
            return;
        };
        let each = services.iter().zip(sent).map(|(&service, sent)| {
            let target = &target;
            async move {
                if let Err(e) = self.start_cache(site, target, service, Some(sent)).await {
                    tracing::warn!(error = %e, service = service.word(), "the site cache could not be started");
                }
            }
        });
        futures_util::future::join_all(each).await;
    }

    /// The versions of the cache App `name`.
    async fn cache_versions(&self, name: &str) -> Result<Vec<String>, Error> {
        let apps = self.apps_named(name).await?.into_iter();
        Ok(apps
            .filter(|a| a.key.name == name)
            .map(|a| a.key.version)
            .collect())
    }

    /// `site-cache up`: brings the enabled services' caches of `site` up and waits until each
    /// is Ready (or failed), holding each create stream to its end: on a site whose CRM is
    /// central, only a create whose requester stays is finished (B38).
    pub async fn site_cache_up(
        &self,
        site: &Placement,
    ) -> Result<Vec<(Service, CacheState)>, Error> {
        let targets = self.targets(std::slice::from_ref(site)).await?;
        let target = targets.first().ok_or_else(|| Error::failed("no site"))?;
        let mut states = Vec::new();
        for service in Service::ALL.into_iter().filter(|s| s.enabled(&self.config)) {
            let name = cache::app_name(&self.controller_id, site, service);
            let mut tried = false;
            let state = loop {
                let state = state_of(
                    &self.cache_app_insts(&self.controller_id).await?,
                    &name,
                    service,
                );
                match state {
                    CacheState::Ready(_) => break state,
                    CacheState::Failed(_) if tried => break state,
                    CacheState::Starting => {
                        let what =
                            format!("the site cache's {} on {site} not Ready", service.word());
                        self.sleep_within(&what).await?;
                    }
                    CacheState::Absent | CacheState::Failed(_) if tried => {
                        break CacheState::Failed("Edge Connect undid its create".into())
                    }
                    CacheState::Absent | CacheState::Failed(_) => {
                        tried = true;
                        self.start_cache(site, target, service, None).await?;
                    }
                }
            };
            states.push((service, state));
        }
        Ok(states)
    }

    /// Removes this controller's caches: every version of each cache App (its AppInsts first),
    /// on `site` only when given. Returns how many Apps were removed.
    pub async fn remove_site_caches(&self, site: Option<&Placement>) -> Result<usize, Error> {
        self.remove_caches_where(|key| {
            site.is_none_or(|site| {
                Service::ALL
                    .into_iter()
                    .any(|s| key.name == cache::app_name(&self.controller_id, site, s))
            })
        })
        .await
    }

    /// `site-cache prune`: removes the caches of sites where no runner of this controller runs
    /// now and whose cache was last started more than `idle` ago.
    pub async fn prune_site_caches(&self, idle: Duration) -> Result<usize, Error> {
        let (runners, _, _) = self.runners("", None, None).await?;
        let runner_insts: Vec<&AppInst> = runners.iter().flat_map(|r| &r.app_insts).collect();
        let insts = self.cache_app_insts(&self.controller_id).await?;
        let now = cache::now_secs();
        self.remove_caches_where(|key| {
            let started = cache::slot_of(&key.version).map(|slot| slot * cache::SLOT_SECS);
            let old = started.is_some_and(|at| now.saturating_sub(at) >= idle.as_secs());
            let busy = insts
                .iter()
                .filter(|i| i.app_key.as_ref() == Some(key))
                .any(|c| runner_insts.iter().any(|r| same_site(r, c)));
            old && !busy
        })
        .await
    }

    async fn remove_caches_where(&self, pick: impl Fn(&AppKey) -> bool) -> Result<usize, Error> {
        let apps: Vec<AppKey> = self.cache_apps().await?.into_iter().filter(&pick).collect();
        let insts = self.cache_app_insts(&self.controller_id).await?;
        let mut errors = Vec::new();
        for key in &apps {
            self.report(&format!("removing site cache App {}", key.name));
            let mut removed = Ok(());
            for inst in insts.iter().filter(|i| i.app_key.as_ref() == Some(key)) {
                removed = removed.and(self.delete_app_inst_or_report(key, inst, Busy::Wait).await);
            }
            if let Err(e) = removed.and(self.delete_app(key).await) {
                errors.push(e.to_string());
            }
        }
        match errors.is_empty() {
            true => Ok(apps.len()),
            false => Err(Error::failed(errors.join("; "))),
        }
    }

    /// The state of each enabled service's cache of `controller_id` on each of `sites` (what
    /// `check` reports), from one ShowAppInst.
    pub async fn site_cache_states(
        &self,
        controller_id: &str,
        sites: &[Placement],
    ) -> Result<Vec<(String, Service, CacheState)>, Error> {
        let insts = &self.cache_app_insts(controller_id).await?;
        let enabled = Service::ALL.into_iter().filter(|s| s.enabled(&self.config));
        Ok(sites
            .iter()
            .flat_map(|site| {
                enabled.clone().map(move |s| {
                    let name = cache::app_name(controller_id, site, s);
                    (site.to_string(), s, state_of(insts, &name, s))
                })
            })
            .collect())
    }

    /// `site-cache list`: each cache App of this controller with its AppInsts.
    pub async fn site_cache_list(&self) -> Result<Vec<(AppKey, Vec<AppInst>)>, Error> {
        let insts = self.cache_app_insts(&self.controller_id).await?;
        let apps = self.cache_apps().await?;
        Ok(apps
            .into_iter()
            .map(|key| {
                let of = insts
                    .iter()
                    .filter(|i| i.app_key.as_ref() == Some(&key))
                    .cloned()
                    .collect();
                (key, of)
            })
            .collect())
    }
}

/// The texts of `inst` other than its address and errors: its key, its App's, its sites', its
/// state's name and its creation time.
fn names(inst: &AppInst) -> impl Iterator<Item = &str> {
    let app = inst
        .app_key
        .iter()
        .flat_map(|k| [&k.organization, &k.name, &k.version]);
    let sites = [&inst.key.cloudlet_key, &inst.zone_key, &inst.cloudlet_key]
        .into_iter()
        .flatten()
        .flat_map(|s| [&s.organization, &s.name, &s.federated_organization]);
    [&inst.key.name, &inst.key.organization, &inst.created_at]
        .into_iter()
        .chain(app)
        .chain(sites)
        .map(String::as_str)
        .chain([inst.state.name()])
}

/// Whether two AppInsts are on one site: the same zone, or the same cloudlet.
fn same_site(a: &AppInst, b: &AppInst) -> bool {
    let zone = |i: &AppInst| i.zone_key.clone().filter(|z| !z.is_empty());
    (zone(a).is_some() && zone(a) == zone(b))
        || (a.cloudlet().is_some() && a.cloudlet() == b.cloudlet())
}

/// One line per AppInst of the cache App `app` (one line for an App without any: an attempt
/// that Edge Connect undid, or one still being made): site, service, version, state.
pub fn describe(app: &AppKey, insts: &[AppInst]) -> String {
    let service = Service::ALL
        .into_iter()
        .find(|s| app.name.ends_with(s.word()))
        .unwrap_or(Service::Registry);
    let (name, version) = (&app.name, &app.version);
    if insts.is_empty() {
        return format!("{name} {version}: no AppInst (undone, or still being made)");
    }
    insts
        .iter()
        .map(|inst| {
            let site = crate::text::echo(&crate::metrics::site_of(Some(inst)));
            let state = state_of(std::slice::from_ref(inst), name, service);
            let state = crate::text::echo(&state.to_string());
            format!("{site} {} {name} {version}: {state}", service.word())
        })
        .collect::<Vec<_>>()
        .join("\n")
}
