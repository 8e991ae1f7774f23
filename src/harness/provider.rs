//! Which environment variable a litellm-based CLI (aider, mini-swe-agent) reads its API key
//! from, by the provider prefix of a `provider/model` name, so that preflight can name a key the
//! harness does not pass before anything runs. Not a list of every provider litellm knows: an
//! unknown prefix is not checked.

use crate::types::UsageFormat;

/// Providers and their key variables, as litellm reads them.
const KEYS: &[(&str, &str)] = &[
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("azure", "AZURE_API_KEY"),
    ("deepseek", "DEEPSEEK_API_KEY"),
    ("gemini", "GEMINI_API_KEY"),
    ("groq", "GROQ_API_KEY"),
    ("mistral", "MISTRAL_API_KEY"),
    ("openai", "OPENAI_API_KEY"),
    ("openrouter", "OPENROUTER_API_KEY"),
    ("together_ai", "TOGETHERAI_API_KEY"),
    ("xai", "XAI_API_KEY"),
];

/// The key variable for `model` when the harness reads usage in a litellm-based CLI's format.
pub fn key_var(usage: Option<UsageFormat>, model: &str) -> Option<&'static str> {
    if !matches!(usage, Some(UsageFormat::Aider | UsageFormat::MiniSweAgent)) {
        return None;
    }
    let (provider, _) = model.split_once('/')?;
    KEYS.iter().find(|(p, _)| *p == provider).map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_prefixes_name_their_keys() {
        let aider = Some(UsageFormat::Aider);
        assert_eq!(key_var(aider, "openai/fake-model"), Some("OPENAI_API_KEY"));
        assert_eq!(
            key_var(Some(UsageFormat::MiniSweAgent), "anthropic/claude-x"),
            Some("ANTHROPIC_API_KEY")
        );
        assert_eq!(key_var(aider, "gpt-4o"), None);
        assert_eq!(key_var(aider, "ollama/llama"), None);
        assert_eq!(key_var(Some(UsageFormat::CodexJsonl), "openai/x"), None);
    }
}
