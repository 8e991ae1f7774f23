//! Writing a mined task in bench's local task format (`src/tasks/local.rs`): `task.toml`,
//! `repo/` (the parent's tree), `test.patch` (the fix's test changes) and `gold.patch` (the
//! rest), staged in a hidden directory beside the destination and renamed into place, so a
//! reader never sees half a task. Every byte is a function of the commit: a rerun writes the
//! same files.
//!
//! Not here: deciding what to write (`candidate.rs`).

use std::path::Path;

use super::candidate::Mined;
use super::git::Repo;

/// A TOML basic string.
fn s(v: &str) -> String {
    toml::Value::String(v.to_string()).to_string()
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        return "[]".into();
    }
    let mut out = String::from("[\n");
    for i in items {
        out.push_str(&format!("    {},\n", s(i)));
    }
    out.push(']');
    out
}

/// The `task.toml` of a mined task.
pub fn task_toml(id: &str, repo_name: &str, m: &Mined) -> String {
    let subject = m.commit.message.lines().next().unwrap_or("");
    format!(
        "# Mined by `bench mine` from commit {fix}: {subject}\n\
         # The problem statement is the commit's message: edit it into an issue a user would file.\n\
         instance_id = {id}\n\
         repo = {repo}\n\
         language = {lang}\n\
         created_at = {created}\n\
         base_commit = {base}\n\
         problem_statement = {ps}\n\
         test_cmd = {cmd}\n\
         log_parser = {parser}\n\
         FAIL_TO_PASS = {f2p}\n\
         PASS_TO_PASS = {p2p}\n",
        fix = m.commit.sha,
        subject = subject.replace(['\n', '\r'], " "),
        id = s(id),
        repo = s(repo_name),
        lang = s(m.plan.framework.language()),
        created = m.commit.date,
        base = s(&m.base),
        ps = s(&m.commit.message),
        cmd = s(&m.plan.test_cmd),
        parser = s(m.plan.framework.parser()),
        f2p = list(&m.fail_to_pass),
        p2p = list(&m.pass_to_pass),
    )
}

/// Writes the task `id` under `out`, replacing an older copy.
pub fn write_task(
    out: &Path,
    id: &str,
    repo_name: &str,
    repo: &Repo,
    m: &Mined,
) -> Result<(), String> {
    let err =
        |what: &Path, e: &dyn std::fmt::Display| format!("cannot write {}: {e}", what.display());
    fs_err::create_dir_all(out).map_err(|e| err(out, &e))?;
    let stage = tempfile::Builder::new()
        .prefix(&format!(".tmp-{id}-"))
        .tempdir_in(out)
        .map_err(|e| err(out, &e))?;
    let dir = stage.path();
    repo.write_tree(&m.base, &dir.join("repo"))
        .map_err(|e| e.to_string())?;
    for (name, bytes) in [
        ("task.toml", task_toml(id, repo_name, m)),
        ("test.patch", m.test_patch.clone()),
        ("gold.patch", m.gold_patch.clone()),
    ] {
        let p = dir.join(name);
        fs_err::write(&p, bytes.as_bytes()).map_err(|e| err(&p, &e))?;
        if let Ok(f) = fs_err::File::open(&p) {
            let _ = f.sync_all();
        }
    }
    let dest = out.join(id);
    let staged = stage.keep();
    if dest.exists() {
        let old = out.join(format!(".old-{id}-{}", std::process::id()));
        let _ = fs_err::remove_dir_all(&old);
        fs_err::rename(&dest, &old).map_err(|e| err(&dest, &e))?;
        fs_err::rename(&staged, &dest).map_err(|e| err(&dest, &e))?;
        let _ = fs_err::remove_dir_all(&old);
    } else {
        fs_err::rename(&staged, &dest).map_err(|e| err(&dest, &e))?;
    }
    if let Ok(d) = fs_err::File::open(out) {
        let _ = d.sync_all();
    }
    Ok(())
}
