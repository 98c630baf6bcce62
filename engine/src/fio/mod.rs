//! fio job files (`.fio`, `.ini`): read with fio's grammar (`file`), each option sorted
//! by one table (`options`: mapped, inert or refused), each job section resolved into an
//! engine `Job`, and `stonewall`/`new_group`/`wait_for` turned into an explicit graph of
//! phases and reporting groups (`Plan`). `run` runs the graph. Every problem in the
//! files is collected, each with `file:line [section] option`, before any I/O.
//! docs/fio.md says what is supported and how it differs from fio.

pub mod file;
pub mod options;
pub mod run;
pub mod value;

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

use self::file::{Keywords, Opt, Place, Section};
use self::options::{Class, Draft};
use crate::spec::{self, Job};

/// One thing wrong in a job file.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Problem {
    /// `file:line`, or the file alone.
    pub place: String,
    pub section: Option<String>,
    pub option: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl Problem {
    pub fn whole(file: &str, message: String) -> Self {
        Self {
            place: file.to_string(),
            section: None,
            option: None,
            message,
            hint: None,
        }
    }
    pub fn at(place: &Place, section: Option<&str>, option: Option<&str>, message: String) -> Self {
        Self {
            place: place.to_string(),
            section: section.map(str::to_string),
            option: option.map(str::to_string),
            message,
            hint: None,
        }
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.place)?;
        if let Some(s) = &self.section {
            write!(f, " [{s}]")?;
        }
        if let Some(o) = &self.option {
            write!(f, " {o}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// An option accepted with no effect, and why.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Inert {
    pub place: String,
    pub section: String,
    pub option: String,
    pub why: String,
}

/// Which job of the file it is and where it sits in the graph: in the plan and in the
/// report alike.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct JobPlace {
    /// The job's name (its section's, or `name=`), as fio reports it.
    pub name: String,
    /// Where its section starts (`file:line`).
    pub place: String,
    /// Phases are separated by `stonewall` (and by a new job file); 0-based.
    pub phase: u32,
    /// fio's reporting group (`groupid`): a new one at `stonewall` or `new_group`.
    pub group: u32,
    /// The jobs (by name) this one starts after: every job above it for `stonewall`,
    /// the one named by `wait_for`.
    pub after: Vec<String>,
    /// Where the engine does something other than fio would.
    pub notes: Vec<String>,
}

/// One job of the file, resolved.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlannedJob {
    #[serde(flatten)]
    pub at: JobPlace,
    /// The engine job it runs, every default filled in.
    pub job: Job,
    #[serde(skip)]
    pub deps: Vec<usize>,
}

/// A job file read and resolved: what `check` prints and `run` runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Plan {
    pub files: Vec<String>,
    pub jobs: Vec<PlannedJob>,
    /// Reporting groups whose jobs are also reported as one (`group_reporting`).
    pub grouped: Vec<u32>,
    pub inert: Vec<Inert>,
}

/// What the command line changes in every job, after the file's own options.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// Engine job keys (`--set`: a study's sweep): `(key, value)`.
    pub set: Vec<(String, Value)>,
    /// `--within DIR`: every job's files inside DIR (`directory` becomes DIR; a
    /// `filename` keeps only its last component), so a job file written for another
    /// machine runs inside a target and touches nothing else.
    pub within: Option<PathBuf>,
}

