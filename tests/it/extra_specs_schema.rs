//! The extra-specs JSON Schema (what `GetExtraSpecsJSONSchema` prints) validates the examples in
//! the docs, refuses what the provider refuses, and accepts GARM's injected keys.

use garm_provider_edge_connect::extra_specs::ExtraSpecs;
use serde_json::{json, Value};

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&ExtraSpecs::json_schema().unwrap())
        .expect("the schema is a valid JSON Schema")
}

/// JSON code blocks of the README's "Per-pool settings" section.
fn documented_examples() -> Vec<Value> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("### Per-pool settings")
        .nth(1)
        .expect("README has the section");
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .split("```json")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .map(|block| serde_json::from_str(block).expect("README example is JSON"))
        .collect()
}

#[test]
fn documented_examples_validate_and_parse() {
    let examples = documented_examples();
    assert!(!examples.is_empty());
    let v = validator();
    for example in &examples {
        let errors: Vec<String> = v.iter_errors(example).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{example}: {errors:?}");
        assert!(
            ExtraSpecs::from_value(Some(example)).is_ok(),
            "the provider accepts {example}"
        );
    }
}

#[test]
fn garm_keys_pass_and_unknown_keys_fail_in_schema_and_provider_alike() {
    let v = validator();
    let garm = json!({"runner_install_template": "IyE=", "pre_install_scripts": {"a.sh": "ZWNobw=="}, "extra_context": {"k": "v"}});
    assert!(v.is_valid(&garm));
    assert!(ExtraSpecs::from_value(Some(&garm)).is_ok());
    for bad in [
        json!({"flavour": "x"}),
        json!({"flavor": 3}),
        json!({"placement_strategy": "random"}),
    ] {
        assert!(!v.is_valid(&bad), "schema refuses {bad}");
        assert!(
            ExtraSpecs::from_value(Some(&bad)).is_err(),
            "provider refuses {bad}"
        );
    }
}

#[test]
fn the_container_keys_are_in_the_schema_with_their_values() {
    let v = validator();
    let pool = json!({"command": "/entrypoint.sh", "command_args": ["--once"], "deployment": "docker", "env_delivery": "env_vars"});
    assert!(v.is_valid(&pool));
    for bad in [
        json!({"deployment": "swarm"}),
        json!({"env_delivery": "yaml"}),
        json!({"command": ["/entrypoint.sh"]}),
        json!({"command_args": "--once"}),
    ] {
        assert!(!v.is_valid(&bad), "schema refuses {bad}");
        assert!(
            ExtraSpecs::from_value(Some(&bad)).is_err(),
            "provider refuses {bad}"
        );
    }
    let schema = ExtraSpecs::json_schema().unwrap();
    for key in ["command", "command_args", "deployment", "env_delivery"] {
        assert!(
            schema["properties"].get(key).is_some(),
            "{key} is listed: {schema}"
        );
    }
}
