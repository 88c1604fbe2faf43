//! A scale set's pool id in both of GARM's forms (docs/runner-contract.md, "GARM_POOL_ID"):
//! since GARM #866 a UUID v5 of the entity and the scale set, before it
//! `<scale set name>-<entity id>`; while old runners remain, GARM lists both, and #880 takes an
//! error on the old form as "drained". The provider answers each form with exactly its runners,
//! and an old form with none left with `[]` and exit 0, never an error.

use crate::support::*;

/// The old form: the scale set's name (spaces and capitals are GARM's own) and the entity's id.
const OLD_FORM: &str = "Edge Runners-2f0b5a44-6c1e-4d3b-9a7e-5e8c1d2b3a4f";
/// The new form: a UUID v5 (version nibble 5, RFC 4122 variant).
const NEW_FORM: &str = "6f1c2d3e-4a5b-5c6d-8e7f-9a0b1c2d3e4f";

#[test]
fn a_scale_sets_old_and_new_pool_ids_each_list_their_own_runners_and_drain_to_empty() {
    let w = World::new();
    for (name, pool) in [("garm-before866", OLD_FORM), ("garm-after866", NEW_FORM)] {
        let r = w.create("bootstrap-github-jit.json", name, pool, &[]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    }
    for (pool, name) in [(OLD_FORM, "garm-before866"), (NEW_FORM, "garm-after866")] {
        let list = w.garm("ListInstances", &[("GARM_POOL_ID", pool)], None);
        assert_eq!(list.code, 0, "{pool}: {}", list.stderr);
        let names: Vec<String> = list.statuses().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, vec![name.to_string()], "{pool}");
    }
    // GARM deletes the old runner; the old form then lists empty, which is how GARM learns
    // that the migration of this scale set is done.
    let del = w.garm(
        "DeleteInstance",
        &[
            ("GARM_INSTANCE_ID", "garm-before866"),
            ("GARM_POOL_ID", OLD_FORM),
        ],
        None,
    );
    assert_eq!(del.code, 0, "{}", del.stderr);
    let drained = w.garm("ListInstances", &[("GARM_POOL_ID", OLD_FORM)], None);
    assert_eq!(
        (drained.code, drained.stdout.as_str()),
        (0, "[]"),
        "{}",
        drained.stderr
    );
    let new = w.garm("ListInstances", &[("GARM_POOL_ID", NEW_FORM)], None);
    assert_eq!(new.statuses().len(), 1, "{}", new.stdout);
    assert_eq!(w.app_names(), vec!["garm-after866"]);
}
