//! Facts about GARM that the docs state in several places, held to GARM's source.

use std::path::Path;

/// GARM's default `runner_bootstrap_timeout` is 20 minutes (GARM
/// `util/appdefaults/appdefaults.go:26`, `DefaultRunnerBootstrapTimeout = 20`, in minutes;
/// docs/operations.md, "Timeouts"). Every line of the docs that gives that default says 20
/// minutes, none a number of seconds such as the provider's own 900.
#[test]
fn every_stated_default_of_garms_bootstrap_timeout_is_20_minutes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![
        root.join("README.md"),
        root.join("config/provider.example.toml"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut stated = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable doc");
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let about_it =
                lower.contains("bootstrap timeout") || lower.contains("bootstrap_timeout");
            if about_it && lower.contains("default") {
                stated += 1;
                assert!(
                    lower.contains("20 min") || lower.contains("20-minute"),
                    "{}:{}: GARM's default bootstrap timeout is 20 minutes: {line}",
                    file.display(),
                    n + 1
                );
            }
        }
    }
    assert!(
        stated >= 3,
        "the docs state the default in {stated} places only"
    );
}
