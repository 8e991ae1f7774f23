//! The grade node's job: one patch graded on one task by the task's protocol. Gold checks,
//! empty-patch checks and grades of agents' patches are all grade jobs, so identical patches
//! share one key (and one run).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::types::AuditFlag;
use crate::types::AuditMode;
pub use crate::types::Resolution;

use super::{BackendFacts, GoldPatch, GradingTask, Job, KEY_SCHEMA, Kind};

/// The grading protocols (`src/protocols/`).
/// A grading protocol, by its name: what the name does is registered in `protocols/`, so a
/// new protocol adds no variant here. Encoded (in keys too) as the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProtocolId(&'static str);

#[expect(
    non_upper_case_globals,
    reason = "the built-in protocols keep the names they had as an enum's variants"
)]
impl ProtocolId {
    /// bench's local task format.
    pub const Local: ProtocolId = ProtocolId("local");
    /// SWE-bench-Live's `evaluation.py` (MultiLang and Python rows).
    pub const SweBenchLive: ProtocolId = ProtocolId("swe-bench-live");
    /// SWE-bench Pro's `swe_bench_pro_eval.py` (the public set).
    pub const SweBenchPro: ProtocolId = ProtocolId("swe-bench-pro");
    /// The official SWE-bench harness (full, Verified, Lite, SWE-rebench).
    pub const SweBench: ProtocolId = ProtocolId("swe-bench");
    /// SWE-rebench V2's harness: the swe-bench steps at `/{repo name}`, V2's lenient
    /// `git apply`, reward `F2P ∪ P2P ⊆ PASSED`.
    pub const SweRebenchV2: ProtocolId = ProtocolId("swe-rebench-v2");
    /// brain bench's runner: setup, the candidate, the fix's test files, `verify`'s exit code.
    pub const BrainBench: ProtocolId = ProtocolId("brain-bench");
    /// Harbor tasks (Terminal-Bench 2, Frontier-SWE): a verifier writes a reward.
    pub const Harbor: ProtocolId = ProtocolId("harbor");
}

impl ProtocolId {
    /// The protocol named `name` (its registration in `protocols/` says what it does).
    pub const fn named(name: &'static str) -> ProtocolId {
        ProtocolId(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

impl Serialize for ProtocolId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for ProtocolId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ProtocolId(intern(String::deserialize(d)?)))
    }
}

/// The one `&'static str` of each protocol name read back (a handful per process).
fn intern(name: String) -> &'static str {
    static NAMES: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.get(name.as_str()) {
        return n;
    }
    let n: &'static str = Box::leak(name.into_boxed_str());
    names.insert(n);
    n
}

/// A protocol and the version of its implementation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProtocolRef {
    pub name: ProtocolId,
    pub version: u32,
}

/// The log parser a grade uses (a built-in name, or `script` for a dataset's Python source,
/// which is part of the task) and the version of its implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParserRef {
    pub name: String,
    pub version: u32,
}

/// The patch to grade, keyed by its digest whatever its source: the gold patch, the empty
/// patch, or a patch in the store (an agent's).
#[derive(Debug, Clone)]
pub enum PatchInput {
    Gold(GoldPatch),
    Empty,
    Stored(String),
}

impl PatchInput {
    pub fn digest(&self) -> String {
        match self {
            PatchInput::Gold(g) => g.digest().to_string(),
            PatchInput::Empty => crate::key::digest(b""),
            PatchInput::Stored(d) => d.clone(),
        }
    }
}

/// Patches are equal when their digests are: the source is not an input, the bytes are.
impl PartialEq for PatchInput {
    fn eq(&self, other: &Self) -> bool {
        self.digest() == other.digest()
    }
}

impl Serialize for PatchInput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.digest())
    }
}

impl<'de> Deserialize<'de> for PatchInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(PatchInput::Stored(String::deserialize(d)?))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GradeJob {
    pub schema: u32,
    pub protocol: ProtocolRef,
    pub parser: ParserRef,
    pub backend: BackendFacts,
    pub task: GradingTask,
    pub patch: PatchInput,
    /// Whether audit flags make the pair unresolved.
    pub audit: AuditMode,
    /// How long a grade may take, at full precision: apply, rebuild and tests together (the
    /// print step and a parser script get their own bounded time).
    pub timeout_ms: u64,
    /// The grading container's hardening (docker; `None` elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardening: Option<crate::backend::Hardening>,
    /// Whether the grading sandbox has the network (its dataset's `grade_network`); by default
    /// it has none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
    /// The forgery check: the verdict of this patch's grade in the agent's own sandbox; a
    /// clean verdict that differs takes two more clean grades and the majority counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<bool>,
    /// Harbor tasks: where the verifier runs (`[stages.grade] harbor`). In place, the patch is
    /// the solve's record of the verifier run in the agent's container; fresh, the snapshot of
    /// the agent's end state. Gold checks run the oracle and verify in its container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harbor: Option<crate::types::HarborVerifier>,
}

impl GradeJob {
    pub fn new(
        protocol: ProtocolId,
        backend: BackendFacts,
        task: GradingTask,
        patch: PatchInput,
        timeout: std::time::Duration,
        audit: AuditMode,
    ) -> GradeJob {
        let parser = ParserRef {
            name: crate::parsers::parser_ref_name(task.log_parser()).to_string(),
            version: crate::parsers::parser_version(task.log_parser()),
        };
        GradeJob {
            schema: KEY_SCHEMA,
            protocol: ProtocolRef {
                name: protocol,
                version: crate::protocols::version(protocol),
            },
            parser,
            backend,
            task,
            patch,
            audit,
            timeout_ms: super::millis(timeout),
            hardening: None,
            network: false,
            confirm: None,
            harbor: None,
        }
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms)
    }
}

