//! `orchestra import CONFIG.YAML`: the seed tool's config.yaml written as an orchestra.toml
//! that orchestra itself loads and starts; bad input and an existing manifest leave every
//! file as it was.

use std::path::{Path, PathBuf};

use crate::harness::Env;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import");

/// The fixture `name` copied beside the repo, as a person's file would be.
fn config(env: &Env, name: &str) -> PathBuf {
    let to = env.root.join(name);
    std::fs::copy(Path::new(FIXTURES).join(name), &to).expect("copy the fixture");
    to
}

fn target(env: &Env) -> PathBuf {
    env.repo.join("orchestra.toml")
}

#[test]
fn import_writes_the_seed_example_as_a_manifest_orchestra_loads() {
    let env = Env::new();
    let yaml = config(&env, "config.yaml");
    let y = yaml.display().to_string();
    let run = env.orchestra(&["import", &y]).ok();
    assert_eq!(
        run.stdout,
        format!(
            "wrote {}: sessions 4, hosts 2, dependencies 2; kept as comments 2\n",
            target(&env).display()
        )
    );
    // Renames, then what was kept as a comment, each at its place in the YAML.
    assert_eq!(
        run.stderr.lines().collect::<Vec<_>>(),
        [
            format!("orchestra: {y}:12:3: session \"my_pipeline\" is \"my-pipeline\" (a label is a-z, 0-9 and '-'); blocked_by and dependencies follow"),
            format!("orchestra: {y}:20:3: session \"my_analysis\" is \"my-analysis\" (a label is a-z, 0-9 and '-'); blocked_by and dependencies follow"),
            format!("orchestra: not imported (kept as a comment): {y}:9:17: notify_slack = \"https://hooks.example.invalid/T000\": orchestra has no such orchestrator setting"),
            format!("orchestra: not imported (kept as a comment): {y}:45:11: dependencies[2]: when = \"pipeline completes step 7\": a `when` orchestra reads is \"NAME done\" or \"NAME has FILE\", NAME a session"),
        ]
    );
    let text = std::fs::read_to_string(target(&env)).unwrap();
    assert!(
        text.contains("# when = \"pipeline completes step 7\"\n"),
        "{text}"
    );
    let m = orchestra::manifest::load(&target(&env)).expect("the project's parser loads it");
    assert_eq!(
        m.hosts["gpu-server"].address,
        "alice@gpu-server.lab.example"
    );
    assert_eq!(
        m.sessions["my-analysis"].host.as_deref(),
        Some("gpu-server")
    );
    assert_eq!(m.sessions["my-analysis"].blocked_by, ["my-pipeline"]);
    assert_eq!(m.dependencies[0].when, "my-pipeline done");
}

#[test]
fn imported_local_sessions_come_up_in_blocked_by_order() {
    let env = Env::new();
    env.start_server(&[]);
    let a = env.root.join("a folder");
    let b = env.root.join("b's folder");
    for dir in [&a, &b] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let yaml = env.root.join("config.yaml");
    std::fs::write(
        &yaml,
        format!(
            "orchestrator:\n  agent: cat\nsessions:\n  my_analysis:\n    path: \"{}\"\n    blocked_by: [my_pipeline]\n  my_pipeline:\n    path: \"{}\"\n    host: localhost\n",
            b.display(),
            a.display()
        ),
    )
    .unwrap();
    env.orchestra(&["import", &yaml.display().to_string()]).ok();
    let up = env.orchestra(&["up"]).ok();
    let pipeline_at = up.stdout.find("my-pipeline: up here").expect(&up.stdout);
    let analysis_at = up.stdout.find("my-analysis: up here").expect(&up.stdout);
    assert!(pipeline_at < analysis_at, "{}", up.stdout);
    let mut labels: Vec<String> = env
        .list_json()
        .iter()
        .map(|s| s["label"].as_str().unwrap_or_default().to_string())
        .collect();
    labels.sort();
    assert_eq!(labels, ["my-analysis", "my-pipeline"]);
    env.orchestra(&["down"]).ok();
}

#[test]
fn an_existing_manifest_is_replaced_only_with_force() {
    let env = Env::new();
    let yaml = config(&env, "config.yaml");
    let y = yaml.display().to_string();
    std::fs::write(target(&env), "# mine\n").unwrap();
    env.cli(&["import", &y])
        .status(1)
        .stderr_line(format!(
            "orchestra: {} exists: pass --force to replace it",
            target(&env).display()
        ))
        .run();
    assert_eq!(std::fs::read_to_string(target(&env)).unwrap(), "# mine\n");

    // Broken input with --force: still nothing written.
    let broken = config(&env, "broken.yaml");
    env.cli(&["import", &broken.display().to_string(), "--force"])
        .status(2)
        .stderr_line(format!(
            "orchestra: {}:6:10: mapping values are not allowed in this context",
            broken.display()
        ))
        .run();
    assert_eq!(std::fs::read_to_string(target(&env)).unwrap(), "# mine\n");

    env.orchestra(&["import", &y, "--force"]).ok();
    orchestra::manifest::load(&target(&env)).expect("replaced by the import");
    let leftovers: Vec<_> = std::fs::read_dir(&env.repo)
        .unwrap()
        .filter_map(std::result::Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("import"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temporary file left: {leftovers:?}"
    );
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_written() {
    let env = Env::new();
    let broken = config(&env, "broken.yaml");
    env.cli(&["import", &broken.display().to_string()])
        .status(2)
        .stderr_line(format!(
            "orchestra: {}:6:10: mapping values are not allowed in this context",
            broken.display()
        ))
        .run();
    let host = env.root.join("host.yaml");
    std::fs::write(
        &host,
        "sessions:\n  a:\n    path: /x\n    host: \"me@box:ssh\"\n",
    )
    .unwrap();
    let run = env
        .orchestra(&["import", &host.display().to_string()])
        .fails_with(2);
    assert!(
        run.stderr.starts_with(&format!(
            "orchestra: {}:4:11: sessions.a.host \"me@box:ssh\" is not user@server",
            host.display()
        )),
        "{}",
        run.stderr
    );
    let shape = env.root.join("shape.yaml");
    std::fs::write(&shape, "sessions: [a, b]\n").unwrap();
    env.cli(&["import", &shape.display().to_string()])
        .status(2)
        .stderr_line(format!(
            "orchestra: {}:1:11: sessions must be a mapping, not a list",
            shape.display()
        ))
        .run();
    env.cli(&["import", "missing.yaml"])
        .status(2)
        .stderr_line("orchestra: cannot read missing.yaml: No such file or directory (os error 2)")
        .run();
    assert!(!target(&env).exists(), "nothing was written");
}

#[test]
fn hostile_names_and_values_come_out_as_toml_that_means_the_same() {
    let env = Env::new();
    let yaml = config(&env, "hostile.yaml");
    let out = env.root.join("out.toml");
    env.orchestra(&[
        "import",
        &yaml.display().to_string(),
        "--config",
        &out.display().to_string(),
    ])
    .ok();
    let m = orchestra::manifest::load(&out).expect("loads");
    assert_eq!(
        m.sessions.keys().collect::<Vec<_>>(),
        ["sessions-evil", "we-ird-name"]
    );
    assert_eq!(
        m.sessions["we-ird-name"].path,
        "/tmp/a \"quoted\" ] [x] = 'dir'\nsecond line"
    );
    assert_eq!(
        m.sessions["sessions-evil"].path,
        "= \"\"\"\n[orchestrator]\nagent = \"rm -rf /\""
    );
    assert_eq!(m.orchestrator.agent, "claude");
    assert!(!target(&env).exists(), "--config names where it goes");
}
