//! Building each node's typed job from the manifest: the one place where manifest settings
//! become key inputs. Team specs (harness scripts and install files read and digested) are built
//! once per team; predictions files are read once per process.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::jobs::{
    BackendFacts, Blob, DatasetFacts, Digested, GoldPatch, GradeJob, GradingTask, HarnessSpec,
    InstallFile, InstallSpec, PatchInput, PromptSet, ProtocolId, SampleJob, ScriptSpec, SolveJob,
    SolverTask, TeamSpec,
};
use crate::manifest::{
    AuditMode, DatasetFormat, HarnessKind, Manifest, SampleFilters, Team, Topology,
};
use crate::tasks::{Task, TaskBase, TaskSet};

/// The grading protocol of a dataset format.
pub fn protocol_of(format: DatasetFormat) -> ProtocolId {
    // A manifest names only registered formats; any other grades by the protocol of its name,
    // which then names itself unregistered.
    crate::datasets::format(format).map_or(ProtocolId::named(format.name()), |f| f.protocol())
}

/// Makes the jobs of one manifest's nodes.
pub struct JobBuilder<'a> {
    m: &'a Manifest,
    teams: HashMap<String, Digested<TeamSpec>>,
}

impl<'a> JobBuilder<'a> {
    /// Reads every team's harness files (scripts, install files). An unreadable file is an error
    /// naming it.
    pub fn new(m: &'a Manifest) -> Result<JobBuilder<'a>, String> {
        let mut teams = HashMap::new();
        for (name, team) in &m.teams {
            let spec = team_spec(m, team)?;
            // Whatever is passed to an agent is scrubbed from everything stored, in any phase.
            for h in spec.harnesses.values() {
                crate::harness::scrub::register_passed(&h.env);
            }
            teams.insert(name.clone(), Digested::new(spec));
        }
        Ok(JobBuilder { m, teams })
    }

    /// A team's spec, as its solves run it.
    pub fn team(&self, name: &str) -> Option<&Digested<TeamSpec>> {
        self.teams.get(name)
    }

    pub fn facts(&self, base: &TaskBase) -> BackendFacts {
        self.m.backend.facts(base)
    }

    pub fn sample(&self, dataset: &str, set: &TaskSet, filters: &SampleFilters) -> SampleJob {
        let format = serde_json::to_value(self.m.datasets[dataset].format)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        SampleJob::new(
            DatasetFacts {
                format,
                snapshot: set.snapshot.clone(),
            },
            filters.clone(),
        )
    }

    pub fn grade(
        &self,
        protocol: ProtocolId,
        task: &Arc<Task>,
        patch: PatchInput,
        timeout: std::time::Duration,
        audit: AuditMode,
        network: bool,
    ) -> GradeJob {
        let mut job = GradeJob::new(
            protocol,
            self.facts(&task.base),
            GradingTask::new(task),
            patch,
            timeout,
            audit,
        );
        job.hardening = self.m.backend.grading_hardening();
        job.network = network;
        job
    }

    /// The grade job of a Harbor trial's result under `mode` (the Harbor protocol's, see
    /// [`crate::protocols::harbor::trial_grade`]).
    pub fn harbor_grade(
        &self,
        task: &Arc<Task>,
        trial: &crate::jobs::HarborTrial,
        mode: crate::manifest::HarborVerifier,
        timeout: std::time::Duration,
    ) -> GradeJob {
        crate::protocols::harbor::trial_grade(self.facts(&task.base), task, trial, mode, timeout)
    }

    /// The solve job of `team` on `task`. Errors: a predictions file that cannot be read.
    pub fn solve(
        &self,
        task: &Arc<Task>,
        team: &str,
        timeout: std::time::Duration,
        replicate: u32,
    ) -> Result<SolveJob, String> {
        let spec = &self.teams[team];
        let mut gold = None;
        let mut predictions = BTreeMap::new();
        for agent in spec.get().topology.agents() {
            let h = &self.m.harnesses[&agent.harness];
            match h.kind {
                HarnessKind::Oracle => gold = Some(GoldPatch::new(task)),
                HarnessKind::Predictions => {
                    let p = crate::datasets::predictions::prediction_for(h, &task.instance_id)?;
                    predictions.insert(h.name.clone(), p.map(|p| Blob::new(p.into_bytes())));
                }
                _ => {}
            }
        }
        let mut job = SolveJob::new(
            self.facts(&task.base),
            SolverTask::new(task),
            spec.clone(),
            gold,
            predictions,
            timeout,
            replicate,
        );
        job.harbor = crate::protocols::harbor::trial_job(task);
        Ok(job)
    }
}

/// The files a harness's script reads, copied beside it: its declared `files`, else the regular
/// files beside the script in its directory (not hidden, not the script, not in subdirectories),
/// unless that directory is the manifest's (then none: declare them).
fn script_files(m: &Manifest, h: &crate::manifest::Harness) -> Result<Vec<InstallFile>, String> {
    let err = |e: String| format!("harness `{}`: {e}", h.name);
    let files = match (&h.files, &h.script) {
        (Some(declared), _) => crate::harness::install::install_files(declared).map_err(err)?,
        (None, Some(script)) => {
            let dir = script.parent().unwrap_or(std::path::Path::new("/"));
            if dir == m.dir || m.path.parent() == Some(dir) {
                return Ok(Vec::new());
            }
            let beside: Vec<std::path::PathBuf> = fs_err::read_dir(dir)
                .map_err(|e| err(e.to_string()))?
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .filter(|p| p != script)
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect();
            crate::harness::install::install_files(&beside).map_err(err)?
        }
        (None, None) => return Ok(Vec::new()),
    };
    Ok(files
        .into_iter()
        .map(|f| InstallFile {
            path: f.path,
            mode: f.mode,
            content: Blob::new(f.bytes),
        })
        .collect())
}

/// A team as its solves run it: the topology, every harness it uses, and the prompt templates
/// it renders.
fn team_spec(m: &Manifest, team: &Team) -> Result<TeamSpec, String> {
    let mut harnesses = BTreeMap::new();
    let mut reads_prompt = false;
    for agent in team.topology.agents() {
        let h = &m.harnesses[&agent.harness];
        reads_prompt |= h.kind.reads_prompt();
        if harnesses.contains_key(&h.name) {
            continue;
        }
        let script = match &h.script {
            Some(p) => Some(ScriptSpec {
                name: p
                    .file_name()
                    .map_or("script".into(), |n| n.to_string_lossy().into_owned()),
                content: Blob::new(fs_err::read(p).map_err(|e| {
                    format!(
                        "harness `{}`: cannot read its script {}: {e}",
                        h.name,
                        p.display()
                    )
                })?),
            }),
            None => None,
        };
        let install = if m.backend.builds_agent_images() && h.installs() {
            let files = crate::harness::install::install_files(&h.install_files)
                .map_err(|e| format!("harness `{}`: {e}", h.name))?;
            Some(InstallSpec {
                runtime: h.runtime.clone(),
                commands: h.install.clone(),
                files: files
                    .into_iter()
                    .map(|f| InstallFile {
                        path: f.path,
                        mode: f.mode,
                        content: Blob::new(f.bytes),
                    })
                    .collect(),
            })
        } else {
            None
        };
        harnesses.insert(
            h.name.clone(),
            HarnessSpec {
                kind: h.kind,
                adapter_version: crate::harness::adapter_version(h.kind, h.usage),
                command: h.command.clone(),
                script,
                files: script_files(m, h)?,
                env: h.env.clone(),
                usage: h.usage,
                version: h.version.clone(),
                own_files: h.own_files.clone(),
                install,
                egress: m.backend.agent_egress(h),
                base_url: h.base_url.clone(),
                caches: h.caches.clone(),
            },
        );
    }
    let p = &m.prompts;
    let prompts = if reads_prompt {
        PromptSet {
            instruction: Some(p.instruction.clone()),
            review: matches!(team.topology, Topology::Review { .. }).then(|| p.review.clone()),
            fix: matches!(team.topology, Topology::Review { .. }).then(|| p.fix.clone()),
            judge: matches!(team.topology, Topology::BestOf { .. }).then(|| p.judge.clone()),
        }
    } else {
        PromptSet {
            instruction: None,
            review: None,
            fix: None,
            judge: None,
        }
    };
    Ok(TeamSpec {
        topology: team.topology.clone(),
        harnesses,
        prompts,
    })
}
