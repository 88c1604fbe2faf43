//! The provider's layering, as `docs/architecture.md` draws it: the document's table gives each
//! top-level module of `src/` a layer number, and every `crate::` path in a module's non-test
//! code names a module of its own, or of a lower layer. So the modules form no cycle, and the
//! document cannot drift from the code: a module missing from the table, a row for a module
//! that is gone, or an import that points up fails here.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Layer of each top-level module, from the rows `| N | `module/` or `module.rs` | job |` of
/// the provider's table in docs/architecture.md. Files inside a module (`front/cli.rs`) may
/// have rows of their own; they must repeat the module's layer.
fn documented_layers() -> BTreeMap<String, u8> {
    let doc = fs::read_to_string(root().join("docs/architecture.md")).expect("architecture.md");
    let section = doc
        .split("## The provider (`src/`)")
        .nth(1)
        .expect("a section for the provider");
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut layers = BTreeMap::new();
    for row in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(layer), Some(module)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(layer) = layer.parse::<u8>() else {
            continue;
        };
        for path in module.split(',').map(|m| m.trim().trim_matches('`')) {
            let top = path
                .split('/')
                .next()
                .unwrap_or_default()
                .trim_end_matches(".rs")
                .to_string();
            if let Some(before) = layers.insert(top.clone(), layer) {
                assert_eq!(before, layer, "architecture.md gives {top} two layers");
            }
        }
    }
    layers
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

/// The top-level modules a file's code names through `crate::` (and, in files directly under
/// `src/`, `super::`). Comments are not code.
fn named_modules(text: &str, root_file: bool) -> Vec<String> {
    let prefixes: &[&str] = if root_file {
        &["crate::", "super::"]
    } else {
        &["crate::"]
    };
    let mut found = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for prefix in prefixes {
            for (pos, _) in line.match_indices(prefix) {
                if line[..pos]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
                {
                    continue;
                }
                let name: String = line[pos + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push(name);
                }
            }
        }
    }
    found
}

/// The top-level module of a file under `src/` (`None` for the crate roots).
fn top_module(rel: &Path) -> Option<String> {
    let top = rel.components().next()?.as_os_str().to_str()?;
    let top = top.trim_end_matches(".rs");
    (top != "lib" && top != "main").then(|| top.to_string())
}

#[test]
fn every_module_has_one_documented_layer_and_imports_point_down() {
    let layers = documented_layers();
    let src = root().join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let Some(top) = top_module(rel) else {
            continue;
        };
        seen.insert(top.clone());
        let Some(&own) = layers.get(&top) else {
            wrong.push(format!(
                "{} is in no layer of docs/architecture.md",
                rel.display()
            ));
            continue;
        };
        let text = fs::read_to_string(file).expect("source is readable");
        // Unit tests may reach anywhere.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for module in named_modules(code, rel.components().count() == 1) {
            let Some(&theirs) = layers.get(&module) else {
                continue;
            };
            if module != top && theirs >= own {
                wrong.push(format!(
                    "{} (layer {own}) uses crate::{module} (layer {theirs})",
                    rel.display()
                ));
            }
        }
    }
    for documented in layers.keys().filter(|m| !seen.contains(*m)) {
        wrong.push(format!(
            "docs/architecture.md names {documented}, which src/ does not have"
        ));
    }
    assert!(
        wrong.is_empty(),
        "the code and docs/architecture.md disagree:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_import_that_points_up_is_found() {
    // The scanner itself: a path in code counts, one in a comment or another crate does not.
    let code =
        "use crate::front::say;\n// crate::pipeline in a comment\nlet x = edge_connect::crate_x;\n";
    assert_eq!(named_modules(code, false), ["front"]);
    assert_eq!(named_modules("super::pipeline::run()", true), ["pipeline"]);
    assert!(named_modules("super::pipeline::run()", false).is_empty());
}
