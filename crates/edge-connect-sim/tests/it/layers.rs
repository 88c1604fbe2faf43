//! The crate's layering (see the table in `lib.rs`): every `crate::` path in a source file
//! names a module of the same layer or of a layer below, so the modules form no cycle.

use std::fs;
use std::path::{Path, PathBuf};

/// Layer of a top-level module; leaves (0) may be used by every layer.
fn rank(module: &str) -> Option<u8> {
    Some(match module {
        "config" | "clock" | "faults" | "reqlog" | "gojson" | "lock" | "trial_config" => 0,
        "model" => 1,
        "protocol" => 2,
        "domain" => 3,
        "context" => 4,
        "handlers" => 5,
        "router" => 6,
        "server" => 7,
        _ => return None,
    })
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a file names through `crate::` (and, in root files, `super::`).
fn named_modules(text: &str, root_file: bool) -> Vec<String> {
    let mut found = Vec::new();
    let prefixes: &[&str] = if root_file {
        &["crate::", "super::"]
    } else {
        &["crate::"]
    };
    for prefix in prefixes {
        for (pos, _) in text.match_indices(prefix) {
            let before = text[..pos].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &text[pos + prefix.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

#[test]
fn imports_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let own = rank(&top).unwrap_or_else(|| panic!("{} is in no layer", rel.display()));
        let text = fs::read_to_string(file).expect("source is readable");
        // Unit tests may reach anywhere.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let root_file = rel.components().count() == 1;
        for module in named_modules(code, root_file) {
            let Some(theirs) = rank(&module) else {
                continue;
            };
            let allowed = module == top || theirs == 0 || theirs < own;
            if !allowed {
                wrong.push(format!("{} uses crate::{module}", rel.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}
