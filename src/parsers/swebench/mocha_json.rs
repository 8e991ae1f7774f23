//! A mocha JSON report's `failures` and `passes` titles, read as `serde_json::Value` reads the
//! report (the same errors: syntax, number range, string escapes, depth; a duplicate key's last
//! value wins) but without building it: every other value is read and dropped, and a title
//! without escapes is borrowed from the log. For `parse_log_prismjs`, which upstream reads with
//! `json.loads`. Not responsible for finding the report in the log.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A report's two lists: `None` where the key is missing or its value is not an array; in a
/// list, `None` for a test whose `fullTitle` is missing or not a string.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Report<'a> {
    pub(super) failures: Option<Vec<Option<Cow<'a, str>>>>,
    pub(super) passes: Option<Vec<Option<Cow<'a, str>>>>,
}

/// Reads `json` as upstream's `json.loads` does (`None`: it raises, or the value is not an
/// object).
pub(super) fn report(json: &str) -> Option<Report<'_>> {
    serde_json::from_str(json).ok()
}

/// Any JSON value, read (through `deserialize_any`, as `Value` is) and dropped.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SkipVisitor;
        impl<'de> Visitor<'de> for SkipVisitor {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Skip, A::Error> {
                drain_seq(seq)?;
                Ok(Skip)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Skip, A::Error> {
                drain_map(map)?;
                Ok(Skip)
            }
        }
        d.deserialize_any(SkipVisitor)
    }
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Skip>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<Skip, Skip>()?.is_some() {}
    Ok(())
}

/// An object's key, decoded (`"fail\u0075res"` is `failures`, as `Value`'s map holds it).
enum Key {
    Failures,
    Passes,
    FullTitle,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "failures" => Key::Failures,
                    "passes" => Key::Passes,
                    "fullTitle" => Key::FullTitle,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_any(KeyVisitor)
    }
}

/// A string value (borrowed where it has no escapes), or `None` for any other value.
struct Title<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Title<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TitleVisitor;
        impl<'de> Visitor<'de> for TitleVisitor {
            type Value = Title<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Title<'de>, E> {
                Ok(Title(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Title<'de>, E> {
                Ok(Title(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Title<'de>, E> {
                Ok(Title(Some(Cow::Owned(s))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Title<'de>, E> {
                Ok(Title(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Title<'de>, E> {
                Ok(Title(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Title<'de>, E> {
                Ok(Title(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Title<'de>, E> {
                Ok(Title(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Title<'de>, E> {
                Ok(Title(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Title<'de>, A::Error> {
                drain_seq(seq)?;
                Ok(Title(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Title<'de>, A::Error> {
                drain_map(map)?;
                Ok(Title(None))
            }
        }
        d.deserialize_any(TitleVisitor)
    }
}

/// A test of a list: its `fullTitle` if it is an object with a string there (the last one of a
/// duplicated key), else `None`.
struct Test<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Test<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TestVisitor;
        impl<'de> Visitor<'de> for TestVisitor {
            type Value = Test<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Test<'de>, A::Error> {
                let mut title = None;
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::FullTitle => title = map.next_value::<Title<'de>>()?.0,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(Test(title))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Test<'de>, E> {
                Ok(Test(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Test<'de>, E> {
                Ok(Test(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Test<'de>, E> {
                Ok(Test(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Test<'de>, E> {
                Ok(Test(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Test<'de>, E> {
                Ok(Test(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Test<'de>, E> {
                Ok(Test(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Test<'de>, A::Error> {
                drain_seq(seq)?;
                Ok(Test(None))
            }
        }
        d.deserialize_any(TestVisitor)
    }
}

/// A `failures` or `passes` value: its tests if it is an array, else `None`.
struct List<'a>(Option<Vec<Option<Cow<'a, str>>>>);

impl<'de> Deserialize<'de> for List<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = List<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<'de>, A::Error> {
                let mut tests = Vec::new();
                while let Some(Test(title)) = seq.next_element::<Test<'de>>()? {
                    tests.push(title);
                }
                Ok(List(Some(tests)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<List<'de>, A::Error> {
                drain_map(map)?;
                Ok(List(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<List<'de>, E> {
                Ok(List(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<List<'de>, E> {
                Ok(List(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<List<'de>, E> {
                Ok(List(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<List<'de>, E> {
                Ok(List(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<List<'de>, E> {
                Ok(List(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<List<'de>, E> {
                Ok(List(None))
            }
        }
        d.deserialize_any(ListVisitor)
    }
}

impl<'de> Deserialize<'de> for Report<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ReportVisitor;
        impl<'de> Visitor<'de> for ReportVisitor {
            type Value = Report<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Report<'de>, A::Error> {
                let mut report = Report::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Failures => report.failures = map.next_value::<List<'de>>()?.0,
                        Key::Passes => report.passes = map.next_value::<List<'de>>()?.0,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(report)
            }
        }
        d.deserialize_any(ReportVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the code it replaced read from `serde_json::Value`.
    fn by_value(json: &str) -> Option<Report<'static>> {
        let value: serde_json::Value = serde_json::from_str(json).ok()?;
        let list = |key: &str| {
            value.get(key).and_then(|t| t.as_array()).map(|tests| {
                tests
                    .iter()
                    .map(|t| {
                        t.get("fullTitle")
                            .and_then(|t| t.as_str())
                            .map(|s| Cow::Owned(s.to_owned()))
                    })
                    .collect()
            })
        };
        Some(Report {
            failures: list("failures"),
            passes: list("passes"),
        })
    }

    /// Reports that read, and some that do not, give what `Value` gave: escapes in keys and
    /// titles, duplicate keys, other types where lists and titles go, numbers out of range,
    /// nesting past the depth limit, trailing text, truncated reports.
    #[test]
    fn the_report_is_what_value_reads() {
        let deep = format!("{{\"x\": {}{}}}", "[".repeat(200), "]".repeat(200));
        let cases = [
            r#"{"failures": [{"fullTitle": "a"}], "passes": [{"fullTitle": "b\"c"}]}"#,
            r#"{"fail\u0075res": [{"full\u0054itle": "a\u00e9\n"}], "passes": []}"#,
            r#"{"failures": [{"fullTitle": "a"}, {"fullTitle": 3}, 7, {"x": 1}], "passes": {}}"#,
            r#"{"failures": 1, "passes": [{"fullTitle": "a", "fullTitle": "b"}]}"#,
            r#"{"failures": [], "failures": [{"fullTitle": "z"}], "passes": null}"#,
            r#"{"stats": {"n": 1e400}, "failures": [], "passes": []}"#,
            r#"{"stats": {"n": -0.5e-3, "m": [true, false, null, "s"]}, "passes": []}"#,
            r#"{"failures": [], "passes": []} x"#,
            r#"{"failures": [], "passes": [{"fullTitle": "a"}"#,
            r#"{"failures": [], "passes": [{"fullTitle": "\ud800"}]}"#,
            r#"{"failures": [{"fullTitle": ["a"], "err": {"a": [{}]}}], "passes": [[]]}"#,
            r#"{}"#,
            r#"{"failures": [], "passes": [], }"#,
            deep.as_str(),
        ];
        for json in cases {
            assert_eq!(report(json), by_value(json), "{json}");
        }
        assert!(report(&deep).is_none());
    }
}
