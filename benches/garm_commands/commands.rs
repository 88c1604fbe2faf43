//! Steps 1-3: every GARM command, against the thin client, at 0 and 20 ms per call.

use crate::prelude::*;

#[derive(Default)]
pub(crate) struct CommandResults {
    pub(crate) latency: Duration,
    pub(crate) version: Samples,
    pub(crate) cold_create: Samples,
    pub(crate) create: Samples,
    pub(crate) get: Samples,
    pub(crate) get_without_log: Samples,
    pub(crate) list: Samples,
    pub(crate) delete: Samples,
    /// CreateInstance of a `dind` pool's runner: without `[site_cache]` in the config, then
    /// with the site's registry mirror turned on and Ready (issue 46).
    pub(crate) dind_create: Samples,
    pub(crate) dind_create_cached: Samples,
    /// CreateInstance and GetInstance of the shipped binary (static musl, release), when it is
    /// built: issue 38's wall targets are the shipped binary's, the one users run.
    pub(crate) shipped: Option<(Samples, Samples)>,
}

impl CommandResults {
    /// The round shapes seen, by command key.
    pub(crate) fn shapes(&self) -> Shapes {
        [
            (shape_key("CreateInstance", true), &self.cold_create),
            (shape_key("CreateInstance", false), &self.create),
            (shape_key("GetInstance", false), &self.get),
            (shape_key("ListInstances", false), &self.list),
            (shape_key("DeleteInstance", false), &self.delete),
            (
                shape_key("CreateInstance", false) + SITE_CACHE_KEY,
                &self.dind_create_cached,
            ),
        ]
        .into_iter()
        .map(|(key, samples)| (key, samples.shape.clone()))
        .collect()
    }
}

