//! `plan --explain`'s reasons: what changed between the job a stored result was computed from
//! and the job a node has now, named as a person reads the manifest (`team fixer: worker`,
//! `task quickstart__roman-1: problem_statement`), old and new shortened, and a line diff for
//! long text. It compares the jobs' explain documents (`Job::explain`); it does not compute
//! keys and never decides what runs.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// Longest first line of a long text shown in its reason; longer ones are cut with `…`.
const SHORT: usize = 60;
/// Longest value (compact JSON) shown whole on a reason's line (an image ID fits); longer ones
/// are cut with `…`.
const VALUE: usize = 80;
/// Most reasons listed for one node; the rest are counted.
const MAX_REASONS: usize = 20;
/// A string longer than this, or of several lines, is a text: its reason gets a line diff.
const TEXT: usize = 120;
/// Most diff lines shown for one changed text.
const DIFF_LINES: usize = 12;
/// Texts longer than this many lines are compared by their line counts only.
const DIFF_MAX_INPUT_LINES: usize = 2000;

/// Human labels for the top-level groups of job fields, given the node's context
/// (`team` -> `team review`).
pub fn label_inputs(path: &str, stage: &str, team: Option<&str>) -> String {
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let head = match head {
        "team" => format!("team {}", team.unwrap_or("?")),
        "filters" => format!("stage {stage}"),
        other => other.to_string(),
    };
    // A team's topology fields read as the manifest writes them (`team review: reviewer`).
    let rest = rest.strip_prefix("topology.").unwrap_or(rest);
    if rest.is_empty() {
        head
    } else {
        format!("{head}: {rest}")
    }
}

/// The reasons a node whose stored result was computed from `old` reruns with `new`, one line
/// each (diff lines of a long text follow its reason, indented, `- ` old and `+ ` new).
pub fn changes(old: &Value, new: &Value, stage: &str, team: Option<&str>) -> Vec<String> {
    let mut diffs = Vec::new();
    diff_into("", Some(old), Some(new), &mut diffs);
    // A task's own digest changes with any of its fields: name the fields, not the digest.
    let task_fields = diffs
        .iter()
        .any(|(p, _, _)| p.starts_with("task.") && p != "task.digest");
    let task_id = new
        .get("task")
        .and_then(|t| t.get("instance_id"))
        .and_then(Value::as_str);
    let mut out = Vec::new();
    for (i, (path, a, b)) in diffs.iter().enumerate() {
        if task_fields && path == "task.digest" {
            continue;
        }
        let label = match (path.strip_prefix("task."), task_id) {
            (Some(field), Some(id)) => format!("task {id}: {field}"),
            _ => label_inputs(path, stage, team),
        };
        if out.len() >= MAX_REASONS {
            out.push(format!("… and {} more changes", diffs.len() - i));
            break;
        }
        match (a, b) {
            // A list's item that one side lacks.
            (None, Some(_)) if path.ends_with(']') => out.push(format!("{label} added")),
            (Some(_), None) if path.ends_with(']') => out.push(format!("{label} removed")),
            // A record written before tasks were explained by field holds the digest only.
            (Some(Value::String(d)), Some(Value::Object(t))) if path == "task" => {
                let now = t.get("digest").and_then(Value::as_str).unwrap_or("");
                if now != d {
                    out.push(format!(
                        "{label} {} -> {} (the stored result names its task by digest only, so the changed field is unknown)",
                        short_digest(d),
                        short_digest(now)
                    ));
                }
            }
            (Some(Value::String(x)), Some(Value::String(y))) if long_text(x) || long_text(y) => {
                out.push(format!("{label} changed: {} -> {}", shorten(x), shorten(y)));
                out.extend(line_diff(x, y).into_iter().map(|l| format!("  {l}")));
            }
            _ => out.push(format!(
                "{label} {} -> {}",
                a.as_ref().map_or("(absent)".to_string(), show),
                b.as_ref().map_or("(absent)".to_string(), show)
            )),
        }
    }
    if out.is_empty() {
        out.push("key changed".to_string());
    }
    out
}

