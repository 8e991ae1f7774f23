//! The handlebars templates a manifest holds (the four prompts and each harness's `command`):
//! the variables each kind is rendered with, in one list per kind that both the renderer and
//! `bench validate` read, strict rendering, and the check that finds a template's references to
//! variables it will never be given. Not here: the values (the solve executor computes them).

use handlebars::template::{BlockParam, HelperTemplate, Parameter, Template, TemplateElement};
use handlebars::{Handlebars, Path, PathSeg};

/// Which template: each kind is rendered with its own variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateKind {
    /// `[prompts] instruction`: what every worker is asked.
    Instruction,
    /// `[prompts] review`: the reviewer's prompt.
    Review,
    /// `[prompts] fix`: the coder's prompt after a review.
    Fix,
    /// `[prompts] judge`: the judge's prompt.
    Judge,
    /// A command harness's `command` line.
    Command,
}

impl TemplateKind {
    /// The variables a template of this kind is rendered with, in the order the renderer
    /// passes them.
    pub fn variables(self) -> &'static [&'static str] {
        match self {
            TemplateKind::Instruction => &["problem_statement", "repo"],
            TemplateKind::Review => &["problem_statement", "diff"],
            TemplateKind::Fix => &["problem_statement", "review"],
            TemplateKind::Judge => &["problem_statement", "candidates"],
            TemplateKind::Command => &[
                "script",
                "prompt_file",
                "model",
                "workdir",
                "side_dir",
                "max_cost_usd",
                "base_url",
                "provider",
            ],
        }
    }

    /// How a person names the template, e.g. "the instruction prompt".
    pub fn describe(self) -> &'static str {
        match self {
            TemplateKind::Instruction => "the instruction prompt",
            TemplateKind::Review => "the review prompt",
            TemplateKind::Fix => "the fix prompt",
            TemplateKind::Judge => "the judge prompt",
            TemplateKind::Command => "a harness command",
        }
    }
}

/// Renders `template` with `values`, strictly: a variable the template names but `values` does
/// not hold is an error, never an empty string.
///
/// # Panics
/// When `values` does not name exactly `kind`'s [`TemplateKind::variables`], in order: the
/// list `bench validate` checks templates against would be wrong.
pub fn render(
    kind: TemplateKind,
    template: &str,
    values: &[(&str, &str)],
) -> Result<String, handlebars::RenderError> {
    let names: Vec<&str> = values.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        kind.variables(),
        "the values rendered into {} are its declared variables",
        kind.describe()
    );
    let vars: serde_json::Map<String, serde_json::Value> = values
        .iter()
        .map(|(n, v)| ((*n).to_string(), (*v).into()))
        .collect();
    let mut hb = Handlebars::new();
    hb.register_escape_fn(handlebars::no_escape);
    hb.set_strict_mode(true);
    hb.render_template(template, &serde_json::Value::Object(vars))
}

/// The helpers a template may call (handlebars' built-ins; bench registers none).
const HELPERS: &[&str] = &[
    "and", "each", "eq", "gt", "gte", "if", "len", "log", "lookup", "lt", "lte", "ne", "not", "or",
    "raw", "unless", "with",
];

/// Block helpers whose body renders in the enclosing context (every other block, `each` and
/// `with` among them, renders its body in a context of its own).
const SAME_CONTEXT: &[&str] = &["if", "unless"];

/// The variables `template` reads from its top-level context that `kind` does not provide,
/// each once, in order of first use. References inside `{{#each}}` and `{{#with}}` bodies (the
/// item's fields), block parameters (`as |x|`), `this` and `@`-variables (`@index`) are not
/// variables of the template and are never reported; `@root.x` and `../x` reaching the top are.
pub fn unknown_variables(template: &Template, kind: TemplateKind) -> Vec<String> {
    let mut walk = Walk {
        known: kind.variables(),
        depth: 0,
        block_params: Vec::new(),
        unknown: Vec::new(),
    };
    walk.template(template);
    walk.unknown
}

