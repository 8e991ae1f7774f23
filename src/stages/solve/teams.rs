//! Team topologies, written once over the [`Sandbox`](crate::backend::Sandbox) trait:
//!
//! - `solo`: one worker.
//! - `review`: the coder works; a reviewer reads the diff against the issue in a sandbox of its
//!   own (the coder's diff applied) and answers APPROVE or REQUEST_CHANGES; the coder fixes; up
//!   to `rounds` reviews.
//! - `best-of`: n workers from the same start, each in its own sandbox; a judge reads their
//!   diffs and answers `PICK: n`; the other candidates are kept as artifacts.
//!
//! Not here: how one agent runs (the solve executor, `mod.rs`), where sandboxes come from (the
//! backend).

use std::collections::BTreeMap;

use super::{Ledger, RunCtx, Sandboxes, finish, render_about, render_prompt};
use crate::backend::repo;
use crate::harness::scrub;
use crate::harness::template::TemplateKind;
use crate::stages::WorkError;
use crate::store::Store;
use crate::types::{Agent, Topology};

fn infra(e: impl std::fmt::Display) -> WorkError {
    WorkError::Infra(e.to_string())
}

/// Runs the job's team and returns the patch it produced (candidates and the judge's pick go
/// into `blobs`).
pub async fn run(
    ctx: &RunCtx<'_>,
    place: &Sandboxes<'_>,
    ledger: &mut Ledger,
    store: &Store,
    blobs: &mut BTreeMap<String, String>,
) -> Result<Vec<u8>, WorkError> {
    let job = ctx.job;
    let team = job.team.get();
    let prompt = match &team.prompts.instruction {
        Some(t) => {
            render_prompt(t, job.task.problem_statement(), job.task.repo()).map_err(infra)?
        }
        None => String::new(),
    };
    match &team.topology {
        Topology::Solo { worker } => solo(ctx, place, ledger, worker, &prompt).await,
        Topology::Review {
            coder,
            reviewer,
            rounds,
        } => {
            let templates = (
                template(&team.prompts.review, "review")?,
                template(&team.prompts.fix, "fix")?,
            );
            review(
                ctx,
                place,
                ledger,
                (coder, reviewer, *rounds),
                templates,
                &prompt,
            )
            .await
        }
        Topology::BestOf { workers, judge } => {
            let judge_t = &team.prompts.judge;
            best_of(
                ctx,
                place,
                ledger,
                (store, blobs),
                (workers, judge, judge_t),
                &prompt,
            )
            .await
        }
    }
}

/// The prompt template `t` of the team (`what` names it), which a job of its topology holds.
fn template(t: &Option<String>, what: &str) -> Result<String, WorkError> {
    t.clone()
        .ok_or_else(|| WorkError::Bug(format!("the team's job holds no {what} prompt")))
}

/// `solo`: the worker runs in its sandbox and its diff is the patch; with a confirm check, the
/// check runs on the patch in that sandbox first.
async fn solo(
    ctx: &RunCtx<'_>,
    place: &Sandboxes<'_>,
    ledger: &mut Ledger,
    worker: &Agent,
    prompt: &str,
) -> Result<Vec<u8>, WorkError> {
    let job = ctx.job;
    let cancel = ctx.cancel;
    let ws = place.sandbox(worker, cancel).await?;
    let result = async {
        let run = ctx
            .run(worker, ws.as_ref(), prompt, ledger.remaining())
            .await?;
        ledger.record("worker", worker, &run);
        ledger.exit_code = run.exit_code;
        let patch = repo::diff(ws.as_ref(), cancel).await?;
        if let Some(check) = &job.confirm {
            let base = place.base_commit();
            ledger.in_sandbox = Some(
                crate::protocols::in_sandbox(check, &patch, ws.as_ref(), base.as_deref(), cancel)
                    .await?,
            );
        }
        Ok(patch)
    }
    .await;
    finish(ws, result).await
}

/// `review`: the coder runs; then up to `rounds` times a reviewer reads the coder's diff in a
/// sandbox of its own and, unless it approves (or time is up), the coder fixes what it says.
/// The coder's final diff is the patch. `templates` are the review and fix prompts.
async fn review(
    ctx: &RunCtx<'_>,
    place: &Sandboxes<'_>,
    ledger: &mut Ledger,
    (coder, reviewer, rounds): (&Agent, &Agent, u32),
    (review_t, fix_t): (String, String),
    prompt: &str,
) -> Result<Vec<u8>, WorkError> {
    let job = ctx.job;
    let cancel = ctx.cancel;
    let ws = place.sandbox(coder, cancel).await?;
    let result = async {
        let run = ctx
            .run(coder, ws.as_ref(), prompt, ledger.remaining())
            .await?;
        ledger.record("coder", coder, &run);
        for round in 1..=rounds {
            if ledger.timed_out {
                break;
            }
            let diff = repo::diff(ws.as_ref(), cancel).await?;
            let review_prompt = render_about(
                TemplateKind::Review,
                &review_t,
                job,
                &String::from_utf8_lossy(&diff),
            )?;
            // The reviewer reads the coder's work in a sandbox of its own.
            let review_ws = place.sandbox(reviewer, cancel).await?;
            let review = async {
                if !diff.is_empty() {
                    let (code, out) =
                        repo::apply(review_ws.as_ref(), "candidate.patch", &diff, cancel).await?;
                    if code != Some(0) {
                        return Err(infra(format!(
                            "cannot give the reviewer the coder's changes: {}",
                            String::from_utf8_lossy(&out).trim()
                        )));
                    }
                }
                ctx.run(
                    reviewer,
                    review_ws.as_ref(),
                    &review_prompt,
                    ledger.remaining(),
                )
                .await
            }
            .await;
            let review = finish(review_ws, review).await?;
            ledger.record(&format!("reviewer (round {round})"), reviewer, &review);
            let verdict = review.final_message();
            if ledger.timed_out || approves(&verdict) {
                break;
            }
            let fix_prompt = render_about(TemplateKind::Fix, &fix_t, job, &verdict)?;
            let fix = ctx
                .run(coder, ws.as_ref(), &fix_prompt, ledger.remaining())
                .await?;
            ledger.record(&format!("coder (fix {round})"), coder, &fix);
        }
        Ok(repo::diff(ws.as_ref(), cancel).await?)
    }
    .await;
    finish(ws, result).await
}