fn diff_into(path: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Diff>) {
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                diff_into(&p, a.get(k), b.get(k), out);
            }
        }
        // Lists are compared item by item: by each item's name when every item has one
        // (`rows[grade/x/fixer]`), else by position, so a change names its field rather
        // than printing the whole list.
        // A list of plain values (test names, env names) that does not fit on a line: the
        // values that left and came, by value.
        (Some(Value::Array(a)), Some(Value::Array(b)))
            if a != b && plain(a) && plain(b) && !(fits(old) && fits(new)) =>
        {
            let name = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
            let (in_a, in_b): (HashSet<String>, HashSet<String>) =
                (a.iter().map(name).collect(), b.iter().map(name).collect());
            for v in a.iter().filter(|v| !in_b.contains(&name(v))) {
                out.push((format!("{path}[{}]", name(v)), Some(v.clone()), None));
            }
            for v in b.iter().filter(|v| !in_a.contains(&name(v))) {
                out.push((format!("{path}[{}]", name(v)), None, Some(v.clone())));
            }
        }
        // Short lists of plain values read whole, old -> new.
        (Some(Value::Array(a)), Some(Value::Array(b))) if a != b && plain(a) && plain(b) => {
            out.push((path.to_string(), old.cloned(), new.cloned()));
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a != b => {
            let (a, b) = match (named(a), named(b)) {
                (Some(a), Some(b)) => (a, b),
                _ => (indexed(a), indexed(b)),
            };
            let by_name = |list: &[(String, &'_ Value)]| -> HashMap<String, usize> {
                list.iter()
                    .enumerate()
                    .map(|(i, (n, _))| (n.clone(), i))
                    .collect()
            };
            let (in_a, in_b) = (by_name(&a), by_name(&b));
            for (n, item) in &a {
                let now = in_b.get(n).map(|i| b[*i].1);
                diff_into(&format!("{path}[{n}]"), Some(item), now, out);
            }
            for (n, item) in b.iter().filter(|(n, _)| !in_a.contains_key(n)) {
                diff_into(&format!("{path}[{n}]"), None, Some(item), out);
            }
        }
        (a, b) if a != b => out.push((path.to_string(), a.cloned(), b.cloned())),
        _ => {}
    }
}

/// A list's items by name (`address`, else `task`, then `team` and a replicate after the
/// first when present), in order; `None` when some item has no name or two share one.
fn named(items: &[Value]) -> Option<Vec<(String, &Value)>> {
    let mut seen = HashSet::new();
    items
        .iter()
        .map(|item| {
            let name = item_name(item)?;
            seen.insert(name.clone()).then_some((name, item))
        })
        .collect()
}

/// Whether no item of a list is a list or a table.
fn plain(items: &[Value]) -> bool {
    items.iter().all(|v| !v.is_object() && !v.is_array())
}

/// Whether a value is shown whole on a reason's line.
fn fits(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.to_string().chars().count() <= VALUE)
}

/// A list's items by position.
fn indexed(items: &[Value]) -> Vec<(String, &Value)> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| (i.to_string(), item))
        .collect()
}

fn item_name(item: &Value) -> Option<String> {
    let field = |k: &str| item.get(k).filter(|v| !v.is_null());
    if let Some(Value::String(a)) = field("address") {
        return Some(a.clone());
    }
    let Some(Value::String(task)) = field("task") else {
        return None;
    };
    let mut name = task.clone();
    if let Some(Value::String(team)) = field("team") {
        name.push_str(&format!(" {team}"));
    }
    if let Some(r) = field("replicate")
        .and_then(Value::as_u64)
        .filter(|r| *r > 0)
    {
        name.push_str(&format!(" #{r}"));
    }
    Some(name)
}

type Diff = (String, Option<Value>, Option<Value>);

fn long_text(s: &str) -> bool {
    s.contains('\n') || s.chars().count() > TEXT
}

