//! A program run beside a block job (`program`, fio's `exec` engine): a monitor
//! (`vmstat 1`, `iostat -x 1`) or a load of its own, started as the job's threads start
//! and stopped when they end, SIGTERM first and SIGKILL after `grace_time`.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{JobError, RunError};
use crate::report::ProgramResult;
use crate::spec::Job;

/// The running program; dropped without `stop` (a panic), it is killed.
pub struct Beside {
    child: Option<Child>,
    argv: Vec<String>,
    started: Instant,
    grace: Duration,
}

/// The program's path: as given when it names a directory, else the first executable
/// of that name in PATH (as execvp finds it).
fn find(program: &str) -> Option<PathBuf> {
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return runnable(Path::new(program)).then(|| PathBuf::from(program));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| runnable(p))
}

/// Checks that the job's `program` can be run, before the target is touched.
pub fn check(job: &Job) -> Result<(), RunError> {
    match &job.pattern.program {
        Some(program) if find(program).is_none() => Err(JobError::new(
            "program",
            format!("{program:?} is not an executable file here, nor one in PATH"),
        )
        .hint("give the program's path, or install it; `command -v NAME` finds it")
        .into()),
        _ => Ok(()),
    }
}

/// Starts the job's `program`, if it has one.
pub fn start(job: &Job) -> Result<Option<Beside>, RunError> {
    let Some(program) = job.pattern.program.clone() else {
        return Ok(None);
    };
    let mut cmd = Command::new(find(&program).unwrap_or_else(|| PathBuf::from(&program)));
    cmd.args(&job.pattern.arguments).stdin(Stdio::null());
    if job.pattern.std_redirect.unwrap_or(true) {
        let dir = Path::new(job.directory.as_deref().unwrap_or("."));
        let create = |ext: &str| {
            let path = dir.join(format!("{}.{ext}", job.name));
            File::create(&path).map_err(|e| {
                RunError::from(
                    JobError::new(
                        "std_redirect",
                        format!("cannot create {}: {e}", path.display()),
                    )
                    .hint("set `directory` to a writable one, or `std_redirect = false`"),
                )
            })
        };
        cmd.stdout(create("stdout")?).stderr(create("stderr")?);
    } else {
        // The engine's stdout is its report: the program's output goes to stderr.
        cmd.stdout(std::io::stderr()).stderr(Stdio::inherit());
    }
    let child = cmd.spawn().map_err(|e| {
        RunError::from(
            JobError::new("program", format!("cannot run {program:?}: {e}"))
                .hint("give the program's path, or install it; `command -v NAME` finds it"),
        )
    })?;
    let mut argv = vec![program];
    argv.extend(job.pattern.arguments.iter().cloned());
    Ok(Some(Beside {
        child: Some(child),
        argv,
        started: Instant::now(),
        grace: Duration::from_secs_f64(job.pattern.grace_time.unwrap_or(1.0)),
    }))
}

impl Beside {
    /// Ends the program (if it has not ended on its own) and says how it ended.
    pub fn stop(mut self) -> ProgramResult {
        let mut child = self.child.take().expect("stopped once");
        let pid = child.id();
        let ran_s = self.started.elapsed().as_secs_f64();
        let mut stopped = false;
        let mut killed = false;
        let status = match child.try_wait() {
            Ok(Some(status)) => Some(status),
            _ => {
                stopped = true;
                // SAFETY: kill only sends a signal; the child is not reaped yet, so its
                // pid is still its own.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
                let end = Instant::now() + self.grace;
                loop {
                    match child.try_wait() {
                        Ok(Some(status)) => break Some(status),
                        Ok(None) if Instant::now() < end => {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        _ => {
                            killed = true;
                            let _ = child.kill();
                            break child.wait().ok();
                        }
                    }
                }
            }
        };
        use std::os::unix::process::ExitStatusExt;
        ProgramResult {
            argv: std::mem::take(&mut self.argv),
            pid,
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            stopped,
            killed,
            ran_s,
        }
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
