//! The values of a few keys of a JSON object of strings, in one pass and without building the
//! map: an App's `env_vars` holds dozens of entries; only a few are wanted.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserializer;

/// Fills `found[i]` with the string value of `names[i]`. A value that is not a string leaves
/// its slot empty; unreadable JSON ends the scan, keeping what was found before it.
pub(super) fn string_fields(raw: &str, names: &[&str], found: &mut [Option<String>]) {
    let mut de = serde_json::Deserializer::from_str(raw);
    // An error only means "nothing more to find": the slots filled so far stay.
    let _ = de.deserialize_map(Fields { names, found });
}

/// Fills `found[i]` with the value of `names[i]` from the object it visits (`null`: none).
struct Fields<'a, 'k> {
    names: &'a [&'k str],
    found: &'a mut [Option<String>],
}

impl<'de> Visitor<'de> for Fields<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(index) = map.next_key_seed(KeyIndex { names: self.names })? {
            match index {
                // The first occurrence wins, as in a map built from the object.
                Some(i) if self.found[i].is_none() => {
                    self.found[i] = map.next_value_seed(StringOrNothing)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // A name asked for twice gets its value in every slot, not only the first.
        for i in 0..self.names.len() {
            if self.found[i].is_none() {
                if let Some(j) = self.names[..i].iter().position(|n| *n == self.names[i]) {
                    self.found[i] = self.found[j].clone();
                }
            }
        }
        Ok(())
    }
}

/// The position of a map key among the wanted names, compared without allocating.
struct KeyIndex<'a, 'k> {
    names: &'a [&'k str],
}

impl<'de> DeserializeSeed<'de> for KeyIndex<'_, '_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIndex<'_, '_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.names.iter().position(|n| *n == v))
    }
}

/// A string value, or `None` for any other JSON value (which is skipped).
struct StringOrNothing;

impl<'de> DeserializeSeed<'de> for StringOrNothing {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StringOrNothing {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E>(self, v: &str) -> Result<Option<String>, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Option<String>, E> {
        Ok(Some(v))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}
