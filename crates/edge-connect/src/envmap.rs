//! One value out of a JSON object of strings, without building the map.
//!
//! ListInstances reads the ownership variables of every App in the organization; each App's
//! `env_vars` holds dozens of entries. Keeping the object as raw JSON and scanning it for the one
//! key wanted avoids allocating every name and value of every App.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserializer;

/// The string value of `key` in the JSON object `raw`, if present (and a string).
pub fn string_field(raw: &str, key: &str) -> Option<String> {
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_map(FindField { key }).ok().flatten()
}

struct FindField<'k> {
    key: &'k str,
}

impl<'de> Visitor<'de> for FindField<'_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is_key) = map.next_key_seed(KeyIs { key: self.key })? {
            if is_key && found.is_none() {
                found = map.next_value::<Option<String>>()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Compares a map key with the wanted one, borrowing where the input allows.
struct KeyIs<'k> {
    key: &'k str,
}

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_key_among_others_and_handles_escapes() {
        let raw = r#"{"A":"1","GARM_POOL_ID":"My Pool \"x\"\n","B":{"nested":true},"C":null}"#;
        assert_eq!(
            string_field(raw, "GARM_POOL_ID").as_deref(),
            Some("My Pool \"x\"\n")
        );
        assert_eq!(string_field(raw, "A").as_deref(), Some("1"));
        assert_eq!(string_field(raw, "C"), None);
        assert_eq!(string_field(raw, "missing"), None);
        assert_eq!(string_field("not json", "A"), None);
        assert_eq!(string_field(r#"{"B":{"nested":true}}"#, "B"), None);
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_a_full_parse(map in proptest::collection::btree_map("[A-Z_]{1,8}", ".*", 0..8), key in "[A-Z_]{1,8}") {
            let raw = serde_json::to_string(&map).unwrap();
            proptest::prop_assert_eq!(string_field(&raw, &key), map.get(&key).cloned());
        }
    }
}
