//! A Harbor task's `environment/docker-compose.yaml` (Terminal-Bench 2 tasks that need a
//! service beside the agent's container: a database, a web server, a second machine), parsed
//! with `docker-compose-types` and checked against what bench runs.
//!
//! Harbor merges the task's file over its own (`main` built from `environment/Dockerfile`,
//! idle, with the log directories mounted) and starts the project with `docker compose`. bench
//! starts `main` itself in the same way, so in `main` the keys of Harbor's plumbing (`build`,
//! `image`, `command`, `volumes` and `environment` entries whose values are `${...}`
//! variables, `deploy`) are read and left to bench; `depends_on` is honoured. Every other
//! service runs as the file says (`image` or `build`, `command`, `entrypoint`, `environment`,
//! `working_dir`, `user`, `healthcheck`, `depends_on`; `expose` and `restart` are accepted and
//! need nothing), on a network of the trial's own where its name resolves. What would reach
//! past that network or the sandbox (`ports`, `volumes`, `network_mode`, `networks`,
//! `privileged`, `cap_add`, `devices`, `pid`, `ipc`, `extra_hosts`, ...) is refused, as is
//! anything bench would otherwise have to guess at (an unknown key, a `${VAR}` it cannot
//! resolve, a build context outside `environment/`). Every problem names the file, the
//! service and the key, and says how to fix it.
//!
//! Not here: starting the services (`backend/docker_backend.rs`).

use std::collections::{BTreeMap, BTreeSet};

use docker_compose_types as dc;

use crate::tasks::{ServiceBuild, ServiceHealth, ServiceSpec};

/// The files of a task tree: relative path -> (mode, content) (`harbor.rs`'s `FileTree`).
type FileTree = BTreeMap<String, (u32, Vec<u8>)>;

/// The service Harbor runs the agent in.
pub const MAIN: &str = "main";

/// Keys of a service bench runs as written.
const SERVICE_KEYS: [&str; 11] = [
    "image",
    "build",
    "command",
    "entrypoint",
    "environment",
    "working_dir",
    "user",
    "healthcheck",
    "depends_on",
    "expose",
    "restart",
];

/// Keys of `main` bench reads (its image, command, mounts and limits are bench's own).
const MAIN_KEYS: [&str; 7] = [
    "build",
    "image",
    "command",
    "volumes",
    "environment",
    "deploy",
    "depends_on",
];

/// What a task's compose file gives: its services in the order they start, and the images
/// they need on the daemon (their `image`s and the `FROM`s of their Dockerfiles), sorted.
#[derive(Debug, Default, PartialEq)]
pub struct Services {
    pub services: Vec<ServiceSpec>,
    pub images: Vec<String>,
}

