//! Edge Connect names for GARM instances.
//!
//! App and AppInst are both named after the GARM instance. GARM's default names
//! (`garm-ny9heeqyw2rl`) are already safe; anything else is mapped deterministically so that the
//! GARM name and the Edge Connect name lead to the same objects, and mapping twice changes nothing
//! (`GARM_INSTANCE_ID` may carry either).

use sha2::{Digest, Sha256};

/// Longest Edge Connect name we produce. Edge Connect derives DNS labels from names and truncates
/// some of them to 40 characters; staying within that avoids "Unable to compute unique AppInstId".
pub const MAX_NAME_LEN: usize = 40;

/// True when `name` can be used as-is: `[a-z0-9][a-z0-9-]*`, at most [`MAX_NAME_LEN`] characters.
pub fn is_safe_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= MAX_NAME_LEN
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The Edge Connect App / AppInst name for a GARM instance name (or for an Edge Connect name,
/// which maps to itself).
pub fn edge_name(garm_name: &str) -> String {
    if is_safe_name(garm_name) {
        return garm_name.to_string();
    }
    let mut base = String::with_capacity(garm_name.len());
    for c in garm_name.chars().flat_map(char::to_lowercase) {
        // Lowercased already: no ASCII capital is left.
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if !(c == '-' && (base.is_empty() || base.ends_with('-'))) {
            base.push(c);
        }
    }
    // Keep room for "-" + 8 hex digits of the hash, which keeps distinct inputs apart.
    base.truncate(MAX_NAME_LEN - 9);
    let base = base.trim_end_matches('-');
    let digest = Sha256::digest(garm_name.as_bytes());
    let suffix: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let base = if base.is_empty() { "garm" } else { base };
    format!("{base}-{suffix}")
}

/// Edge Connect's rule for key parts (organization, app name, version, AppInst name):
/// `^[0-9a-zA-Z][-_0-9a-zA-Z .&,!]*$`.
pub fn is_valid_key_part(value: &str) -> bool {
    let mut chars = value.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "-_ .&,!".contains(c))
}

/// An environment variable name: a letter or `_`, then letters, digits and `_`.
pub fn is_env_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn garm_default_names_are_kept() {
        assert_eq!(edge_name("garm-ny9heeqyw2rl"), "garm-ny9heeqyw2rl");
    }

    #[test]
    fn other_names_are_sanitised_with_a_hash() {
        let n = edge_name("My_Runner.Prefix-ABC");
        assert!(n.starts_with("my-runner-prefix-abc-"), "{n}");
        assert!(is_safe_name(&n));
        assert_ne!(edge_name("a_b"), edge_name("a.b"));
        assert!(is_safe_name(&edge_name("---")));
        assert!(is_safe_name(&edge_name(&"x".repeat(200))));
    }

    #[test]
    fn key_part_rule() {
        assert!(is_valid_key_part("edp-developer-framework"));
        assert!(is_valid_key_part("My Org & Co"));
        assert!(!is_valid_key_part("-lead"));
        assert!(!is_valid_key_part(""));
        assert!(!is_valid_key_part("a/b"));
    }

    proptest! {
        #[test]
        fn edge_name_is_safe_and_idempotent(name in ".{0,80}") {
            let once = edge_name(&name);
            prop_assert!(is_safe_name(&once));
            prop_assert!(is_valid_key_part(&once));
            prop_assert_eq!(edge_name(&once), once.clone());
        }
    }
}
