//! The engine as a user meets it: a job in, one JSON document out, an exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::cargo_bin;
use serde_json::{json, Value};

mod common;
use common::{engine_bounded, engine_stdin, engine_stdin_env, mkfifo, result as op, run_job};

fn engine() -> Command {
    Command::new(cargo_bin("fslab-engine"))
}

/// Runs a job given as TOML text through stdin; returns (exit code, stdout, stderr).
fn run(job: &str) -> (i32, String, String) {
    engine_stdin("run", job)
}

/// `check` on a job given as text on stdin: (exit code, stdout, stderr).
fn check(job: &str) -> (i32, String, String) {
    engine_stdin("check", job)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// A directory removed when the test ends, pass or fail.
fn scratch(base: &Path) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fslab-engine-test-")
        .tempdir_in(base)
        .unwrap()
}

fn repo_disk() -> PathBuf {
    // target/ lives on the repository's disk; CARGO_TARGET_TMPDIR is inside it.
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

#[test]
fn null_engine_measures_its_own_cost() {
    let r = run_job("ioengine = \"null\"\nruntime = \"300ms\"\ninterval = \"100ms\"");
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["status"], "ok");
    assert_eq!(r["interrupted"], false);
    assert_eq!(r["target"]["kind"], "none");
    let read = op(&r, "read");
    assert!(u(&read["ios"]) > 1000);
    assert_eq!(u(&read["bytes"]), u(&read["ios"]) * 4096);
    assert!(read["lat_ns"]["p50"].as_u64().unwrap() < 10_000);
    assert!(!r["series"]["points"].as_array().unwrap().is_empty());
    assert!(r["cpu"]["user_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn null_latency_is_what_was_asked() {
    let r = run_job("ioengine = \"null\"\nruntime = \"300ms\"\nnull_lat = \"20us\"");
    let lat = &op(&r, "read")["lat_ns"];
    // Spinning overshoots by a clock read at most; 20 us +/- 5% covers it.
    assert!((19_000..21_000).contains(&u(&lat["p50"])), "{lat}");
}

/// A job run with `FSLAB_CLOCK` set to `clock`: (exit code, stdout, stderr).
fn run_with_clock(clock: &str, job: &str) -> (i32, String, String) {
    engine_stdin_env("run", job, &[("FSLAB_CLOCK", clock)])
}

#[test]
fn the_clock_is_named_in_the_report_and_both_clocks_time_alike() {
    // The TSC is used where the kernel keeps time with it and the CPU says it is
    // invariant (Linux shows both as flags); CLOCK_MONOTONIC otherwise, or when asked.
    let kernel_tsc =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc");
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let invariant = cpuinfo.contains(" constant_tsc") && cpuinfo.contains(" nonstop_tsc");
    let expected = if cfg!(target_arch = "x86_64") && kernel_tsc && invariant {
        "tsc"
    } else {
        "CLOCK_MONOTONIC"
    };
    let job = "ioengine = \"null\"\nruntime = \"200ms\"\nnull_lat = \"20us\"";
    let default = run_job(job);
    let (code, out, err) = run_with_clock("monotonic", job);
    assert_eq!(code, 0, "{err}");
    let forced: Value = serde_json::from_str(&out).unwrap();
    for (r, clock) in [(&default, expected), (&forced, "CLOCK_MONOTONIC")] {
        assert_eq!(r["engine"]["clock"], clock);
        let p50 = u(&op(r, "read")["lat_ns"]["p50"]);
        assert!(
            (19_000..21_000).contains(&p50),
            "{clock}: p50 {p50} ns for 20 us"
        );
        let runtime = r["runtime_s"].as_f64().unwrap();
        assert!(
            (0.19..0.3).contains(&runtime),
            "{clock}: runtime {runtime} s for 200 ms"
        );
    }
}

#[test]
fn a_clock_the_engine_does_not_know_is_refused() {
    let (code, out, err) = run_with_clock("hpet", "ioengine = \"null\"\nruntime = \"1s\"");
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("error: FSLAB_CLOCK: `hpet`"), "{err}");
    assert!(
        err.contains("hint: ") && err.contains("FSLAB_CLOCK=monotonic"),
        "{err}"
    );
}

#[test]
fn size_based_job_does_exactly_its_bytes_on_tmpfs() {
    let dir = scratch(Path::new("/dev/shm"));
    let f = dir.path().join("f");
    let job = format!(
        "filename = {:?}\nsize = \"4m\"\nbs = \"16k\"\nrw = \"read\"\nioengine = \"sync\"",
        f.display().to_string()
    );
    let r = run_job(&job);
    let read = op(&r, "read");
    assert_eq!(u(&read["ios"]), 256);
    assert_eq!(u(&read["bytes"]), 4 << 20);
    assert_eq!(
        u(&r["layout"]["bytes"]),
        4 << 20,
        "a file to read is laid out first"
    );
    let series_ios: u64 = r["series"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["read"]["ios"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(series_ios, 256, "the series adds up to the totals");
}

#[test]
fn io_uring_direct_randrw_on_the_repository_disk() {
    let dir = scratch(&repo_disk());
    let f = dir.path().join("f");
    let job = format!(
        "filename = {:?}\nsize = \"8m\"\nrw = \"randrw\"\nrwmixread = 70\nbs = \"4k\"\niodepth = 8\ndirect = true\nio_size = \"8m\"\nnumjobs = 2",
        f.display().to_string()
    );
    let r = run_job(&job);
    let (rd, wr) = (op(&r, "read"), op(&r, "write"));
    let total = u(&rd["ios"]) + u(&wr["ios"]);
    assert_eq!(total, 2 * 2048, "each thread does io_size / bs");
    for o in [rd, wr] {
        assert_eq!(u(&o["bytes"]), u(&o["ios"]) * 4096);
    }
    let share = u(&rd["ios"]) as f64 / total as f64;
    assert!((share - 0.7).abs() < 0.04, "read share {share}");
    assert_eq!(r["job"]["iodepth"], 8);
    assert_eq!(r["job"]["direct"], true);
}

#[test]
fn fsync_every_n_writes_and_at_the_end() {
    let dir = scratch(Path::new("/dev/shm"));
    let job = format!(
        "directory = {:?}\nsize = \"256k\"\nrw = \"write\"\nioengine = \"sync\"\nfsync = 8\nend_fsync = true",
        dir.path().display().to_string()
    );
    let r = run_job(&job);
    assert_eq!(u(&op(&r, "write")["ios"]), 64);
    assert_eq!(u(&r["fsync"]["count"]), 64 / 8 + 1);
    assert!(
        dir.path().join("job.0.0").exists(),
        "directory gives <name>.<thread>.0"
    );
}

#[test]
fn ramp_is_shown_in_the_series_but_not_counted() {
    let r = run_job(
        "ioengine = \"null\"\nruntime = \"300ms\"\nramp_time = \"300ms\"\ninterval = \"100ms\"",
    );
    let points = r["series"]["points"].as_array().unwrap();
    assert!(points.iter().any(|p| p["ramp"] == true));
    assert!(points.iter().any(|p| p["ramp"] == false));
    let runtime = r["runtime_s"].as_f64().unwrap();
    assert!(
        (0.29..0.4).contains(&runtime),
        "runtime {runtime} excludes the ramp"
    );
    let series_ios: u64 = points
        .iter()
        .map(|p| p["read"]["ios"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        u(&op(&r, "read")["ios"]) < series_ios,
        "ramp I/O is only in the series"
    );
}

/// The steady-state report's numbers as (ios of the window's rounds, results span).
fn steady_window(r: &Value) -> (u64, f64, f64) {
    let s = &r["steady_state"];
    let ios = s["window_rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| u(&x["ios"]))
        .sum();
    let f = |k: &str| s[k].as_f64().unwrap();
    (ios, f("results_start_s"), f("results_end_s"))
}

#[test]
fn a_steady_job_stops_before_runtime_and_reports_its_window() {
    let started = std::time::Instant::now();
    // Wide limits: this is about what a steady job does, not how steady a busy machine is.
    let r = run_job(
        "ioengine = \"null\"\nnull_lat = \"10us\"\nruntime = \"60s\"\nramp_time = \"200ms\"\ninterval = \"200ms\"\nsteady_state = true\nsteady_round = \"200ms\"\nsteady_range = \"60%\"\nsteady_slope = \"60%\"",
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r["status"], "ok", "a steady stop is not an interruption");
    assert_eq!(r["interrupted"], false);
    let s = &r["steady_state"];
    assert_eq!(s["attained"], true, "{s}");
    assert_eq!(s["window_rounds"].as_array().unwrap().len(), 5);
    assert_eq!(s["limits"]["range_pct"], 60.0);
    let (ios, from, to) = steady_window(&r);
    assert!(from >= 0.2, "the ramp is not judged: {from}");
    assert_eq!(s["window_start_s"].as_f64(), Some(from));
    assert_eq!(u(&op(&r, "read")["ios"]), ios, "results are the window's");
    let runtime = r["runtime_s"].as_f64().unwrap();
    assert!(
        (runtime - (to - from)).abs() < 1e-9,
        "{runtime} vs {from}..{to}"
    );
    assert!(
        (runtime - 1.0).abs() < 1e-6,
        "5 rounds of 200 ms: {runtime}"
    );
    let iops = op(&r, "read")["iops"].as_f64().unwrap();
    assert!((iops - ios as f64 / runtime).abs() < 1e-6);
    assert!(
        r["warnings"].as_array().unwrap().is_empty(),
        "{}",
        r["warnings"]
    );
}

#[test]
fn steady_measure_adds_a_fixed_time_after_the_window() {
    let r = run_job(
        "ioengine = \"null\"\nnull_lat = \"10us\"\nruntime = \"60s\"\ninterval = \"200ms\"\nsteady_state = true\nsteady_round = \"200ms\"\nsteady_window = 3\nsteady_range = \"60%\"\nsteady_slope = \"60%\"\nsteady_measure = \"400ms\"",
    );
    let s = &r["steady_state"];
    assert_eq!(s["attained"], true, "{s}");
    let (ios, from, to) = steady_window(&r);
    let window_end = s["window_end_s"].as_f64().unwrap();
    assert!((to - window_end - 0.4).abs() < 1e-6, "{window_end}..{to}");
    assert!((r["runtime_s"].as_f64().unwrap() - (to - from)).abs() < 1e-9);
    assert!(
        u(&op(&r, "read")["ios"]) > ios,
        "the measure adds to the window"
    );
}

#[test]
fn a_job_that_cannot_hold_a_window_warns_not_steady_and_reports_the_whole_run() {
    let r = run_job(
        "ioengine = \"null\"\nruntime = \"600ms\"\ninterval = \"200ms\"\nsteady_state = true",
    );
    assert_eq!(r["status"], "ok");
    let s = &r["steady_state"];
    assert_eq!(s["attained"], false);
    assert!(
        s["window_start_s"].is_null() && s["range_pct"].is_null(),
        "{s}"
    );
    assert_eq!(s["results_start_s"], 0.0);
    let warned: Vec<&Value> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "not_steady")
        .collect();
    assert_eq!(warned.len(), 1, "{}", r["warnings"]);
    assert!(
        warned[0]["message"]
            .as_str()
            .unwrap()
            .contains("the results cover the whole run"),
        "{}",
        warned[0]
    );
    let series_ios: u64 = r["series"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["read"]["ios"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(u(&op(&r, "read")["ios"]), series_ios);
}

#[test]
fn steady_state_without_runtime_is_refused() {
    let err = bad("ioengine = \"null\"\nsteady_state = true");
    assert!(err.contains("`steady_state`: needs `runtime`"), "{err}");
}

#[test]
fn json_job_file_and_resolved_echo() {
    let dir = scratch(Path::new("/dev/shm"));
    let path = dir.path().join("job.json");
    std::fs::write(
        &path,
        r#"{"ioengine": "null", "runtime": 0.2, "bs": "64KiB", "rw": "randwrite"}"#,
    )
    .unwrap();
    let out = engine().arg("run").arg(&path).output().unwrap();
    assert!(out.status.success());
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["job"]["bs"], 65536);
    assert_eq!(r["job"]["iodepth"], 1, "defaults are filled in");
    assert_eq!(r["job"]["buffer_content"], "random");
    assert_eq!(r["results"].as_array().unwrap().len(), 1);
}

fn bad(job: &str) -> String {
    let (code, out, err) = run(job);
    assert_eq!(code, 2, "exit code for {job:?}; stderr: {err}");
    assert!(out.is_empty(), "nothing on stdout for a bad job");
    err
}

#[test]
fn bad_jobs_exit_2_naming_the_key_and_what_is_allowed() {
    let e = bad("filename = \"/dev/shm/x\"\nrww = \"read\"");
    assert!(e.contains("error: <stdin>: `rww`: unknown key"), "{e}");
    assert!(e.contains("hint: did you mean `rw`?"), "{e}");

    let e = bad("filename = \"/dev/shm/x\"\niodepth = 0");
    assert!(
        e.contains("`iodepth`: 0 is out of range (1..=32768)"),
        "{e}"
    );

    let e = bad("filename = \"/dev/shm/x\"\ndirect = true\nbs = 1000");
    assert!(e.contains("`bs`: 1000 is not a multiple of 512"), "{e}");

    let e = bad("rw = \"randread\"");
    assert!(e.contains("missing target"), "{e}");
    assert!(e.contains("hint: add `filename"), "{e}");

    let e = bad("filename = \"/dev/shm/x\"\nrw = \"randred\"");
    assert!(
        e.contains("`randred` is not allowed; allowed: `read`, `write`"),
        "{e}"
    );
    assert!(e.contains("did you mean `randread`?"), "{e}");

    let e = bad("filename = \"/dev/shm/x\"\nbs = \"4 bananas\"");
    assert!(e.contains("`bs`: `4 bananas` is not a size"), "{e}");

    let e = bad("filename = \"/dev/shm/x\"\nruntime = \"soon\"");
    assert!(e.contains("`runtime`: `soon` is not a duration"), "{e}");

    let e = bad("filename = \"/dev/shm/x\"\ninterval = \"10ms\"");
    assert!(e.contains("`interval`"), "{e}");

    let e = bad("filename = \"/dev/shm/x\"\nioengine = \"sync\"\niodepth = 4");
    assert!(e.contains("io_uring"), "{e}");

    let e = bad("filename = \"/dev/shm/x\" nope");
    assert!(e.contains("not valid TOML"), "{e}");

    // Several mistakes: all reported in one go.
    let e = bad("filename = \"/dev/shm/x\"\niodepth = 0\nnumjobs = 0\nrwmixread = 200");
    assert_eq!(e.matches("error:").count(), 3, "{e}");
}

#[test]
fn target_problems_exit_2_before_anything_is_created() {
    let e = bad("filename = \"/dev/shm/fslab-no-such-dir/sub/f\"\nsize = \"1m\"");
    assert!(e.contains("does not exist"), "{e}");
    let dir = scratch(Path::new("/dev/shm"));
    let f = dir.path().join("new");
    let e = bad(&format!("filename = {:?}", f.display().to_string()));
    assert!(e.contains("`size`: is required"), "{e}");
    assert!(!f.exists(), "a refused job creates nothing");
}

#[test]
fn unreadable_job_file_exits_2() {
    let out = engine()
        .args(["run", "/nonexistent/job.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the job"));
}

#[test]
fn a_job_that_is_a_device_a_fifo_or_endless_is_refused_at_once() {
    // N3 (audit-reliability-2): a job read from /dev/zero grew the engine to 8 GB; a
    // FIFO blocked it forever.
    let dir = scratch(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let fifo = dir.path().join("job.toml");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    for (args, says) in [
        (
            ["check", "/dev/zero"],
            "it is a character device, not a job file",
        ),
        (
            ["run", "/dev/zero"],
            "it is a character device, not a job file",
        ),
        (["check", fifo], "it is a FIFO, not a job file"),
        (["run", "/tmp"], "it is a directory, not a job file"),
    ] {
        let (code, err) = engine_bounded(Path::new("."), &args, Stdio::null(), 10);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says) && err.contains("  hint: "), "{err}");
    }
    // Standard input stays allowed, and capped.
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let (code, err) = engine_bounded(Path::new("."), &["check", "-"], Stdio::from(zero), 10);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("error: <stdin>: cannot read the job: it is larger than 4 MiB"),
        "{err}"
    );
    // A NUL byte: not a job.
    let job = dir.path().join("nul.toml");
    std::fs::write(&job, "ioengine = \"null\"\0").unwrap();
    let (code, err) = engine_bounded(
        Path::new("."),
        &["check", job.to_str().unwrap()],
        Stdio::null(),
        10,
    );
    assert_eq!(code, 2);
    assert!(err.contains("holds a NUL byte at offset 17"), "{err}");
}

#[test]
fn a_job_value_is_shown_escaped() {
    let (code, _, err) = check("ioengine = \"null\"\nrw = \"\\u001b]0:TITLE\\u0007\"\n");
    assert_eq!(code, 2);
    assert!(
        !err.contains('\x1b') && err.contains("\\x1b]0:TITLE"),
        "{err}"
    );
}

fn spawn_long_null_job() -> std::process::Child {
    let mut child = engine()
        .args(["run", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"ioengine = \"null\"\nruntime = \"60s\"\ninterval = \"100ms\"")
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    child
}

fn signal(child: &std::process::Child, sig: i32) {
    // SAFETY: kill() on a pid we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

#[test]
fn interrupted_run_still_prints_valid_json() {
    let child = spawn_long_null_job();
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON after SIGINT");
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["status"], "interrupted");
    assert!(r["runtime_s"].as_f64().unwrap() < 10.0);
    assert!(u(&op(&r, "read")["ios"]) > 0);
}

#[test]
fn an_interrupted_steady_job_reports_what_ran_and_no_not_steady() {
    let mut child = engine()
        .args(["run", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Limits no real rate meets: it is still seeking when the signal comes.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"ioengine = \"null\"\nruntime = \"60s\"\ninterval = \"100ms\"\nsteady_state = true\nsteady_round = \"100ms\"\nsteady_window = 3\nsteady_range = \"0.0001%\"\nsteady_slope = \"0.0001%\"")
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "interrupted");
    assert_eq!(r["steady_state"]["attained"], false);
    assert!(
        !r["steady_state"]["window_start_s"].is_null(),
        "it held windows"
    );
    assert_eq!(
        r["steady_state"]["results_start_s"], 0.0,
        "the part that ran"
    );
    assert!(
        r["warnings"].as_array().unwrap().is_empty(),
        "{}",
        r["warnings"]
    );
}

#[test]
fn sigterm_is_handled_like_sigint() {
    let child = spawn_long_null_job();
    signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["interrupted"], true);
}

#[test]
fn version_and_schema_commands() {
    let out = engine().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("fslab-engine "));
    let out = engine().args(["schema", "report"]).output().unwrap();
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(s["properties"]["results"].is_object());
}

/// A loop device over an image file, detached when dropped (also on panic).
struct Loop {
    dev: String,
    _dir: tempfile::TempDir,
}

impl Loop {
    fn new() -> Option<Self> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/loop-control").exists() {
            eprintln!("skipped: needs root and loop devices");
            return None;
        }
        let dir = scratch(&repo_disk());
        let img = dir.path().join("img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&img)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Some(Self { dev, _dir: dir })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        // `losetup -d` on a device still busy returns 0 and only sets autoclear, so
        // check sysfs and retry until the device is really gone.
        let name = self.dev.trim_start_matches("/dev/");
        let attached = PathBuf::from(format!("/sys/block/{name}/loop/backing_file"));
        for _ in 0..50 {
            let _ = Command::new("losetup").args(["-d", &self.dev]).status();
            if !attached.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("warning: {} is still attached", self.dev);
    }
}

#[test]
fn writing_a_block_device_needs_the_explicit_flag() {
    let Some(lo) = Loop::new() else { return };
    let job = format!(
        "filename = {:?}\nrw = \"randwrite\"\nio_size = \"1m\"",
        lo.dev
    );
    let e = bad(&job);
    assert!(e.contains("`allow_device_write`: is false"), "{e}");
    let r = run_job(&format!("{job}\nallow_device_write = true\ndirect = true"));
    assert_eq!(r["target"]["kind"], "block");
    assert_eq!(
        u(&r["target"]["size_bytes"]),
        16 << 20,
        "size defaults to the device's"
    );
    assert_eq!(u(&op(&r, "write")["ios"]), 256);
    // Reading needs no flag.
    let r = run_job(&format!(
        "filename = {:?}\nrw = \"read\"\nio_size = \"1m\"",
        lo.dev
    ));
    assert_eq!(u(&op(&r, "read")["bytes"]), 1 << 20);
}

/// A file system on `Loop`, unmounted when dropped.
struct Mounted {
    dir: tempfile::TempDir,
    lo: Loop,
}

impl Mounted {
    fn ext4() -> Option<Self> {
        let lo = Loop::new()?;
        let ok = Command::new("mkfs.ext4")
            .args(["-q", "-F", &lo.dev])
            .status()
            .map(|s| s.success());
        if ok.is_err() {
            eprintln!("skipped: needs mkfs.ext4");
            return None;
        }
        let dir = scratch(&repo_disk());
        let st = Command::new("mount")
            .arg(&lo.dev)
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success());
        Some(Self { dir, lo })
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for _ in 0..50 {
            if Command::new("umount")
                .arg(self.dir.path())
                .status()
                .is_ok_and(|s| s.success())
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "warning: {} is still mounted from {}",
            self.dir.path().display(),
            self.lo.dev
        );
    }
}

#[test]
fn file_system_can_be_unmounted_the_moment_an_io_uring_job_ends() {
    // Regression: a ring closed at exit dropped its registered file later, in a kernel
    // work queue, so `umount` right after the engine failed with "target is busy".
    let Some(m) = Mounted::ext4() else { return };
    let f = m.dir.path().join("f");
    run_job(&format!(
        "filename = {:?}\nsize = \"4m\"\nrw = \"randread\"\niodepth = 16\ndirect = true\nio_size = \"4m\"",
        f.display().to_string()
    ));
    let out = Command::new("umount").arg(m.dir.path()).output().unwrap();
    assert!(
        out.status.success(),
        "umount: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Command::new("mount")
        .arg(&m.lo.dev)
        .arg(m.dir.path())
        .status()
        .unwrap();
}

#[test]
fn check_resolves_a_job_without_running_it() {
    let (code, out, err) =
        check("filename = \"/nonexistent/dir/f\"\nbs = \"8k\"\nruntime = \"1h\"");
    assert_eq!(code, 0, "{err}");
    let job: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(job["bs"], 8192);
    assert_eq!(job["runtime"], 3600.0);
    let out = engine()
        .args(["check", "/nonexistent.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_warns_about_keys_the_job_ignores() {
    let (code, _, err) = check(
        "kind = \"files\"\nop = \"copy\"\ndirectory = \"/a\"\ndest = \"/b\"\nmutate_share = 0.2",
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: <stdin>: `mutate_share` has no effect with kind = files, op = copy"),
        "{err}"
    );
    assert!(err.contains("hint: remove `mutate_share`"), "{err}");
}

#[test]
fn the_echo_of_a_job_is_itself_a_job_check_takes() {
    for job in [
        // `sync` has no queue, yet the echo names `iodepth_batch_complete_min = 1`.
        "filename = \"/nonexistent/f\"\nsize = \"1m\"\nioengine = \"sync\"\nrw = \"randwrite\"",
        "ioengine = \"null\"\nruntime = 1",
        "kind = \"files\"\nop = \"copy\"\ndirectory = \"/a\"\ndest = \"/b\"",
        "kind = \"mailstore\"\ndirectory = \"/d\"\nruntime = \"2s\"\nnumjobs = 2",
        "kind = \"oltp\"\ndirectory = \"/d\"\nruntime = 5",
    ] {
        let (code, echo, err) = check(job);
        assert_eq!(code, 0, "{job:?}: {err}");
        let v: Value = serde_json::from_str(&echo).unwrap();
        assert_eq!(v["iodepth_batch_complete_min"], 1, "{echo}");
        // The echo as it is, nulls and every key that does not apply included.
        let (code, again, err) = check(&echo);
        assert_eq!(code, 0, "the echo of {job:?} is refused: {err}");
        assert!(!err.contains("error:"), "{err}");
        assert_eq!(again, echo, "resolving the echo changes nothing");
    }
}

#[test]
fn queue_keys_are_checked_and_resolved() {
    let echo = |job: &str| -> Value {
        let (code, out, err) = check(job);
        assert_eq!(code, 0, "{job}: {err}");
        serde_json::from_str(&out).unwrap()
    };
    let v = echo("filename = \"/f\"\niodepth = 16");
    assert_eq!(
        (
            v["iodepth_batch_submit"].clone(),
            v["completion_spin"].clone()
        ),
        (json!(1), json!(0.0)),
        "fio's defaults"
    );
    let v = echo(
        "filename = \"/f\"\niodepth = 16\niodepth_batch_submit = 0\ncompletion_spin = \"20us\"",
    );
    assert_eq!(v["iodepth_batch_submit"], 16, "0 is iodepth, as in fio");
    assert_eq!(v["completion_spin"], 2e-5);
    // 1, the default, is accepted with any engine: the echo names it for every engine.
    let v = echo("filename = \"/f\"\nioengine = \"sync\"\niodepth_batch_complete_min = 1");
    assert_eq!(v["iodepth_batch_complete_min"], 1);
    for (job, says) in [
        (
            "filename = \"/f\"\niodepth = 4\niodepth_batch_submit = 5",
            "`iodepth_batch_submit`: 5 is out of range (1..=4)",
        ),
        (
            "filename = \"/f\"\nioengine = \"sync\"\niodepth_batch_complete_min = 4",
            "`iodepth_batch_complete_min`: 4 only applies to `ioengine = \"io_uring\"`",
        ),
        (
            "filename = \"/f\"\nioengine = \"sync\"\niodepth_batch_submit = 2",
            "`iodepth_batch_submit`: 2 only applies to `ioengine = \"io_uring\"`",
        ),
        (
            "filename = \"/f\"\nioengine = \"sync\"\ncompletion_spin = \"20us\"",
            "`completion_spin`: only applies to `ioengine = \"io_uring\"`",
        ),
        (
            "filename = \"/f\"\ncompletion_spin = \"1s\"",
            "`completion_spin`: 1s is out of range (0 to 10ms)",
        ),
    ] {
        let (code, out, err) = check(job);
        assert_eq!(code, 2, "{job}");
        assert!(out.is_empty());
        assert!(err.contains(says), "{job}: {err}");
        assert!(
            says.contains("range (1..") || err.contains("hint:"),
            "{err}"
        );
    }
}

/// `run <job> <args>` on a job given as text; (exit code, stdout, stderr).
fn run_with(job: &str, args: &[&str]) -> (i32, String, String) {
    let mut child = engine()
        .arg("run")
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Err(e) = child.stdin.take().unwrap().write_all(job.as_bytes()) {
        // An engine that refuses its arguments exits before it reads the job.
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn progress_jsonl_prints_each_interval_as_a_series_point_on_stderr() {
    let job = "ioengine = \"null\"\nruntime = \"600ms\"\nramp_time = \"200ms\"\ninterval = \"100ms\"\nrw = \"randrw\"";
    let (code, out, err) = run_with(job, &["--progress=jsonl"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    // Warnings stay text; every line that is a point is one JSON object.
    let points: Vec<Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(points.len() >= 4, "{err}");
    let reported: Vec<&str> = report["series"]["points"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut last_t = 0.0;
    for p in &points {
        let keys: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, reported, "a line has the report's point layout: {p}");
        let t = p["t_s"].as_f64().unwrap();
        assert!(t > last_t, "points come in order: {err}");
        last_t = t;
        assert!(p["read"]["iops"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["write"]["lat_p99_ns"].as_u64().is_some(), "{p}");
    }
    assert_eq!(points[0]["ramp"], true, "the ramp is shown live too");
    assert_eq!(points.last().unwrap()["ramp"], false);
    assert!(!err.contains("IOPS"), "no human line in jsonl mode: {err}");
}

#[test]
fn progress_without_a_format_is_the_line_for_people() {
    let job = "ioengine = \"null\"\nruntime = \"300ms\"\ninterval = \"100ms\"";
    let (code, _, err) = run_with(job, &["--progress"]);
    assert_eq!(code, 0, "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with('['))
        .expect("a progress line");
    assert!(line.contains("read ") && line.contains(" IOPS "), "{line}");
    assert!(!err.lines().any(|l| l.starts_with('{')), "{err}");
    let (code, _, err) = run_with(job, &["--progress=xml"]);
    assert_eq!(
        code, 2,
        "an unknown progress format is a usage error: {err}"
    );
}

#[test]
fn progress_schema_describes_a_series_point() {
    let out = engine().args(["schema", "progress"]).output().unwrap();
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["t_s", "dur_s", "ramp", "read", "write", "files"] {
        assert!(s["properties"][key].is_object(), "{key}: {s}");
    }
}

/// `check --format json` on a job given as text: (exit code, the answer, stderr).
fn check_json(job: &str) -> (i32, Value, String) {
    let out = Command::new(cargo_bin("fslab-engine"))
        .args(["check", "--format", "json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(job.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let answer = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (
        out.status.code().unwrap_or(-1),
        answer,
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn check_json_gives_every_problem_as_data_with_the_exit_codes_of_text() {
    let (code, a, err) = check_json("filename = \"/f\"\niodepth = 0\nnumjobs = 0");
    assert_eq!(code, 2);
    assert!(err.is_empty(), "nothing on stderr: {err}");
    assert_eq!(a["ok"], false);
    assert_eq!(a["job"], Value::Null);
    let errors = a["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "all problems at once: {a}");
    assert_eq!(errors[0]["key"], "numjobs");
    assert_eq!(errors[0]["message"], "0 is out of range (1..=1024)");
    assert_eq!(errors[0]["hint"], Value::Null);
    assert_eq!(errors[1]["key"], "iodepth");

    let (_, a, _) = check_json("filename = \"/f\"\nrww = \"read\"");
    assert_eq!(a["errors"][0]["key"], "rww");
    assert_eq!(a["errors"][0]["message"], "unknown key");
    assert_eq!(a["errors"][0]["hint"], "did you mean `rw`?");

    let (code, a, _) = check_json("rw = \"read\"");
    assert_eq!(code, 2);
    assert_eq!(
        a["errors"][0]["key"],
        Value::Null,
        "a whole-job problem has no key"
    );

    let (code, a, err) = check_json(
        "kind = \"files\"\nop = \"copy\"\ndirectory = \"/a\"\ndest = \"/b\"\nmutate_share = 0.2",
    );
    assert_eq!(code, 0, "{a}");
    assert!(err.is_empty(), "nothing on stderr: {err}");
    assert_eq!(a["ok"], true);
    assert_eq!(a["errors"], serde_json::json!([]));
    assert_eq!(a["warnings"][0]["kind"], "ignored_key");
    assert_eq!(
        a["warnings"][0]["message"],
        "`mutate_share` has no effect with kind = files, op = copy"
    );
    assert_eq!(a["job"]["dest"], "/b");
    // The same job as `check` prints it as text.
    let (_, text, _) = check(
        "kind = \"files\"\nop = \"copy\"\ndirectory = \"/a\"\ndest = \"/b\"\nmutate_share = 0.2",
    );
    assert_eq!(a["job"], serde_json::from_str::<Value>(&text).unwrap());

    let out = engine()
        .args(["check", "--format", "json", "/nonexistent.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        a["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot read the job"),
        "{a}"
    );
}
