//! What the integration tests share: running the engine binary on a job.

// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

/// `fslab-engine <command> -` with `text` on stdin: (exit code, stdout, stderr).
pub fn engine_stdin(command: &str, text: &str) -> (i32, String, String) {
    engine_stdin_env(command, text, &[])
}

/// As `engine_stdin`, with these variables set in the engine's environment.
pub fn engine_stdin_env(command: &str, text: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::cargo_bin("fslab-engine")
        .unwrap()
        .args([command, "-"])
        .envs(env.iter().copied())
        .write_stdin(text.to_string())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs `fslab-engine run -` on `text`; the report, or a panic with the engine's stderr.
pub fn run_job(text: &str) -> Value {
    let (code, out, err) = engine_stdin("run", text);
    assert_eq!(code, 0, "job failed: {err}\n{text}");
    serde_json::from_str(&out).unwrap()
}

/// `fslab-engine ARGS` in `dir` with `stdin`, killed, and the test failed, once it has run
/// `secs`: a detector of hangs and runaway reads, not a timing. (exit code, -1 for a
/// signal; stderr, read as it comes so that a long one cannot stall the engine).
pub fn engine_bounded(dir: &Path, args: &[&str], stdin: Stdio, secs: u64) -> (i32, String) {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fslab-engine"))
        .args(args)
        .current_dir(dir)
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
        err
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() >= Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fslab-engine {args:?} ran past {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code().unwrap_or(-1), reader.join().unwrap())
}

/// Makes a FIFO at `path`: a job file or include that would block a reader forever.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The result of `op` in a report's `results`.
pub fn result<'a>(report: &'a Value, op: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["op"] == op)
        .unwrap_or_else(|| panic!("no {op} result in {report}"))
}
