//! Structured property tests of the engine's parsers ("fuzzing" that keeps working):
//! the inputs are built from structure a bit flip never reaches (fio job files of many
//! sections, `stonewall`/`wait_for` chains, deeply nested expressions, includes naming
//! devices, FIFOs, missing files and the file itself, `${VAR}` forms, absurd numbers,
//! paths with `..`; engine jobs of random keys and values). Each property asks only: an
//! answer (a plan or problems, never a panic), soon, and nothing written.
//!
//! `cargo test` runs a few cases of each, so CI stays fast; `PROPTEST_CASES=20000`
//! runs that many (`make fuzz`). A failure prints the smallest input found; nothing is
//! saved beside the sources.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use fslab_engine::fio::{self, Overrides};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

mod common;
use common::mkfifo;

/// How long one input may take, however absurd (the ones here take milliseconds).
const BOUND: Duration = Duration::from_secs(10);
/// The address space a `check` may use in the command-line property.
const MEMORY: u64 = 1 << 30;
/// In the included file `secret.txt`: no problem may show it.
const SECRET: &str = "SECRETTOKEN";

/// `cases` cases unless `PROPTEST_CASES` says otherwise; no regression files written.
fn config(cases: u32) -> Config {
    scaled(cases, 1)
}

/// As `config`, with `PROPTEST_CASES / per` cases when it is set: a case that starts a
/// process costs a hundred of those that call the parser.
fn scaled(cases: u32, per: u32) -> Config {
    let mut c = Config::default();
    c.cases = match std::env::var_os("PROPTEST_CASES") {
        None => cases,
        Some(_) => (c.cases / per).max(1),
    };
    c.failure_persistence = None;
    c.max_shrink_iters = 512;
    c
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fslab-fuzz-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Every name under `dir`, sorted, with each file's length: what "nothing written" compares.
fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                todo.push(e.path());
            }
            out.push((e.path(), if meta.is_file() { meta.len() } else { 0 }));
        }
    }
    out.sort();
    out
}

// ---- fio job files ----

/// A section's name: plain, global, odd, or one a `wait_for` may name.
fn section_name() -> BoxedStrategy<String> {
    prop_oneof![
        6 => (0..8u8).prop_map(|i| format!("j{i}")),
        2 => Just("global".to_string()),
        1 => Just("global-x".to_string()),
        1 => Just("a/b".to_string()),
        1 => Just("..".to_string()),
        1 => Just("".to_string()),
        1 => Just(" spaced name ".to_string()),
        1 => Just("\u{1b}]0;x\u{7}".to_string()),
        1 => "[a-z]{40,80}",
    ]
    .boxed()
}

/// A number with a suffix, or an absurd one.
fn number() -> BoxedStrategy<String> {
    let suffix = prop_oneof![
        Just(""),
        Just("k"),
        Just("m"),
        Just("g"),
        Just("t"),
        Just("p"),
        Just("e"),
        Just("E"),
        Just("KiB"),
        Just("MB"),
        Just("%"),
        Just("s"),
        Just("ms"),
        Just("us"),
        Just("m"),
        Just("h"),
        Just("d"),
        Just("q"),
        Just("-8k"),
        Just(":4k"),
        Just(",8k"),
    ];
    prop_oneof![
        (any::<u64>(), suffix.clone()).prop_map(|(n, s)| format!("{n}{s}")),
        (0..5000u64, suffix).prop_map(|(n, s)| format!("{n}{s}")),
        Just("0x1000".to_string()),
        Just("-1".to_string()),
        Just("1.5".to_string()),
        Just("1e400".to_string()),
        Just("18446744073709551616".to_string()),
        Just("9".repeat(400)),
        Just("".to_string()),
    ]
    .boxed()
}