/// Output of a grade (or gold) node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeOutput {
    pub resolved: bool,
    pub patch_applied: bool,
    pub empty_patch: bool,
    pub timed_out: bool,
    pub fail_to_pass_success: Vec<String>,
    pub fail_to_pass_failure: Vec<String>,
    pub pass_to_pass_success: Vec<String>,
    pub pass_to_pass_failure: Vec<String>,
    pub pass_to_pass_missing: Vec<String>,
    /// The exit code of the test commands, read from the nonce'd end marker (`None` when they
    /// did not finish).
    pub test_exit_code: Option<i32>,
    pub duration_ms: u64,
    /// The fail-closed history check of the grading sandbox, before the candidate was applied.
    pub history_check: String,
    /// The patch audit's flags (under `audit = "strict"` a flagged patch is not resolved).
    pub audit: Vec<AuditFlag>,
    /// The per-grade random nonce of the log markers (`BENCH-<nonce>-...`); not part of the key.
    pub nonce: String,
    /// SWE-bench's resolution status (`get_resolution_status`), for the swe-bench protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// Harbor: the verifier's numeric fields (`reward.txt` as `reward`, or every number of a
    /// flat `reward.json`); `None` when the verifier timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<std::collections::BTreeMap<String, f64>>,
    /// Harbor: where the verifier ran: `in-place` (the agent's container), `fresh` (a new
    /// container with the agent's end state restored) or `oracle` (gold checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifier: Option<String>,
    /// Harbor: `reward.json` as written (scorers such as Frontier-SWE's read its nested fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_json: Option<serde_json::Value>,
    /// The forgery check, when the grade ran one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Confirmation>,
}

/// What the forgery check found: the in-sandbox verdict and every clean verdict taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Confirmation {
    pub in_sandbox: bool,
    /// One clean grade when it agrees with the in-sandbox one, three when not.
    pub clean: Vec<bool>,
    pub disagreement: bool,
}

impl Job for GradeJob {
    const KIND: Kind = Kind::Grade;
    type Output = GradeOutput;

    fn explain(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("jobs serialize");
        v["task"] = self.task.explain();
        v
    }
}

/// Most test names a gold check's reason lists before `and N more`.
const REASON_TESTS: usize = 5;

impl GradeOutput {
    /// Why this grade of a gold patch did not resolve its task, in one line, from what the
    /// grade recorded: the patch did not apply, the tests timed out, which FAIL_TO_PASS tests
    /// still fail, which PASS_TO_PASS tests broke or are missing from the log, the audit's
    /// flags, or the verifier's reward. `empty`: this is the grade of the empty patch, which
    /// resolved the task (it must not).
    pub fn gold_failure(&self, empty: bool) -> String {
        if empty {
            return "the empty patch resolves it too (its FAIL_TO_PASS tests pass without the fix)"
                .to_string();
        }
        if !self.patch_applied {
            return "the gold patch did not apply".to_string();
        }
        let names = |tests: &[String]| {
            let mut s = tests
                .iter()
                .take(REASON_TESTS)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if tests.len() > REASON_TESTS {
                s.push_str(&format!(" and {} more", tests.len() - REASON_TESTS));
            }
            s
        };
        let mut why = Vec::new();
        if self.timed_out {
            why.push("the tests timed out".to_string());
        }
        for (label, tests) in [
            ("FAIL_TO_PASS still failing", &self.fail_to_pass_failure),
            ("PASS_TO_PASS broken", &self.pass_to_pass_failure),
            (
                "PASS_TO_PASS missing from the log",
                &self.pass_to_pass_missing,
            ),
        ] {
            if !tests.is_empty() {
                why.push(format!("{label}: {}", names(tests)));
            }
        }
        if !self.audit.is_empty() {
            let flags: Vec<String> = self
                .audit
                .iter()
                .map(|f| format!("{}: {}", f.path, f.reason))
                .collect();
            why.push(format!("the audit flagged it ({})", flags.join(", ")));
        }
        if let Some(reward) = self.reward.as_ref().and_then(|r| r.get("reward")) {
            why.push(format!("the verifier's reward is {reward}"));
        }
        if why.is_empty() {
            why.push(match self.test_exit_code {
                Some(code) => format!("not resolved (the tests exited {code})"),
                None => "not resolved (the tests did not finish)".to_string(),
            });
        }
        why.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gold_failure_says_why_from_what_the_grade_recorded() {
        let applied = GradeOutput {
            patch_applied: true,
            test_exit_code: Some(1),
            ..Default::default()
        };
        assert_eq!(
            GradeOutput::default().gold_failure(false),
            "the gold patch did not apply"
        );
        let tests: Vec<String> = (1..=7).map(|i| format!("t{i}")).collect();
        let broken = GradeOutput {
            fail_to_pass_failure: vec!["f1".into()],
            pass_to_pass_failure: tests,
            timed_out: true,
            ..applied.clone()
        };
        assert_eq!(
            broken.gold_failure(false),
            "the tests timed out; FAIL_TO_PASS still failing: f1; \
             PASS_TO_PASS broken: t1, t2, t3, t4, t5 and 2 more"
        );
        assert_eq!(
            applied.gold_failure(false),
            "not resolved (the tests exited 1)"
        );
        assert!(
            applied
                .gold_failure(true)
                .starts_with("the empty patch resolves it too")
        );
    }
}