/// Reads and resolves `files` (a later file is an implicit stonewall). `env` looks up
/// `${VAR}`. Every problem at once, or the plan.
pub fn load(
    files: &[PathBuf],
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Plan, Vec<Problem>> {
    let mut problems = Vec::new();
    let sections = file::read(files, env, Keywords::of_this_machine(), &mut problems);
    let mut inert = Vec::new();
    let mut jobs: Vec<PlannedJob> = Vec::new();
    let mut drafts: Vec<(Draft, &Section)> = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        if s.global {
            if s.name != "global" {
                // fio folds any `global*` section into the globals; say so, it surprises.
                inert.push(Inert {
                    place: s.place.to_string(),
                    section: s.name.clone(),
                    option: String::new(),
                    why: "a section named `global...` is a global section in fio: its options apply to the jobs below it".into(),
                });
            }
            continue;
        }
        let globals = sections[..i]
            .iter()
            .filter(|g| g.global && g.file_index == s.file_index);
        let opts: Vec<(&Opt, &str)> = globals
            .flat_map(|g| g.options.iter().map(move |o| (o, g.name.as_str())))
            .chain(s.options.iter().map(|o| (o, s.name.as_str())))
            .collect();
        drafts.push((apply(&opts, &mut problems, &mut inert), s));
    }
    if drafts.is_empty() && problems.is_empty() {
        let name = files
            .first()
            .map(|f| f.display().to_string())
            .unwrap_or_default();
        problems.push(
            Problem::whole(
                &name,
                "holds no job (only global sections or nothing)".into(),
            )
            .hint("add a `[job]` section"),
        );
    }
    // The graph: phases, groups, dependencies.
    let (mut phase, mut group) = (0u32, 0u32);
    let mut grouped = Vec::new();
    for (i, (draft, s)) in drafts.iter().enumerate() {
        let new_file = i > 0 && drafts[i - 1].1.file_index != s.file_index;
        let stonewall = i > 0 && (draft.stonewall || new_file);
        if stonewall {
            phase += 1;
        }
        if i > 0 && (stonewall || draft.new_group) {
            group += 1;
        }
        let name = draft
            .keys
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(&s.name)
            .to_string();
        let mut deps: Vec<usize> = if stonewall {
            (0..i).collect()
        } else {
            Vec::new()
        };
        if let Some(w) = &draft.wait_for {
            let named: Vec<usize> = jobs
                .iter()
                .enumerate()
                .filter(|(_, j)| &j.at.name == w)
                .map(|(k, _)| k)
                .collect();
            let place = s
                .options
                .iter()
                .find(|o| o.name == "wait_for")
                .map_or(&s.place, |o| &o.place);
            match named.as_slice() {
                [k] => {
                    if !deps.contains(k) {
                        deps.push(*k);
                    }
                }
                [] => problems.push(
                    Problem::at(
                        place,
                        Some(&s.name),
                        Some("wait_for"),
                        format!("no job named `{w}` above this one"),
                    )
                    .hint("`wait_for` names an earlier job (fio allows no forward references)"),
                ),
                _ => problems.push(Problem::at(
                    place,
                    Some(&s.name),
                    Some("wait_for"),
                    format!(
                        "`{w}` names {} jobs above this one; fio needs it unique",
                        named.len()
                    ),
                )),
            }
        }
        if draft.group_reporting && !grouped.contains(&group) {
            grouped.push(group);
        }
        // A job that does not resolve keeps its name for later `wait_for`s; its problems
        // are recorded and nothing runs.
        let (job, notes) = resolve(draft, s, &name, overrides, &mut problems)
            .unwrap_or_else(|| (placeholder(), Vec::new()));
        let after = deps.iter().map(|&k| jobs[k].at.name.clone()).collect();
        let place = s.place.to_string();
        let at = JobPlace {
            name,
            place,
            phase,
            group,
            after,
            notes,
        };
        jobs.push(PlannedJob { at, job, deps });
    }
    // One problem per place and option: a global's problem is not repeated per job.
    let mut seen = std::collections::HashSet::new();
    problems.retain(|p| seen.insert((p.place.clone(), p.option.clone(), p.message.clone())));
    let mut seen = std::collections::HashSet::new();
    inert.retain(|x| seen.insert((x.place.clone(), x.option.clone())));
    if !problems.is_empty() {
        // In the order of the files and lines, as a person reads them.
        problems.sort_by_key(|p| {
            let (file, line) = p.place.rsplit_once(':').unwrap_or((&p.place, "0"));
            let index = files.iter().position(|f| f.display().to_string() == file);
            (
                index.unwrap_or(usize::MAX),
                file.to_string(),
                line.parse::<usize>().unwrap_or(0),
            )
        });
        return Err(problems);
    }
    Ok(Plan {
        files: files.iter().map(|f| f.display().to_string()).collect(),
        jobs,
        grouped,
        inert,
    })
}

fn placeholder() -> Job {
    spec::load("ioengine = \"null\"")
        .expect("a null job resolves")
        .1
}