/// An expression: nested, chained, dividing by zero, towers of `^`.
fn expression() -> BoxedStrategy<String> {
    let atom = prop_oneof![
        Just("4096".to_string()),
        Just("0".to_string()),
        Just("1.5".to_string()),
        Just("$pagesize".to_string()),
        Just("${X}".to_string()),
        Just("".to_string()),
    ];
    let op = prop_oneof![
        Just("+"),
        Just("-"),
        Just("*"),
        Just("/"),
        Just("%"),
        Just("^")
    ];
    prop_oneof![
        // balanced, up to far past the depth limit
        (0..600usize, atom.clone()).prop_map(|(n, a)| format!(
            "{}{a}{}",
            "(".repeat(n),
            ")".repeat(n)
        )),
        // unbalanced
        (0..50usize, 0..50usize, atom.clone()).prop_map(|(o, c, a)| format!(
            "({}{a}{}",
            "(".repeat(o),
            ")".repeat(c)
        )),
        // long chains and unary minus runs
        (
            prop::collection::vec((op, atom.clone()), 0..40),
            atom.clone()
        )
            .prop_map(|(ops, a)| {
                let mut s = format!("({a}");
                for (o, b) in ops {
                    s.push_str(o);
                    s.push_str(&b);
                }
                s.push(')');
                s
            }),
        (0..2000usize).prop_map(|n| format!("({}1)", "-".repeat(n))),
        (0..2000usize).prop_map(|n| format!("(2{})", "^1".repeat(n))),
        Just("(1/0)".to_string()),
        Just("(2^99999)".to_string()),
        Just("(0-9223372036854775808)".to_string()),
        Just("(-9223372036854775808/-1)".to_string()),
        Just("(2^-1)".to_string()),
        Just("()".to_string()),
    ]
    .boxed()
}

/// `${VAR}` in its forms, good and bad.
fn variable() -> BoxedStrategy<String> {
    prop_oneof![
        Just("${X}".to_string()),
        Just("${NL}".to_string()),
        Just("${EMPTY}".to_string()),
        Just("${DIR}/f".to_string()),
        Just("${UNDEFINED}".to_string()),
        Just("${X".to_string()),
        Just("${}".to_string()),
        Just("$${X}".to_string()),
        Just("${${X}}".to_string()),
        Just("$ncpus".to_string()),
        Just("$nope".to_string()),
        Just("$".to_string()),
    ]
    .boxed()
}

/// A path for `filename` or `directory`.
fn path() -> BoxedStrategy<String> {
    prop_oneof![
        Just("..".to_string()),
        Just("../../x".to_string()),
        Just("/abs/victim.dat".to_string()),
        Just("/".to_string()),
        Just(".".to_string()),
        Just("a:b".to_string()),
        Just("a\\:b".to_string()),
        Just("dir/../x".to_string()),
        Just("link".to_string()),
        Just("j0.0.0".to_string()),
        Just("/dev/null".to_string()),
        Just("".to_string()),
        "[a-z./]{1,30}",
    ]
    .boxed()
}

/// What an `include` names: placeholders (`@...`) are filled in when the file is written.
fn include_target() -> BoxedStrategy<String> {
    prop_oneof![
        Just("/dev/zero".to_string()),
        Just("/dev/urandom".to_string()),
        Just("/dev/null".to_string()),
        Just("/proc/self/environ".to_string()),
        Just("@FIFO".to_string()),
        Just("@SELF".to_string()),
        Just("@OTHER".to_string()),
        Just("@DIR".to_string()),
        Just("@SECRET".to_string()),
        Just("missing.fio".to_string()),
        Just("../../../../etc/hostname".to_string()),
        Just("".to_string()),
    ]
    .boxed()
}

/// An option name: mapped, inert, refused, unknown.
fn option_name() -> BoxedStrategy<String> {
    let known: Vec<&'static str> = fio::options::OPTIONS.iter().map(|o| o.name).collect();
    prop_oneof![
        8 => prop::sample::select(known).prop_map(str::to_string),
        1 => Just("threads".to_string()),
        1 => "[a-z_]{1,12}",
    ]
    .boxed()
}

