//! What the integration tests share: running the engine binary on a job.

use assert_cmd::Command;
use serde_json::Value;

/// Runs `fslab-engine run -` on `text`; the report, or a panic with the engine's stderr.
pub fn run_job(text: &str) -> Value {
    let out = Command::cargo_bin("fslab-engine")
        .unwrap()
        .args(["run", "-"])
        .write_stdin(text.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "job failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