/// The options of one job (globals first) applied in order; `kb_base` first of all, as
/// it decides how the sizes before it read.
fn apply(opts: &[(&Opt, &str)], problems: &mut Vec<Problem>, inert: &mut Vec<Inert>) -> Draft {
    let mut d = Draft::default();
    let mut sources: BTreeMap<String, (Place, String, String)> = BTreeMap::new();
    let kb_first = opts.iter().filter(|(o, _)| o.name == "kb_base");
    let rest = opts.iter().filter(|(o, _)| o.name != "kb_base");
    for (opt, section) in kb_first.chain(rest) {
        let Some(row) = options::find(&opt.name) else {
            let mut p = Problem::at(
                &opt.place,
                Some(section),
                Some(&opt.name),
                "is not an option fslab-engine knows".into(),
            );
            p = match spec::closest(&opt.name, options::names()) {
                Some(c) => p.hint(format!("did you mean `{c}`?")),
                None => p.hint("docs/fio.md lists the options fslab-engine reads"),
            };
            problems.push(p);
            continue;
        };
        match row.class {
            Class::Mapped(f) => {
                let before = d.keys.clone();
                if let Err(msg) = f(&mut d, opt.value.as_deref()) {
                    problems.push(Problem::at(&opt.place, Some(section), Some(&opt.name), msg));
                }
                for (k, v) in &d.keys {
                    if before.get(k) != Some(v) {
                        sources.insert(
                            k.clone(),
                            (opt.place.clone(), section.to_string(), opt.name.clone()),
                        );
                    }
                }
            }
            Class::Inert(why) => inert.push(Inert {
                place: opt.place.to_string(),
                section: section.to_string(),
                option: opt.name.clone(),
                why: why.into(),
            }),
            Class::Refused(why) => problems.push(
                Problem::at(
                    &opt.place,
                    Some(section),
                    Some(&opt.name),
                    format!("is not supported by fslab-engine: {why}"),
                )
                .hint("remove it, or run this file with fio; docs/fio.md lists what is supported"),
            ),
        }
    }
    d.sources = sources;
    d
}

/// The engine job of one section (`None`: its problems are recorded).
fn resolve(
    d: &Draft,
    s: &Section,
    name: &str,
    overrides: &Overrides,
    problems: &mut Vec<Problem>,
) -> Option<(Job, Vec<String>)> {
    let mut keys = d.keys.clone();
    let mut notes = d.notes.clone();
    keys.insert("name".into(), json!(name));
    // fio's defaults where the engine's differ: psync, buffered I/O, the current directory.
    keys.entry("ioengine").or_insert(json!("sync"));
    keys.entry("direct").or_insert(json!(false));
    if !keys.contains_key("filename") && !keys.contains_key("directory") {
        keys.insert("directory".into(), json!("."));
    }
    match (d.time_based, d.runtime_s) {
        (true, Some(r)) => {
            keys.insert("runtime".into(), json!(r));
            keys.remove("io_size");
        }
        (true, None) => {
            problems.push(
                Problem::at(&s.place, Some(&s.name), Some("time_based"), "has no `runtime`: fio would run until stopped".into())
                    .hint("add `runtime=60` (seconds)"),
            );
            return None;
        }
        (false, Some(r)) => notes.push(format!(
            "runtime={r} without time_based: fio stops at `size` or after {r} s, whichever comes first; fslab-engine does the whole `size` (add `time_based` for a timed job)"
        )),
        (false, None) => {}
    }
    let random = keys
        .get("rw")
        .and_then(Value::as_str)
        .is_some_and(|rw| rw.starts_with("rand"));
    let norandommap = s.options.iter().any(|o| o.name == "norandommap");
    if random && !norandommap {
        notes.push("random offsets are drawn with repeats (fio's `norandommap`); fio's default touches every block once per pass".into());
    }
    if let Some(dir) = &overrides.within {
        if let Some(file) = keys.get("filename").and_then(Value::as_str) {
            let Some(last) = std::path::Path::new(file).file_name() else {
                problems.push(Problem::at(
                    &s.place,
                    Some(&s.name),
                    Some("filename"),
                    format!("`{file}` names no file to move into --within"),
                ));
                return None;
            };
            let last = last.to_string_lossy().into_owned();
            keys.insert("filename".into(), json!(last));
        }
        keys.insert("directory".into(), json!(dir.display().to_string()));
    }
    for (k, v) in &overrides.set {
        keys.insert(k.clone(), v.clone());
    }
    // fio lets a synchronous engine carry any iodepth and batch sizes (they have no
    // effect there); the engine refuses them, so they go, with a note.
    let sync = keys.get("ioengine").and_then(Value::as_str) == Some("sync");
    for key in [
        "iodepth",
        "iodepth_batch_submit",
        "iodepth_batch_complete_min",
    ] {
        let Some(n) = keys
            .get(key)
            .and_then(Value::as_u64)
            .filter(|n| sync && *n != 1)
        else {
            continue;
        };
        keys.remove(key);
        notes.push(if key == "iodepth" {
            format!("iodepth={n} has no effect with a synchronous ioengine (as in fio): one request in flight per clone")
        } else {
            format!("{key}={n} has no effect with a synchronous ioengine (as in fio)")
        });
    }
    let resolved = spec::spec_from_value(Value::Object(keys)).and_then(|spec| {
        let job = spec.resolve()?;
        Ok((spec, job))
    });
    match resolved {
        Ok((spec, job)) => {
            notes.extend(spec.warnings(&job).into_iter().map(|w| w.message));
            Some((job, notes))
        }
        Err(errors) => {
            for e in errors.0 {
                let source = e.key.as_ref().and_then(|k| d.sources.get(k));
                let overridden = e
                    .key
                    .as_ref()
                    .is_some_and(|k| overrides.set.iter().any(|(o, _)| o == k));
                let mut p = match source {
                    _ if overridden => Problem::whole(
                        "--set",
                        format!("`{}`: {}", e.key.as_deref().unwrap_or(""), e.message),
                    ),
                    Some((place, section, option)) => {
                        Problem::at(place, Some(section), Some(option), e.message.clone())
                    }
                    None => {
                        Problem::at(&s.place, Some(&s.name), e.key.as_deref(), e.message.clone())
                    }
                };
                p.hint = e.hint;
                problems.push(p);
            }
            None
        }
    }
}

