//! fio job files as a user meets them: `check` prints the phase graph, `run` runs it,
//! problems are all told at once with `file:line [section] option` and exit 2 before any
//! I/O. Where fio is installed, the same fixtures go through `fio --parse-only` and
//! `fio --showcmd` and the options they resolve to are compared.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fio")
        .join(name)
}

/// `fslab-engine ARGS` with `FIO_DIR=dir`: (exit code, stdout, stderr).
fn engine(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(cargo_bin("fslab-engine"))
        .args(args)
        .env("FIO_DIR", dir)
        .env_remove("FIO_UNDEFINED_DIR")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fslab-fio-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn run(dir: &Path, file: &str) -> Value {
    let f = fixture(file);
    let (code, out, err) = engine(dir, &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn job<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

fn ios(job: &Value, op: &str) -> u64 {
    job["report"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["op"] == op)
        .map_or(0, |r| r["ios"].as_u64().unwrap())
}

fn span(job: &Value) -> (f64, f64) {
    let r = &job["report"];
    let start = r["start_unix_s"].as_f64().unwrap() + r["ramp_s"].as_f64().unwrap();
    (start, start + r["runtime_s"].as_f64().unwrap())
}

#[test]
fn a_stonewall_runs_the_second_phase_after_the_first() {
    let dir = scratch();
    let check = fixture("two-phase.fio");
    let (code, out, err) = engine(dir.path(), &["check", check.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("2 jobs, 2 phases, 2 reporting groups"),
        "{out}"
    );
    assert!(
        out.contains("phase 2: starts when every job above has ended (stonewall)"),
        "{out}"
    );
    assert!(out.contains("[random-read] "), "{out}");
    assert!(
        out.contains("bs=65536") && out.contains("bs=4096"),
        "globals, then the job's own: {out}"
    );
    let r = run(dir.path(), "two-phase.fio");
    assert_eq!(r["status"], "ok");
    let (write, read) = (job(&r, "lay-down"), job(&r, "random-read"));
    assert_eq!(ios(write, "write"), 256, "16m in 64k blocks");
    assert_eq!(ios(read, "read"), 2048, "io_size=8m in 4k blocks");
    assert!(
        span(read).0 >= span(write).1,
        "the reads started after the writes ended"
    );
    assert_eq!(
        (read["phase"].as_u64(), read["group"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(read["after"], serde_json::json!(["lay-down"]));
    assert_eq!(
        read["report"]["job"]["filename"],
        dir.path().join("two-phase.dat").to_str().unwrap()
    );
}

#[test]
fn group_reporting_adds_the_clones_of_a_group_into_one_result() {
    let dir = scratch();
    let r = run(dir.path(), "mixed-group.fio");
    let mix = job(&r, "mix");
    assert_eq!(mix["report"]["job"]["numjobs"], 4);
    assert_eq!(
        mix["report"]["job"]["ioengine"], "io_uring",
        "libaio runs on io_uring"
    );
    assert!(mix["notes"].to_string().contains("libaio runs on io_uring"));
    let (group,) = (&r["groups"][0],);
    assert_eq!(group["jobs"], serde_json::json!(["mix"]));
    let read = group["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "read")
        .unwrap();
    assert_eq!(read["ios"].as_u64().unwrap(), ios(mix, "read"));
    let (reads, writes) = (ios(mix, "read") as f64, ios(mix, "write") as f64);
    let share = reads / (reads + writes);
    assert!((share - 0.7).abs() < 0.02, "rwmixread=70: {share}");
    for clone in 0..4 {
        assert!(
            dir.path().join(format!("mix.{clone}.0")).exists(),
            "fio's file names"
        );
    }
}

#[test]
fn jobs_of_a_phase_run_together_and_wait_for_waits_for_one_job() {
    let dir = scratch();
    let r = run(dir.path(), "timed-multi.fio");
    let (reader, scanner, writer, after) = (
        job(&r, "reader"),
        job(&r, "scanner"),
        job(&r, "writer"),
        job(&r, "after-writer"),
    );
    for j in [reader, scanner, writer] {
        assert!((span(j).0 - span(reader).0).abs() < 0.5, "started together");
        assert!((j["report"]["runtime_s"].as_f64().unwrap() - 2.0).abs() < 0.2);
    }
    assert!(span(after).0 >= span(writer).1 - 1e-3, "after the writer");
    assert_eq!(
        (writer["group"].as_u64(), after["group"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(after["phase"], 0);
    assert!(
        r["groups"].as_array().unwrap().is_empty(),
        "no group_reporting"
    );
    assert_eq!(r["inert"][0]["option"], "thread");
}

#[test]
fn every_problem_is_told_at_once_and_nothing_runs() {
    let dir = scratch();
    let f = fixture("unsupported.fio");
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    let want = [
        (
            "unsupported.fio:4 [global] threads",
            "did you mean `thread`?",
        ),
        ("unsupported.fio:7 [bad] rw", "offset modifier"),
        ("unsupported.fio:8 [bad] bs", "ranges are not supported"),
        ("unsupported.fio:9 [bad] zonemode", "is not supported"),
        ("unsupported.fio:10 [bad] rate_iops", "rate limits"),
        ("unsupported.fio:11 [bad] size", "percent"),
        (
            "unsupported.fio:12 [bad] filename",
            "`${FIO_UNDEFINED_DIR}` is not defined",
        ),
        ("unsupported.fio:13 [bad] wait_for", "no job named `nobody`"),
    ];
    assert_eq!(lines.len(), want.len(), "{err}");
    for ((place, words), line) in want.iter().zip(&lines) {
        assert!(line.contains(place), "{line} should name {place}");
        assert!(err.contains(words), "{words} missing: {err}");
    }
    assert!(err.contains("8 problems in the job file; nothing was run"));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing made"
    );
    let (code, out, _) = engine(
        dir.path(),
        &["check", "--format", "json", f.to_str().unwrap()],
    );
    assert_eq!(code, 2);
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["problems"].as_array().unwrap().len(), 8);
}

#[test]
fn a_set_overrides_every_job_and_a_later_file_is_a_stonewall() {
    let dir = scratch();
    let (a, b) = (fixture("two-phase.fio"), fixture("mixed-group.fio"));
    let (code, out, err) = engine(
        dir.path(),
        &[
            "check",
            "--format",
            "json",
            "--set",
            "bs=8k",
            "--set",
            "numjobs=2",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    let jobs = plan["plan"]["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    assert!(jobs
        .iter()
        .all(|j| j["job"]["bs"] == 8192 && j["job"]["numjobs"] == 2));
    assert_eq!(jobs[2]["phase"], 2, "the second file starts a phase");
    assert_eq!(jobs[2]["after"].as_array().unwrap().len(), 2);
    // each file has its own globals: the second file's job gets none of the first's
    assert_eq!(jobs[2]["job"]["ioengine"], "io_uring");
}

fn fio() -> Option<&'static str> {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: fio is not installed");
    }
    ok.then_some("fio")
}

/// `fio --showcmd FILE`: per job (by `--name`), its options as fio resolved them.
fn showcmd(file: &Path, dir: &Path) -> Vec<(String, Vec<(String, String)>)> {
    let out = Command::new("fio")
        .arg("--showcmd")
        .arg(file)
        .env("FIO_DIR", dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut globals = Vec::new();
    let mut jobs: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for tok in text.split_whitespace().skip(1) {
        let Some(opt) = tok.strip_prefix("--") else {
            continue;
        };
        let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
        if k == "name" {
            jobs.push((v.to_string(), globals.clone()));
        } else if let Some(j) = jobs.last_mut() {
            j.1.push((k.to_string(), v.to_string()));
        } else {
            globals.push((k.to_string(), v.to_string()));
        }
    }
    jobs
}

#[test]
fn the_fixtures_resolve_as_fio_resolves_them() {
    let Some(fio) = fio() else { return };
    let dir = scratch();
    for name in ["two-phase.fio", "mixed-group.fio", "timed-multi.fio"] {
        let f = fixture(name);
        let parsed = Command::new(fio)
            .arg("--parse-only")
            .arg(&f)
            .env("FIO_DIR", dir.path())
            .output()
            .unwrap();
        assert!(
            parsed.status.success(),
            "fio refuses {name}: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
        let (code, out, err) = engine(
            dir.path(),
            &["check", "--format", "json", f.to_str().unwrap()],
        );
        assert_eq!(code, 0, "{err}");
        let plan: Value = serde_json::from_str(&out).unwrap();
        let ours = plan["plan"]["jobs"].as_array().unwrap();
        let theirs = showcmd(&f, dir.path());
        assert_eq!(ours.len(), theirs.len(), "{name}: the same jobs");
        for (mine, (fname, opts)) in ours.iter().zip(&theirs) {
            assert_eq!(&mine["name"], fname.as_str());
            let job = &mine["job"];
            // globals first, then the job's own: the last value of a key is fio's
            let last: std::collections::BTreeMap<&String, &String> =
                opts.iter().map(|(k, v)| (k, v)).collect();
            for (k, v) in last {
                let size = |v: &str| {
                    fslab_engine::fio::value::size(v, fslab_engine::fio::value::KbBase::Binary)
                        .unwrap()
                };
                match k.as_str() {
                    "bs" | "size" | "io_size" => {
                        assert_eq!(job[k.as_str()], size(v), "{name} [{fname}] {k}")
                    }
                    "iodepth" | "numjobs" | "rwmixread" | "fsync" => {
                        assert_eq!(job[k.as_str()].to_string(), *v, "{name} [{fname}] {k}")
                    }
                    "rw" => {
                        let want = if v == "rw" { "readwrite" } else { v.as_str() };
                        assert_eq!(job["rw"], want, "{name} [{fname}] rw");
                    }
                    "runtime" => {
                        let t = fslab_engine::fio::value::time_s(v).unwrap();
                        assert_eq!(job["runtime"].as_f64(), Some(t), "{name} [{fname}] runtime");
                    }
                    "direct" => assert_eq!(job["direct"], v == "1", "{name} [{fname}] direct"),
                    "filename" => assert_eq!(job["filename"], v.as_str(), "{name} [{fname}]"),
                    "directory" => assert_eq!(job["directory"], v.as_str(), "{name} [{fname}]"),
                    _ => {}
                }
            }
        }
    }
    // fio refuses a bogus option too (with its own words); both exit non-zero
    let bad = dir.path().join("bogus.fio");
    std::fs::write(&bad, "[j]\nrw=read\nbogus_opt=1\n").unwrap();
    let parsed = Command::new(fio)
        .arg("--parse-only")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!parsed.status.success());
    let (code, _, err) = engine(dir.path(), &["check", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bogus.fio:3 [j] bogus_opt: is not an option fslab-engine knows"),
        "{err}"
    );
}