/// Reads `text`, the compose file at `file` (as shown in errors), of the task whose
/// environment directory is `env` in `tree`. Errors: every problem found.
pub fn read(text: &str, file: &str, tree: &FileTree, env: &str) -> Result<Services, Vec<String>> {
    let compose: dc::Compose = serde_yaml::from_str(text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(" line {} column {}", l.line(), l.column()))
            .unwrap_or_default();
        vec![format!(
            "{file}:{at}: {e}; see https://docs.docker.com/reference/compose-file/ for the format"
        )]
    })?;
    let mut problems = Vec::new();
    top_level(&compose, file, &mut problems);
    let mut services = Vec::new();
    let mut main_after = Vec::new();
    for (name, service) in &compose.services.0 {
        let service = service.clone().unwrap_or_default();
        let mut bad = |key: &str, why: String| {
            problems.push(format!("{file}: services.{name}.{key}: {why}"));
        };
        if name == MAIN {
            main_after = check_main(&service, &mut bad);
        } else if let Some(s) = service_spec(name, &service, tree, env, &mut bad) {
            services.push(s);
        }
    }
    let names: BTreeSet<&str> = services.iter().map(|s| s.name.as_str()).collect();
    for (from, deps) in services
        .iter()
        .map(|s| (s.name.as_str(), &s.depends_on))
        .chain(std::iter::once((MAIN, &main_after)))
    {
        for d in deps {
            if !names.contains(d.as_str()) {
                problems.push(format!(
                    "{file}: services.{from}.depends_on: `{d}` is not a service of the file{}",
                    if d == MAIN {
                        " (no service can wait for `main`: it starts last)"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let services = start_order(services).map_err(|cycle| {
        vec![format!(
            "{file}: the services' depends_on form a cycle ({cycle}); no order starts them"
        )]
    })?;
    let mut images: Vec<String> = Vec::new();
    for s in &services {
        if let Some(i) = &s.image {
            images.push(i.clone());
        }
        if let Some(b) = &s.build {
            let df = join(env, &join(&b.context, &b.dockerfile));
            let text = tree
                .get(&df)
                .map(|(_, t)| String::from_utf8_lossy(t).into_owned())
                .unwrap_or_default();
            images.extend(dockerfile_facts(&text).0);
        }
    }
    images.sort();
    images.dedup();
    Ok(Services { services, images })
}

/// The images a Dockerfile starts from (`FROM [--platform=..] IMAGE [AS name]`), without
/// references to its own earlier stages, and its last `WORKDIR`.
pub fn dockerfile_facts(text: &str) -> (Vec<String>, Option<String>) {
    let mut from = Vec::new();
    let mut stages: Vec<String> = Vec::new();
    let mut workdir = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = words.first() else {
            continue;
        };
        if first.eq_ignore_ascii_case("FROM") {
            let rest: Vec<&str> = words[1..]
                .iter()
                .copied()
                .filter(|w| !w.starts_with("--"))
                .collect();
            if let Some(image) = rest.first() {
                if !stages.iter().any(|s| s.eq_ignore_ascii_case(image)) && *image != "scratch" {
                    from.push(image.to_string());
                }
                if rest.len() >= 3 && rest[1].eq_ignore_ascii_case("AS") {
                    stages.push(rest[2].to_string());
                }
            }
        } else if first.eq_ignore_ascii_case("WORKDIR")
            && let Some(dir) = words.get(1)
        {
            workdir = Some(dir.trim_matches('"').to_string());
        }
    }
    from.sort();
    from.dedup();
    (from, workdir)
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}/{b}"),
    }
}

/// The file's top level: only `services` (and the project's `version` and `name`, which
/// change nothing here).
fn top_level(c: &dc::Compose, file: &str, problems: &mut Vec<String>) {
    let v = serde_yaml::to_value(c).unwrap_or_default();
    let keys: Vec<String> = v
        .as_mapping()
        .map(|m| {
            m.keys()
                .filter_map(|k| k.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    for k in keys {
        if !["services", "version", "name"].contains(&k.as_str()) && !k.starts_with("x-") {
            problems.push(format!(
                "{file}: `{k}` is not supported: bench gives a task's services one network of the trial's own and no volumes, secrets or included files; remove it"
            ));
        }
    }
    if c.services.0.is_empty() {
        problems.push(format!("{file}: no services"));
    }
}

/// The keys a service sets (those its parsed form serializes: unset ones are skipped).
fn keys_of(s: &dc::Service) -> Vec<String> {
    serde_yaml::to_value(s)
        .ok()
        .and_then(|v| {
            v.as_mapping().map(|m| {
                m.keys()
                    .filter_map(|k| k.as_str().map(String::from))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Why a key bench does not run is refused.
fn refusal(key: &str) -> String {
    match key {
        "ports" => "publishes ports on the host; the service is reachable by its name on the trial's network without it: remove it".into(),
        "volumes" | "volumes_from" | "tmpfs" => "mounts are not supported (nothing of the host enters a sandbox); COPY what the service needs in its Dockerfile".into(),
        "network_mode" | "networks" | "links" | "extra_hosts" | "dns" | "dns_opt" | "hostname" | "domainname" => "bench puts every service on one network of the trial's own, where each is reachable by its service name; remove it".into(),
        "privileged" | "cap_add" | "devices" | "pid" | "ipc" | "userns_mode" | "security_opt" | "sysctls" | "cgroup_parent" | "group_add" => "would give the service more than a plain container (a sandbox's services get no extra privileges); remove it".into(),
        k if k.starts_with("x-") => "extension keys are not read; remove it".into(),
        _ => format!(
            "is not supported (bench runs a service's {}); remove it",
            SERVICE_KEYS.join(", ")
        ),
    }
}

/// `main`: only Harbor's plumbing, which bench provides itself. Returns what it depends on.
fn check_main(s: &dc::Service, bad: &mut impl FnMut(&str, String)) -> Vec<String> {
    for k in keys_of(s) {
        if !MAIN_KEYS.contains(&k.as_str()) {
            bad(
                &k,
                format!(
                    "is not supported on `main`, the agent's container, which bench starts from environment/Dockerfile (or `[environment] docker_image`) with the task's limits and network: {}",
                    refusal(&k)
                ),
            );
        }
    }
    for v in &s.volumes {
        let source = match v {
            dc::Volumes::Simple(s) => s.split(':').next().unwrap_or_default().to_string(),
            dc::Volumes::Advanced(a) => a.source.clone().unwrap_or_default(),
        };
        if !source.starts_with("${") {
            bad(
                "volumes",
                format!(
                    "`{source}`: only Harbor's own log mounts (`${{...}}` sources) may be named on `main`, and bench makes those itself; COPY what the task needs in environment/Dockerfile"
                ),
            );
        }
    }
    match environment(&s.environment) {
        Ok(env) => {
            for e in env {
                let value = e.split_once('=').map_or("", |(_, v)| v);
                if !(value.starts_with("${") && value.ends_with('}')) {
                    bad(
                        "environment",
                        format!(
                            "`{e}`: `main`'s environment may only hold Harbor's `${{...}}` variables (bench sets its own); set the variable with ENV in environment/Dockerfile"
                        ),
                    );
                }
            }
        }
        Err(e) => bad("environment", e),
    }
    depends_on(&s.depends_on, bad)
}

/// A service other than `main`, or `None` (its problems reported).
fn service_spec(
    name: &str,
    s: &dc::Service,
    tree: &FileTree,
    env: &str,
    bad: &mut impl FnMut(&str, String),
) -> Option<ServiceSpec> {
    let before = std::cell::Cell::new(0usize);
    let mut count = |key: &str, why: String| {
        before.set(before.get() + 1);
        bad(key, why);
    };
    if !valid_name(name) {
        count(
            "",
            "a service name must be lowercase letters, digits, `-` and `_`, starting with a letter or digit (it is the service's host name)".into(),
        );
    }
    for k in keys_of(s) {
        if !SERVICE_KEYS.contains(&k.as_str()) {
            count(&k, refusal(&k));
        }
    }
    let image = s.image.clone();
    if let Some(i) = &image
        && (i.contains("${") || i.trim().is_empty())
    {
        count(
            "image",
            format!("`{i}`: name the image itself (bench resolves no variables)"),
        );
    }
    let build = s
        .build_
        .as_ref()
        .and_then(|b| build_of(b, tree, env, &mut count));
    if image.is_none() && s.build_.is_none() {
        count(
            "",
            "has neither `image` nor `build`: give it one (an image on the Docker daemon, or a directory of environment/ with a Dockerfile)".into(),
        );
    }
    let environment = environment(&s.environment).unwrap_or_else(|e| {
        count("environment", e);
        Vec::new()
    });
    for e in &environment {
        if e.contains("${") {
            count(
                "environment",
                format!("`{e}`: bench resolves no variables; write the value"),
            );
        }
    }
    let healthcheck = s
        .healthcheck
        .as_ref()
        .filter(|h| !h.disable)
        .and_then(|h| health_of(h, &mut count));
    let depends_on = depends_on(&s.depends_on, &mut count);
    let words = |key: &str, w: Option<Vec<String>>, count: &mut dyn FnMut(&str, String)| {
        w.inspect(|w| {
            if w.iter().any(|x| x.contains("${")) {
                count(key, "bench resolves no variables; write the value".into());
            }
        })
    };
    let command = s.command.clone().map(|c| match c {
        dc::Command::Simple(s) => split(&s),
        dc::Command::Args(a) => a,
    });
    let entrypoint = s.entrypoint.clone().map(|c| match c {
        dc::Entrypoint::Simple(s) => split(&s),
        dc::Entrypoint::List(a) => a,
    });
    let command = words("command", command, &mut count);
    let entrypoint = words("entrypoint", entrypoint, &mut count);
    (before.get() == 0).then(|| ServiceSpec {
        name: name.to_string(),
        image: if build.is_some() { None } else { image },
        build,
        entrypoint,
        command,
        environment,
        working_dir: s.working_dir.clone(),
        user: s.user.clone(),
        healthcheck,
        depends_on,
    })
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.len() <= 63
}

/// A string command split as compose splits it (shell words, no shell).
fn split(s: &str) -> Vec<String> {
    shlex::split(s).unwrap_or_else(|| vec![s.to_string()])
}

/// `build`: a directory of `environment/` holding its Dockerfile.
fn build_of(
    b: &dc::BuildStep,
    tree: &FileTree,
    env: &str,
    bad: &mut impl FnMut(&str, String),
) -> Option<ServiceBuild> {
    let (context, dockerfile) = match b {
        dc::BuildStep::Simple(c) => (c.clone(), "Dockerfile".to_string()),
        dc::BuildStep::Advanced(a) => {
            let extra = serde_yaml::to_value(a)
                .ok()
                .and_then(|v| {
                    v.as_mapping().map(|m| {
                        m.keys()
                            .filter_map(|k| k.as_str().map(String::from))
                            .filter(|k| k != "context" && k != "dockerfile")
                            .collect::<Vec<_>>()
                    })
                })
                .unwrap_or_default();
            if !extra.is_empty() {
                bad(
                    "build",
                    format!(
                        "{} not supported: a service is built from `context` and `dockerfile` only",
                        extra.join(", ")
                    ),
                );
                return None;
            }
            (
                a.context.clone(),
                a.dockerfile.clone().unwrap_or_else(|| "Dockerfile".into()),
            )
        }
    };
    let context = match normal_path(&context) {
        Some(c) => c,
        None => {
            bad(
                "build",
                format!(
                    "context `{context}` must be a directory inside environment/ (relative, without `..` or variables)"
                ),
            );
            return None;
        }
    };
    let Some(dockerfile) = normal_path(&dockerfile).filter(|d| !d.is_empty()) else {
        bad(
            "build",
            format!("dockerfile `{dockerfile}` must be a relative path inside the context"),
        );
        return None;
    };
    let at = join(env, &join(&context, &dockerfile));
    if !tree.contains_key(&at) {
        bad(
            "build",
            format!("there is no {at}: add the service's Dockerfile"),
        );
        return None;
    }
    Some(ServiceBuild {
        context,
        dockerfile,
    })
}

/// A relative path without `..`, variables or a leading `/`, normalized (`./a/` -> `a`,
/// `.` -> ``); `None` when it is none of those.
fn normal_path(p: &str) -> Option<String> {
    if p.starts_with('/') || p.contains("${") || p.contains('\\') {
        return None;
    }
    let mut parts = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            x => parts.push(x),
        }
    }
    Some(parts.join("/"))
}

/// `environment` as sorted `KEY=value` entries; a bare `KEY` (the host's value) is refused.
fn environment(e: &dc::Environment) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    match e {
        dc::Environment::List(list) => {
            for item in list {
                if !item.contains('=') {
                    return Err(format!(
                        "`{item}` takes its value from the host, which bench does not pass into sandboxes; write `{item}=value`"
                    ));
                }
                out.push(item.clone());
            }
        }
        dc::Environment::KvPair(map) => {
            for (k, v) in map {
                match v {
                    Some(v) => out.push(format!("{k}={v}")),
                    None => {
                        return Err(format!(
                            "`{k}` has no value (it would come from the host, which bench does not pass into sandboxes); give it one"
                        ));
                    }
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

fn depends_on(d: &dc::DependsOnOptions, bad: &mut impl FnMut(&str, String)) -> Vec<String> {
    let mut out: Vec<String> = match d {
        dc::DependsOnOptions::Simple(v) => v.clone(),
        dc::DependsOnOptions::Conditional(m) => m
            .iter()
            .filter_map(|(k, c)| match c.condition.as_str() {
                "service_started" | "service_healthy" => Some(k.clone()),
                other => {
                    bad(
                        "depends_on",
                        format!(
                            "`{k}`: condition `{other}` is not supported (bench starts each service, waits for it to be healthy when it has a healthcheck, and keeps it running); use service_started or service_healthy"
                        ),
                    );
                    None
                }
            })
            .collect(),
    };
    out.sort();
    out.dedup();
    out
}

/// A compose duration (`1m30s`, `500ms`, `10s`) in milliseconds.
fn millis(s: &Option<String>, default_ms: u64) -> Result<u64, String> {
    match s {
        None => Ok(default_ms),
        Some(s) => humantime::parse_duration(s.trim())
            .map(|d| d.as_millis() as u64)
            .map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. `5s` or `1m30s`")),
    }
}

/// A healthcheck in Docker's form, compose's defaults filled in (30 s, 30 s, 0 s, 3).
fn health_of(h: &dc::Healthcheck, bad: &mut impl FnMut(&str, String)) -> Option<ServiceHealth> {
    let test = match &h.test {
        None => {
            bad("healthcheck", "has no `test`".into());
            return None;
        }
        Some(dc::HealthcheckTest::Single(s)) => vec!["CMD-SHELL".to_string(), s.clone()],
        Some(dc::HealthcheckTest::Multiple(v)) => v.clone(),
    };
    if !matches!(
        test.first().map(String::as_str),
        Some("CMD") | Some("CMD-SHELL")
    ) || test.len() < 2
    {
        bad(
            "healthcheck",
            format!("test {test:?} must start with CMD or CMD-SHELL and name a command"),
        );
        return None;
    }
    let durations = (
        millis(&h.interval, 30_000),
        millis(&h.timeout, 30_000),
        millis(&h.start_period, 0),
    );
    match durations {
        (Ok(interval_ms), Ok(timeout_ms), Ok(start_period_ms)) => Some(ServiceHealth {
            test,
            interval_ms: interval_ms.max(1),
            timeout_ms: timeout_ms.max(1),
            start_period_ms,
            retries: if h.retries > 0 { h.retries as u64 } else { 3 },
        }),
        (a, b, c) => {
            for e in [a.err(), b.err(), c.err()].into_iter().flatten() {
                bad("healthcheck", e);
            }
            None
        }
    }
}

/// The services in an order where each starts after what it depends on (ties by name), or
/// the names on a cycle.
fn start_order(services: Vec<ServiceSpec>) -> Result<Vec<ServiceSpec>, String> {
    let mut left: BTreeMap<String, ServiceSpec> =
        services.into_iter().map(|s| (s.name.clone(), s)).collect();
    let mut out: Vec<ServiceSpec> = Vec::new();
    while !left.is_empty() {
        let ready = left
            .values()
            .find(|s| {
                s.depends_on
                    .iter()
                    .all(|d| out.iter().any(|o| &o.name == d))
            })
            .map(|s| s.name.clone());
        match ready {
            Some(name) => out.push(left.remove(&name).expect("present")),
            None => return Err(left.keys().cloned().collect::<Vec<_>>().join(", ")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> FileTree {
        files
            .iter()
            .map(|f| (f.to_string(), (0o644, b"FROM bench-test-base:1\n".to_vec())))
            .collect()
    }

    fn ok(text: &str) -> Services {
        read(
            text,
            "t/environment/docker-compose.yaml",
            &tree(&[
                "t/environment/server/Dockerfile",
                "t/environment/Dockerfile",
            ]),
            "t/environment",
        )
        .unwrap_or_else(|p| panic!("{p:?}"))
    }

    fn err(text: &str) -> String {
        read(
            text,
            "t/environment/docker-compose.yaml",
            &tree(&["t/environment/server/Dockerfile"]),
            "t/environment",
        )
        .unwrap_err()
        .join("\n")
    }

    #[test]
    fn harbor_s_main_plumbing_is_read_and_services_run_as_written() {
        let s = ok(r#"
services:
  main:
    build:
      context: ${CONTEXT_DIR}
    image: ${MAIN_IMAGE_NAME}
    command: ["sh", "-c", "sleep infinity"]
    environment:
      - TEST_DIR=${TEST_DIR}
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
    depends_on:
      cache:
        condition: service_healthy
  cache:
    image: redis:7
    command: redis-server --port 6380 --save ""
    depends_on: [server]
    expose: ["6380"]
  server:
    build: ./server/
    environment:
      SECRET: "42"
      MODE: fast
    healthcheck:
      test: curl -f http://localhost:8000/
      interval: 1s
      retries: 5
"#);
        assert_eq!(
            s.services
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["server", "cache"],
            "dependencies first"
        );
        let server = &s.services[0];
        assert_eq!(
            server.build,
            Some(ServiceBuild {
                context: "server".into(),
                dockerfile: "Dockerfile".into()
            })
        );
        assert_eq!(server.environment, ["MODE=fast", "SECRET=42"]);
        let h = server.healthcheck.as_ref().unwrap();
        assert_eq!(h.test, ["CMD-SHELL", "curl -f http://localhost:8000/"]);
        assert_eq!((h.interval_ms, h.timeout_ms, h.retries), (1000, 30_000, 5));
        let cache = &s.services[1];
        assert_eq!(
            cache.command.as_deref().unwrap(),
            ["redis-server", "--port", "6380", "--save", ""]
        );
        assert_eq!(s.images, ["bench-test-base:1", "redis:7"]);
    }

    #[test]
    fn what_would_escape_the_trial_s_network_or_sandbox_is_refused_by_key() {
        let e = err(r#"
services:
  main:
    ports: ["80:80"]
  db:
    image: postgres:16
    ports: ["5432:5432"]
    volumes: ["/var/run/docker.sock:/var/run/docker.sock"]
    privileged: true
    network_mode: host
    cap_add: [NET_ADMIN]
"#);
        for want in [
            "services.main.ports: is not supported on `main`",
            "services.db.ports: publishes ports on the host",
            "services.db.volumes: mounts are not supported",
            "services.db.privileged: would give the service more",
            "services.db.network_mode: bench puts every service on one network",
            "services.db.cap_add: would give",
        ] {
            assert!(e.contains(want), "{want}\n{e}");
        }
        assert!(e.starts_with("t/environment/docker-compose.yaml: "), "{e}");
    }

    #[test]
    fn what_bench_would_have_to_guess_is_refused_with_the_fix() {
        for (text, want) in [
            (
                "services:\n  s:\n    image: ${IMG}\n",
                "services.s.image: `${IMG}`: name the image itself",
            ),
            (
                "services:\n  s:\n    build: ../outside\n",
                "context `../outside` must be a directory inside environment/",
            ),
            (
                "services:\n  s:\n    build: ./nowhere\n",
                "there is no t/environment/nowhere/Dockerfile",
            ),
            (
                "services:\n  s:\n    image: a\n    environment: [TOKEN]\n",
                "`TOKEN` takes its value from the host",
            ),
            (
                "services:\n  s:\n    image: a\n    depends_on: [db]\n",
                "services.s.depends_on: `db` is not a service of the file",
            ),
            (
                "services:\n  a:\n    image: a\n    depends_on: [b]\n  b:\n    image: b\n    depends_on: [a]\n",
                "form a cycle (a, b)",
            ),
            (
                "services:\n  s: {}\n",
                "services.s.: has neither `image` nor `build`",
            ),
            (
                "services:\n  Bad_Name:\n    image: a\n",
                "a service name must be lowercase",
            ),
            (
                "services:\n  s:\n    image: a\n    healthcheck:\n      test: [\"CMD\", \"true\"]\n      interval: soon\n",
                "`soon` is not a duration",
            ),
            (
                "services:\n  s:\n    image: a\nvolumes:\n  data: {}\n",
                "`volumes` is not supported",
            ),
            (
                "services:\n  main:\n    environment:\n      - MODE=strict\n",
                "set the variable with ENV in environment/Dockerfile",
            ),
            (
                "services:\n  s:\n    image: a\n    colour: blue\n",
                "unknown attribute",
            ),
            ("services: [", "line "),
        ] {
            let e = err(text);
            assert!(e.contains(want), "{text}\nwant: {want}\ngot: {e}");
        }
    }
}