fn short_digest(d: &str) -> String {
    let cut: String = d.chars().take(12).collect();
    if cut.len() < d.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// A text's first line, quoted, cut to [`SHORT`] characters.
fn shorten(s: &str) -> String {
    let first = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut cut: String = first.chars().take(SHORT).collect();
    if cut.len() < first.len() || s.trim_end().lines().count() > 1 {
        cut.push('…');
    }
    format!("{:?}", cut).replacen("…\"", "\"…", 1)
}

/// A JSON value, compact when it fits in [`VALUE`] characters; else a string's first line cut
/// (quoted), and a list or a table by its size: never JSON cut in the middle.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= VALUE {
        return s;
    }
    match v {
        Value::String(s) => shorten(s),
        Value::Array(a) => format!("a list of {} items", a.len()),
        Value::Object(o) => format!("a table of {} fields", o.len()),
        _ => s,
    }
}

/// The lines of `old` and `new` that differ (a longest-common-subsequence diff), `- ` for
/// removed and `+ ` for added, at most [`DIFF_LINES`] of them.
fn line_diff(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len() > DIFF_MAX_INPUT_LINES || b.len() > DIFF_MAX_INPUT_LINES {
        return vec![format!("({} lines -> {} lines)", a.len(), b.len())];
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", cut_line(a[i])));
            i += 1;
        } else {
            out.push(format!("+ {}", cut_line(b[j])));
            j += 1;
        }
    }
    if out.len() > DIFF_LINES {
        let more = out.len() - DIFF_LINES;
        out.truncate(DIFF_LINES);
        out.push(format!("… and {more} more changed lines"));
    }
    out
}

