//! fio job files as a user meets them: `check` prints the phase graph, `run` runs it,
//! problems are all told at once with `file:line [section] option` and exit 2 before any
//! I/O. Where fio is installed, the same fixtures go through `fio --parse-only` and
//! `fio --showcmd` and the options they resolve to are compared.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

mod common;
use common::{engine_bounded, mkfifo, result, run_job};

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

/// Writes `text` as the job file `name` in `dir` and returns its path and the plan
/// `check --format json` prints (the file must be accepted).
fn planned(dir: &Path, name: &str, text: &str) -> (PathBuf, Value) {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    let (code, out, err) = engine(dir, &["check", "--format", "json", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    (f, serde_json::from_str(&out).unwrap())
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
    // The wait is the phase's (every job of phase 0 ends first), not a list.
    assert_eq!(read["after"], serde_json::json!([]));
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
        // A time-based job runs its 2 s, and ends late by no more than a loaded machine
        // (CI beside other work) delays a thread's last check of the clock.
        let runtime_s = j["report"]["runtime_s"].as_f64().unwrap();
        assert!((1.95..2.75).contains(&runtime_s), "runtime_s {runtime_s}");
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
        ("unsupported.fio:4 [global] thred", "did you mean `thread`?"),
        ("unsupported.fio:7 [bad] rw", "trim followed by a write"),
        ("unsupported.fio:8 [bad] bssplit", "add up to 120"),
        (
            "unsupported.fio:9 [bad] zonemode",
            "needs a zoned block device",
        ),
        (
            "unsupported.fio:10 [bad] rate_process",
            "not a rate process",
        ),
        (
            "unsupported.fio:11 [bad] size",
            "arithmetic needs parentheses",
        ),
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
    // The wait for the phases before is said by `phase`, not by listing every job.
    assert!(jobs[2]["after"].as_array().unwrap().is_empty());
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
    for name in [
        "two-phase.fio",
        "mixed-group.fio",
        "timed-multi.fio",
        "workload.fio",
        "files-and-verify.fio",
    ] {
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
                    // With `nrfiles`, fio's `size` is the clone's over all its files.
                    "size" if !job["nrfiles"].is_null() => {
                        let files = job["nrfiles"].as_u64().unwrap();
                        assert_eq!(
                            job["size"].as_u64().unwrap() * files,
                            size(v),
                            "{name} [{fname}] size"
                        );
                        assert_eq!(job["io_size"], size(v), "{name} [{fname}] every file once");
                    }
                    "bs" | "size" | "io_size" => {
                        assert_eq!(job[k.as_str()], size(v), "{name} [{fname}] {k}")
                    }
                    "nrfiles" | "verify_backlog" | "fdatasync" => {
                        assert_eq!(job[k.as_str()].to_string(), *v, "{name} [{fname}] {k}")
                    }
                    "file_service_type" => {
                        assert_eq!(job[k.as_str()], v.as_str(), "{name} [{fname}] {k}")
                    }
                    "ioengine" if v == "mmap" => assert_eq!(job["ioengine"], "mmap"),
                    "verify" => {
                        assert_eq!(job["verify"], true, "{name} [{fname}] verify");
                        assert_eq!(
                            job["verify_read_back"], true,
                            "{name} [{fname}] fio's verify phase"
                        );
                    }
                    // fio's per-direction rates set a mixed job's mix (options.rs, `Rates`).
                    "rwmixread" if !job["rate_iops"].is_null() || !job["rate"].is_null() => {
                        assert_eq!(job["rwmixread"], 50, "{name} [{fname}] equal rates")
                    }
                    "iodepth" | "numjobs" | "rwmixread" | "fsync" => {
                        assert_eq!(job[k.as_str()].to_string(), *v, "{name} [{fname}] {k}")
                    }
                    "rw" => {
                        let (rw, modifier) = v.split_once(':').unwrap_or((v, ""));
                        let want = if rw == "rw" { "readwrite" } else { rw };
                        assert_eq!(job["rw"], want, "{name} [{fname}] rw");
                        if !modifier.is_empty() {
                            assert_eq!(job["seq_skip"], size(modifier), "{name} [{fname}] rw");
                        }
                    }
                    "offset" => assert_eq!(job["offset"], size(v), "{name} [{fname}] {k}"),
                    "bssplit" => {
                        let parse = |t: &str| fslab_engine::block::sizes::parse_split(t).unwrap();
                        let ours = parse(job["bssplit"].as_str().unwrap());
                        assert_eq!(ours, parse(v), "{name} [{fname}] bssplit");
                    }
                    "random_distribution" | "rate_process" => {
                        assert_eq!(job[k.as_str()], v.as_str(), "{name} [{fname}] {k}")
                    }
                    "buffer_compress_percentage" | "dedupe_percentage" | "thinktime_blocks" => {
                        assert_eq!(job[k.as_str()].to_string(), *v, "{name} [{fname}] {k}")
                    }
                    "thinktime" => {
                        let t = fslab_engine::fio::value::time_us(v).unwrap();
                        assert_eq!(job["thinktime"].as_f64(), Some(t), "{name} [{fname}] {k}");
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

// Hostile job files (audit-reliability-2: N2, N3, N7, N8, N9, N10, N12): each attack as
// reported, now refused with exit 2 before any I/O, and nothing outside touched.

/// `path`'s bytes, for "unchanged" checks.
fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// A scratch dir holding `victim.dat` ("precious") and an empty `W`.
fn victim_and_within() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = scratch();
    let victim = dir.path().join("victim.dat");
    std::fs::write(&victim, b"precious").unwrap();
    let within = dir.path().join("W");
    std::fs::create_dir(&within).unwrap();
    (dir, victim, within)
}

fn write_job(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const WRITER: &str = "[j]\nioengine=psync\nrw=write\nsize=64k\nbs=4k\n";

#[test]
fn within_never_writes_through_a_link_planted_in_the_directory() {
    // N2: `ln -s ../victim.dat W/victim.dat` with `filename=/anything/victim.dat`, and
    // `ln -s ../victim.dat W/j.0.0` with `directory=..`, overwrote the victim as root.
    let cases = [
        ("filename=/anything/victim.dat\n", "victim.dat"),
        ("directory=..\n", "j.0.0"),
    ];
    for (option, planted) in cases {
        let (dir, victim, within) = victim_and_within();
        std::os::unix::fs::symlink("../victim.dat", within.join(planted)).unwrap();
        let job = write_job(dir.path(), "p.fio", &format!("{WRITER}{option}"));
        let (code, out, err) = engine(
            dir.path(),
            &[
                "run",
                job.to_str().unwrap(),
                "--within",
                within.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 2, "{option}: {err}");
        assert!(out.is_empty());
        assert!(
            err.contains("p.fio:1 [j]")
                && err.contains("is a symbolic link, and --within never follows links")
                && err.contains("  hint: "),
            "{err}"
        );
        assert_eq!(
            bytes(&victim),
            b"precious",
            "{option}: the victim is untouched"
        );
    }
    // A hard link is another name for a file outside: refused too.
    let (dir, victim, within) = victim_and_within();
    std::fs::hard_link(&victim, within.join("victim.dat")).unwrap();
    let job = write_job(
        dir.path(),
        "p.fio",
        &format!("{WRITER}filename=victim.dat\n"),
    );
    let (code, _, err) = engine(
        dir.path(),
        &[
            "run",
            job.to_str().unwrap(),
            "--within",
            within.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has 2 hard links"), "{err}");
    assert_eq!(bytes(&victim), b"precious");
    // A plain job still follows links, as fio does (`/dev/disk/by-id/...`).
    let (dir, victim, _) = victim_and_within();
    let link = dir.path().join("link.dat");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let job = write_job(
        dir.path(),
        "p.fio",
        &format!("{WRITER}filename={}\n", link.display()),
    );
    let (code, _, err) = engine(dir.path(), &["run", job.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(bytes(&victim).len(), 64 << 10);
}

#[test]
fn within_lays_its_files_out_in_the_directory() {
    let (dir, victim, within) = victim_and_within();
    let job = write_job(
        dir.path(),
        "p.fio",
        &format!("{WRITER}filename=/anything/x.dat\n[k]\nioengine=psync\nrw=randread\nsize=64k\ndirectory=../..\n"),
    );
    let (code, out, err) = engine(
        dir.path(),
        &[
            "run",
            job.to_str().unwrap(),
            "--within",
            within.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["status"], "ok");
    let mut made: Vec<String> = std::fs::read_dir(&within)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    assert_eq!(made, ["k.0.0", "x.dat"]);
    assert_eq!(bytes(&victim), b"precious");
}

#[test]
fn a_link_planted_after_the_plan_is_not_followed_either() {
    // The run checks every name before any job starts; a link made after that check
    // (a race) meets the open itself, which follows no link.
    let (dir, victim, within) = victim_and_within();
    let job = write_job(
        dir.path(),
        "p.fio",
        &format!("{WRITER}filename=victim.dat\n"),
    );
    let overrides = fslab_engine::fio::Overrides {
        set: Vec::new(),
        within: Some(within.clone()),
    };
    let plan = fslab_engine::fio::load(&[job], &|_| None, &overrides).unwrap();
    assert!(fslab_engine::fio::preflight(&plan).is_empty());
    std::os::unix::fs::symlink(&victim, within.join("victim.dat")).unwrap();
    let flags = fslab_engine::harness::Flags::new();
    let e = fslab_engine::run(plan.jobs[0].job.clone(), Vec::new(), &flags, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("is a symbolic link"), "{e}");
    assert_eq!(bytes(&victim), b"precious");
}

#[test]
fn set_cannot_move_a_file_out_of_within() {
    // N10: `--set filename=$PWD/victim.dat` after `--within` wrote the victim.
    let (dir, victim, within) = victim_and_within();
    let job = write_job(dir.path(), "p.fio", &format!("{WRITER}directory=..\n"));
    let elsewhere = dir.path().join("X");
    std::fs::create_dir(&elsewhere).unwrap();
    let sets = [
        format!("filename={}", victim.display()),
        format!("directory={}", elsewhere.display()),
        format!("verify_state={}", victim.display()),
        "kind=oltp".to_string(),
    ];
    for set in &sets {
        let (code, out, err) = engine(
            dir.path(),
            &[
                "run",
                job.to_str().unwrap(),
                "--within",
                within.to_str().unwrap(),
                "--set",
                set,
            ],
        );
        assert_eq!(code, 2, "{set}: {err}");
        assert!(out.is_empty());
        assert!(
            err.starts_with("error: --set: `") && err.contains("cannot be set with --within"),
            "{err}"
        );
        assert!(err.contains("\n  hint: "), "{err}");
    }
    assert_eq!(bytes(&victim), b"precious");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&within).unwrap().count(), 0);
}

#[test]
fn devices_and_fifos_are_refused_as_job_files_and_includes_at_once() {
    // N3: `check --fio /dev/zero` grew to 8 GB; `include /dev/zero` likewise; `include
    // FIFO` blocked forever.
    let dir = scratch();
    mkfifo(&dir.path().join("fifo"));
    for target in ["/dev/zero", "/dev/urandom", "fifo"] {
        let job = write_job(
            dir.path(),
            "i.fio",
            &format!("[j]\nrw=read\ninclude {target}\n"),
        );
        let (code, err) = engine_bounded(
            dir.path(),
            &["check", job.to_str().unwrap()],
            Stdio::null(),
            10,
        );
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("i.fio:3 include: `"), "{err}");
        assert!(
            err.contains("not a job file") && err.contains("  hint: "),
            "{err}"
        );
    }
    for file in ["/dev/zero", "fifo"] {
        let (code, err) = engine_bounded(dir.path(), &["check", "--fio", file], Stdio::null(), 10);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("error: {file}: cannot read the job file: it is a")),
            "{err}"
        );
    }
    // A regular file past the cap.
    let big = dir.path().join("big.fio");
    let mut text = String::from("[j]\nrw=read\n");
    text.push_str(&"; filler\n".repeat((5 << 20) / 9));
    std::fs::write(&big, text).unwrap();
    let (code, err) = engine_bounded(
        dir.path(),
        &["check", big.to_str().unwrap()],
        Stdio::null(),
        10,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is larger than 4 MiB"), "{err}");
}

#[test]
fn a_nul_byte_or_an_included_secret_is_not_echoed() {
    // N9: `include /proc/self/environ` printed `SHELL: is not an option`; `include
    // secret.txt` printed `rw: SECRETVALUE123`.
    let dir = scratch();
    std::fs::write(
        dir.path().join("secret.txt"),
        "rw=SECRETVALUE123\nPASSWORD=hunter2secret\nhunter3secret\n",
    )
    .unwrap();
    let job = write_job(
        dir.path(),
        "s.fio",
        "[j]\nioengine=null\ninclude secret.txt\ninclude /proc/self/environ\n",
    );
    let (code, _, err) = Command::new(cargo_bin("fslab-engine"))
        .args(["check", job.to_str().unwrap()])
        .env("FSLAB_TEST_SECRET", "ENVSECRET42")
        .output()
        .map(|o| {
            (
                o.status.code().unwrap_or(-1),
                o.stdout,
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        })
        .unwrap();
    assert_eq!(code, 2, "{err}");
    for secret in [
        "SECRETVALUE123",
        "PASSWORD",
        "hunter2",
        "hunter3",
        "ENVSECRET42",
        "FSLAB_TEST_SECRET",
    ] {
        assert!(!err.contains(secret), "{secret} shown: {err}");
    }
    assert!(
        err.contains("secret.txt:1 [j] rw: `…` is not a direction"),
        "{err}"
    );
    assert!(err.contains("secret.txt:2 [j]: is not an option"), "{err}");
    assert!(
        err.contains("s.fio:4 include: `/proc/self/environ` holds a NUL byte at offset"),
        "{err}"
    );
    // The user's own file keeps its message, escaped and cut short.
    let job = write_job(
        dir.path(),
        "own.fio",
        &format!(
            "[j]\nioengine=null\nrw=\x1b]0:TITLE\x07{}\n",
            "y".repeat(200)
        ),
    );
    let (code, _, err) = engine(dir.path(), &["check", job.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        !err.contains('\x1b') && err.contains("\\x1b]0:TITLE\\x07"),
        "{err}"
    );
    assert!(err.contains('…') && !err.contains(&"y".repeat(41)), "{err}");
    // A file that is not text at all.
    let job = write_job(dir.path(), "nul.fio", "[j]\nrw=read\0\n");
    let (code, _, err) = engine(dir.path(), &["check", job.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("nul.fio: cannot read the job file: it holds a NUL byte at offset 11"),
        "{err}"
    );
}

#[test]
fn stonewalls_are_linear_and_sections_are_capped() {
    // N7: 4000 `stonewall`s took over 20 s and 520 MB; 10,000 with `wait_for` 3.1 GB.
    let dir = scratch();
    let text: String = (0..4000)
        .map(|i| format!("[j{i}]\nioengine=null\nsize=4k\nstonewall\n"))
        .collect();
    let job = write_job(dir.path(), "sw.fio", &text);
    // Killed at 20 s, which the quadratic graph took: a hang detector, not a timing.
    let (code, err) = engine_bounded(
        dir.path(),
        &["check", job.to_str().unwrap()],
        Stdio::null(),
        20,
    );
    assert_eq!(code, 0, "{err}");
    let text: String = (0..10_000)
        .map(|i| format!("[j{i}]\nioengine=null\nwait_for=j{}\n", i.max(1) - 1))
        .collect();
    let job = write_job(dir.path(), "many.fio", &text);
    let (code, err) = engine_bounded(
        dir.path(),
        &["check", job.to_str().unwrap()],
        Stdio::null(),
        20,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("many.fio:12289: a section past the 4096th: fslab-engine reads at most 4096"),
        "{err}"
    );
}

#[test]
fn deep_expressions_and_odd_arithmetic_are_located_problems() {
    // N8: 30,000 nested parentheses overflowed the stack (SIGABRT, exit 134). N12: the
    // messages of `(0-1)`, `(1.5)` and `${${X}}`.
    let dir = scratch();
    let deep = format!("{}4096{}", "(".repeat(30_000), ")".repeat(30_000));
    let cases = [
        (deep.as_str(), "nests deeper than 256 levels"),
        ("(0-1)", "`(0-1)` is negative"),
        ("(1.5)", "`(1.5)` is 1.5, not a whole number"),
        ("${${X}}", "a variable's name is letters, digits and `_`"),
    ];
    for (value, says) in cases {
        let job = write_job(
            dir.path(),
            "e.fio",
            &format!("[j]\nioengine=null\nbs={value}\n"),
        );
        let (code, err) = engine_bounded(
            dir.path(),
            &["check", job.to_str().unwrap()],
            Stdio::null(),
            10,
        );
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("e.fio:3 [j] bs: ") && err.contains(says),
            "{says}: {err}"
        );
        assert!(!err.contains("ranges are not supported"), "{err}");
        assert!(!err.contains("${X="), "a garbled hint: {err}");
    }
    // An environment value with a newline is shown escaped.
    let job = write_job(
        dir.path(),
        "v.fio",
        "[j]\nioengine=null\nbs=${FSLAB_TEST_BS}\n",
    );
    let out = Command::new(cargo_bin("fslab-engine"))
        .args(["check", job.to_str().unwrap()])
        .env("FSLAB_TEST_BS", "4k\n[evil]")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`4k\\x0a[evil]`"), "{err}");
}

#[test]
fn a_job_below_a_stonewall_starts_with_it_not_before() {
    // fio stops starting jobs at a stonewall until every running job has ended, then
    // starts the stonewalled job and the ones below it together. [c] used to start at
    // once, with [a].
    let dir = scratch();
    let file = write_job(
        dir.path(),
        "ph.fio",
        "[global]\nioengine=null\ntime_based\nruntime=1\n[a]\nrw=read\n[b]\nstonewall\nrw=read\n[c]\nrw=read\n",
    );
    let (code, out, err) = engine(dir.path(), &["run", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let (a, b, c) = (job(&r, "a"), job(&r, "b"), job(&r, "c"));
    assert!(span(b).0 >= span(a).1 - 1e-3, "b after a");
    assert!(span(c).0 >= span(a).1 - 1e-3, "c after a, with b");
    assert!((span(c).0 - span(b).0).abs() < 0.5, "c with b");
    assert_eq!(
        (c["phase"].as_u64(), c["group"].as_u64()),
        (Some(1), Some(1))
    );
}

#[test]
fn exitall_ends_its_group_and_exit_what_all_ends_every_job() {
    let dir = scratch();
    let r = run(dir.path(), "exitall.fio");
    assert_eq!(r["status"], "ok", "{r}");
    let runtime = |name: &str| job(&r, name)["report"]["runtime_s"].as_f64().unwrap();
    // `short` does 10 I/Os at 50 a second: 0.2 s; `long` is ended with it.
    assert!(runtime("long") < 2.0, "long ran {} s", runtime("long"));
    assert_eq!(job(&r, "long")["ended_by"], "short");
    // Another group runs its own time.
    assert!(job(&r, "other-group").get("ended_by").is_none());
    assert!(runtime("other-group") >= 1.9, "{}", runtime("other-group"));
    assert_eq!(job(&r, "with-ender")["ended_by"], "ender");
    assert!(runtime("with-ender") < 2.0);
    let never = job(&r, "never");
    assert_eq!(never["ended_by"], "ender");
    assert!(
        never["report"].is_null() && never["error"].is_null(),
        "{never}"
    );
}

#[test]
fn continue_on_error_and_ignore_error_become_the_engines_keys() {
    let dir = scratch();
    let text = "[j]\nrw=randwrite\nsize=1m\ncontinue_on_error=write\nignore_error=,ENOSPC:EDQUOT\n";
    let (_, plan) = planned(dir.path(), "c.fio", text);
    let j = &plan["plan"]["jobs"][0]["job"];
    assert_eq!(j["continue_on_error"], "write");
    assert_eq!(j["continue_errors"], serde_json::json!([28, 122]));
}

#[test]
fn the_file_engines_run_as_files_jobs_over_nrfiles_per_clone() {
    let dir = scratch();
    let text = "[global]\ndirectory=${FIO_DIR}\nfilesize=4k\nnrfiles=30\n\
                [made]\nioengine=filecreate\nnumjobs=2\n\
                [looked]\nstonewall\nioengine=filestat\nloops=3\n\
                [timed]\nstonewall\nioengine=filestat\ntime_based\nruntime=300ms\n\
                [gone]\nstonewall\nioengine=filedelete\n";
    let f = dir.path().join("files.fio");
    std::fs::write(&f, text).unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let op = |name: &str| {
        let res = &job(&r, name)["report"]["results"][0];
        (
            res["op"].as_str().unwrap().to_string(),
            res["ios"].as_u64().unwrap(),
        )
    };
    // Each clone its `nrfiles`; `filecreate`'s files stay empty, as fio's.
    assert_eq!(op("made"), ("create".into(), 60));
    assert_eq!(job(&r, "made")["report"]["results"][0]["bytes"], 0);
    // `filestat` and `filedelete` find their files made first, unmeasured; fio stats
    // the files again each loop, and a time-based job until its runtime.
    assert_eq!(op("looked"), ("stat".into(), 90));
    let (_, timed) = op("timed");
    let runtime = job(&r, "timed")["report"]["runtime_s"].as_f64().unwrap();
    assert!(
        timed > 30 && (0.3..1.0).contains(&runtime),
        "{timed} in {runtime} s"
    );
    assert_eq!(op("gone"), ("delete".into(), 30));
    assert!(dir.path().join("made.files").is_dir());
    assert!(dir.path().join("looked.files").is_dir());
    assert!(
        !dir.path().join("gone.files").exists(),
        "deleted, tree and all"
    );
}

/// Whether `dir` is on ext4 (statfs's magic), where EXT4_IOC_MOVE_EXT works.
fn on_ext4(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: an all-zero statfs is a valid value of this plain C struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` writable, both alive through the call.
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type == 0xEF53 }
}

#[test]
fn e4defrag_moves_every_range_and_keeps_the_data() {
    let dir = scratch();
    if !on_ext4(dir.path()) {
        eprintln!("skipped: {} is not on ext4", dir.path().display());
        return;
    }
    // The file is laid out and flushed first: ext4 refuses (EBUSY) to move a range whose
    // data is still dirty in the page cache, in fio and here alike.
    let text = "[global]\ndirectory=${FIO_DIR}\nsize=4m\nbs=32k\nfilename=data\n\
                [lay]\nrw=write\nbuffer_pattern=0x5a\nend_fsync=1\n\
                [whole]\nstonewall\nioengine=e4defrag\ndonorname=data.def\ndirect=1\nrw=write\n\
                [each]\nstonewall\nioengine=e4defrag\ndonorname=each.def\ninplace=1\nrw=randwrite\n";
    let f = dir.path().join("defrag.fio");
    std::fs::write(&f, text).unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    for name in ["whole", "each"] {
        let res = &job(&r, name)["report"]["results"][0];
        assert_eq!(
            (res["op"].as_str(), res["ios"].as_u64()),
            (Some("write"), Some(128)),
            "{name}"
        );
        assert_eq!(res["bytes"], 4 << 20, "{name}: every range moved whole");
    }
    // Moved, not rewritten: the data is what the layout wrote.
    let data = std::fs::read(dir.path().join("data")).unwrap();
    assert_eq!(data.len(), 4 << 20);
    assert!(data.iter().all(|&b| b == 0x5a), "the data changed");
    // The whole region was fallocated in the donor first; `inplace` truncates it after each.
    assert_eq!(
        std::fs::metadata(dir.path().join("data.def"))
            .unwrap()
            .len(),
        4 << 20
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("each.def"))
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn e4defrag_jobs_that_cannot_run_are_refused() {
    let dir = scratch();
    for (text, says) in [
        (
            "[r]\nioengine=e4defrag\ndonorname=d\nrw=read\nsize=1m\nfilename=f\n",
            "only writes",
        ),
        (
            "[n]\nioengine=e4defrag\nrw=write\nsize=1m\nfilename=f\n",
            "donorname: is required",
        ),
        (
            "[p]\nioengine=e4defrag\ndonorname=a/b\nrw=write\nsize=1m\nfilename=f\n",
            "not a plain file name",
        ),
    ] {
        let f = dir.path().join("bad.fio");
        std::fs::write(&f, text).unwrap();
        let (code, _, err) = engine(dir.path(), &["check", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(says), "{text}: {err}");
    }
}

#[test]
fn clones_verify_one_shared_file_where_fio_reports_bad_headers() {
    // e4defrag.fio's last job, scaled: fio 3.33 fails it (`bad header rand_seed`), each
    // clone checking blocks another overwrote; the engine shares the generations.
    let dir = scratch();
    let f = dir.path().join("shared.fio");
    std::fs::write(
        &f,
        "[shared]\ndirectory=${FIO_DIR}\nfilename=file1\nioengine=libaio\nverify=md5\n\
         bs=64k\niodepth=16\nsize=4m\nrw=randrw\nnumjobs=4\ntime_based\nruntime=500ms\n",
    )
    .unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let v = &job(&r, "shared")["report"]["verify"];
    for bad in ["corrupt", "misplaced", "stale", "unreadable"] {
        assert_eq!(v[bad], 0, "{bad}: {v}");
    }
    assert!(v["good"].as_u64().unwrap() > 64, "{v}");
    assert!(v["read_back_blocks"].as_u64().unwrap() >= 64, "{v}");
}

#[test]
fn exec_runs_its_program_beside_and_stops_it_at_runtime() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let script = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    };
    let polite = script(
        "polite.sh",
        "echo \"args: $*\"; trap 'echo term; exit 3' TERM; while :; do sleep 0.02; done",
    );
    let stubborn = script("stubborn.sh", "trap '' TERM; while :; do sleep 0.02; done");
    let short = script("short.sh", "echo done >&2; exit 7");
    let text = format!(
        "[global]\ndirectory=${{FIO_DIR}}\ntime_based\nruntime=500ms\nioengine=exec\n\
         [polite]\nprogram={polite}\narguments=%n  %r\n\
         [stubborn]\nstonewall\nprogram={stubborn}\ngrace_time=0\n\
         [short]\nstonewall\nprogram={short}\n"
    );
    let f = dir.path().join("exec.fio");
    std::fs::write(&f, text).unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let program = |name: &str| job(&r, name)["report"]["program"].clone();
    // %n and %r filled in (0.5 s is 0 whole seconds), split at spaces as fio does; the
    // output in <name>.stdout; SIGTERM at the runtime's end, which it handled.
    let p = program("polite");
    assert_eq!(p["argv"], serde_json::json!([polite, "polite", "0"]));
    assert_eq!(
        (p["exit_code"].as_i64(), p["stopped"].as_bool()),
        (Some(3), Some(true))
    );
    let said = std::fs::read_to_string(dir.path().join("polite.stdout")).unwrap();
    assert_eq!(said, "args: polite 0\nterm\n");
    // One that ignores SIGTERM is killed after `grace_time`.
    let s = program("stubborn");
    assert_eq!(
        (s["signal"].as_i64(), s["killed"].as_bool()),
        (Some(9), Some(true))
    );
    // One that ends first is only reported: the job runs its time, as fio's.
    let e = program("short");
    assert_eq!(
        (e["exit_code"].as_i64(), e["stopped"].as_bool()),
        (Some(7), Some(false))
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("short.stderr")).unwrap(),
        "done\n"
    );
    let runtime = job(&r, "short")["report"]["runtime_s"].as_f64().unwrap();
    assert!(runtime >= 0.5, "{runtime}");
    // A program that is not there is refused before anything is made.
    let missing = dir.path().join("missing.fio");
    std::fs::write(
        &missing,
        "[gone]\nioengine=exec\nprogram=no-such-program-here\nruntime=1\nstd_redirect=1\n",
    )
    .unwrap();
    let (code, _, err) = engine(dir.path(), &["run", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not an executable file here, nor one in PATH"),
        "{err}"
    );
    assert!(!dir.path().join("gone.stdout").exists());
}

#[test]
fn cpuio_spins_its_load_and_thinks_the_rest() {
    let dir = scratch();
    let f = dir.path().join("cpu.fio");
    std::fs::write(
        &f,
        "[burn]\nioengine=cpuio\ncpuload=25\ncpuchunks=20000\ntime_based\nruntime=1\n",
    )
    .unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let rep = &job(&r, "burn")["report"];
    // 20 ms spun, 60 ms thought: 12.5 cycles a second, a quarter of a CPU.
    let cycles = rep["results"][0]["ios"].as_u64().unwrap();
    assert!((11..=14).contains(&cycles), "{cycles} cycles");
    let cpu = rep["cpu"]["user_s"].as_f64().unwrap() + rep["cpu"]["sys_s"].as_f64().unwrap();
    // Loose: other tests run beside this one, and a spin preempted burns less.
    assert!((0.05..0.6).contains(&cpu), "{cpu} s of CPU in 1 s");
}

#[test]
fn cmdprio_becomes_per_request_priorities_on_io_uring() {
    let dir = scratch();
    let f = dir.path().join("p.fio");
    std::fs::write(
        &f,
        "[global]\ndirectory=${FIO_DIR}\nsize=4m\ndirect=1\nioengine=libaio\niodepth=8\n\
         rw=randread\nruntime=0.3\ntime_based\n\
         [pct]\nbs=64k\ncmdprio_percentage=20\ncmdprio_class=3\n\
         [split]\nstonewall\nbssplit=64k/40:128k/60\ncmdprio_bssplit=64k/25/3/1:64k/75/2/2:128k/0\n",
    )
    .unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let pct = &job(&r, "pct")["report"];
    assert_eq!(pct["status"], "ok");
    assert_eq!(
        pct["job"]["cmdprio_percentage"],
        serde_json::json!([20, 20])
    );
    assert_eq!(pct["job"]["cmdprio_class"], 3);
    assert!(ios(job(&r, "split"), "read") > 0);
    // A thread-wide engine cannot carry a priority per request.
    std::fs::write(&f, "[j]\nrw=read\nsize=1m\ncmdprio_percentage=10\n").unwrap();
    let (code, _, err) = engine(dir.path(), &["check", f.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("needs `ioengine = \"io_uring\"`"), "{err}");
}

#[test]
fn latency_target_searches_the_depth_and_ends_once_settled() {
    let dir = scratch();
    let f = dir.path().join("l.fio");
    // A target no request here misses: the search doubles to `iodepth` and settles.
    std::fs::write(
        &f,
        "[l]\ndirectory=${FIO_DIR}\nsize=4m\nrw=randread\nioengine=io_uring\niodepth=8\n\
         time_based\nruntime=30\nlatency_target=2s\nlatency_window=50ms\nlatency_percentile=99\n",
    )
    .unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let rep = &job(&r, "l")["report"];
    let t = &rep["latency_target"]["threads"][0];
    assert_eq!(t["settled"], true, "{t}");
    assert_eq!(t["depth"], 8);
    let depths: Vec<u64> = t["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["depth"].as_u64().unwrap())
        .collect();
    assert_eq!(depths[..4], [1, 2, 4, 8], "doubling: {depths:?}");
    assert!(
        rep["runtime_s"].as_f64().unwrap() < 10.0,
        "ended once settled"
    );
}

#[test]
fn flow_keeps_jobs_in_proportion_to_their_weights() {
    let dir = scratch();
    let f = dir.path().join("flow.fio");
    std::fs::write(
        &f,
        "[global]\ndirectory=${FIO_DIR}\nsize=4m\nbs=4k\ntime_based\nruntime=1\nflow_id=7\n\
         [light]\nrw=randread\nflow=1\n\
         [heavy]\nrw=randread\nflow=4\n",
    )
    .unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let (light, heavy) = (ios(job(&r, "light"), "read"), ios(job(&r, "heavy"), "read"));
    let share = heavy as f64 / (light + heavy) as f64;
    assert!((share - 0.8).abs() < 0.05, "light {light}, heavy {heavy}");
}

/// fio's verify on a writing job reads back what it wrote (`do_verify`, on by default),
/// `verify_backlog` reads back batches as it goes, and clones with regions of their own
/// (fio's cross-stripe-verify) each verify theirs: run, not only planned.
#[test]
fn verify_reads_back_as_fio_does_with_a_backlog_and_a_region_per_clone() {
    let dir = scratch();
    let text = "[global]\nfilename=${FIO_DIR}/data\nbs=16k\nverify=crc32c\n\
                [stripes]\nrw=write:112k\noffset=120k\noffset_increment=1m\nsize=1m\n\
                numjobs=3\nverify_backlog=1\nloops=2\n\
                [off]\nstonewall\nrw=randwrite\nsize=256k\ndo_verify=0\n";
    let (f, plan) = planned(dir.path(), "v.fio", text);
    let stripes = &plan["plan"]["jobs"][0]["job"];
    assert_eq!(stripes["verify_read_back"], true);
    assert_eq!(stripes["verify_backlog"], 1);
    assert!(plan["plan"]["jobs"][1]["job"]
        .get("verify_read_back")
        .is_none());
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let v = &job(&r, "stripes")["report"]["verify"];
    // Each clone writes 16k of every 128k of its own 1 MiB: 8 blocks, twice (loops=2).
    assert_eq!(v["blocks_written"], 3 * 16, "{v}");
    assert_eq!(v["read_back_blocks"], 3 * 8, "{v}");
    assert_eq!(v["good"], v["blocks_read"], "{v}");
    assert_eq!(
        v["corrupt"].as_u64().unwrap() + v["stale"].as_u64().unwrap(),
        0,
        "{v}"
    );
    // The backlog reads back each write as the next I/O, but for each clone's last
    // (its job has ended: as in fio, the verify phase reads that one).
    assert_eq!(
        ios(job(&r, "stripes"), "read"),
        3 * 15,
        "each write read back once"
    );
    assert_eq!(job(&r, "off")["report"]["verify"]["read_back_blocks"], 0);
}

/// Options real-world job files use that fio accepts quietly: flushes on a job that
/// only reads, a CPU bit mask, a placement policy with nothing to place, a share of the
/// device, `fdatasync`, names fio also knows (`nr_files`, `fileoffset`), logging knobs.
#[test]
fn what_real_job_files_say_maps_as_fio_reads_it() {
    let dir = scratch();
    let text = "[global]\nfilename=/dev/null-not-opened\nend_fsync=1\nfsync=4\n\
                cpus_allowed_policy=split\nlog_max_value=1\nbwavgtime=500\nstats=1\n\
                [reader]\nrw=randread\nsize=95%\noffset=1%\ncpumask=0x5\n\
                [writer]\nrw=write\nfsync=0\nfdatasync=8\nfsync_on_close=1\nsize=1m\nnr_files=1\nfileoffset=4k\niodepth=8192\nioengine=io_uring\n";
    let (_, plan) = planned(dir.path(), "r.fio", text);
    let reader = &plan["plan"]["jobs"][0]["job"];
    assert!(
        reader.get("end_fsync").is_none_or(|v| v == false),
        "{reader}"
    );
    assert_eq!(reader["fsync"], 0, "{reader}");
    assert_eq!(reader["cpus_allowed"], "0,2");
    assert_eq!(reader["size_percent"], 95.0);
    assert_eq!(reader["offset_percent"], 1.0);
    let writer = &plan["plan"]["jobs"][1]["job"];
    assert_eq!(writer["fdatasync"], 8, "{writer}");
    assert_eq!(writer["end_fsync"], true);
    assert_eq!(writer["offset"], 4096);
    assert_eq!(writer["iodepth"], 8192);
    assert!(writer.get("cpus_allowed_policy").is_none(), "{writer}");
}

/// Every option fio 3.33 defines is in the table: a real job file may be refused for
/// what it asks, never met with "not an option".
#[test]
fn every_option_of_fio_is_known() {
    let dir = scratch();
    let names = std::fs::read_to_string(fixture("fio-3.33-options.txt")).unwrap();
    let mut text = String::from("[j]\nfilename=x\nsize=1m\n");
    for name in names
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        text.push_str(&format!("{name}=1\n"));
    }
    let f = dir.path().join("all.fio");
    std::fs::write(&f, text).unwrap();
    let (_, _, err) = engine(dir.path(), &["check", f.to_str().unwrap()]);
    let unknown: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("is not an option fslab-engine knows"))
        .collect();
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    assert!(names.lines().count() > 200);
}

/// `nrfiles`: each clone's files, `size` split over them (or `filesize` each), every
/// file once; with `filename`, fio uses the one file it names, and so does the engine.
#[test]
fn nrfiles_gives_each_clone_its_files_as_fio_does() {
    let dir = scratch();
    let text = "[global]\ndirectory=${FIO_DIR}\nbs=64k\nrw=randread\n\
                [split]\nnrfiles=4\nsize=1m\nfile_service_type=roundrobin:2\n\
                [each]\nnrfiles=2\nfilesize=512k\nnumjobs=2\n\
                [named]\nfilename=${FIO_DIR}/one\nnrfiles=3\nsize=768k\n";
    let f = dir.path().join("n.fio");
    std::fs::write(&f, text).unwrap();
    let (code, out, err) = engine(dir.path(), &["run", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    // 1 MiB over 4 files of 256k: 16 reads; 2 clones x 2 files of 512k: 32; one file.
    assert_eq!(ios(job(&r, "split"), "read"), 16);
    assert_eq!(job(&r, "split")["report"]["job"]["size"], 256 << 10);
    assert_eq!(
        job(&r, "split")["report"]["job"]["file_service_type"],
        "roundrobin:2"
    );
    assert_eq!(ios(job(&r, "each"), "read"), 32);
    assert_eq!(ios(job(&r, "named"), "read"), 12);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".fio"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "each.0.0",
            "each.0.1",
            "each.1.0",
            "each.1.1",
            "one",
            "split.0.0",
            "split.0.1",
            "split.0.2",
            "split.0.3"
        ]
    );
}

/// The fixture runs as it resolves: every file of every clone once, the writes read
/// back clean (the backlog's batches and fio's verify phase), the mapped file's mix.
#[test]
fn the_files_and_verify_fixture_runs() {
    let dir = scratch();
    let r = run(dir.path(), "files-and-verify.fio");
    assert_eq!(
        ios(job(&r, "many"), "read"),
        256,
        "4 MiB of 16k over 4 files"
    );
    let checked = &job(&r, "checked")["report"];
    assert_eq!(ios(job(&r, "checked"), "write"), 256);
    assert_eq!(
        ios(job(&r, "checked"), "read"),
        256,
        "16 batches of 16 read back"
    );
    assert_eq!(checked["verify"]["read_back_blocks"], 256);
    assert_eq!(checked["verify"]["good"], 512, "{}", checked["verify"]);
    assert_eq!(checked["fsync"]["count"], 32, "an fdatasync every 8 writes");
    let mapped = job(&r, "mapped");
    assert_eq!(ios(mapped, "read") + ios(mapped, "write"), 256);
    assert_eq!(mapped["report"]["job"]["ioengine"], "mmap");
}

/// fio's per-request flags and ring options map onto the engine's keys of the same
/// names; where fio ignores one (`uncached` with direct I/O, `sqthread_poll_cpu` without
/// `sqthread_poll`), it is left out and the plan says so.
#[test]
fn request_flags_map_from_fios_names() {
    let dir = scratch();
    let text = "[global]\nfilename=f\nsize=1m\nioengine=io_uring\n\
                [a]\nrw=randwrite\nbs=16k\natomic=1\nnowait=1\nsqthread_poll=1\nsqthread_poll_cpu=0\nwrite_hint=long\nnice=5\n\
                [u]\nstonewall\nrw=read\nuncached=1\n\
                [d]\nstonewall\nrw=read\ndirect=1\nuncached=1\nsqthread_poll_cpu=1\n";
    let (_, plan) = planned(dir.path(), "f.fio", text);
    let jobs = plan["plan"]["jobs"].as_array().unwrap();
    let a = &jobs[0]["job"];
    for (k, v) in [
        ("atomic", serde_json::json!(true)),
        ("direct", serde_json::json!(true)),
        ("nowait", serde_json::json!(true)),
        ("sqthread_poll", serde_json::json!(true)),
        ("sqthread_poll_cpu", serde_json::json!(0)),
        ("write_hint", serde_json::json!("long")),
        ("nice", serde_json::json!(5)),
    ] {
        assert_eq!(a[k], v, "{k}: {a}");
    }
    assert_eq!(jobs[1]["job"]["uncached"], true, "{}", jobs[1]);
    let d = &jobs[2];
    assert!(d["job"].get("uncached").is_none() && d["job"].get("sqthread_poll_cpu").is_none());
    let notes = d.to_string();
    assert!(
        notes.contains("uncached applies to buffered I/O only"),
        "{d}"
    );
    assert!(
        notes.contains("sqthread_poll_cpu without sqthread_poll"),
        "{d}"
    );
}

/// fio stores each part of `size=a:b` (or `a-b`) in turn, so the last is the size; a
/// range of file sizes, which fio draws each file's size from, is refused by name.
#[test]
fn a_size_list_is_its_last_value_and_a_file_size_range_is_refused() {
    let dir = scratch();
    let (_, plan) = planned(
        dir.path(),
        "s.fio",
        "[a]\nrw=read\nbs=4k\nsize=64K:128K:256K\nfilename=x\n",
    );
    let a = &plan["plan"]["jobs"][0];
    assert_eq!(a["job"]["size"], 262144, "{a}");
    assert!(a
        .to_string()
        .contains("fio takes a list here as its last value"));
    let f = dir.path().join("r.fio");
    std::fs::write(&f, "[b]\nrw=write\nfilesize=64k-1m\nnrfiles=4\n").unwrap();
    let (code, _, err) = engine(dir.path(), &["check", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("filesize: `64k-1m`: a range of file sizes"),
        "{err}"
    );
}

fn count_lines(log: &str, action: &str) -> u64 {
    log.lines()
        .filter(|l| l.split_whitespace().nth(2) == Some(action))
        .count() as u64
}

/// fio's own `write_iolog` output replays in the engine: every read and write the trace
/// holds is issued, on the trace's file laid out under `directory`.
#[test]
fn a_trace_fio_wrote_replays_in_the_engine() {
    let Some(fio) = fio() else { return };
    let dir = scratch();
    let d = dir.path();
    std::fs::write(
        d.join("w.fio"),
        "[w]\nfilename=data\nsize=1m\nbs=4k\nrw=randrw\nioengine=psync\nwrite_iolog=trace.log\n",
    )
    .unwrap();
    let out = Command::new(fio)
        .arg("w.fio")
        .current_dir(d)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(d.join("trace.log")).unwrap();
    assert!(log.starts_with("fio version 3 iolog"), "{log:.60}");
    let (reads, writes) = (count_lines(&log, "read"), count_lines(&log, "write"));
    assert!(reads > 0 && writes > 0, "{log:.200}");
    let text = format!(
        "[r]\ndirectory={}\nread_iolog={}\nrw=randread\nbs=8k\nreplay_no_stall=1\n",
        d.join("replay").display(),
        d.join("trace.log").display()
    );
    let (_, plan) = planned(d, "r.fio", &text);
    assert!(plan
        .to_string()
        .contains("the trace says what each I/O is; rw, bs left out"));
    let (code, out, err) = engine(d, &["run", d.join("r.fio").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let j = &report["jobs"][0];
    assert_eq!((ios(j, "read"), ios(j, "write")), (reads, writes), "{j}");
    let r = &j["report"];
    assert_eq!(r["replay"]["actions"], reads + writes);
    assert_eq!(r["replay"]["timed"], false);
    assert_eq!(
        std::fs::metadata(d.join("replay").join("data"))
            .unwrap()
            .len(),
        1 << 20,
        "the trace's file, laid out as far as the trace reached"
    );
}

/// A trace of two files with syncs and a trim: each action once, in its file; the files
/// sized by the trace; syncs timed as fsyncs.
#[test]
fn a_trace_replays_each_action_on_its_own_file() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(
        d.join("t.log"),
        "fio version 2 iolog\n/data/a add\n/data/b add\n/data/a open\n/data/a write 0 8192\n\
         /data/b write 4096 4096\n/data/a read 0 4096\n/data/a sync 0 0\n/data/b datasync 0 0\n\
         /data/a trim 4096 4096\n/data/a close\n",
    )
    .unwrap();
    for ioengine in ["sync", "io_uring"] {
        let out = d.join(ioengine);
        let text = replay_job(
            &out,
            &d.join("t.log"),
            &format!("ioengine = \"{ioengine}\"\n"),
        );
        let r = run_job(&text);
        assert_eq!(r["status"], "ok", "{r}");
        let n = |op: &str| result(&r, op)["ios"].as_u64().unwrap();
        assert_eq!(
            (n("read"), n("write"), n("trim")),
            (1, 2, 1),
            "{ioengine}: {r}"
        );
        assert_eq!(r["fsync"]["count"], 2, "{r}");
        assert_eq!(r["replay"]["actions"], 6);
        // Six actions take far under a second: the advice is about the trace, since
        // a replay's length is not `runtime`'s to give.
        let short = r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["kind"] == "short_run")
            .expect("a short_run warning");
        let hint = short["hint"].as_str().unwrap();
        assert!(hint.contains("record the application for longer"), "{hint}");
        for f in ["a", "b"] {
            let len = std::fs::metadata(out.join("data").join(f)).unwrap().len();
            assert_eq!(len, 8192, "{ioengine}: {f}");
        }
    }
}

/// A job that replays the trace `log` with its files under `out`, and `extra` keys.
fn replay_job(out: &Path, log: &Path, extra: &str) -> String {
    format!(
        "directory = {:?}\nread_iolog = {:?}\n{extra}",
        out.display().to_string(),
        log.display().to_string()
    )
}

/// The error a replay of `trace` is refused with (exit 2), checking that nothing was made.
fn refused_trace(trace: &str) -> String {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("t.log"), trace).unwrap();
    let out = d.join("out");
    let (code, _, err) = common::engine_stdin("run", &replay_job(&out, &d.join("t.log"), ""));
    assert_eq!(code, 2, "{err}");
    assert!(!out.exists(), "nothing made");
    err
}

/// A trace's paths stay under `directory`: one that climbs out is refused before anything
/// is made.
#[test]
fn a_trace_that_leaves_its_directory_is_refused() {
    let err = refused_trace("fio version 2 iolog\n../../x add\n../../x write 0 4096\n");
    assert!(err.contains("would lie outside `directory`"), "{err}");
}

/// fslab's path actions are done in the directory, at their turn: a name the layout
/// changed is skipped, not failed; a read past a truncate (which the threads' order may
/// bring) is a short read counted, not an error; a path that climbs out is refused.
#[test]
fn a_traces_path_actions_are_done_in_its_directory() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(
        d.join("t.log"),
        "fio version 3 iolog\n0 a add\n0 a open\n0 a truncate 0 0\n1 a write 0 8192\n2 d mkdir\n3 a rename d/b\n4 d/b stat\n5 a unlink\n6 a truncate 0 0\n7 a read 0 4096\n8 gone stat\n",
    )
    .unwrap();
    for ioengine in ["sync", "io_uring"] {
        let out = d.join(ioengine);
        let text = replay_job(
            &out,
            &d.join("t.log"),
            &format!("ioengine = \"{ioengine}\"\n"),
        );
        let r = run_job(&text);
        assert_eq!(r["status"], "ok", "{ioengine}: {r}");
        let replay = &r["replay"];
        assert_eq!(
            (
                &replay["actions"],
                &replay["paths"],
                &replay["paths_skipped"]
            ),
            (&9.into(), &5.into(), &2.into()),
            "{ioengine}: {replay}"
        );
        assert_eq!(replay["short_reads"], 1, "{ioengine}: {replay}");
        assert!(!out.join("a").exists(), "{ioengine}: renamed");
        assert_eq!(
            std::fs::metadata(out.join("d").join("b")).unwrap().len(),
            0,
            "{ioengine}: written, moved, then emptied through its open descriptor"
        );
    }
    let err = refused_trace("fio version 3 iolog\n0 a add\n1 a write 0 1\n2 a rename ../../x\n");
    assert!(
        err.contains("line 4: `../../x` would lie outside the directory"),
        "{err}"
    );
}

/// Timed as the trace says, scaled, or as fast as possible.
#[test]
fn a_trace_is_replayed_at_its_times_scaled_or_at_once() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(
        d.join("t.log"),
        "fio version 3 iolog\n0 /a add\n0 /a write 0 4096\n300000 /a write 4096 4096\n",
    )
    .unwrap();
    for (extra, low, high) in [
        ("", 0.29, 0.5),
        ("replay_time_scale = 50\n", 0.14, 0.3),
        ("replay_no_stall = true\n", 0.0, 0.1),
    ] {
        let r = run_job(&replay_job(&d.join("out"), &d.join("t.log"), extra));
        let t = r["runtime_s"].as_f64().unwrap();
        assert!(t >= low && t < high, "{extra:?}: {t} s");
    }
}