pub(crate) fn command_step(world: &World, plan: &Plan) -> Result<CommandResults> {
    let mut r = CommandResults {
        latency: world.latency,
        ..CommandResults::default()
    };
    let curl = curl();
    let shipped = shipped_binary();
    if shipped.is_some() {
        r.shipped = Some(Default::default());
    }
    // Iteration 0 warms up (token cache, page cache, the thin client's two connections) and is
    // not recorded. Everything of one iteration runs back to back, so that a ratio of two figures
    // of one iteration compares them under the same load of the (shared) machine.
    for i in 0..=plan.runs {
        let record = i > 0;
        let name = format!("garm-bench-{i}");
        let version = world.version()?;
        let create = world.create(&name)?;
        let get = world.get(&name)?;
        let get_without_log = world.get_without_log(&name)?;
        let list = world.list(1)?;
        let delete = world.delete(&name)?;
        // The shipped binary's Create and Get of a runner of its own, in the same iteration.
        let shipped_runs = match &shipped {
            Some(binary) => {
                let name = format!("{name}-shipped");
                let runs = (
                    world.create_by(binary, &name)?,
                    world.get_by(binary, &name)?,
                );
                world.delete(&name)?;
                Some(runs)
            }
            None => None,
        };

        // The thin client: the same requests, in the same state (the runner absent, then there).
        let (limit_create, _) = world.replay(&create.traffic.rounds)?;
        ensure!(
            world.has_app(&name) && world.has_app_inst(&name),
            "replayed CreateInstance did not create {name}"
        );
        let (limit_get, _) = world.replay(&get.traffic.rounds)?;
        let (limit_list, _) = world.replay(&list.traffic.rounds)?;
        let minimal_delete = delete.traffic.rounds.without_read_only_rounds();
        let (limit_delete_min, _) = world.replay(&minimal_delete)?;
        ensure!(
            !world.has_app(&name),
            "replayed DeleteInstance (minimal) left {name}"
        );
        // Again, for the full delete: the runner must exist for its calls to be the same.
        world.replay(&create.traffic.rounds)?;
        let (limit_delete, _) = world.replay(&delete.traffic.rounds)?;
        ensure!(!world.has_app(&name), "replayed DeleteInstance left {name}");

        // As processes: the minimal client, then curl, each through the same four commands.
        let base = world.relay.url();
        let as_processes = |send: &dyn Fn(&Rounds) -> Result<Duration>| -> Result<[Duration; 4]> {
            let create_wall = send(&create.traffic.rounds)?;
            ensure!(
                world.has_app_inst(&name),
                "a replayed CreateInstance did not create {name}"
            );
            let get_wall = send(&get.traffic.rounds)?;
            let list_wall = send(&list.traffic.rounds)?;
            let delete_wall = send(&delete.traffic.rounds)?;
            ensure!(
                !world.has_app(&name),
                "a replayed DeleteInstance left {name}"
            );
            Ok([create_wall, get_wall, list_wall, delete_wall])
        };
        let minimal = as_processes(&|rounds| {
            minimal_client_run(world.dir(), &base, rounds, false, None).map(|p| p.wall)
        })?;
        let curl = match &curl {
            Some(curl) => Some(as_processes(&|rounds| {
                curl_run(curl, world.dir(), &base, rounds)
            })?),
            None => None,
        };
        world.relay.take();

        if record {
            r.version.add_proc(&version);
            r.create.record(&create, "CreateInstance")?;
            r.get.record(&get, "GetInstance")?;
            r.get_without_log
                .record(&get_without_log, "GetInstance without log_file")?;
            r.list.record(&list, "ListInstances")?;
            r.delete.record(&delete, "DeleteInstance")?;
            r.create.add_limit(limit_create);
            r.get.add_limit(limit_get);
            r.get_without_log.add_limit(limit_get);
            r.list.add_limit(limit_list);
            r.delete.add_limit(limit_delete);
            r.delete.add_limit_min(limit_delete_min);
            for (i, samples) in [&mut r.create, &mut r.get, &mut r.list, &mut r.delete]
                .into_iter()
                .enumerate()
            {
                samples.add_processes(minimal[i], curl.map(|c| c[i]));
            }
            r.delete.min_rounds = Some(minimal_delete.len());
            if let (Some((create, get)), Some(samples)) = (&shipped_runs, &mut r.shipped) {
                for (i, (run, samples)) in [(create, &mut samples.0), (get, &mut samples.1)]
                    .into_iter()
                    .enumerate()
                {
                    samples.add_proc(&run.proc);
                    samples.add_processes(minimal[i], None);
                }
            }
        }
        ensure!(
            create.logins == 0 || !record,
            "CreateInstance logged in although the token cache was warm"
        );
    }

    for i in 0..plan.cold_runs {
        let name = format!("garm-cold-{i}");
        world.forget_token()?;
        let create = world.create(&name)?;
        ensure!(
            create.logins == 1,
            "cold CreateInstance made {} logins",
            create.logins
        );
        world.delete(&name)?;
        let (limit, _) = world.replay(&create.traffic.rounds)?;
        world.delete(&name)?;
        r.cold_create.record(&create, "cold CreateInstance")?;
        r.cold_create.add_limit(limit);
    }

    // The site cache (issue 46): a dind pool's create without it, then with the site's mirror
    // Ready, which the create looks up beside its ShowApp. The one without it has the calls of
    // any create (its shape is CreateInstance's).
    let provider = Path::new(PROVIDER);
    world.site_cache_up(provider)?;
    for i in 0..plan.cold_runs {
        let configs = [
            world.config_for(provider),
            world.site_cache_config_for(provider),
        ];
        for (config, samples) in configs
            .into_iter()
            .zip([&mut r.dind_create, &mut r.dind_create_cached])
        {
            let name = format!("garm-dind-{i}");
            let create = world.create_dind(provider, &[], config, &name)?;
            world.delete(&name)?;
            ensure!(
                create.logins == 0,
                "CreateInstance of a dind runner logged in although the token cache was warm"
            );
            samples.record(&create, "CreateInstance of a dind runner")?;
        }
    }
    Ok(r)
}