/// How `check` shows a plan to people: the phases, each job's keys, what is inert.
pub fn describe(plan: &Plan) -> String {
    let mut out = String::new();
    let phases = plan.jobs.last().map_or(0, |j| j.at.phase + 1);
    let groups = plan.jobs.last().map_or(0, |j| j.at.group + 1);
    out.push_str(&format!(
        "{}: {} job{}, {phases} phase{}, {groups} reporting group{}\n",
        plan.files.join(" "),
        plan.jobs.len(),
        if plan.jobs.len() == 1 { "" } else { "s" },
        if phases == 1 { "" } else { "s" },
        if groups == 1 { "" } else { "s" },
    ));
    let mut phase = u32::MAX;
    for j in &plan.jobs {
        if j.at.phase != phase {
            phase = j.at.phase;
            let why = if phase == 0 {
                "starts at once".to_string()
            } else {
                "starts when every job above has ended (stonewall)".to_string()
            };
            out.push_str(&format!("phase {}: {why}\n", phase + 1));
        }
        let grouped = if plan.grouped.contains(&j.at.group) {
            ", group_reporting"
        } else {
            ""
        };
        out.push_str(&format!(
            "  [{}] {} group {}{grouped}",
            j.at.name, j.at.place, j.at.group
        ));
        let waits: Vec<&str> =
            j.at.after
                .iter()
                .map(String::as_str)
                .filter(|a| {
                    plan.jobs
                        .iter()
                        .any(|o| o.at.name == *a && o.at.phase == j.at.phase)
                })
                .collect();
        if !waits.is_empty() {
            out.push_str(&format!(", starts after {} (wait_for)", waits.join(", ")));
        }
        out.push('\n');
        let keys = serde_json::to_value(&j.job).unwrap_or_default();
        if let Value::Object(m) = keys {
            let said = m
                .iter()
                .filter(|(k, v)| k.as_str() != "name" && !v.is_null())
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                });
            // Wrapped for an 88-column terminal.
            let mut line = String::from("   ");
            for kv in said {
                if line.len() + kv.len() + 1 > 88 && line.len() > 3 {
                    out.push_str(&line);
                    out.push('\n');
                    line = String::from("   ");
                }
                line.push(' ');
                line.push_str(&kv);
            }
            out.push_str(&line);
            out.push('\n');
        }
        for n in &j.at.notes {
            out.push_str(&format!("    note: {n}\n"));
        }
    }
    if !plan.inert.is_empty() {
        out.push_str("accepted, no effect:\n");
        for x in &plan.inert {
            let opt = if x.option.is_empty() {
                String::new()
            } else {
                format!(" {}", x.option)
            };
            out.push_str(&format!("  {} [{}]{opt}: {}\n", x.place, x.section, x.why));
        }
    }
    out
}
