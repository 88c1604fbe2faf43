//! README's table of errors words each container reason as the provider does (issue 34): the
//! reasons a row names are those of its words in `edge_connect::appinst_start::KNOWN_REASONS`,
//! and every known reason is in the row of its words.

use edge_connect::appinst_start::{StartProblem, KNOWN_REASONS};

/// The words of the provider's line for each problem (`cannot_start_message`).
const WORDS: [(&str, StartProblem); 5] = [
    (" cannot be pulled on ", StartProblem::Image),
    (" cannot be created on ", StartProblem::Config),
    (" keeps crashing on ", StartProblem::Crash),
    ("cannot be scheduled on ", StartProblem::Capacity),
    (" does not start on ", StartProblem::Other),
];

#[test]
fn readme_names_each_container_reason_in_the_row_of_the_providers_words() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let mut named: Vec<(&str, StartProblem)> = Vec::new();
    for row in readme.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap_or_default();
        let Some(&(_, problem)) = WORDS.iter().find(|(w, _)| first.contains(w)) else {
            continue;
        };
        let words = row.split(|c: char| !c.is_ascii_alphanumeric());
        for word in words {
            if let Some(&(reason, known, _)) = KNOWN_REASONS.iter().find(|(r, ..)| *r == word) {
                assert_eq!(
                    known, problem,
                    "README names {reason} in the row of {problem:?}, the provider words it as {known:?}: {row}"
                );
                named.push((reason, problem));
            }
        }
    }
    for (reason, problem, _) in KNOWN_REASONS {
        assert!(
            named.contains(&(reason, *problem)),
            "README's row of {problem:?} does not name {reason}"
        );
    }
}
