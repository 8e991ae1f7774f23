//! Agent harnesses: the built-in definitions (data, in `builtin.toml`), the pricing table
//! (`pricing.toml`), usage readers for the agent CLIs' real output formats (`usage`), the cost of
//! a run (`pricing`), whether a run reached its model (`evidence`), the files a CLI writes for
//! itself (`own_files`), provider keys (`provider`), runtime tarballs for agent images
//! (`runtime`), whether the harnesses' programs exist before anything runs (`preflight`), the
//! prompt and command templates' variables and rendering (`template`), and the scrubbing of
//! everything agents leave behind.

pub mod evidence;
pub mod own_files;
pub mod preflight;
pub mod pricing;
pub mod provider;
pub mod runtime;
pub mod scrub;
pub mod template;
pub mod usage;

/// The built-in harness definitions, as TOML.
pub const BUILTIN_HARNESSES: &str = include_str!("builtin.toml");

/// The built-in pricing table, as TOML.
pub const BUILTIN_PRICING: &str = include_str!("pricing.toml");

pub mod install;

/// The version of bench's adapter for a harness: how it is invoked and how its output is read.
/// Part of the keys of the solves that run it.
pub fn adapter_version(
    kind: crate::types::HarnessKind,
    usage: Option<crate::types::UsageFormat>,
) -> u32 {
    use crate::types::HarnessKind;
    match (kind, usage) {
        // 2xx and 2: the script's files are copied beside it (1xx and 1 ran the script alone).
        (HarnessKind::Command, Some(u)) => 200 + u.version(),
        (HarnessKind::Command, None) => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    /// Each built-in's command, rendered as a solve renders it, with and without `base_url`.
    fn render(harness: &str, model: &str, base_url: &str) -> String {
        let builtin: toml::Value = toml::from_str(super::BUILTIN_HARNESSES).expect("parses");
        let template = builtin[harness]["command"].as_str().expect("a command");
        let provider = model.split_once('/').map(|(p, _)| p).unwrap_or_default();
        let values = [
            ("script", ""),
            ("prompt_file", "/side/prompt.md"),
            ("model", model),
            ("workdir", "/repo"),
            ("side_dir", "/side"),
            ("max_cost_usd", ""),
            ("base_url", base_url),
            ("provider", provider),
        ];
        super::template::render(super::template::TemplateKind::Command, template, &values)
            .expect("renders")
    }

    #[test]
    fn base_url_sets_each_clis_own_variable_or_flag() {
        let cases = [
            (
                "claude-code",
                "claude-x",
                "ANTHROPIC_BASE_URL='http://gw:4000' claude -p",
            ),
            (
                "codex",
                "gpt-x",
                "-c 'openai_base_url=\"http://gw:4000\"' --model 'gpt-x'",
            ),
            (
                "aider",
                "openai/m",
                "OPENAI_API_BASE='http://gw:4000' aider ",
            ),
            (
                "mini-swe-agent",
                "openai/m",
                "OPENAI_API_BASE='http://gw:4000' mini ",
            ),
            (
                "opencode",
                "anthropic/claude-x",
                r#"OPENCODE_CONFIG_CONTENT='{"provider":{"anthropic":{"options":{"baseURL":"http://gw:4000"}}}}' opencode run"#,
            ),
        ];
        for (harness, model, want) in cases {
            let with = render(harness, model, "http://gw:4000");
            assert!(with.contains(want), "{harness}: {with}");
            let without = render(harness, model, "");
            assert!(!without.contains("gw:4000"), "{harness}: {without}");
            for var in [
                "ANTHROPIC_BASE_URL",
                "openai_base_url",
                "OPENAI_API_BASE",
                "OPENCODE_CONFIG",
            ] {
                assert!(!without.contains(var), "{harness}: {without}");
            }
        }
        // The telemetry switches are always there.
        assert!(
            render("claude-code", "m", "")
                .starts_with("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 claude")
        );
        let codex = render("codex", "m", "");
        for flag in [
            "analytics.enabled=false",
            "check_for_update_on_startup=false",
            "feedback.enabled=false",
            "features.plugins=false",
            "features.remote_plugin=false",
            "features.api_key_model_discovery=false",
        ] {
            assert!(codex.contains(&format!("-c {flag} ")), "{codex}");
        }
    }
}
