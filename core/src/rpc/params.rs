//! The parameter list of a request type, read from its serde derive: field names in
//! declaration order, and which are optional (`Option<_>`, omitted when `None`, so the SQL
//! function must give them a default). Tests compare it with `pg_proc`.

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use std::cell::Cell;
use std::fmt;

/// One named parameter of an RPC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    /// Absent from a call when `None`: the SQL function needs a default.
    pub optional: bool,
}

/// The parameters of `T`, a struct deriving `Deserialize`.
pub fn params_of<T: DeserializeOwned>() -> Vec<Param> {
    let fields = field_names::<T>();
    fields
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let optional = Cell::new(false);
            let _ = T::deserialize(Probe::One {
                index: i,
                optional: &optional,
            });
            Param {
                name,
                optional: optional.get(),
            }
        })
        .collect()
}

fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let names = Cell::new(None);
    let _ = T::deserialize(Probe::Names(&names));
    names.get().expect("a request type is a struct")
}

/// Stops a probe once it learned what it came for.
#[derive(Debug)]
struct Done;

impl fmt::Display for Done {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probe done")
    }
}

impl std::error::Error for Done {}

impl de::Error for Done {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Done
    }
}

enum Probe<'a> {
    /// Records the struct's field names.
    Names(&'a Cell<Option<&'static [&'static str]>>),
    /// Feeds field `index` alone and records whether its type asked for an option.
    One {
        index: usize,
        optional: &'a Cell<bool>,
    },
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Done;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Done> {
        Err(Done)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Done> {
        match self {
            Probe::Names(names) => {
                names.set(Some(fields));
                Err(Done)
            }
            Probe::One { index, optional } => visitor.visit_map(OneField {
                key: Some(fields[index]),
                optional,
            }),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

struct OneField<'a> {
    key: Option<&'static str>,
    optional: &'a Cell<bool>,
}

impl<'de> MapAccess<'de> for OneField<'_> {
    type Error = Done;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Done> {
        match self.key.take() {
            Some(k) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(k))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Done> {
        seed.deserialize(ValueProbe(self.optional))
    }
}

/// A field value: `None` when the type asks for an option, an error for anything else.
struct ValueProbe<'a>(&'a Cell<bool>);

impl<'de> Deserializer<'de> for ValueProbe<'_> {
    type Error = Done;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Done> {
        Err(Done)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Done> {
        self.0.set(true);
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Sample {
        workspace_id: String,
        changes: Vec<u8>,
        #[serde(rename = "renamed")]
        actor: Option<String>,
        metadata: Option<serde_json::Value>,
    }

    #[test]
    fn reads_names_order_and_options() {
        let p = params_of::<Sample>();
        let got: Vec<(&str, bool)> = p.iter().map(|p| (p.name, p.optional)).collect();
        assert_eq!(
            got,
            [
                ("workspace_id", false),
                ("changes", false),
                ("renamed", true),
                ("metadata", true)
            ]
        );
    }
}
