//! Before any node runs on docker: each harness's program looked for where its agents will run.
//! A harness with `install` commands runs in the agent image they build on the task image (the
//! image is built now, on the first task image of each dataset its teams solve; the solves
//! reuse it); one without runs what the task image has. A program not found there is refused
//! with the fix, as the local backend refuses one missing from PATH, instead of every solve
//! failing with exit 127. One task image per dataset is asked: a recipe's result is the same on
//! each, and a program a dataset's images lack is almost always missing from all of them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, Network, Phase, SandboxSpec, shell_quote};
use crate::graph::JobBuilder;
use crate::manifest::{Manifest, StageKind};
use crate::tasks::{TaskBase, TaskSet};

/// How long looking a program up may take (the container is started just for it).
const LOOKUP: Duration = Duration::from_secs(60);

/// The problems found: one line per harness and task image whose program is not on the
/// image's PATH, naming the harness, its teams, the image and the fix. An image that cannot be
/// built or started is an error (its output, as a solve would show it).
pub async fn missing_in_images(
    m: &Manifest,
    datasets: &BTreeMap<String, TaskSet>,
    store: &crate::store::Store,
    backend: &dyn Backend,
) -> Result<Vec<String>, String> {
    let jobs = JobBuilder::new(m)?;
    // Only the solve stages with solves to run (or that may have, upstream outcomes unknown):
    // an apply whose solves are all stored builds no agent image and starts no container.
    let plan = super::plan(m, Some(store), datasets, Default::default(), None)?;
    let pending: BTreeSet<&str> = plan
        .stages
        .iter()
        .filter(|s| s.to_run > 0 || s.estimated)
        .map(|s| s.stage.as_str())
        .collect();
    // Harness -> (its program, the teams that run it), for teams some solve stage runs.
    let mut harnesses: BTreeMap<&str, (String, BTreeSet<&str>)> = BTreeMap::new();
    for (name, stage) in &m.stages {
        let StageKind::Solve(s) = &stage.kind else {
            continue;
        };
        if !pending.contains(name.as_str()) {
            continue;
        }
        for team in &s.teams {
            for agent in m.teams[team].topology.agents() {
                let h = agent.harness.as_str();
                let Some(program) = crate::harness::preflight::program(&m.harnesses[h]) else {
                    continue;
                };
                let entry = harnesses.entry(h).or_insert((program, BTreeSet::new()));
                entry.1.insert(team.as_str());
            }
        }
    }
    let cancel = CancellationToken::new();
    let mut problems = Vec::new();
    for set in datasets.values() {
        let Some(task) = set.tasks.values().next() else {
            continue;
        };
        // Harbor tasks run their agents in their own environment (stages/harbor.rs).
        let TaskBase::Image { image, .. } = &task.base else {
            continue;
        };
        if task.harbor.is_some() {
            continue;
        }
        for (h, (program, teams)) in &harnesses {
            let team = teams
                .iter()
                .next()
                .expect("a harness is listed with a team");
            let install = jobs
                .team(team)
                .and_then(|t| t.get().harnesses.get(*h))
                .and_then(|spec| spec.install.clone());
            let built = match &install {
                Some(i) => backend
                    .agent_image(&task.base, i, &cancel)
                    .await
                    .map_err(|e| format!("harness `{h}`: {e}"))?,
                None => None,
            };
            let spec = SandboxSpec {
                base: &task.base,
                phase: Phase::Agent,
                network: Network::None,
                image: built,
                address: "preflight",
                key: "preflight",
                repo_dir: task.repo_dir.as_deref(),
                hardening: None,
                stripped: None,
                before_strip: None,
                task_env: None,
            };
            // An image this lookup cannot start is left to the solves, which say why.
            let Ok(sandbox) = backend.create(&spec, &cancel).await else {
                continue;
            };
            let script = format!("command -v {} >/dev/null", shell_quote(program));
            let found = sandbox.exec(&script, &[], LOOKUP, &cancel).await;
            let _ = sandbox.destroy().await;
            let found =
                found.map_err(|e| format!("cannot look for `{program}` in {image}: {e}"))?;
            if found.exit_code != Some(0) {
                problems.push(not_found(h, teams, program, image, install.is_some()));
            }
        }
    }
    Ok(problems)
}

/// What is wrong with harness `h` whose program is not on PATH in its agents' image, and the fix.
fn not_found(
    h: &str,
    teams: &BTreeSet<&str>,
    program: &str,
    image: &str,
    installs: bool,
) -> String {
    let teams: Vec<String> = teams.iter().map(|t| format!("`{t}`")).collect();
    let (where_, fix) = if installs {
        (
            format!("the agent image its `install` commands build on task image {image}"),
            format!(
                "make `[harnesses.{h}] install` put `{program}` on PATH (they ran, and it is not there), or set `command` to the program they install"
            ),
        )
    } else {
        (
            format!(
                "task image {image} (the harness has no `install` commands, so its agents run what the task image has)"
            ),
            format!(
                "give `[harnesses.{h}]` `install` commands that install `{program}` (the built-in harnesses' are in docs/agents.md), or set `command` to a program the image has"
            ),
        )
    };
    format!(
        "harness `{h}` (run by team {}) starts `{program}`, which is not on PATH in {where_}; {fix}",
        teams.join(", ")
    )
}
