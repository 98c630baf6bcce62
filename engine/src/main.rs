//! fslab-engine: runs one storage job and prints one JSON document on stdout.
//!
//! Exit codes: 0 the job ran; 1 it failed (an I/O error, or the system refused
//! something it needs); 2 the job or the command line is wrong; 130 a first
//! SIGINT/SIGTERM stopped it (the report covers the part that ran); 131 a second signal
//! killed it at once (no report).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use fslab_engine::clock;
use fslab_engine::diagnostics::{Warning, WarningKind};
use fslab_engine::error::{JobError, JobErrors, RunError};
use fslab_engine::fio;
use fslab_engine::harness::Flags;
use fslab_engine::report::{self, CheckReport, SeriesPoint, Status};
use fslab_engine::spec;

#[derive(Parser)]
#[command(
    name = "fslab-engine",
    // the crate's version and the commit it was built from (build.rs)
    version = env!("FSLAB_ENGINE_VERSION"),
    about = "Runs one storage job and measures it; prints one JSON document on stdout"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a job given as a TOML or JSON file, or `-` for standard input.
    Run {
        /// The job file (`.toml`, `.json`) or `-`; or fio job files (`.fio`, `.ini`, or
        /// any name with `--fio`), several of them run one after the other.
        #[arg(required = true, num_args = 1..)]
        job: Vec<PathBuf>,
        #[command(flatten)]
        fio: FioArgs,
        /// Print one line per interval on stderr while the job runs: for people
        /// (`--progress`), or one JSON object per line (`--progress=jsonl`).
        #[arg(
            long,
            value_enum,
            value_name = "FORMAT",
            num_args = 0..=1,
            require_equals = true,
            default_missing_value = "human"
        )]
        progress: Option<Progress>,
    },
    /// Check a job without running it: print it resolved (every default filled in) as
    /// JSON, or its problems (exit 2). The target is not looked at.
    Check {
        /// The job file (`.toml`, `.json`) or `-`; or fio job files (`.fio`, `.ini`, or
        /// any name with `--fio`): then the phases, groups and each job's keys.
        #[arg(required = true, num_args = 1..)]
        job: Vec<PathBuf>,
        #[command(flatten)]
        fio: FioArgs,
        /// `text`: the resolved job on stdout, problems and warnings on stderr.
        /// `json`: one object on stdout, `{"ok", "errors", "warnings", "job"}`.
        #[arg(long, value_enum, default_value = "text")]
        format: CheckFormat,
    },
    /// Run a DiskSpd command line as DiskSpd would (`fslab-engine diskspd -b8K -d30 -o8
    /// -t8 -r -w0 -Sh -L -c1G testfile.dat`): its switches mapped onto one engine job, a
    /// switch with no Linux meaning refused (exit 2, before any I/O), DiskSpd's text
    /// report on stdout; `-Rjson` prints the engine's report instead, `-Rp` the profile
    /// without running (docs/diskspd.md).
    #[command(disable_help_flag = true)]
    Diskspd {
        /// DiskSpd's switches and its one target.
        #[arg(required = true, num_args = 1.., allow_hyphen_values = true, trailing_var_arg = true)]
        args: Vec<String>,
        /// Print one line per interval on stderr while the job runs.
        #[arg(long, value_enum, value_name = "FORMAT", num_args = 0..=1,
              require_equals = true, default_missing_value = "human")]
        progress: Option<Progress>,
    },
    /// Judge a finished series by a job's steady-state keys, as a live job would be
    /// judged: reads `{"job": {...}, "series": [points]}` (the job with `steady_state =
    /// true`, the points as in a report's `series.points`) and prints the
    /// `steady_state` section and any `not_steady` warning as JSON. fslab uses it for
    /// the summed series of a multi-host run.
    Steady {
        /// The input file (`.json`) or `-`.
        input: PathBuf,
    },
    /// Merge several reports of one job into one report: counts summed, latency
    /// histograms added, rates over the span from the earliest measured start to the
    /// latest measured end, the worst status. Reads `{"how": "jobs" | "ranks", "parts":
    /// [{"label", "report"}]}` (`schema merge`) and prints the merged report. fslab uses
    /// it for a fio job file's measured jobs and for the ranks of a multi-host run.
    Merge {
        /// The input file (`.json`) or `-`.
        input: PathBuf,
    },
    /// Print the JSON Schema of a job or of the report.
    Schema {
        #[arg(value_enum)]
        which: SchemaKind,
    },
}

