//! A record's named blobs (name -> digest): a vector sorted by name, written and read as the
//! JSON object a `BTreeMap<String, String>` was (the same bytes, in the same order).
//!
//! Not a `BTreeMap`: a record names two to five blobs, and a B-tree's first leaf has room for
//! eleven names and eleven digests (544 bytes), which every record the apply keeps held.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Named blobs, sorted by name, each name once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blobs(Vec<(String, String)>);

impl Blobs {
    pub fn new() -> Blobs {
        Blobs(Vec::new())
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    /// The digest of the blob named `name`.
    pub fn get(&self, name: &str) -> Option<&String> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Names `digest` as `name`; returns the digest it replaces, as a map's insert does.
    pub fn insert(&mut self, name: String, digest: String) -> Option<String> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, digest)),
            Err(i) => {
                self.0.insert(i, (name, digest));
                None
            }
        }
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// (name, digest) by name.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &String)> {
        self.0.iter().map(|(n, d)| (n, d))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> {
        self.0.iter().map(|(n, _)| n)
    }

    /// The digests, by name.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &String> {
        self.0.iter().map(|(_, d)| d)
    }
}

impl From<BTreeMap<String, String>> for Blobs {
    fn from(map: BTreeMap<String, String>) -> Blobs {
        // Sorted and unique already; collected from an exact size, so without spare room.
        Blobs(map.into_iter().collect())
    }
}

impl<const N: usize> From<[(String, String); N]> for Blobs {
    fn from(pairs: [(String, String); N]) -> Blobs {
        BTreeMap::from(pairs).into()
    }
}

impl FromIterator<(String, String)> for Blobs {
    /// A later pair of the same name replaces an earlier one, as in a map.
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Blobs {
        pairs.into_iter().collect::<BTreeMap<_, _>>().into()
    }
}

impl<'a> IntoIterator for &'a Blobs {
    type Item = (&'a String, &'a String);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, String)>,
        fn(&'a (String, String)) -> (&'a String, &'a String),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, d)| (n, d))
    }
}

impl std::ops::Index<&str> for Blobs {
    type Output = String;

    fn index(&self, name: &str) -> &String {
        self.get(name)
            .unwrap_or_else(|| panic!("no blob named {name:?}"))
    }
}

impl Serialize for Blobs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, digest) in &self.0 {
            map.serialize_entry(name, digest)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Blobs {
    /// Read as a `BTreeMap` is (sorted; of a name given twice, the last), then kept compact.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Blobs, D::Error> {
        BTreeMap::<String, String>::deserialize(d).map(Blobs::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("trajectory".to_string(), "c".repeat(64)),
            ("log".to_string(), "a".repeat(64)),
            ("patch".to_string(), "b".repeat(64)),
        ])
    }

    #[test]
    fn blobs_are_written_and_read_as_the_map_was() {
        let map = map();
        let blobs = Blobs::from(map.clone());
        let bytes = serde_json::to_vec(&blobs).unwrap();
        assert_eq!(bytes, serde_json::to_vec(&map).unwrap());
        assert_eq!(serde_json::from_slice::<Blobs>(&bytes).unwrap(), blobs);
        assert_eq!(Blobs::new(), serde_json::from_str::<Blobs>("{}").unwrap());
        assert_eq!(serde_json::to_string(&Blobs::new()).unwrap(), "{}");
        // A name given twice is read as a map reads it: the last digest.
        let twice: Blobs = serde_json::from_str(r#"{"b":"2","a":"1","b":"3"}"#).unwrap();
        let expected: BTreeMap<String, String> =
            serde_json::from_str(r#"{"b":"2","a":"1","b":"3"}"#).unwrap();
        assert_eq!(twice, Blobs::from(expected));
        assert_eq!(twice.iter().collect::<Vec<_>>().len(), 2);
    }

    #[test]
    fn blobs_look_up_insert_and_iterate_as_a_map() {
        let mut map = map();
        let mut blobs = Blobs::from(map.clone());
        assert_eq!(blobs.get("log"), map.get("log"));
        assert_eq!(blobs.get("nope"), None);
        assert!(blobs.contains_key("patch") && !blobs.contains_key("pat"));
        assert_eq!(&blobs["trajectory"], &map["trajectory"]);
        for (name, digest) in [("eval", "e"), ("log", "x"), ("zz", "z"), ("a", "0")] {
            assert_eq!(
                blobs.insert(name.into(), digest.into()),
                map.insert(name.into(), digest.into())
            );
        }
        assert!(blobs.iter().eq(map.iter()));
        assert!(blobs.keys().eq(map.keys()) && blobs.values().eq(map.values()));
        assert!((&blobs).into_iter().eq(map.iter()));
        assert_eq!(blobs.len(), map.len());
        let pairs = [("b".to_string(), "1".to_string()), ("b".into(), "2".into())];
        assert_eq!(
            pairs.iter().cloned().collect::<Blobs>(),
            Blobs::from(pairs.iter().cloned().collect::<BTreeMap<_, _>>())
        );
    }
}
