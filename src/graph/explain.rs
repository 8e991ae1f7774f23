//! `plan --explain`'s reasons: what changed between the job a stored result was computed from
//! and the job a node has now, named as a person reads the manifest (`team fixer: worker`,
//! `task quickstart__roman-1: problem_statement`), old and new shortened, and a line diff for
//! long text. It compares the jobs' explain documents (`Job::explain`); it does not compute
//! keys and never decides what runs.

use serde_json::Value;

/// Longest first line of a long text shown in its reason; longer ones are cut with `…`.
const SHORT: usize = 60;
/// Longest value (compact JSON) shown whole on a reason's line (an image ID fits); longer ones
/// are cut with `…`.
const VALUE: usize = 80;
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
    for (path, a, b) in &diffs {
        if task_fields && path == "task.digest" {
            continue;
        }
        let label = match (path.strip_prefix("task."), task_id) {
            (Some(field), Some(id)) => format!("task {id}: {field}"),
            _ => label_inputs(path, stage, team),
        };
        match (a, b) {
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
        (a, b) if a != b => out.push((path.to_string(), a.cloned(), b.cloned())),
        _ => {}
    }
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

/// A JSON value, compact, cut to [`VALUE`] characters.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) if long_text(s) => shorten(s),
        _ => {
            let s = v.to_string();
            if s.chars().count() > VALUE {
                let cut: String = s.chars().take(VALUE - 3).collect();
                format!("{cut}…")
            } else {
                s
            }
        }
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

    #[test]
    fn long_diffs_are_cut() {
        let old: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..40).map(|i| format!("row {i}\n")).collect();
        let d = line_diff(&old, &new);
        assert_eq!(d.len(), DIFF_LINES + 1);
        assert_eq!(d[DIFF_LINES], "… and 68 more changed lines");
    }
}
