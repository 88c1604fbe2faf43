//! Show filter semantics (the controller's `Matches` with `MatchFilter()`, main
//! `api/edgeproto/app.pb.go:2512`): every non-zero field of the filter must equal the stored
//! value; zero fields are wildcards. Filters are compared in output form, so enum spellings and
//! field names are already canonical on both sides. A nested key is compared part by part the
//! same way: an AppInst filter's `app_key` matches every AppInst deploying that App, whatever
//! its name, each of `organization`, `name`, `version` only when given (main
//! `api/edgeproto/appinst.pb.go:3830`, `app.pb.go:2368-2392`; docs/edge-connect-behaviours.md B24).

use serde::Serialize;
use serde_json::Value;

/// Removes zero values (`""`, `0`, `false`, `null`, `[]`, `{}`) recursively; `None` when
/// nothing is left, i.e. the filter matches everything.
pub(crate) fn prune(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Bool(b) => b.then_some(Value::Bool(true)),
        Value::Number(n) => (n.as_f64() != Some(0.0)).then_some(Value::Number(n)),
        Value::String(s) => (!s.is_empty()).then_some(Value::String(s)),
        Value::Array(items) => (!items.is_empty()).then_some(Value::Array(items)),
        Value::Object(map) => {
            let kept: serde_json::Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| prune(v).map(|v| (k, v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
    }
}

/// True when every leaf of a pruned `filter` is equal at the same place in `object`. A list of
/// values matches when each of the filter's is in the object's list (main
/// `api/edgeproto/app.pb.go:2744-2762`, `command_args`); a list of messages only asks that the
/// object's list is not empty: its entries are not compared (`:2587-2595`, `configs`).
pub(crate) fn matches(filter: &Value, object: &Value) -> bool {
    match (filter, object) {
        (Value::Object(f), Value::Object(o)) => f
            .iter()
            .all(|(k, fv)| o.get(k).is_some_and(|ov| matches(fv, ov))),
        (Value::Array(f), Value::Array(o)) if f.iter().any(Value::is_object) => !o.is_empty(),
        (Value::Array(f), Value::Array(o)) => f.iter().all(|fv| o.contains(fv)),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (f, o) => f == o,
    }
}

/// True when `item`, in output form, passes a pruned filter (`None` passes everything).
pub(crate) fn keeps(filter: Option<&Value>, item: &impl Serialize) -> bool {
    filter.is_none_or(|f| matches(f, &serde_json::to_value(item).unwrap_or(Value::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_fields_are_wildcards() {
        let f = prune(json!({"key": {"organization": "acme", "name": ""}, "state": "", "x": 0}));
        assert_eq!(f, Some(json!({"key": {"organization": "acme"}})));
        assert_eq!(prune(json!({"key": {}, "flavor": {"name": ""}})), None);
    }

    #[test]
    fn matches_leaves() {
        let obj = json!({"key": {"organization": "acme", "name": "r1"}, "state": "Ready", "n": 2});
        assert!(matches(&json!({"key": {"organization": "acme"}}), &obj));
        assert!(matches(&json!({"state": "Ready", "n": 2.0}), &obj));
        assert!(!matches(&json!({"state": "Creating"}), &obj));
        assert!(!matches(&json!({"missing": "x"}), &obj));
    }

    #[test]
    fn an_app_key_matches_part_by_part_whatever_the_appinst_name() {
        let inst = json!({"key": {"organization": "acme", "name": "r1-2"},
            "app_key": {"organization": "acme", "name": "r1", "version": "1"}});
        let f = |app_key| prune(json!({"app_key": app_key})).unwrap();
        assert!(matches(
            &f(json!({"organization": "acme", "name": "r1", "version": ""})),
            &inst
        ));
        assert!(matches(&f(json!({"name": "r1", "version": "1"})), &inst));
        assert!(!matches(&f(json!({"name": "r1", "version": "2"})), &inst));
        assert!(!matches(&f(json!({"name": "r1-2"})), &inst));
    }

    #[test]
    fn lists_match_as_the_controller_compares_them() {
        let app = json!({"command_args": ["a", "b", "c"], "configs": [{"kind": "envVarsYaml", "config": "x"}]});
        assert!(matches(&json!({"command_args": ["c", "a"]}), &app));
        assert!(!matches(&json!({"command_args": ["a", "d"]}), &app));
        // Messages in a list are not compared: any non-empty list of them matches.
        assert!(matches(
            &json!({"configs": [{"kind": "helmCustomizationYaml"}]}),
            &app
        ));
        assert!(!matches(
            &json!({"configs": [{"kind": "envVarsYaml"}]}),
            &json!({"configs": []})
        ));
    }
}
