//! SWE-rebench V2's grading (`nebius/SWE-rebench-V2`, 20 languages), as its published
//! harnesses run it, inside bench's locked protocol: the swe-bench protocol's steps
//! (`swe_bench.rs`: history strip, reset of the hidden tests' paths, nonce'd markers, the
//! row's parser) with V2's own choices:
//!
//! - the repository is at `/{repo name}` (the task's `repo_dir`), not `/testbed`;
//! - the candidate is applied with V2's lenient `git apply -v --3way --recount
//!   --ignore-space-change --whitespace=nowarn` first, then SWE-bench 5.x's chain as the
//!   fallback (`git apply --verbose`, `--3way`, `--reject`, `patch --batch --forward
//!   --fuzz=5 -p1 -i`, the tree reset between attempts, then `git apply --check --reverse`);
//! - the hidden test patch is applied with the same lenient flags;
//! - the reward is `F2P ∪ P2P ⊆ PASSED`: a test counts only when its status is exactly
//!   `PASSED` (no XFAIL, no kept SKIPPED, no FAIL_ONLY_REPOS), FULL or NO, never PARTIAL.
//!
//! Not here: reading V2 rows (`datasets/swe_rebench_v2.rs`).

use async_trait::async_trait;

use super::GradeError;
use super::grading::{Graded, Grading, Protocol};
use super::swe_bench::{APPLY_CHAIN, Flavor, steps};
use crate::jobs::GradeJob;

pub const VERSION: u32 = 1;

/// V2's own `git apply` invocation, for the candidate and the test patch.
pub const V2_APPLY: &str =
    "git apply -v --3way --recount --ignore-space-change --whitespace=nowarn";

/// V2's invocation, then upstream SWE-bench's chain.
const CHAIN: [&str; 5] = [
    V2_APPLY,
    APPLY_CHAIN[0],
    APPLY_CHAIN[1],
    APPLY_CHAIN[2],
    APPLY_CHAIN[3],
];

const V2: Flavor = Flavor {
    apply_chain: &CHAIN,
    test_patch_apply: V2_APPLY,
    all_passed: true,
};

/// SWE-rebench V2's protocol.
pub(crate) struct SweRebenchV2;

#[async_trait]
impl Protocol for SweRebenchV2 {
    fn version(&self) -> u32 {
        VERSION
    }

    fn audited_commands<'j>(&self, job: &'j GradeJob) -> Vec<&'j str> {
        super::swe_bench::rebuild_and_test_cmds(job)
    }

    async fn steps(&self, g: &Grading<'_>) -> Result<(Graded, String), GradeError> {
        steps(g, &V2).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::swe_bench::tests::{chain_with, lines};
    use super::super::swe_bench::{all_passed_report, all_passed_resolution};
    use super::{CHAIN, V2_APPLY};

    #[tokio::test]
    async fn v2_applies_what_strict_git_apply_refuses_and_falls_back() {
        // Wrong line counts in the hunk header and a context line whose spacing differs from
        // the tree: `--recount --ignore-space-change` apply it first.
        let base = lines(5, Some((3, "line  3")));
        let patch = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -2,9 +2,9 @@\n line 2\n line 3\n-line 4\n+LINE 4\n line 5\n";
        let (by, _) = chain_with(&CHAIN[1..3], &base, "", patch).await;
        assert_eq!(by, None, "strict git apply refuses it");
        let (by, f) = chain_with(&CHAIN, &base, "", patch).await;
        assert_eq!(by, Some(V2_APPLY));
        assert_eq!(
            f,
            lines(5, Some((3, "line  3"))).replace("line 4", "LINE 4")
        );
        // Stale context no git apply takes: the chain's last resort, patch with fuzz.
        let patch = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n old 4\n-line 5\n+LINE 5\n old 6\n";
        let (by, f) = chain_with(&CHAIN, &lines(9, None), "", patch).await;
        assert_eq!(by, Some("patch --batch --forward --fuzz=5 -p1 -i"));
        assert_eq!(f, lines(9, Some((5, "LINE 5"))));
    }
    use crate::jobs::Resolution;
    use crate::parsers::swebench::RawStatuses;

    #[test]
    fn only_passed_counts_in_either_list() {
        let mut m = RawStatuses::default();
        for (k, v) in [
            ("a", "PASSED"),
            ("x", "XFAIL"),
            ("s", "SKIPPED"),
            ("p", "PASSED"),
        ] {
            m.insert(k, v);
        }
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = all_passed_report(&m, &n(&["a"]), &n(&["p"]));
        assert_eq!(all_passed_resolution(&r), Resolution::Full);
        // A skipped or xfail PASS_TO_PASS test fails here (SWE-bench keeps the one, passes the
        // other); so does a missing one.
        let r = all_passed_report(&m, &n(&["a"]), &n(&["p", "s", "x", "gone"]));
        assert_eq!(r.p2p_failure, ["s", "x", "gone"]);
        assert_eq!(all_passed_resolution(&r), Resolution::No);
        // No partial credit.
        let r = all_passed_report(&m, &n(&["a", "s"]), &n(&["p"]));
        assert_eq!(all_passed_resolution(&r), Resolution::No);
        // Empty lists resolve, as upstream's subset test does.
        assert_eq!(
            all_passed_resolution(&all_passed_report(&m, &[], &[])),
            Resolution::Full
        );
    }
}