fn any_value() -> BoxedStrategy<String> {
    prop_oneof![
        3 => number(),
        2 => expression(),
        1 => variable(),
        1 => path(),
        1 => prop_oneof![
            Just("read".to_string()),
            Just("randrw".to_string()),
            Just("write:4k".to_string()),
            Just("io_uring".to_string()),
            Just("null".to_string()),
            Just("crc32c".to_string()),
        ],
        1 => "\\PC{0,20}",
    ]
    .boxed()
}

/// One line of a job file.
fn line() -> BoxedStrategy<String> {
    prop_oneof![
        3 => section_name().prop_map(|n| format!("[{n}]")),
        8 => (option_name(), any_value()).prop_map(|(k, v)| format!("{k}={v}")),
        2 => (prop_oneof![Just("filename"), Just("directory")], path())
            .prop_map(|(k, v)| format!("{k}={v}")),
        2 => (0..8u8).prop_map(|i| format!("wait_for=j{i}")),
        2 => Just("stonewall".to_string()),
        1 => Just("new_group".to_string()),
        1 => Just("time_based".to_string()),
        2 => include_target().prop_map(|t| format!("include {t}")),
        1 => Just("; a comment".to_string()),
        1 => Just("".to_string()),
        1 => "\\PC{0,30}",
    ]
    .boxed()
}

/// A job file: random lines, or one of the shapes the audit found trouble in.
fn fio_text() -> BoxedStrategy<String> {
    let lines = prop::collection::vec(line(), 0..40)
        .prop_map(|ls| format!("[j0]\nioengine=null\n{}\n", ls.join("\n")));
    let many = (1..5000usize, any::<bool>(), any::<bool>()).prop_map(|(n, stonewall, chain)| {
        (0..n)
            .map(|i| {
                let mut s = format!("[j{i}]\nioengine=null\nsize=4k\n");
                if stonewall {
                    s.push_str("stonewall\n");
                }
                if chain && i > 0 {
                    s.push_str(&format!("wait_for=j{}\n", i - 1));
                }
                s
            })
            .collect::<String>()
    });
    let deep = (0..40_000usize).prop_map(|n| {
        format!(
            "[j]\nioengine=null\nbs={}4096{}\n",
            "(".repeat(n),
            ")".repeat(n)
        )
    });
    prop_oneof![8 => lines, 1 => many, 1 => deep].boxed()
}

/// A case's files written into `dir`: the job file, an included one, a FIFO, a
/// directory and the secret. Returns the job file.
fn write_case(dir: &Path, main: &str, other: &str) -> PathBuf {
    let fill = |text: &str, me: &Path| {
        text.replace("@FIFO", dir.join("fifo").to_str().unwrap())
            .replace("@SELF", me.to_str().unwrap())
            .replace("@OTHER", dir.join("other.fio").to_str().unwrap())
            .replace("@DIR", dir.join("W").to_str().unwrap())
            .replace("@SECRET", dir.join("secret.txt").to_str().unwrap())
    };
    mkfifo(&dir.join("fifo"));
    std::fs::create_dir(dir.join("W")).unwrap();
    std::fs::write(
        dir.join("secret.txt"),
        format!(
            "rw={SECRET}\n{SECRET}=1\n{SECRET}\nbs=4k{SECRET}\nnrfiles=7{SECRET}\nname=a/{SECRET}\n[{SECRET}]\nfilename=${{{SECRET}}}\nsize=({SECRET})\n"
        ),
    )
    .unwrap();
    let other_path = dir.join("other.fio");
    // An included file holds no sections: fio's rule, tried both ways.
    std::fs::write(&other_path, fill(other, &other_path)).unwrap();
    let main_path = dir.join("main.fio");
    std::fs::write(&main_path, fill(main, &main_path)).unwrap();
    main_path
}

