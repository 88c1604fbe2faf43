//! An App's `env_vars` as ShowApp shows it, read in the same pass as the rest of its line. A List
//! parses the App of every runner of its pool, and each holds dozens of variables of which a few
//! are read: keeping the string entries as one text means one allocation per App instead of two
//! per variable (at 10,000 AppInsts in ten pools, 160 M instructions instead of 171 M). The first
//! of two entries of one name is the one read; values that are not strings are skipped.
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// The string entries of a JSON object, in the order shown, decoded (Go's `\u0026` is `&`).
#[derive(Debug, Clone, Default)]
pub(super) struct Env {
    /// Every kept name followed by its value.
    text: String,
    /// Per entry: where its name ends and where its value ends in `text`.
    ends: Vec<(usize, usize)>,
}

impl Env {
    /// The value of the first string entry named `name` (as in a map built from the object).
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        // Compared as bytes: a name's bytes equal only where the whole name does, and slicing
        // `text` as a str would check character boundaries at every entry of every lookup.
        let mut start = 0;
        for &(name_end, value_end) in &self.ends {
            if self.text.as_bytes().get(start..name_end) == Some(name.as_bytes()) {
                return self.text.get(name_end..value_end);
            }
            start = value_end;
        }
        None
    }
}

impl<'de> Deserialize<'de> for Env {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Env, D::Error> {
        d.deserialize_map(EnvVisitor)
    }
}

struct EnvVisitor;

impl<'de> Visitor<'de> for EnvVisitor {
    type Value = Env;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Env, A::Error> {
        // Room for a runner App's environment (about 1 KiB of text, two dozen entries) from the
        // start: growing to it step by step costs more than the parse of its entries.
        let mut env = Env {
            text: String::with_capacity(1024),
            ends: Vec::with_capacity(32),
        };
        let mut start = 0;
        while map.next_key_seed(Append(&mut env.text))?.is_some() {
            let name_end = env.text.len();
            if map.next_value_seed(Append(&mut env.text))? {
                env.ends.push((name_end, env.text.len()));
                start = env.text.len();
            } else {
                // Not a string: not an entry anyone reads.
                env.text.truncate(start);
            }
        }
        Ok(env)
    }
}

/// Appends a string value to the text (`true`), or skips any other JSON value (`false`).
pub(super) struct Append<'a>(pub(super) &'a mut String);

impl<'de> DeserializeSeed<'de> for Append<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Append<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        self.0.push_str(v);
        Ok(true)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}
