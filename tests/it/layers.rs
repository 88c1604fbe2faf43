//! The layering of the provider and of the simulator, as their documents draw it: the provider's
//! table in `docs/architecture.md`, the simulator's in the `# Layers` section of its `lib.rs`.
//! Each table gives every top-level module of `src/` a layer, and every `crate::` path in a
//! module's non-test code names a module of its own, of a lower layer, or a leaf (the
//! simulator's `leaf` row: usable by every layer). So the modules form no cycle, and a document
//! cannot drift from its code: a module missing from the table, a row for a module that is gone,
//! or an import that points up fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A crate's layers as its document's table gives them.
#[derive(Default)]
struct Layers {
    /// The layer of each top-level module (leaves: 0).
    of: BTreeMap<String, u8>,
    /// Modules every layer may use.
    leaves: BTreeSet<String>,
}

/// Reads the rows `| N | `module/`, `module.rs` … | job |` (or `| leaf | … |`) of a table. A
/// module cell names top-level modules or files inside them (`front/cli.rs`), which must repeat
/// the module's layer; a parenthesis lists a module's parts and is not read.
fn table(rows: impl Iterator<Item = String>, doc: &str) -> Layers {
    let mut layers = Layers::default();
    for row in rows.filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(layer), Some(modules)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let first = layer.split_whitespace().next().unwrap_or_default();
        let (layer, leaf) = match first.parse::<u8>() {
            Ok(n) => (n, false),
            Err(_) if first == "leaf" => (0, true),
            Err(_) => continue,
        };
        let modules = modules.split(" (").next().unwrap_or_default();
        for path in modules.split(',').map(|m| m.trim().trim_matches('`')) {
            let top = path.split('/').next().unwrap_or_default();
            let top = top.trim_end_matches(".rs").to_string();
            if let Some(before) = layers.of.insert(top.clone(), layer) {
                assert_eq!(before, layer, "{doc} gives {top} two layers");
            }
            if leaf {
                layers.leaves.insert(top);
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

/// Where the code of `src` and the layers its document `doc` draws disagree.
fn disagreements(src: &Path, layers: &Layers, doc: &str) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(src).expect("under src");
        let Some(top) = top_module(rel) else {
            continue;
        };
        seen.insert(top.clone());
        let Some(&own) = layers.of.get(&top) else {
            wrong.push(format!("{} is in no layer of {doc}", rel.display()));
            continue;
        };
        let text = fs::read_to_string(file).expect("source is readable");
        // Unit tests may reach anywhere.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for module in named_modules(code, rel.components().count() == 1) {
            let Some(&theirs) = layers.of.get(&module) else {
                continue;
            };
            if module != top && !layers.leaves.contains(&module) && theirs >= own {
                wrong.push(format!(
                    "{} (layer {own}) uses crate::{module} (layer {theirs})",
                    rel.display()
                ));
            }
        }
    }
    for documented in layers.of.keys().filter(|m| !seen.contains(*m)) {
        wrong.push(format!(
            "{doc} names {documented}, which src/ does not have"
        ));
    }
    wrong
}

#[test]
fn every_module_has_one_documented_layer_and_imports_point_down() {
    let doc = fs::read_to_string(root().join("docs/architecture.md")).expect("architecture.md");
    let section = doc
        .split("## The provider (`src/`)")
        .nth(1)
        .expect("a section for the provider");
    let section = section.split("\n## ").next().unwrap_or_default();
    let layers = table(section.lines().map(str::to_string), "docs/architecture.md");
    let wrong = disagreements(&root().join("src"), &layers, "docs/architecture.md");
    assert!(
        wrong.is_empty(),
        "the code and docs/architecture.md disagree:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_simulators_modules_have_their_documented_layers_and_imports_point_down() {
    let sim = root().join("crates/edge-connect-sim");
    let lib = fs::read_to_string(sim.join("src/lib.rs")).expect("the simulator's lib.rs");
    let section = lib
        .split("//! # Layers")
        .nth(1)
        .expect("a # Layers section");
    let section = section.split("//! # ").next().unwrap_or_default();
    let rows = section
        .lines()
        .filter_map(|l| l.strip_prefix("//! ").map(str::to_string));
    let layers = table(rows, "the simulator's lib.rs");
    assert!(
        !layers.leaves.is_empty() && layers.of.len() > 8,
        "the table was read"
    );
    let wrong = disagreements(&sim.join("src"), &layers, "the simulator's lib.rs");
    assert!(
        wrong.is_empty(),
        "the simulator's code and its lib.rs disagree:\n{}",
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
