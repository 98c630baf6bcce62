//! Puts the commit the engine was built from into its `--version`
//! (`fslab-engine 0.1.0 (4f31406e2a 2026-11-28)`), so a report's recorded engine names
//! the exact source. `FSLAB_ENGINE_COMMIT` overrides it (a build from a tarball);
//! without git or a repository the version is the crate's alone.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=FSLAB_ENGINE_COMMIT");
    let git_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.git");
    // A new commit or a checkout moves HEAD or a ref: the version must follow it.
    for watched in ["HEAD", "refs", "packed-refs"] {
        let path = git_dir.join(watched);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let version = env!("CARGO_PKG_VERSION");
    let full = match std::env::var("FSLAB_ENGINE_COMMIT").ok().or_else(commit) {
        Some(commit) if !commit.is_empty() => format!("{version} ({commit})"),
        _ => version.to_string(),
    };
    println!("cargo:rustc-env=FSLAB_ENGINE_VERSION={full}");
}

/// `<short hash> <commit date>` of HEAD, or None outside a git checkout.
fn commit() -> Option<String> {
    let out = Command::new("git")
        .args(["log", "-1", "--format=%h %cs", "--abbrev=10"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}
