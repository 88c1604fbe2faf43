//! Structs read from JSON or TOML in their object form only.
//!
//! serde's derived `Deserialize` of a struct also takes a sequence of its fields in their
//! order (`"resources": [2, 4096, 20]`, `"zones": [["TelekomOP", "Munich"]]`), which no schema
//! of ours describes and `deny_unknown_fields` does not stop. A struct that derives with
//! `#[serde(remote = "Self")]` (the derived reading becomes an inherent function) and names
//! itself in [`object_only!`] is read from a map and nothing else; a sequence is refused with
//! serde's own "invalid type" error, at its path.

/// `impl Deserialize` for `$ty` through its derived reading (`#[serde(remote = "Self")]`),
/// given a map only; `$expecting` says what was expected, as errors name it.
macro_rules! object_only {
    ($ty:ty, $expecting:literal) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Fields;
                impl<'de> serde::de::Visitor<'de> for Fields {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<$ty, A::Error> {
                        // The inherent function `remote = "Self"` derives, not this trait's.
                        <$ty>::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                d.deserialize_map(Fields)
            }
        }
    };
    // A type that derives `Serialize` too gets its derived writing back as the trait's.
    ($ty:ty, $expecting:literal, serialize) => {
        $crate::object::object_only!($ty, $expecting);
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                <$ty>::serialize(self, s)
            }
        }
    };
}
pub(crate) use object_only;