fn cut_line(l: &str) -> String {
    const WIDTH: usize = 100;
    if l.chars().count() > WIDTH {
        let cut: String = l.chars().take(WIDTH).collect();
        format!("{cut}…")
    } else {
        l.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_statement_edit_names_the_task_and_the_field_with_a_diff() {
        let old = json!({"task": {"instance_id": "q__r-1", "digest": "958aaaaaaaaaaaaaaa",
            "problem_statement": "to_roman() never uses the subtractive forms\n\nIV is printed as IIII.\n"}});
        let new = json!({"task": {"instance_id": "q__r-1", "digest": "7fdbbbbbbbbbbbbbbb",
            "problem_statement": "to_roman() never uses the subtractive forms\n\nIX is printed as VIIII.\n"}});
        let got = changes(&old, &new, "solve", Some("fixer"));
        assert_eq!(
            got,
            vec![
                "task q__r-1: problem_statement changed: \"to_roman() never uses the subtractive forms\"… -> \"to_roman() never uses the subtractive forms\"…".to_string(),
                "  - IV is printed as IIII.".to_string(),
                "  + IX is printed as VIIII.".to_string(),
            ]
        );
    }

    #[test]
    fn short_values_read_old_to_new_and_groups_keep_their_labels() {
        let old = json!({"timeout_ms": 120000, "team": {"topology": {"worker": "fixer"}}});
        let new = json!({"timeout_ms": 180000, "team": {"topology": {"worker": "fixer@other"}}});
        assert_eq!(
            changes(&old, &new, "solve", Some("fixer")),
            vec![
                "team fixer: worker \"fixer\" -> \"fixer@other\"".to_string(),
                "timeout_ms 120000 -> 180000".to_string(),
            ]
        );
    }

    #[test]
    fn an_image_id_is_shown_whole() {
        let id = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let old = json!({"backend": {"image": id('a')}});
        let new = json!({"backend": {"image": id('b')}});
        assert_eq!(
            changes(&old, &new, "grade", None),
            vec![format!("backend: image \"{}\" -> \"{}\"", id('a'), id('b'))]
        );
    }

    #[test]
    fn a_record_with_only_the_task_digest_says_so() {
        let old = json!({"task": "958aaaaaaaaaaaaaaa"});
        let new = json!({"task": {"instance_id": "q__r-1", "digest": "7fdbbbbbbbbbbbbbbb"}});
        let got = changes(&old, &new, "solve", None);
        assert_eq!(got.len(), 1);
        assert!(
            got[0].starts_with("task 958aaaaaaaaa… -> 7fdbbbbbbbbb…"),
            "{got:?}"
        );
        let same = json!({"task": {"instance_id": "q__r-1", "digest": "958aaaaaaaaaaaaaaa"}});
        assert_eq!(changes(&old, &same, "solve", None), vec!["key changed"]);
    }

    /// Issue 49, item 9: a list (the report's sample filters, pairs, rows) is compared item by
    /// item, so a change names its field instead of printing the list cut in the middle.
    #[test]
    fn lists_are_compared_item_by_item_and_never_cut() {
        let filters = |seed: u64| {
            json!({"inputs": {"filters": [{"instance_ids": [], "languages": [], "limit": null,
                "repos": [], "seed": seed, "since": "2026-07-01T00:00:00Z"}]}})
        };
        assert_eq!(
            changes(&filters(7), &filters(8), "report", None),
            vec!["inputs: filters[0].seed 7 -> 8"]
        );
        let pair = |task: &str, team: &str, state: &str| {
            json!({"task": task, "team": team, "replicate": 0, "state": state,
                "language": "python", "repo": "quickstart/roman", "cost_usd": null,
                "wall_time_s": 1.5, "score": null, "correctness": null})
        };
        let old = json!({"inputs": {"pairs": [pair("a", "nop", "resolved"),
            pair("a", "fixer", "resolved"), pair("b", "fixer", "resolved")]}});
        let new = json!({"inputs": {"pairs": [pair("a", "nop", "unresolved"),
            pair("b", "fixer", "resolved"), pair("c", "fixer", "resolved")]}});
        assert_eq!(
            changes(&old, &new, "report", None),
            vec![
                "inputs: pairs[a nop].state \"resolved\" -> \"unresolved\"",
                "inputs: pairs[a fixer] removed",
                "inputs: pairs[c fixer] added",
            ]
        );
        // A long list of names: which left and which came.
        let tests = |n: std::ops::Range<u32>| {
            json!({"task": {"instance_id": "q__r-1",
            "PASS_TO_PASS": n.map(|i| format!("test_{i:02}")).collect::<Vec<_>>()}})
        };
        assert_eq!(
            changes(&tests(0..20), &tests(1..21), "grade", None),
            vec![
                "task q__r-1: PASS_TO_PASS[test_00] removed",
                "task q__r-1: PASS_TO_PASS[test_20] added"
            ]
        );
        let short = |v: &[&str]| json!({"datasets": v});
        assert_eq!(
            changes(&short(&["a"]), &short(&["a", "b"]), "report", None),
            vec!["datasets [\"a\"] -> [\"a\",\"b\"]"]
        );
        // A long value that is not a text is described, not cut.
        let old = json!({"x": {"list": (0..40).collect::<Vec<u32>>()}});
        let new = json!({"x": {"list": "none"}});
        assert_eq!(
            changes(&old, &new, "report", None),
            vec!["x: list a list of 40 items -> \"none\""]
        );
    }

    #[test]
    fn many_changes_are_counted_past_the_limit() {
        let old = json!({"rows": (0..30).map(|i| json!({"address": format!("n/{i}"), "v": 1})).collect::<Vec<_>>()});
        let new = json!({"rows": (0..30).map(|i| json!({"address": format!("n/{i}"), "v": 2})).collect::<Vec<_>>()});
        let got = changes(&old, &new, "report", None);
        assert_eq!(got.len(), MAX_REASONS + 1);
        assert_eq!(got[0], "rows[n/0]: v 1 -> 2");
        assert_eq!(got[MAX_REASONS], "… and 10 more changes");
    }

    #[test]
    fn long_diffs_are_cut() {
        let old: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..40).map(|i| format!("row {i}\n")).collect();
        let d = line_diff(&old, &new);
        assert_eq!(d.len(), DIFF_LINES + 1);
        assert_eq!(d[DIFF_LINES], "… and 68 more changed lines");
    }
}
