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