/// `best-of`: each worker runs in its own sandbox and its diff is kept in `blobs` as a
/// candidate; when more than one is not empty (and time is left), the judge (with the judge
/// prompt `judge_t`) picks the patch among them. Otherwise, or when the judge picks no
/// non-empty one, the first non-empty candidate is the patch (the first if all are empty). The
/// pick is kept in `blobs` too.
async fn best_of(
    ctx: &RunCtx<'_>,
    place: &Sandboxes<'_>,
    ledger: &mut Ledger,
    (store, blobs): (&Store, &mut BTreeMap<String, String>),
    (workers, judge, judge_t): (&[Agent], &Agent, &Option<String>),
    prompt: &str,
) -> Result<Vec<u8>, WorkError> {
    let job = ctx.job;
    let cancel = ctx.cancel;
    let mut candidates = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        let ws = place.sandbox(w, cancel).await?;
        let result = async {
            if !ledger.timed_out {
                let run = ctx.run(w, ws.as_ref(), prompt, ledger.remaining()).await?;
                ledger.record(&format!("worker {}", i + 1), w, &run);
            }
            Ok(repo::diff(ws.as_ref(), cancel).await?)
        }
        .await;
        let diff = finish(ws, result).await?;
        blobs.insert(
            format!("candidate_{}", i + 1),
            store
                .put_blob(&scrub::scrub(&diff, &scrub::secret_values()).0)
                .map_err(WorkError::store)?,
        );
        candidates.push(diff);
    }
    let nonempty: Vec<usize> = (0..candidates.len())
        .filter(|i| !candidates[*i].is_empty())
        .collect();
    let pick = if ledger.timed_out || nonempty.len() <= 1 {
        nonempty.first().copied().unwrap_or(0)
    } else {
        let judge_t = template(judge_t, "judge")?;
        let listing: String = candidates
            .iter()
            .enumerate()
            .map(|(i, d)| {
                format!(
                    "<candidate number=\"{}\">\n{}\n</candidate>\n",
                    i + 1,
                    String::from_utf8_lossy(d)
                )
            })
            .collect();
        let judge_prompt = render_about(TemplateKind::Judge, &judge_t, job, &listing)?;
        let judge_ws = place.sandbox(judge, cancel).await?;
        let run = ctx
            .run(judge, judge_ws.as_ref(), &judge_prompt, ledger.remaining())
            .await;
        let run = finish(judge_ws, run).await?;
        ledger.record("judge", judge, &run);
        picked(&run.final_message(), candidates.len())
            .filter(|i| !candidates[*i].is_empty())
            .unwrap_or(nonempty[0])
    };
    blobs.insert(
        "picked".to_string(),
        store
            .put_blob(format!("{}\n", pick + 1).as_bytes())
            .map_err(WorkError::store)?,
    );
    Ok(candidates.swap_remove(pick))
}

/// Whether a reviewer's message approves: an `APPROVE` line and no `REQUEST_CHANGES`.
pub fn approves(message: &str) -> bool {
    let upper = message.to_uppercase();
    !upper.contains("REQUEST_CHANGES")
        && upper
            .lines()
            .any(|l| l.trim().trim_matches(['*', '`', '.']).trim() == "APPROVE")
}

/// The 0-based candidate a judge picked (`PICK: n`, 1-based), if valid.
pub fn picked(message: &str, n: usize) -> Option<usize> {
    let upper = message.to_uppercase();
    let at = upper.rfind("PICK:")?;
    let digits: String = upper[at + 5..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let k: usize = digits.parse().ok()?;
    (1..=n).contains(&k).then(|| k - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_verdicts() {
        assert!(approves("Looks good.\nAPPROVE\n"));
        assert!(approves("**APPROVE**"));
        assert!(!approves("REQUEST_CHANGES\nAPPROVE once fixed"));
        assert!(!approves("I would not approve this"));
    }

    #[test]
    fn judge_picks() {
        assert_eq!(picked("I think PICK: 2", 3), Some(1));
        assert_eq!(picked("pick: 3.", 3), Some(2));
        assert_eq!(picked("PICK: 4", 3), None);
        assert_eq!(picked("no idea", 3), None);
    }
}
