//! What the integration tests share: running the engine binary on a job.

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