/// How fio job files are read (docs/fio.md).
#[derive(clap::Args)]
struct FioArgs {
    /// Read the job files as fio job files whatever their names end with.
    #[arg(long)]
    fio: bool,
    /// fio job files: set an engine job key on every job, after the file's own options
    /// (`--set directory=/mnt/x`, `--set bs=8k`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// fio job files: every job's files inside DIR (`directory` becomes DIR, a
    /// `filename` keeps only its last component).
    #[arg(long, value_name = "DIR")]
    within: Option<PathBuf>,
}

impl FioArgs {
    /// Whether `jobs` are fio job files: `--fio`, or every name ends in `.fio`/`.ini`.
    fn applies(&self, jobs: &[PathBuf]) -> bool {
        self.fio
            || jobs
                .iter()
                .all(|j| j.extension().is_some_and(|e| e == "fio" || e == "ini"))
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum SchemaKind {
    Job,
    Report,
    /// One `run --progress=jsonl` line.
    Progress,
    /// The output of `check --format json`.
    Check,
    /// The output of `steady`.
    Steady,
    /// The output of `run` for fio job files.
    FioReport,
    /// The input of `merge` (its output is a report).
    Merge,
}

/// How `run` shows progress on stderr.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Progress {
    /// `[    2.0s]  read 12853 IOPS 401.7 MiB/s ...`: for people.
    Human,
    /// One series point per line as JSON (the report's `series.points` layout): for programs.
    Jsonl,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckFormat {
    Text,
    Json,
}

const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;
const EXIT_KILLED: i32 = 131;
/// The most `steady` reads: far above the series of any job, so it stops only an input
/// that never ends (`/dev/zero`).
const STEADY_INPUT_BYTES: u64 = 4 << 30;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Schema { which } => {
            let schema = match which {
                SchemaKind::Job => spec::job_schema(),
                SchemaKind::Report => report::report_schema(),
                SchemaKind::Progress => report::progress_schema(),
                SchemaKind::Check => report::check_schema(),
                SchemaKind::Steady => report::steady_schema(),
                SchemaKind::FioReport => fslab_engine::fio::run::report_schema(),
                SchemaKind::Merge => fslab_engine::merge::input_schema(),
            };
            println!(
                "{}",
                serde_json::to_string_pretty(&schema).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Command::Run { job, fio, progress } => {
            if let Err(code) = clock_env() {
                return code;
            }
            if fio.applies(&job) {
                return fio_run(&job, &fio, progress);
            }
            match one_job(&job) {
                Ok(job) => run(job, progress),
                Err(code) => code,
            }
        }
        Command::Steady { input } => steady(&input),
        Command::Merge { input } => merge(&input),
        Command::Check { job, fio, format } if fio.applies(&job) => fio_check(&job, &fio, format),
        Command::Check {
            job,
            format: CheckFormat::Json,
            ..
        } => match one_job(&job) {
            Ok(job) => check_json(job),
            Err(code) => code,
        },
        Command::Diskspd { args, progress } => {
            if let Err(code) = clock_env() {
                return code;
            }
            diskspd_run(&args, progress)
        }
        Command::Check { job, .. } => {
            let job = match one_job(&job) {
                Ok(job) => job,
                Err(code) => return code,
            };
            check_text(job)
        }
    }
}

/// `FSLAB_CLOCK`, checked before anything runs (the clock is read first deep inside).
fn clock_env() -> Result<(), ExitCode> {
    clock::check_env().map_err(|what| {
        eprintln!("error: {}: {what}", clock::ENV);
        eprintln!(
            "  hint: unset it (the engine times with the TSC where the kernel keeps time \
             with it), or set {}=monotonic to time with CLOCK_MONOTONIC",
            clock::ENV
        );
        ExitCode::from(2)
    })
}

/// The one job file of a native job (several are for fio job files only).
fn one_job(jobs: &[PathBuf]) -> Result<&PathBuf, ExitCode> {
    match jobs {
        [one] => Ok(one),
        _ => {
            eprintln!(
                "error: {} job files given: a TOML or JSON job is one file",
                jobs.len()
            );
            eprintln!("  hint: several files are for fio job files (`.fio`, `.ini`, or `--fio`)");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

fn check_text(job: &Path) -> ExitCode {
    match read_job(job) {
        Ok((spec, resolved)) => {
            let place = place_of(job);
            for w in spec.warnings(&resolved) {
                eprintln!("warning: {place}: {}", w.message);
                if let Some(h) = &w.hint {
                    eprintln!("  hint: {h}");
                }
            }
            println!(
                "{}",
                serde_json::to_string(&resolved).expect("a job serializes")
            );
            ExitCode::SUCCESS
        }
        Err(errors) => usage_error(&place_of(job), &errors),
    }
}

/// `check --format json`: everything on stdout as one object, nothing on stderr, so a
/// program need not parse the text.
fn check_json(path: &Path) -> ExitCode {
    let answer = match read_job(path) {
        Ok((spec, job)) => CheckReport {
            ok: true,
            errors: Vec::new(),
            warnings: spec.warnings(&job),
            job: Some(job),
        },
        Err(errors) => CheckReport {
            ok: false,
            errors: errors.0,
            warnings: Vec::new(),
            job: None,
        },
    };
    let text = serde_json::to_string(&answer).expect("a check report serializes");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    if answer.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_USAGE)
    }
}

fn run(path: &Path, progress: Option<Progress>) -> ExitCode {
    let place = place_of(path);
    let (spec, job) = match read_job(path) {
        Ok(j) => j,
        Err(errors) => return usage_error(&place, &errors),
    };
    run_job(&place, &spec, job, progress, |report| {
        serde_json::to_string(report).expect("the report serializes") + "\n"
    })
}

/// Runs a checked job: its warnings and progress on stderr, `output(report)` on stdout,
/// then its errors, and the exit status of its end (`run`, `diskspd`).
fn run_job(
    place: &str,
    spec: &spec::JobSpec,
    job: spec::Job,
    progress: Option<Progress>,
    output: impl FnOnce(&report::Report) -> String,
) -> ExitCode {
    let flags = Flags::new();
    if let Err(e) = install_signals(&flags.stop) {
        eprintln!("error: cannot install signal handlers: {e}");
        return ExitCode::from(EXIT_FAILED);
    }
    let warnings: Vec<Warning> = spec.warnings(&job);
    for w in &warnings {
        eprintln!("warning: {place}: {}", w.message);
        if let Some(h) = &w.hint {
            eprintln!("  hint: {h}");
        }
    }
    // The sliver a job ends with past its last boundary is folded into the point
    // before it in the report; live, it is just not shown.
    let sliver = job.interval / 20.0;
    let mut on_point = |p: &SeriesPoint| {
        if p.dur_s < sliver {
            return;
        }
        match progress {
            Some(Progress::Human) => eprintln!("{}", progress_line(p)),
            Some(Progress::Jsonl) => eprintln!(
                "{}",
                serde_json::to_string(p).expect("a series point serializes")
            ),
            None => {}
        }
    };
    match fslab_engine::run(job, warnings, &flags, &mut on_point) {
        Ok(report) => {
            let text = output(&report);
            let mut out = std::io::stdout().lock();
            // A closed stdout (e.g. `| head`) is not the job's failure.
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            for e in &report.errors {
                eprintln!("error: {place}: thread {}: {}", e.thread, e.message);
            }
            // Bad blocks leave the exit code at 0 (the counts are the answer): say so
            // where a person running the engine alone will see it.
            if let Some(v) = &report.verify {
                eprintln!("{}", fslab_engine::block::verify::summary(v));
                for w in report
                    .warnings
                    .iter()
                    .filter(|w| w.kind == WarningKind::VerifyFailed)
                {
                    eprintln!("warning: {place}: {}", w.message);
                }
            }
            match report.status {
                Status::Ok => ExitCode::SUCCESS,
                Status::Failed => ExitCode::from(EXIT_FAILED),
                Status::Interrupted => {
                    eprintln!(
                        "fslab-engine: interrupted; the report covers {:.1} s",
                        report.runtime_s
                    );
                    ExitCode::from(EXIT_INTERRUPTED)
                }
            }
        }
        Err(RunError::Job(errors)) => usage_error(place, &errors),
        Err(e @ RunError::Io { .. }) => {
            eprintln!("error: {place}: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// `steady`: the input's job resolved like any job (its problems exit 2), then judged.
fn steady(path: &Path) -> ExitCode {
    #[derive(serde::Deserialize)]
    struct Input {
        job: serde_json::Value,
        series: Vec<SeriesPoint>,
    }
    let place = place_of(path);
    // A summed series of a long run is large; the cap only stops a file that never ends.
    let input: Input = match read_text_capped(path, STEADY_INPUT_BYTES).and_then(|text| {
        serde_json::from_str(&text).map_err(|e| {
            JobError::whole(format!("not a steady input: {e}"))
                .hint("give `{\"job\": {...}, \"series\": [points]}`, the points as in a report's `series.points`")
                .into()
        })
    }) {
        Ok(i) => i,
        Err(errors) => return usage_error(&place, &errors),
    };
    let job = match spec::spec_from_value(input.job).and_then(|s| s.resolve()) {
        Ok(job) => job,
        Err(errors) => return usage_error(&place, &errors),
    };
    let Some((steady_state, warning)) = fslab_engine::steady::judge(&job, &input.series) else {
        let e = JobError::new("steady_state", "is not set: there is nothing to judge by")
            .hint("set `steady_state = true` (and any steady keys) in the input's job");
        return usage_error(&place, &e.into());
    };
    let answer = report::SteadyAnswer {
        steady_state,
        warnings: warning.into_iter().collect(),
    };
    println!(
        "{}",
        serde_json::to_string(&answer).expect("an answer serializes")
    );
    ExitCode::SUCCESS
}

/// `merge`: the parts as one report, or exit 2 saying why not.
fn merge(path: &Path) -> ExitCode {
    let place = place_of(path);
    let input = read_text_capped(path, STEADY_INPUT_BYTES).and_then(|text| {
        serde_json::from_str::<fslab_engine::merge::MergeInput>(&text).map_err(|e| {
            JobError::whole(format!("not a merge input: {e}"))
                .hint("give `{\"how\": \"jobs\" or \"ranks\", \"parts\": [{\"label\": ..., \"report\": {...}}]}` (`fslab-engine schema merge`)")
                .into()
        })
    });
    let merged = match input {
        Ok(input) => fslab_engine::merge::merge(input),
        Err(errors) => return usage_error(&place, &errors),
    };
    match merged {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(why) => usage_error(&place, &JobError::whole(why).into()),
    }
}

/// The plan of fio job files with `--set` applied, or exit 2 with every problem.
fn fio_plan(jobs: &[PathBuf], args: &FioArgs) -> Result<fio::Plan, Vec<fio::Problem>> {
    let mut overrides = fio::Overrides {
        within: args.within.clone(),
        ..Default::default()
    };
    let mut problems = Vec::new();
    for kv in &args.set {
        match kv.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                // A number stays a number (`iodepth=8`); anything else is text (`4k`).
                let v = v.trim();
                let value = serde_json::from_str::<serde_json::Value>(v)
                    .ok()
                    .filter(|x| x.is_number() || x.is_boolean())
                    .unwrap_or_else(|| serde_json::Value::String(v.to_string()));
                overrides.set.push((k.trim().to_string(), value));
            }
            _ => problems.push(
                fio::Problem::whole("--set", format!("`{kv}` is not KEY=VALUE"))
                    .hint("e.g. `--set directory=/mnt/x`"),
            ),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    fio::load(jobs, &|var| std::env::var(var).ok(), &overrides)
}

fn fio_problems(problems: &[fio::Problem]) -> ExitCode {
    for p in problems {
        eprintln!("error: {p}");
        if let Some(h) = &p.hint {
            eprintln!("  hint: {h}");
        }
    }
    eprintln!(
        "fslab-engine: {} problem{} in the job file; nothing was run",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    ExitCode::from(EXIT_USAGE)
}

/// `check` of fio job files: the phases and each job's keys (text), or one JSON object.
fn fio_check(jobs: &[PathBuf], args: &FioArgs, format: CheckFormat) -> ExitCode {
    let plan = fio_plan(jobs, args);
    if format == CheckFormat::Json {
        let (ok, answer) = match &plan {
            Ok(plan) => (
                true,
                serde_json::json!({"ok": true, "problems": [], "plan": plan}),
            ),
            Err(p) => (
                false,
                serde_json::json!({"ok": false, "problems": p, "plan": null}),
            ),
        };
        println!("{answer}");
        return if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(EXIT_USAGE)
        };
    }
    match plan {
        Ok(plan) => {
            print!("{}", fio::describe(&plan));
            ExitCode::SUCCESS
        }
        Err(problems) => fio_problems(&problems),
    }
}

/// `run` of fio job files: every job as fio would schedule it, one report for all.
fn fio_run(jobs: &[PathBuf], args: &FioArgs, progress: Option<Progress>) -> ExitCode {
    let plan = match fio_plan(jobs, args) {
        Ok(plan) => plan,
        Err(problems) => return fio_problems(&problems),
    };
    let refused = fio::preflight(&plan);
    if !refused.is_empty() {
        return fio_problems(&refused);
    }
    let flags = Flags::new();
    if let Err(e) = install_signals(&flags.stop) {
        eprintln!("error: cannot install signal handlers: {e}");
        return ExitCode::from(EXIT_FAILED);
    }
    for j in &plan.jobs {
        for n in &j.at.notes {
            eprintln!("note: [{}]: {}", fio::escaped(&j.at.name), fio::escaped(n));
        }
    }
    let on_point = |name: &str, p: &SeriesPoint| match progress {
        Some(Progress::Human) => eprintln!("[{}] {}", fio::escaped(name), progress_line(p)),
        Some(Progress::Jsonl) => eprintln!("{}", serde_json::json!({"job": name, "point": p})),
        None => {}
    };
    let report = fio::run::run(&plan, &flags, &on_point);
    let text = serde_json::to_string(&report).expect("the report serializes");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    for j in &report.jobs {
        let name = fio::escaped(&j.at.name);
        if let Some(e) = &j.error {
            eprintln!(
                "error: [{name}] {}: {}",
                fio::escaped(&j.at.place),
                escaped_lines(e)
            );
        }
        for e in j.report.iter().flat_map(|r| &r.errors) {
            eprintln!(
                "error: [{name}] thread {}: {}",
                e.thread,
                fio::escaped(&e.message)
            );
        }
    }
    match report.status {
        Status::Ok => ExitCode::SUCCESS,
        Status::Failed => ExitCode::from(EXIT_FAILED),
        Status::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
    }
}

/// `diskspd`: the line read (its problems, exit 2), the job checked as any job is, run,
/// and reported in DiskSpd's layout or as the engine's report.
fn diskspd_run(args: &[String], progress: Option<Progress>) -> ExitCode {
    use fslab_engine::diskspd::{self, Output};
    let profile = match diskspd::parse(args) {
        Ok(p) => p,
        Err(problems) => {
            for p in &problems {
                eprintln!("error: diskspd {}: {}", p.switch, fio::escaped(&p.what));
                eprintln!("  hint: {}", p.hint);
            }
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let job_text = serde_json::Value::Object(profile.job()).to_string();
    let (spec, job) = match spec::load(&job_text) {
        Ok(j) => j,
        Err(errors) => return usage_error("diskspd", &errors),
    };
    if profile.profile_only {
        let out = match profile.output {
            Output::Text => diskspd::text::profile(&profile),
            Output::Xml => diskspd::xml::profile_only(&profile),
            Output::Json => format!("{job_text}\n"),
        };
        print!("{out}");
        return ExitCode::SUCCESS;
    }
    for n in profile.notes() {
        eprintln!("note: diskspd {n}");
    }
    run_job("diskspd", &spec, job, progress, |report| {
        match profile.output {
            Output::Json => serde_json::to_string(report).expect("the report serializes") + "\n",
            Output::Text | Output::Xml => {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_default();
                if profile.output == Output::Xml {
                    diskspd::xml::report(&profile, report, &host) + "\n"
                } else {
                    diskspd::text::report(&profile, report, &host)
                }
            }
        }
    })
}

fn place_of(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

fn read_job(path: &Path) -> Result<(spec::JobSpec, spec::Job), JobErrors> {
    spec::load(&read_text(path)?)
}

/// A job file's text, or standard input's for `-`.
fn read_text(path: &Path) -> Result<String, JobErrors> {
    read_text_capped(path, fslab_engine::input::MAX_JOB_BYTES)
}

/// As `read_text`, at most `cap` bytes: only a regular file (or standard input), so a
/// FIFO or `/dev/zero` is refused at once rather than waited on or read forever.
fn read_text_capped(path: &Path, cap: u64) -> Result<String, JobErrors> {
    use fslab_engine::input;
    let read = if path.as_os_str() == "-" {
        if std::io::stdin().is_terminal() {
            return Err(
                JobError::whole("expected a job on standard input, but it is a terminal")
                    .hint("pipe a job in, e.g. `fslab-engine run - < job.toml`")
                    .into(),
            );
        }
        input::read_capped(std::io::stdin().lock(), cap)
    } else {
        input::read_file(path, cap)
    };
    read.map_err(|e| {
        let hint = match e {
            input::ReadError::Io(_) => "check the path",
            _ => "give a job file: TOML or JSON text",
        };
        let what = match e {
            input::ReadError::Io(e) => format!("cannot read the job: {e}"),
            other => format!("cannot read the job: it {other}"),
        };
        JobError::whole(what).hint(hint).into()
    })
}

fn usage_error(place: &str, errors: &JobErrors) -> ExitCode {
    for e in &errors.0 {
        eprintln!(
            "error: {}: {}",
            fio::escaped(place),
            escaped_lines(&e.to_string())
        );
    }
    ExitCode::from(EXIT_USAGE)
}

/// `text`'s lines with control characters escaped: a job's values are shown on a
/// terminal, never acted on.
fn escaped_lines(text: &str) -> String {
    text.split('\n')
        .map(fio::escaped)
        .collect::<Vec<_>>()
        .join("\n")
}

/// First SIGINT/SIGTERM: set `stop`, the job winds down and reports. Second: exit now.
fn install_signals(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        // Registered first, so it sees the flag as it was before this signal set it.
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_KILLED, Arc::clone(stop))?;
        signal_hook::flag::register(sig, Arc::clone(stop))?;
    }
    Ok(())
}

fn progress_line(p: &SeriesPoint) -> String {
    let mut line = format!("[{:>7.1}s]{}", p.t_s, if p.ramp { " ramp" } else { "" });
    // Transactions and files are counted per second, not as I/Os.
    for (name, op) in [("txn", &p.txn), ("files", &p.files)] {
        if let Some(o) = op {
            line.push_str(&format!(
                "  {name} {:.0}/s mean {:.1}us p99 {:.1}us",
                o.iops,
                o.lat_mean_ns / 1000.0,
                o.lat_p99_ns as f64 / 1000.0
            ));
        }
    }
    for (name, op) in [("read", &p.read), ("write", &p.write), ("log", &p.log)] {
        if let Some(o) = op {
            line.push_str(&format!(
                "  {name} {:.0} IOPS {:.1} MiB/s mean {:.1}us p99 {:.1}us",
                o.iops,
                o.bw_bytes / 1048576.0,
                o.lat_mean_ns / 1000.0,
                o.lat_p99_ns as f64 / 1000.0
            ));
        }
    }
    line
}
