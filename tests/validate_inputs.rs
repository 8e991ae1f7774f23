//! Every path tells the truth (issue 49): a template variable or a task field that would make
//! runs meaningless is a `bench validate` error naming the file, the key and the fix, before
//! anything runs. Prompt and command templates: every variable they read is one they are
//! rendered with. Local tasks: `FAIL_TO_PASS` is not empty, `log_parser` is a registered parser,
//! `language` is a supported one.

mod common;

use common::*;

const ROMAN: &str = "quickstart/tasks/quickstart__roman-1/task.toml";

/// `text` without whitespace and the `│` miette starts a continued line with, so a test can
/// look for a whole message however miette wrapped it (within a path, too).
fn squash(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect()
}

/// [`squash`]ed stderr.
fn flat(o: &std::process::Output) -> String {
    squash(&stderr(o))
}

/// Whether squashed `err` holds `want`.
fn says(err: &str, want: &str) -> bool {
    err.contains(&squash(want))
}

/// `bench validate` of the sandbox's manifest: it fails, and its flattened stderr.
fn invalid(s: &Sandbox) -> String {
    let o = s.bench(&["validate", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    flat(&o)
}

/// The 1-based line of the first line of `file` in the sandbox that starts with `prefix`.
fn line_of(s: &Sandbox, file: &str, prefix: &str) -> usize {
    s.read(file)
        .lines()
        .position(|l| l.starts_with(prefix))
        .expect("the line is there")
        + 1
}

#[test]
fn a_prompt_naming_a_variable_it_is_never_given_fails_validation() {
    let s = Sandbox::quickstart();
    s.append(
        "quickstart.toml",
        "\n[prompts]\ninstruction = \"Fix this issue in {{repo}}:\\n{{problem}}\\n\"\n",
    );
    let err = invalid(&s);
    let line = line_of(&s, "quickstart.toml", "instruction = ");
    assert!(
        says(
            &err,
            &format!(
                "quickstart.toml:{line}:15: `prompts.instruction` uses `problem`, which is not a \
             variable of the instruction prompt"
            )
        ),
        "{err}"
    );
    assert!(
        says(
            &err,
            "help: did you mean `{{problem_statement}}`? the instruction prompt reads \
             {{problem_statement}}, {{repo}}"
        ),
        "{err}"
    );
    // The same typo in a team prompt, in a block: each is found.
    s.append(
        "quickstart.toml",
        "review = \"{{#if diff}}{{problem_statment}}{{/if}} {{review}}\"\n",
    );
    let err = invalid(&s);
    assert!(
        says(&err, "`prompts.review` uses `problem_statment`")
            && says(&err, "`prompts.review` uses `review`")
            && says(&err, "did you mean `{{problem_statement}}`?")
            && says(
                &err,
                "the review prompt reads {{problem_statement}}, {{diff}}"
            ),
        "{err}"
    );
}

#[test]
fn helpers_block_params_and_this_in_a_template_are_not_flagged() {
    let s = Sandbox::quickstart();
    s.append(
        "quickstart.toml",
        "\n[prompts]\ninstruction = '''\
         {{#if repo}}In {{repo}}:{{else}}Here:{{/if}}\n\
         {{#with repo as |r|}}{{r}} {{this}} {{@root.problem_statement}} {{../repo}}{{/with}}\n\
         {{#if (eq repo \"x\")}}{{len problem_statement}}{{/if}}\n\
         {{! a comment naming {{nothing}} }}{{problem_statement}}'''\n\
         judge = \"{{#each candidates}}{{@index}}: {{this}}{{/each}} {{problem_statement}}\"\n",
    );
    let o = s.bench(&["validate", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_command_naming_an_unknown_variable_fails_validation_not_each_solve() {
    let s = Sandbox::quickstart();
    s.edit(
        "quickstart.toml",
        "command = \"python3 {{script}}\"",
        "command = \"python3 {{scirpt}} --model {{model}}\"",
    );
    let err = invalid(&s);
    let line = line_of(&s, "quickstart.toml", "command = ");
    assert!(
        says(
            &err,
            &format!(
                "quickstart.toml:{line}:11: `harnesses.fixer.command` uses `scirpt`, which is not a \
             variable of a harness command"
            )
        ),
        "{err}"
    );
    assert!(
        says(
            &err,
            "did you mean `{{script}}`? a harness command reads {{script}}, {{prompt_file}}, \
             {{model}}, {{workdir}}, {{side_dir}}, {{max_cost_usd}}, {{base_url}}, {{provider}}"
        ),
        "{err}"
    );
    // apply validates first: nothing runs, no store is made.
    let o = s.bench(&["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(says(&flat(&o), "uses `scirpt`"), "{}", stderr(&o));
    assert!(!s.path(".bench").exists());
}

#[test]
fn a_task_no_patch_can_fail_is_refused_at_validate() {
    let s = Sandbox::quickstart();
    let text = s.read(ROMAN);
    let start = text.find("FAIL_TO_PASS = [").expect("FAIL_TO_PASS");
    let end = start + text[start..].find(']').expect("the list ends");
    s.edit(ROMAN, &text[start..=end], "FAIL_TO_PASS = []");
    let err = invalid(&s);
    let line = line_of(&s, ROMAN, "FAIL_TO_PASS");
    let path = s.path(ROMAN);
    assert!(
        says(
            &err,
            &format!(
                "{}:{line}:16: `FAIL_TO_PASS` is empty: a task no patch can fail tests nothing, and \
             every team (nop included) would resolve it",
                path.display()
            )
        ),
        "{err}"
    );
    assert!(
        says(
            &err,
            "help: list the tests that fail before the gold patch and pass after it"
        ),
        "{err}"
    );
    // The loader refuses it too (every command that loads tasks).
    let loaded = bench::tasks::load_local_dir(&s.path("quickstart/tasks"));
    let e = loaded.map(|t| t.len()).expect_err("refused").to_string();
    assert!(
        e.contains(&format!(
            "{}:{line}:16: `FAIL_TO_PASS` is empty",
            path.display()
        )),
        "{e}"
    );
    // apply says so before anything runs.
    let o = s.bench(&["apply", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(says(&flat(&o), "`FAIL_TO_PASS` is empty"), "{}", stderr(&o));
    assert!(!s.path(".bench").exists());
}

#[test]
fn an_unknown_log_parser_is_refused_with_the_parser_it_resembles() {
    let s = Sandbox::quickstart();
    s.edit(
        ROMAN,
        "log_parser = \"unittest\"",
        "log_parser = \"unitest\"",
    );
    let err = invalid(&s);
    let line = line_of(&s, ROMAN, "log_parser");
    assert!(
        says(
            &err,
            &format!(
                "{}:{line}:14: `log_parser` `unitest` is not a registered log parser",
                s.path(ROMAN).display()
            )
        ),
        "{err}"
    );
    assert!(
        says(
            &err,
            "help: did you mean `unittest`? the parsers: cargo, cargo-json,"
        ),
        "{err}"
    );
}

#[test]
fn an_unsupported_language_is_refused_naming_the_supported_ones() {
    let s = Sandbox::quickstart();
    s.edit(ROMAN, "language = \"python\"", "language = \"cobol\"");
    let err = invalid(&s);
    let line = line_of(&s, ROMAN, "language");
    assert!(
        says(
            &err,
            &format!(
                "{}:{line}:12: `language` `cobol` is not a supported language",
                s.path(ROMAN).display()
            )
        ),
        "{err}"
    );
    assert!(
        says(
            &err,
            "help: write one of: go, javascript, python, rust, shell"
        ),
        "{err}"
    );
    // The languages `bench mine` writes are local tasks' languages too.
    s.edit(ROMAN, "language = \"cobol\"", "language = \"javascript\"");
    let o = s.bench(&["validate", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn what_bench_mine_writes_is_a_valid_local_task() {
    use bench::mine::detect::Framework;
    // Every framework, by a match without a wildcard: a new one fails to compile here.
    let all = [
        Framework::Pytest,
        Framework::Unittest,
        Framework::GoTest,
        Framework::CargoTest,
        Framework::NodeTest,
        Framework::Jest,
    ];
    for f in all {
        match f {
            Framework::Pytest
            | Framework::Unittest
            | Framework::GoTest
            | Framework::CargoTest
            | Framework::NodeTest
            | Framework::Jest => {}
        }
        assert!(bench::tasks::LANGUAGES.contains(&f.language()), "{f:?}");
        assert!(
            bench::parsers::builtin_parser_names().contains(&f.parser()),
            "{f:?}"
        );
    }
}
