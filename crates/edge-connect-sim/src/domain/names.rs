//! The controller's name rules and sanitisers (`util.ValidName`, `util.DNSSanitize`,
//! `util.DockerSanitize`, RFC 1123 labels).

/// `^[0-9a-zA-Z][-_0-9a-zA-Z .&,!]*$` (`util.ValidName`).
pub(crate) fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || "-_ .&,!".contains(c))
}

/// Lower-case, `_`/`.`/space → `-`, anything else outside `[a-z0-9-]` dropped
/// (like `util.DNSSanitize`).
pub(crate) fn dns_sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            '_' | '.' | ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

/// Lower-case with only `[a-z0-9._-]` kept (`util.DockerSanitize`).
pub(crate) fn docker_sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '.' | '_' | '-' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// RFC 1123 label, as Kubernetes requires of namespaces.
pub(crate) fn valid_namespace(ns: &str) -> bool {
    ns.len() <= 63
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !ns.starts_with('-')
        && !ns.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_controller_regex() {
        assert!(valid_name("garm-r-7f3a9c"));
        assert!(valid_name("A b.&,!_-"));
        assert!(!valid_name(""));
        assert!(!valid_name("-x"));
        assert!(!valid_name("a/b"));
    }

    #[test]
    fn sanitizes_dns_names() {
        assert_eq!(dns_sanitize("Garm_Runner 1.0!"), "garm-runner-1-0");
    }

    #[test]
    fn namespaces_are_rfc1123_labels() {
        assert!(valid_namespace("garm-r1-acme"));
        assert!(!valid_namespace("Garm"));
        assert!(!valid_namespace("-x"));
        assert!(!valid_namespace(&"a".repeat(64)));
    }
}