/// `--set` pairs, path keys among them (refused with `--within`).
fn sets() -> BoxedStrategy<Vec<(String, Value)>> {
    prop::collection::vec(
        prop_oneof![
            Just(("bs".to_string(), json!("8k"))),
            Just(("iodepth".to_string(), json!(4))),
            Just(("numjobs".to_string(), json!(2000))),
            Just(("filename".to_string(), json!("/abs/victim"))),
            Just(("directory".to_string(), json!("/elsewhere"))),
            Just(("verify_state".to_string(), json!("/elsewhere/state"))),
            Just(("kind".to_string(), json!("files"))),
            Just(("nonsense".to_string(), json!(true))),
        ],
        0..3,
    )
    .boxed()
}

fn env(dir: &Path) -> impl Fn(&str) -> Option<String> {
    let dir = dir.display().to_string();
    move |var: &str| match var {
        "X" => Some("4k".into()),
        "NL" => Some("4k\n[evil]\u{1b}".into()),
        "EMPTY" => Some(String::new()),
        "DIR" => Some(dir.clone()),
        _ => None,
    }
}

/// What every problem must be: said, short, free of control characters, and never
/// showing the secret an include read.
fn check_problem(p: &fio::Problem) {
    assert!(!p.message.is_empty(), "{p:?}");
    assert!(p.message.chars().count() <= 401, "{p:?}");
    let fields = [
        Some(&p.place),
        p.section.as_ref(),
        p.option.as_ref(),
        Some(&p.message),
        p.hint.as_ref(),
    ];
    for f in fields.into_iter().flatten() {
        assert!(
            !f.chars().any(char::is_control),
            "a control character: {p:?}"
        );
    }
    for f in [
        p.section.as_ref(),
        p.option.as_ref(),
        Some(&p.message),
        p.hint.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        assert!(!f.contains(SECRET), "an included secret shown: {p:?}");
    }
}

fn other_text() -> BoxedStrategy<String> {
    prop::collection::vec(line(), 0..10)
        .prop_map(|ls| ls.join("\n"))
        .boxed()
}

proptest! {
    #![proptest_config(config(24))]

    /// `fio::load` on any structured file: a plan or problems, soon, nothing written;
    /// a confined plan's files all in DIR.
    #[test]
    fn fio_files_load_or_say_why(
        main in fio_text(),
        other in other_text(),
        confined in any::<bool>(),
        set in sets(),
    ) {
        let dir = scratch();
        let path = write_case(dir.path(), &main, &other);
        let ov = Overrides {
            set,
            within: confined.then(|| dir.path().join("W")),
        };
        let before = listing(dir.path());
        let started = Instant::now();
        let answer = fio::load(&[path], &env(dir.path()), &ov);
        prop_assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
        match answer {
            Ok(plan) => {
                let _ = fio::describe(&plan);
                serde_json::to_string(&plan).unwrap();
                let clones: u64 = plan.jobs.iter().map(|j| u64::from(j.job.numjobs)).sum();
                prop_assert!(clones <= fio::MAX_CLONES);
                if let Some(w) = &ov.within {
                    for j in &plan.jobs {
                        prop_assert_eq!(j.job.beneath.as_ref(), Some(w));
                        for t in 0..j.job.numjobs {
                            if let Some(p) = j.job.path_for(t) {
                                prop_assert_eq!(p.parent(), Some(w.as_path()), "{:?}", p);
                            }
                        }
                    }
                }
            }
            Err(problems) => {
                prop_assert!(!problems.is_empty());
                problems.iter().for_each(check_problem);
            }
        }
        prop_assert_eq!(listing(dir.path()), before, "check writes nothing");
    }

    /// The value parsers on any text: a value or a message, never a panic.
    #[test]
    fn fio_values_parse_or_say_why(text in prop_oneof![number(), expression(), variable(), "\\PC{0,60}"]) {
        use fio::value::{self, KbBase};
        let _ = value::size(&text, KbBase::Binary);
        let _ = value::size(&text, KbBase::Decimal);
        let _ = value::time_s(&text);
        let _ = value::int(&text);
        let _ = value::boolean(Some(&text));
        let _ = value::expression(&text);
    }
}

