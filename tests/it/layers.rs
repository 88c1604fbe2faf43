//! The layering of the three crates, as their documents draw it: the provider's and the client's
//! tables in `docs/architecture.md`, the simulator's in the `# Layers` section of its `lib.rs`.
//! Each table gives every top-level module of a crate's `src/` a layer, and every `crate::` path
//! in a module's non-test code names a module of its own, of a lower layer, or a leaf (the
//! simulator's `leaf` row: usable by every layer); a name the crate root re-exports counts as
//! the module it comes from. So the modules form no cycle (leaves that use each other are
//! checked for one too), and a document cannot drift from its code: a module missing from the
//! table, a row for a module that is gone, or an import that points up fails here. A leaf of the
//! provider (`garm/`, the protocol) uses no module of a layer and nothing of the client crate.

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

/// The first names of the paths a file's code writes after `crate::` (and, in files directly
/// under `src/`, `super::`), each name of a `crate::{a, b::c}` group too: modules, or names the
/// crate root re-exports. Comments are not code.
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
                let rest = &line[pos + prefix.len()..];
                let paths = match rest.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or_default(),
                    None => rest,
                };
                for path in paths.split(',') {
                    let name: String = path
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        found.push(name);
                    }
                    if rest.starts_with('{') {
                        continue;
                    }
                    break;
                }
            }
        }
    }
    found
}

