//! Relative links in the README and docs point at files that exist.

use std::path::Path;

fn markdown_files(root: &Path) -> Vec<std::path::PathBuf> {
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "examples/runner-image"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            files.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "md")),
            );
        }
    }
    files
}

/// Targets of `[text](target)` links.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find("](") {
        rest = &rest[pos + 2..];
        if let Some(end) = rest.find(')') {
            targets.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    targets
}

#[test]
fn relative_links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for file in markdown_files(root) {
        let text = std::fs::read_to_string(&file).expect("readable");
        for target in link_targets(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with('#')
                || target.starts_with("mailto:")
            {
                continue;
            }
            let path = target.split('#').next().unwrap_or_default();
            let base = file.parent().expect("parent");
            assert!(
                base.join(path).exists(),
                "{}: broken link {target}",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "the README links to the docs ({checked} links checked)"
    );
}

/// Every `.rs` file of the repository (the provider, its crates, tests and benchmarks).
fn rust_sources(root: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs: Vec<std::path::PathBuf> = ["src", "tests", "crates", "benches"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("target") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The `code` spans of a Markdown text (single backticks), with the line each is on.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let pieces: Vec<&str> = line.split('`').collect();
        // Odd pieces are inside backticks (a line's spans never cross lines here).
        for piece in pieces
            .iter()
            .skip(1)
            .step_by(2)
            .take(pieces.len().saturating_sub(1) / 2)
        {
            spans.push((n + 1, piece.to_string()));
        }
    }
    spans
}

/// Top-level directories whose paths the docs cite.
const REPO_DIRS: [&str; 10] = [
    "src/",
    "tests/",
    "crates/",
    "docs/",
    "examples/",
    "deploy/",
    "config/",
    ".ci/",
    "benches/",
    "Dockerfile",
];

/// The docs name only paths, test targets and test functions that exist: what a reader
/// copies from them (`cargo test --test X`, a test's name, a file to open) works.
#[test]
fn docs_name_only_paths_test_targets_and_tests_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources: String = rust_sources(root)
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    let defines = |name: &str| {
        ["fn ", "mod "].iter().any(|k| {
            sources.contains(&format!("{k}{name}("))
                || sources.contains(&format!("{k}{name} "))
                || sources.contains(&format!("{k}{name};"))
        })
    };
    let is_test_target = |name: &str| {
        root.join("tests").join(format!("{name}.rs")).exists()
            || root.join("tests").join(name).join("main.rs").exists()
    };
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in markdown_files(root) {
        let text = std::fs::read_to_string(&file).expect("readable");
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        // Paths.
        for (line, span) in code_spans(&text) {
            let path = span.split([':', '#', ' ']).next().unwrap_or_default();
            // Upstream files (Go's, EdgeXR's) are cited with their repository, not checked here.
            let looks_like_path = REPO_DIRS.iter().any(|d| path.starts_with(d))
                && !path.ends_with(".go")
                && !path.contains(['*', '<', '…', '$', '{']);
            if looks_like_path {
                checked += 1;
                if !root.join(path).exists() {
                    wrong.push(format!("{shown}:{line}: no file {path}"));
                }
            }
        }
        // `cargo test` commands, in spans and in code blocks.
        for (n, l) in text.lines().enumerate() {
            let Some(at) = l.find("cargo test") else {
                continue;
            };
            let words: Vec<&str> = l[at..]
                .split(['`', ' '])
                .filter(|w| !w.is_empty())
                .collect();
            for pair in words.windows(2) {
                match pair[0] {
                    "--test" => {
                        checked += 1;
                        if !is_test_target(pair[1]) {
                            wrong.push(format!("{shown}:{}: no test target {}", n + 1, pair[1]));
                        }
                    }
                    "-p" => {
                        checked += 1;
                        if !root.join("crates").join(pair[1]).exists() {
                            wrong.push(format!("{shown}:{}: no package {}", n + 1, pair[1]));
                        }
                    }
                    _ => {}
                }
            }
        }
        // Tests cited: the last column of a table headed `Test`, and `test \`name\`` in prose.
        let mut test_column = false;
        for (n, l) in text.lines().enumerate() {
            let cells: Vec<&str> = l.trim().trim_matches('|').split(" | ").collect();
            if l.starts_with('|') && cells.last().is_some_and(|c| c.trim() == "Test") {
                test_column = true;
                continue;
            }
            if !l.starts_with('|') {
                test_column = false;
            }
            let mut cited: Vec<String> = Vec::new();
            if test_column && !l.starts_with("|---") {
                let last = cells.last().copied().unwrap_or_default();
                cited.extend(code_spans(last).into_iter().map(|(_, s)| s));
            }
            for (_, span) in code_spans(l) {
                if l.contains(&format!("test `{span}`")) || l.contains(&format!("Test: `{span}`")) {
                    cited.push(span);
                }
            }
            for name in cited {
                let ident = name.rsplit("::").next().unwrap_or_default();
                let is_ident = !ident.is_empty()
                    && ident
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                if !is_ident || !ident.contains('_') {
                    continue;
                }
                checked += 1;
                if !defines(ident) {
                    wrong.push(format!("{shown}:{}: no test {name}", n + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong references:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 100, "only {checked} references checked");
}