// ---- engine jobs (TOML and JSON) ----

fn job_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<bool>().prop_map(Value::from),
        prop_oneof![
            Just("1E"),
            Just("16E"),
            Just("4k"),
            Just("-1"),
            Just(""),
            Just("2s"),
            Just("1e400"),
            Just("/abs/x"),
            Just("../x"),
            Just("randrw"),
            Just("io_uring"),
            Just("null"),
            Just("files"),
            Just("oltp"),
            Just("iops:5%"),
            Just("0640"),
            Just("lognormal"),
        ]
        .prop_map(Value::from),
        "\\PC{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

fn job_key() -> BoxedStrategy<String> {
    let known = fslab_engine::spec::known_keys();
    prop_oneof![8 => prop::sample::select(known), 1 => "[a-z_]{1,16}"].boxed()
}

fn job_document() -> BoxedStrategy<Value> {
    prop::collection::btree_map(job_key(), job_value(), 0..16)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
        .boxed()
}

/// The document as TOML: what `toml` makes of it, or (a value TOML cannot hold) JSON.
fn as_text(doc: &Value, toml: bool) -> String {
    if toml {
        if let Ok(t) = toml::to_string(doc) {
            return t;
        }
    }
    doc.to_string()
}

proptest! {
    #![proptest_config(config(64))]

    /// `spec::load` on any job, TOML or JSON: a job or errors, never a panic; a job
    /// that resolves serializes and names its path without touching it.
    #[test]
    fn engine_jobs_resolve_or_say_why(doc in job_document(), toml in any::<bool>()) {
        let text = as_text(&doc, toml);
        let started = Instant::now();
        match fslab_engine::spec::load(&text) {
            Ok((spec, job)) => {
                let _ = spec.warnings(&job);
                serde_json::to_string(&job).unwrap();
                let _ = job.path_for(0);
            }
            Err(errors) => prop_assert!(!errors.0.is_empty()),
        }
        prop_assert!(started.elapsed() < BOUND);
    }
}

// ---- the command line, bounded ----

/// `fslab-engine ARGS` in `dir` under an address-space limit, killed past `BOUND`:
/// its exit code (`None`: killed by a signal).
fn check_bounded(dir: &Path, args: &[&str]) -> Option<i32> {
    let mut cmd = Command::new(cargo_bin("fslab-engine"));
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // setrlimit, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fslab-engine {args:?} ran past {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

proptest! {
    #![proptest_config(scaled(6, 20))]

    /// The built binary's `check` on a structured file, confined or not, under 1 GiB of
    /// address space: exit 0 or 2, and nothing new in the directory.
    #[test]
    fn check_exits_0_or_2_and_writes_nothing(
        main in fio_text(),
        other in other_text(),
        within in any::<bool>(),
        json in any::<bool>(),
    ) {
        let dir = scratch();
        let path = write_case(dir.path(), &main, &other);
        let before = listing(dir.path());
        let w = dir.path().join("W");
        let mut args = vec!["check", "--fio", path.to_str().unwrap()];
        if within {
            args.extend(["--within", w.to_str().unwrap()]);
        }
        if json {
            args.extend(["--format", "json"]);
        }
        let code = check_bounded(dir.path(), &args);
        prop_assert!(matches!(code, Some(0) | Some(2)), "exit {:?}", code);
        prop_assert_eq!(listing(dir.path()), before);
    }

    /// The same for an engine job file.
    #[test]
    fn check_of_a_job_file_exits_0_or_2(doc in job_document(), toml in any::<bool>()) {
        let dir = scratch();
        let path = dir.path().join(if toml { "job.toml" } else { "job.json" });
        std::fs::write(&path, as_text(&doc, toml)).unwrap();
        let before = listing(dir.path());
        let code = check_bounded(dir.path(), &["check", path.to_str().unwrap()]);
        prop_assert!(matches!(code, Some(0) | Some(2)), "exit {:?}", code);
        prop_assert_eq!(listing(dir.path()), before);
    }
}