/// Whether code (comments aside) names the client crate, `edge_connect::`.
fn uses_the_client(text: &str) -> bool {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .any(|l| {
            l.match_indices("edge_connect::").any(|(pos, _)| {
                !l[..pos]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
}

/// What a crate root (`lib.rs`) says about its modules: the module each re-exported name comes
/// from (`pub use error::{ApiError, ApiErrorKind};`), and the modules compiled for tests only.
#[derive(Default)]
struct Root {
    reexported: BTreeMap<String, String>,
    test_only: BTreeSet<String>,
}

fn crate_root(lib: &str) -> Root {
    let mut root = Root::default();
    for item in lib.split("pub use ").skip(1) {
        let item = item.split(';').next().unwrap_or_default();
        let Some((module, names)) = item.split_once("::") else {
            continue;
        };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or_default();
            if !name.is_empty() {
                root.reexported
                    .insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    for pair in lines.windows(2) {
        if let ("#[cfg(test)]", Some(module)) = (pair[0], pair[1].strip_prefix("mod ")) {
            root.test_only
                .insert(module.trim_end_matches(';').to_string());
        }
    }
    root
}

/// A cycle among `uses` (module → the modules it names), as `a → b → a`.
fn cycle(uses: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    fn visit<'a>(
        module: &'a str,
        uses: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<String> {
        if let Some(start) = path.iter().position(|m| *m == module) {
            let mut names = path[start..].to_vec();
            names.push(module);
            return Some(names.join(" → "));
        }
        if !done.insert(module) {
            return None;
        }
        path.push(module);
        for next in uses.get(module).into_iter().flatten() {
            if let Some(found) = visit(next, uses, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    uses.keys()
        .find_map(|m| visit(m, uses, &mut Vec::new(), &mut done))
}

/// The top-level module of a file under `src/` (`None` for the crate roots).
fn top_module(rel: &Path) -> Option<String> {
    let top = rel.components().next()?.as_os_str().to_str()?;
    let top = top.trim_end_matches(".rs");
    (top != "lib" && top != "main").then(|| top.to_string())
}

/// Where the code of `src` and the layers its document `doc` draws disagree.
fn disagreements(src: &Path, layers: &Layers, doc: &str) -> Vec<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let root = crate_root(&lib);
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(src).expect("under src");
        let Some(top) = top_module(rel).filter(|m| !root.test_only.contains(m)) else {
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
        if layers.leaves.contains(&top) && uses_the_client(code) {
            wrong.push(format!("{} (a leaf) uses the client crate", rel.display()));
        }
        for name in named_modules(code, rel.components().count() == 1) {
            let module = root.reexported.get(&name).cloned().unwrap_or(name);
            let Some(&theirs) = layers.of.get(&module) else {
                continue;
            };
            if module == top {
                continue;
            }
            uses.entry(top.clone()).or_default().insert(module.clone());
            if !layers.leaves.contains(&module) && theirs >= own {
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
    if let Some(cycle) = cycle(&uses) {
        wrong.push(format!("the modules form a cycle: {cycle}"));
    }
    wrong
}

/// The rows of the section of `docs/architecture.md` under `heading`.
fn architecture_section(heading: &str) -> Vec<String> {
    let doc = fs::read_to_string(root().join("docs/architecture.md")).expect("architecture.md");
    let section = doc
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("docs/architecture.md has a section {heading}"));
    let section = section.split("\n## ").next().unwrap_or_default();
    section.lines().map(str::to_string).collect()
}

/// Holds the crate in `dir` to the table in `rows`.
fn assert_layered(dir: &str, rows: Vec<String>, doc: &str) {
    let layers = table(rows.into_iter(), doc);
    assert!(layers.of.len() > 8, "the table of {doc} was read");
    let wrong = disagreements(&root().join(dir).join("src"), &layers, doc);
    assert!(
        wrong.is_empty(),
        "the code of {dir} and {doc} disagree:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_module_of_the_provider_has_one_documented_layer_and_imports_point_down() {
    let rows = architecture_section("## The provider (`src/`)");
    assert_layered(".", rows, "docs/architecture.md (the provider)");
}

#[test]
fn every_module_of_the_client_has_one_documented_layer_and_imports_point_down() {
    let rows = architecture_section("## The client (`crates/edge-connect`)");
    assert_layered(
        "crates/edge-connect",
        rows,
        "docs/architecture.md (the client)",
    );
}

#[test]
fn the_simulators_modules_have_their_documented_layers_and_imports_point_down() {
    let dir = "crates/edge-connect-sim";
    let lib =
        fs::read_to_string(root().join(dir).join("src/lib.rs")).expect("the simulator's lib.rs");
    let section = lib
        .split("//! # Layers")
        .nth(1)
        .expect("a # Layers section");
    let section = section.split("//! # ").next().unwrap_or_default();
    let rows = section
        .lines()
        .filter_map(|l| l.strip_prefix("//! ").map(str::to_string))
        .collect();
    assert_layered(dir, rows, "the simulator's lib.rs");
}

#[test]
fn an_import_that_points_up_is_found() {
    // The scanner itself: a path in code counts, one in a comment or another crate does not.
    let code =
        "use crate::front::say;\n// crate::pipeline in a comment\nlet x = edge_connect::crate_x;\n";
    assert_eq!(named_modules(code, false), ["front"]);
    assert_eq!(named_modules("super::pipeline::run()", true), ["pipeline"]);
    assert!(named_modules("super::pipeline::run()", false).is_empty());
    assert_eq!(
        named_modules("use crate::{ApiErrorKind, rpc::Rpc};", false),
        ["ApiErrorKind", "rpc"]
    );
    // A name the root re-exports is the module it comes from; a test-only module is no layer's.
    let root = crate_root("pub use error::{ApiError, ApiErrorKind};\npub use config::{\n    A,\n    b::C,\n};\n#[cfg(test)]\nmod hostile_tests;\n");
    assert_eq!(root.reexported["ApiErrorKind"], "error");
    assert_eq!(root.reexported["C"], "config");
    assert!(root.test_only.contains("hostile_tests"));
    let uses = |pairs: &[(&str, &str)]| {
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            map.entry(a.to_string()).or_default().insert(b.to_string());
        }
        map
    };
    assert_eq!(
        cycle(&uses(&[("clock", "reqlog"), ("reqlog", "clock")])).as_deref(),
        Some("clock → reqlog → clock")
    );
    assert_eq!(cycle(&uses(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
}

#[test]
fn a_leaf_that_uses_a_layer_or_the_client_is_found() {
    let dir = std::env::temp_dir().join(format!("layers-leaf-{}", std::process::id()));
    let src = dir.join("src");
    fs::create_dir_all(&src).expect("a temporary directory");
    fs::write(src.join("lib.rs"), "mod garm;\nmod text;\n").expect("lib.rs");
    fs::write(src.join("text.rs"), "pub fn echo() {}\n").expect("text.rs");
    let garm = "use crate::text::echo;\nuse edge_connect::Secret;\n// edge_connect::in_a_comment\n";
    fs::write(src.join("garm.rs"), garm).expect("garm.rs");
    let rows = [
        "| leaf | `garm/` | the protocol |",
        "| 0 | `text.rs` | escaping |",
    ];
    let layers = table(rows.iter().map(|r| r.to_string()), "the test's table");
    let wrong = disagreements(&src, &layers, "the test's table");
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(
        wrong,
        [
            "garm.rs (a leaf) uses the client crate",
            "garm.rs (layer 0) uses crate::text (layer 0)",
        ]
    );
    assert!(!uses_the_client("let x = not_edge_connect::y;"));
}