struct Walk {
    known: &'static [&'static str],
    /// How many context-changing blocks enclose the current element.
    depth: usize,
    /// The block parameters in scope.
    block_params: Vec<String>,
    unknown: Vec<String>,
}

impl Walk {
    fn template(&mut self, t: &Template) {
        for e in &t.elements {
            self.element(e);
        }
    }

    fn element(&mut self, e: &TemplateElement) {
        match e {
            TemplateElement::Expression(h) | TemplateElement::HtmlExpression(h) => {
                self.call(&h.name, h.params.iter().chain(h.hash.values()));
            }
            TemplateElement::HelperBlock(h) => self.block(h),
            TemplateElement::DecoratorExpression(d)
            | TemplateElement::DecoratorBlock(d)
            | TemplateElement::PartialExpression(d)
            | TemplateElement::PartialBlock(d) => {
                for p in d.params.iter().chain(d.hash.values()) {
                    self.param(p);
                }
                if let Some(t) = &d.template {
                    self.template(t);
                }
            }
            _ => {}
        }
    }

    /// `{{name params...}}`: a helper call, or (a name that is no helper) a variable.
    fn call<'p>(&mut self, name: &Parameter, params: impl Iterator<Item = &'p Parameter>) {
        if !name.as_name().is_some_and(|n| HELPERS.contains(&n)) {
            self.param(name);
        }
        for p in params {
            self.param(p);
        }
    }

    fn block(&mut self, h: &HelperTemplate) {
        self.call(&h.name, h.params.iter().chain(h.hash.values()));
        let same = h.name.as_name().is_some_and(|n| SAME_CONTEXT.contains(&n));
        let scoped = self.block_params.len();
        match &h.block_param {
            Some(BlockParam::Single(p)) => self.block_params.extend(p.as_name().map(String::from)),
            Some(BlockParam::Pair((a, b))) => {
                self.block_params.extend(
                    [a, b]
                        .into_iter()
                        .filter_map(|p| p.as_name().map(String::from)),
                );
            }
            _ => {}
        }
        let depth = self.depth;
        if !same {
            self.depth += 1;
        }
        if let Some(t) = &h.template {
            self.template(t);
        }
        self.depth = depth;
        self.block_params.truncate(scoped);
        // `{{else}}` renders in the enclosing context.
        if let Some(t) = &h.inverse {
            self.template(t);
        }
    }

    fn param(&mut self, p: &Parameter) {
        match p {
            Parameter::Name(n) => self.head(n, false, 0),
            Parameter::Path(path) => self.path(path),
            Parameter::Subexpression(s) => {
                let params = s.params().into_iter().flatten();
                let hash = s.hash().into_iter().flat_map(|h| h.values());
                let name = Parameter::Name(s.name().to_string());
                self.call(&name, params.chain(hash));
            }
            _ => {}
        }
    }

    fn path(&mut self, p: &Path) {
        // `@index`, `@first`, ...: the block's own data, not a variable.
        let Path::Relative((segs, _)) = p else {
            return;
        };
        let (mut root, mut ups) = (false, 0);
        for seg in segs {
            match seg {
                PathSeg::Named(n) => return self.head(n, root, ups),
                PathSeg::Ruled(rule) => match format!("{rule:?}").as_str() {
                    "path_root" => root = true,
                    "path_up" => ups += 1,
                    _ => return,
                },
                _ => return,
            }
        }
        // `this` or `..` alone: the context itself.
    }

    /// A path whose first name is `name`, `ups` levels up (or at `@root`).
    fn head(&mut self, name: &str, root: bool, ups: usize) {
        let top = root || ups >= self.depth;
        if !top || (!root && self.block_params.iter().any(|b| b == name)) {
            return;
        }
        if !self.known.contains(&name) && !self.unknown.iter().any(|u| u == name) {
            self.unknown.push(name.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(template: &str, kind: TemplateKind) -> Vec<String> {
        unknown_variables(&Template::compile(template).expect("compiles"), kind)
    }

    #[test]
    fn an_unknown_variable_is_found_wherever_it_is_read() {
        let i = TemplateKind::Instruction;
        assert_eq!(unknown("{{problem}}", i), ["problem"]);
        assert_eq!(unknown("{{{problem}}}", i), ["problem"]);
        assert_eq!(unknown("{{#if problem}}x{{/if}}", i), ["problem"]);
        assert_eq!(
            unknown("{{#if repo}}{{else}}{{problem}}{{/if}}", i),
            ["problem"]
        );
        assert_eq!(
            unknown("{{#if repo}}{{else if problem}}{{/if}}", i),
            ["problem"]
        );
        assert_eq!(
            unknown("{{#unless repo}}{{problem}}{{/unless}}", i),
            ["problem"]
        );
        assert_eq!(unknown("{{#each repos}}{{this}}{{/each}}", i), ["repos"]);
        assert_eq!(
            unknown("{{#each repo}}{{@root.problem}}{{/each}}", i),
            ["problem"]
        );
        assert_eq!(
            unknown("{{#with repo}}{{../problem}}{{/with}}", i),
            ["problem"]
        );
        assert_eq!(unknown("{{this.problem}}", i), ["problem"]);
        assert_eq!(unknown("{{eq problem \"x\"}}", i), ["problem"]);
        assert_eq!(unknown("{{#if (eq problem repo)}}{{/if}}", i), ["problem"]);
        assert_eq!(unknown("{{lookup this problem}}", i), ["problem"]);
        assert_eq!(
            unknown("{{problem}} {{problem}} {{issue}}", i),
            ["problem", "issue"]
        );
        assert_eq!(unknown("{{problem.title}}", i), ["problem"]);
    }

    #[test]
    fn helpers_blocks_and_their_own_names_are_not_variables() {
        let i = TemplateKind::Instruction;
        for ok in [
            "{{problem_statement}} in {{repo}}",
            "{{{problem_statement}}}",
            "{{#if repo}}{{repo}}{{else}}none{{/if}}",
            "{{#each repo}}{{@index}} {{this}} {{name}} {{@first}}{{/each}}",
            "{{#each repo as |item i|}}{{item}} {{i}} {{item.name}}{{/each}}",
            "{{#with repo}}{{name}} {{../repo}} {{@root.problem_statement}}{{/with}}",
            "{{#if (eq repo \"x\")}}{{len problem_statement}}{{/if}}",
            "{{lookup this \"repo\"}} {{this}} {{!-- a comment --}} \\{{literal}}",
            "{{#raw}}{{anything}}{{/raw}}",
        ] {
            assert_eq!(unknown(ok, i), Vec::<String>::new(), "{ok}");
        }
    }

    #[test]
    fn every_builtin_command_uses_only_its_variables() {
        use crate::harness::BUILTIN_HARNESSES;
        let builtin: toml::Table = toml::from_str(BUILTIN_HARNESSES).expect("builtin.toml");
        for (name, h) in &builtin {
            if let Some(c) = h.get("command").and_then(|c| c.as_str()) {
                assert_eq!(
                    unknown(c, TemplateKind::Command),
                    Vec::<String>::new(),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn rendering_is_strict_and_takes_exactly_the_declared_variables() {
        let out = render(
            TemplateKind::Instruction,
            "{{repo}}: {{problem_statement}}",
            &[("problem_statement", "p"), ("repo", "r")],
        );
        assert_eq!(out.expect("renders"), "r: p");
        let missing = render(
            TemplateKind::Instruction,
            "{{problem}}",
            &[("problem_statement", "p"), ("repo", "r")],
        );
        assert!(missing.is_err());
        let wrong = std::panic::catch_unwind(|| {
            render(TemplateKind::Fix, "", &[("problem_statement", "p")])
        });
        assert!(wrong.is_err());
    }
}
