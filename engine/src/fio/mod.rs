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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

use self::file::{Keywords, Opt, Place, Section};
use self::options::{Class, Draft};
use self::value::KbBase;
use crate::spec::{self, Job};

/// The most clones (`numjobs` summed over the jobs) a plan runs: fio's own limit on
/// jobs, which counts each clone (`max_jobs`, 4096). Each is a thread.
pub const MAX_CLONES: u64 = 4096;
/// The most characters of a name or value a problem quotes.
pub const MAX_QUOTED: usize = 40;
/// The most characters of a problem's message.
const MAX_MESSAGE: usize = 400;
/// The engine keys `--set` may not change with `--within`: each names where files go
/// (or, for `kind`, makes a job that opens its files by path).
pub const WITHIN_FIXED: &[&str] = &["filename", "directory", "verify_state", "dest", "kind"];

/// One thing wrong in a job file.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Problem {
    /// `file:line`, or the file alone.
    pub place: String,
    pub section: Option<String>,
    pub option: Option<String>,
    pub message: String,
    pub hint: Option<String>,
    /// The included line it is about: its text is kept out of what is shown (`tidy`).
    #[serde(skip)]
    #[schemars(skip)]
    hidden: Option<Arc<str>>,
}

impl Problem {
    pub fn whole(file: &str, message: String) -> Self {
        Self {
            place: file.to_string(),
            section: None,
            option: None,
            message,
            hint: None,
            hidden: None,
        }
    }
    pub fn at(place: &Place, section: Option<&str>, option: Option<&str>, message: String) -> Self {
        Self {
            place: place.to_string(),
            section: section.map(str::to_string),
            option: option.map(str::to_string),
            message,
            hint: None,
            hidden: place.hidden.clone(),
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
    /// Phases are separated by `stonewall` (and by a new job file); 0-based. A job
    /// starts only once every job of the phases before its own has ended.
    pub phase: u32,
    /// fio's reporting group (`groupid`): a new one at `stonewall` or `new_group`.
    pub group: u32,
    /// The job (by name) this one also waits for: the one named by `wait_for`. (The
    /// wait for the phases before is said by `phase`, not listed here.)
    pub after: Vec<String>,
    /// Where the engine does something other than fio would.
    pub notes: Vec<String>,
    /// When this job ends, it ends others (fio's `exitall`): those of its `group`, those
    /// running now (`stonewall`), or every job, the ones not started yet too (`all`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exitall: Option<String>,
    /// When this job fails, it ends the others of its group (fio's `exitall_on_error`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exitall_on_error: bool,
}

/// One job of the file, resolved.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlannedJob {
    #[serde(flatten)]
    pub at: JobPlace,
    /// The engine job it runs, every default filled in.
    pub job: Job,
    /// The jobs (indexes) it waits for besides the phases before its own (`wait_for`).
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
    /// machine runs inside a target and touches nothing else: each file is opened
    /// beneath DIR without following a link (beneath.rs), and `--set` may not move it
    /// (`WITHIN_FIXED`).
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
    check_overrides(overrides, &mut problems);
    if !problems.is_empty() {
        // What the file says under a refused `--set` would only be noise.
        problems.iter_mut().for_each(tidy);
        return Err(problems);
    }
    let sections = file::read(files, env, Keywords::of_this_machine(), &mut problems);
    let mut inert = Vec::new();
    let mut drafts: Vec<(Draft, &Section)> = Vec::new();
    // The globals above the current section, applied once per `kb_base` a job below
    // asks for (a job's `kb_base` changes how its globals' sizes read), and again only
    // for globals added since: linear in the file, however many jobs share them.
    let mut globals = Globals::default();
    for s in &sections {
        if globals.file != s.file_index {
            globals = Globals {
                file: s.file_index,
                ..Globals::default()
            };
        }
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
            let mut kb = Draft {
                kb_base: globals.kb_base,
                ..Draft::default()
            };
            apply(&mut kb, kb_options(s), &mut problems, &mut inert);
            globals.kb_base = kb.kb_base;
            globals.sections.push(s);
            continue;
        }
        let mut kb = Draft {
            kb_base: globals.kb_base,
            ..Draft::default()
        };
        apply(&mut kb, kb_options(s), &mut problems, &mut inert);
        let base = kb.kb_base.unwrap_or(KbBase::Binary);
        let mut draft = globals.applied(base, &mut problems, &mut inert).clone();
        draft.kb_base = kb.kb_base;
        apply(&mut draft, other_options(s), &mut problems, &mut inert);
        // The globals were applied once for every job below them: a clock seed they
        // drew (`randrepeat=0`) is drawn again, so each job has its own, as in fio.
        let clock_seeded = draft
            .sources
            .get("randseed")
            .is_some_and(|(_, _, o)| o == "randrepeat" || o == "allrandrepeat");
        if clock_seeded {
            draft
                .keys
                .insert("randseed".into(), json!(options::clock_seed(drafts.len())));
        }
        drafts.push((draft, s));
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
    // The graph: phases, groups, dependencies. A phase is a barrier (every job waits for
    // the phases before its own), so nothing here grows with the jobs above a job.
    let (mut phase, mut group) = (0u32, 0u32);
    let mut grouped = Vec::new();
    let mut jobs: Vec<PlannedJob> = Vec::with_capacity(drafts.len());
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    let mut clones = 0u64;
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
        let mut deps: Vec<usize> = Vec::new();
        if let Some(w) = &draft.wait_for {
            let named = by_name.get(w).map_or(&[][..], Vec::as_slice);
            let place = s
                .options
                .iter()
                .find(|o| o.name == "wait_for")
                .map_or(&s.place, |o| &o.place);
            match named {
                [k] => deps.push(*k),
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
        clones += u64::from(job.numjobs);
        let after = deps.iter().map(|&k| jobs[k].at.name.clone()).collect();
        let place = s.place.to_string();
        by_name.entry(name.clone()).or_default().push(i);
        let at = JobPlace {
            name,
            place,
            phase,
            group,
            after,
            notes,
            exitall: draft
                .exitall
                .then(|| draft.exit_what.unwrap_or("group").to_string()),
            exitall_on_error: draft.exitall_on_error,
        };
        jobs.push(PlannedJob { at, job, deps });
    }
    if clones > MAX_CLONES {
        let name = files
            .first()
            .map(|f| f.display().to_string())
            .unwrap_or_default();
        problems.push(
            Problem::whole(
                &name,
                format!("its jobs have {clones} clones in all (`numjobs` summed): fslab-engine, like fio, runs at most {MAX_CLONES}"),
            )
            .hint("use fewer jobs or a smaller `numjobs`"),
        );
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
        let more = problems.len().saturating_sub(file::MAX_PROBLEMS);
        problems.truncate(file::MAX_PROBLEMS);
        problems.iter_mut().for_each(tidy);
        if more > 0 {
            let name = files
                .first()
                .map(|f| f.display().to_string())
                .unwrap_or_default();
            problems.push(Problem::whole(
                &shown(&name),
                format!("and {more} more problems, not shown"),
            ));
        }
        return Err(problems);
    }
    Ok(Plan {
        files: files.iter().map(|f| f.display().to_string()).collect(),
        jobs,
        grouped,
        inert,
    })
}

/// `--set` with `--within`: the keys that say where files go are `--within`'s alone.
fn check_overrides(overrides: &Overrides, problems: &mut Vec<Problem>) {
    let Some(dir) = &overrides.within else {
        return;
    };
    if dir.to_str().is_none() {
        problems.push(
            Problem::whole("--within", format!("`{}` is not UTF-8", dir.display()))
                .hint("give a directory whose path is UTF-8 text"),
        );
    }
    for (key, _) in &overrides.set {
        if WITHIN_FIXED.contains(&key.as_str()) {
            let why = if key == "kind" {
                "only block jobs are confined to DIR"
            } else {
                "it says where a file goes, and with --within every file is in DIR"
            };
            problems.push(
                Problem::whole(
                    "--set",
                    format!("`{key}` cannot be set with --within: {why}"),
                )
                .hint(format!(
                    "leave out `--set {key}=...`, or run without --within"
                )),
            );
        }
    }
}

/// The global sections of one file above the current section, applied lazily.
#[derive(Default)]
struct Globals<'a> {
    file: usize,
    sections: Vec<&'a Section>,
    /// The last `kb_base` the globals set.
    kb_base: Option<KbBase>,
    /// Per `kb_base` (binary, decimal): the globals' options applied, and how many of
    /// `sections` that covers.
    drafts: [Option<(Draft, usize)>; 2],
}

impl Globals<'_> {
    fn applied(
        &mut self,
        base: KbBase,
        problems: &mut Vec<Problem>,
        inert: &mut Vec<Inert>,
    ) -> &Draft {
        let slot = &mut self.drafts[usize::from(base == KbBase::Decimal)];
        let (draft, done) = slot.get_or_insert_with(|| {
            (
                Draft {
                    kb_base: Some(base),
                    ..Draft::default()
                },
                0,
            )
        });
        for g in &self.sections[*done..] {
            apply(draft, other_options(g), problems, inert);
        }
        *done = self.sections.len();
        draft
    }
}

fn kb_options(s: &Section) -> impl Iterator<Item = (&Opt, &str)> {
    s.options
        .iter()
        .filter(|o| o.name == "kb_base")
        .map(move |o| (o, s.name.as_str()))
}

fn other_options(s: &Section) -> impl Iterator<Item = (&Opt, &str)> {
    s.options
        .iter()
        .filter(|o| o.name != "kb_base")
        .map(move |o| (o, s.name.as_str()))
}

fn placeholder() -> Job {
    spec::load("ioengine = \"null\"")
        .expect("a null job resolves")
        .1
}

/// Options applied to a draft in order. (`load` applies `kb_base` first of all, as it
/// decides how the sizes before it read.)
fn apply<'a>(
    d: &mut Draft,
    opts: impl Iterator<Item = (&'a Opt, &'a str)>,
    problems: &mut Vec<Problem>,
    inert: &mut Vec<Inert>,
) {
    for (opt, section) in opts {
        let Some(row) = options::find(&opt.name) else {
            // A name in an included file may be anything that file holds (a password):
            // where it is, not what it says.
            if opt.place.hidden.is_some() {
                problems.push(
                    Problem::at(
                        &opt.place,
                        Some(section),
                        None,
                        "is not an option fslab-engine knows (the line is not shown: it is in an included file)".into(),
                    )
                    .hint("docs/fio.md lists the options fslab-engine reads"),
                );
                continue;
            }
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
                if let Err(msg) = f(d, opt.value.as_deref()) {
                    problems.push(Problem::at(&opt.place, Some(section), Some(&opt.name), msg));
                }
                let changed: Vec<String> = d
                    .keys
                    .iter()
                    .filter(|(k, v)| before.get(*k) != Some(*v))
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in changed {
                    d.sources.insert(
                        k,
                        (opt.place.clone(), section.to_string(), opt.name.clone()),
                    );
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
}

/// A problem as it is shown: an included line's text concealed; control characters
/// escaped; each quoted name or value, and the message, cut short.
fn tidy(p: &mut Problem) {
    if let Some(line) = p.hidden.take() {
        p.message = conceal(&p.message, &line);
        p.hint = p.hint.as_deref().map(|h| conceal(h, &line));
    }
    p.place = shown(&p.place);
    p.section = p.section.as_deref().map(shown);
    p.option = p.option.as_deref().map(shown);
    p.message = cut(&shown(&p.message), MAX_MESSAGE);
    p.hint = p.hint.as_deref().map(|h| cut(&shown(h), MAX_MESSAGE));
}

/// `text` with every piece of `line` it quotes replaced by `…`: the line's value and
/// name, any quoted span (`` `...` ``, `"..."`) that is not an option's name, and any
/// number the line holds.
fn conceal(text: &str, line: &str) -> String {
    let (name, value) = match line.split_once('=') {
        Some((n, v)) => (n.trim(), v.trim()),
        None => (line, ""),
    };
    let mut out = text.to_string();
    // A short part would match inside ordinary words; the quotes and numbers below
    // catch those.
    for part in [value, name] {
        if part.chars().count() >= 4 && options::find(part).is_none() {
            out = out.replace(part, "…");
        }
    }
    let mut kept = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(open) = rest.find(['`', '"']) {
        let quote = &rest[open..open + 1];
        kept.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(quote) {
            Some(close) => {
                let inner = &after[..close];
                if options::find(inner).is_some() {
                    kept.push_str(&rest[open..open + close + 2]);
                } else {
                    kept.push_str(quote);
                    kept.push('…');
                    kept.push_str(quote);
                }
                rest = &after[close + 1..];
            }
            None => {
                kept.push('…');
                rest = "";
            }
        }
    }
    kept.push_str(rest);
    // Numbers the line holds (`nrfiles=12345` says "12345 files per job").
    let mut done = String::with_capacity(kept.len());
    let mut digits = String::new();
    for c in kept.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            done.push_str(if line.contains(digits.as_str()) {
                "…"
            } else {
                &digits
            });
            digits.clear();
        }
        if c != '\0' {
            done.push(c);
        }
    }
    done
}

/// `text` with control characters (and the ones that reorder text on a terminal)
/// escaped, and each `` `quoted` `` span longer than `MAX_QUOTED` characters cut in the
/// middle (both ends of a path or value say the most).
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        escape_into(&mut out, &rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else {
            out.push('`');
            rest = after;
            break;
        };
        let inner: Vec<char> = after[..close].chars().collect();
        out.push('`');
        if inner.len() > MAX_QUOTED {
            let head = MAX_QUOTED / 2;
            let tail = MAX_QUOTED - head - 1;
            escape_into(&mut out, &inner[..head].iter().collect::<String>());
            out.push('…');
            escape_into(
                &mut out,
                &inner[inner.len() - tail..].iter().collect::<String>(),
            );
        } else {
            escape_into(&mut out, &after[..close]);
        }
        out.push('`');
        rest = &after[close + 1..];
    }
    escape_into(&mut out, rest);
    out
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        push_escaped(out, c);
    }
}

/// `c`, or its escape when a terminal would act on it rather than show it.
fn push_escaped(out: &mut String, c: char) {
    let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if c.is_control() || bidi {
        if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    } else {
        out.push(c);
    }
}

/// `text` cut at `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What `run` checks in each job's directory before any job starts: a name a job
/// would write that is a link (or otherwise not a plain file) refuses the whole run,
/// so nothing is half done. (Each open checks again: the directory may change.)
pub fn preflight(plan: &Plan) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut dirs: HashMap<&Path, Option<crate::beneath::Beneath>> = HashMap::new();
    for pj in &plan.jobs {
        // A program that cannot run is found before any job runs (exit 2).
        if let Err(crate::error::RunError::Job(errors)) = crate::block::beside::check(&pj.job) {
            for e in errors.0 {
                problems.push(Problem {
                    place: pj.at.place.clone(),
                    section: Some(pj.at.name.clone()),
                    option: Some("program".into()),
                    message: e.message,
                    hint: e.hint,
                    hidden: None,
                });
            }
        }
        let (Some(dir), Some(_)) = (&pj.job.beneath, pj.job.path_for(0)) else {
            continue;
        };
        // A file engine's tree is checked when it is opened (no link followed).
        if pj.job.kind == spec::Kind::Files {
            continue;
        }
        let Some(b) = dirs
            .entry(dir.as_path())
            .or_insert_with(|| crate::beneath::Beneath::open(dir).ok())
        else {
            continue;
        };
        let key = if pj.job.filename.is_some() {
            "filename"
        } else {
            "directory"
        };
        let mut paths: Vec<PathBuf> = (0..pj.job.numjobs)
            .filter_map(|t| pj.job.path_for(t))
            .collect();
        paths.dedup();
        for path in paths {
            let why = match b.name_of(&path) {
                None => Some("is not a plain name in the directory (--within)".to_string()),
                Some(rel) => b
                    .metadata(rel)
                    .ok()
                    .and_then(|m| crate::beneath::refusal(&m)),
            };
            if let Some(why) = why {
                problems.push(
                    Problem {
                        place: pj.at.place.clone(),
                        section: Some(pj.at.name.clone()),
                        option: Some(key.into()),
                        message: format!("`{}` {why}", path.display()),
                        hint: None,
                        hidden: None,
                    }
                    .hint("remove it (the job lays the file out afresh), or run the job file without --within if you trust where it leads"),
                );
            }
        }
    }
    for p in &mut problems {
        p.message = escaped(&p.message);
    }
    problems
}

/// `text` with control characters escaped, nothing cut: for what the engine itself
/// says (a `--within` path), not what a file says.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(&mut out, text);
    out
}

/// The engine job of one section (`None`: its problems are recorded).
/// The runtime of a time-based job with none (fio: until stopped): the engine's most, 7 days.
const UNTIL_STOPPED_S: u64 = spec::MAX_RUNTIME.as_secs() - 1;

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
    keys.entry("invalidate").or_insert(json!(true));
    keys.entry("fadvise_hint").or_insert(json!(true));
    // libaio and posixaio on buffered I/O do each request inside the submitting call:
    // one at a time, like pread/pwrite, whatever `iodepth` says.
    if keys.get("direct") == Some(&json!(false)) && d.async_engine.is_some() {
        keys.insert("ioengine".into(), json!("sync"));
        notes.retain(|n| !n.contains("runs on io_uring"));
        notes.push(format!(
            "ioengine={} without direct I/O completes each request inside its submission, one at a time: fslab-engine runs it as `sync` (pread/pwrite)",
            d.async_engine.as_deref().unwrap_or_default()
        ));
    }
    let flagged_engine = matches!(
        keys.get("ioengine").and_then(Value::as_str),
        Some("io_uring" | "sync")
    );
    if !flagged_engine && keys.get("atomic") == Some(&json!(true)) {
        keys.remove("atomic");
        notes.push("atomic: fio sends RWF_ATOMIC from its io_uring, libaio and pvsync2 engines only; with this engine it opens the file O_DIRECT and nothing more, and so does fslab-engine".into());
    }
    if keys.get("direct") == Some(&json!(true)) && keys.remove("uncached").is_some() {
        notes.push("uncached applies to buffered I/O only: with direct=1 fio ignores it, and so is it left out".into());
    }
    if keys.get("sqthread_poll") != Some(&json!(true)) && keys.remove("sqthread_poll_cpu").is_some()
    {
        notes.push(
            "sqthread_poll_cpu without sqthread_poll: fio ignores it, and so is it left out".into(),
        );
    }
    if !keys.contains_key("filename") && !keys.contains_key("directory") {
        keys.insert("directory".into(), json!("."));
    }
    match (d.time_based, d.runtime_s) {
        (true, Some(r)) => {
            keys.insert("runtime".into(), json!(r));
            keys.remove("io_size");
        }
        (true, None) => {
            // fio runs such a job until it is stopped; so does the engine, with a cap
            // so that a forgotten run ends one day. Stopped (SIGINT, SIGTERM), its
            // report covers the time it ran.
            keys.insert("runtime".into(), json!(UNTIL_STOPPED_S));
            keys.remove("io_size");
            notes.push(format!(
                "time_based without runtime: fio runs until it is stopped; so does fslab-engine (Ctrl-C, or after {} days), reporting the time it ran",
                spec::MAX_RUNTIME.as_secs() / 86_400
            ));
        }
        (false, Some(r)) => notes.push(format!(
            "runtime={r} without time_based: fio stops at `size` or after {r} s, whichever comes first; fslab-engine does the whole `size` (add `time_based` for a timed job)"
        )),
        (false, None) => {}
    }
    if d.cpuio {
        let Some(load) = d.cpuload else {
            problems.push(
                Problem::at(
                    &s.place,
                    Some(&s.name),
                    Some("ioengine"),
                    "cpuio needs `cpuload`".into(),
                )
                .hint("add `cpuload=50` (percent of a CPU)"),
            );
            return None;
        };
        let cycle_us = d.cpuchunks.unwrap_or(50_000);
        keys.insert("null_lat".into(), json!(cycle_us as f64 / 1e6));
        if load < 100 {
            keys.insert(
                "thinktime".into(),
                json!((cycle_us * (100 - load) / load) as f64 / 1e6),
            );
        }
        notes.push(format!(
            "ioengine=cpuio: each cycle spins {cycle_us} us{}, as fio's; the report counts cycles as reads of the null engine",
            if load < 100 { " and thinks the rest" } else { "" }
        ));
    } else if d.cpuload.is_some() || d.cpuchunks.is_some() {
        notes.push("cpuload/cpuchunks only apply with ioengine=cpuio".into());
    }
    if d.exec {
        if !keys.contains_key("program") {
            problems.push(
                Problem::at(
                    &s.place,
                    Some(&s.name),
                    Some("ioengine"),
                    "exec needs `program`".into(),
                )
                .hint("add `program=/usr/bin/vmstat` (and `arguments=1`)"),
            );
            return None;
        }
        match (keys.contains_key("runtime"), d.runtime_s) {
            (true, _) => {}
            (false, Some(r)) => {
                keys.insert("runtime".into(), json!(r));
                keys.remove("io_size");
            }
            (false, None) => {
                problems.push(
                    Problem::at(
                        &s.place,
                        Some(&s.name),
                        Some("ioengine"),
                        "exec needs `runtime`: fio stops the program once it has passed".into(),
                    )
                    .hint("add `runtime=30`"),
                );
                return None;
            }
        }
        // fio's exec engine looks in on the program every 50 ms, each look an I/O.
        keys.insert("thinktime".into(), json!(0.05));
        notes.push("ioengine=exec: the program runs beside a null job that looks in every 50 ms, as fio's; at `runtime` it is sent SIGTERM, and SIGKILL after `grace_time`".into());
    } else {
        for k in ["program", "arguments", "grace_time", "std_redirect"] {
            if keys.remove(k).is_some() {
                notes.push(format!("{k}: only fio's exec engine takes it; left out"));
            }
        }
    }
    // fio's e4defrag options, inherited by a job of another engine, mean nothing there.
    if keys.get("ioengine").and_then(Value::as_str) != Some("e4defrag") {
        keys.remove("donorname");
        keys.remove("inplace");
    }
    if d.dedupe_working_set && keys.contains_key("dedupe_percentage") {
        keys.entry("dedupe_working_set_percentage")
            .or_insert(json!(5.0));
    } else {
        for k in ["dedupe_working_set_percentage", "dedupe_global"] {
            if keys.remove(k).is_some() {
                notes.push(format!(
                    "{k} applies with dedupe_mode=working_set only: left out"
                ));
            }
        }
    }
    if let Some(on) = d.continue_on.filter(|&o| o != "none") {
        keys.insert("continue_on_error".into(), json!(on));
        let mut errors: Vec<Value> = Vec::new();
        for (i, covered) in [(0, on != "write"), (1, on != "read")] {
            if !covered {
                continue;
            }
            let list = d.ignore_error[i]
                .clone()
                .unwrap_or_else(|| vec!["EIO".into(), "EILSEQ".into()]);
            for e in list {
                let v = e.parse::<i64>().map_or(json!(e), |n| json!(n));
                if !errors.contains(&v) {
                    errors.push(v);
                }
            }
        }
        if on == "io" && d.ignore_error[0] != d.ignore_error[1] {
            notes.push("ignore_error gives reads and writes their own errors: fslab-engine goes on after either list's errors on any I/O".into());
        }
        keys.insert("continue_errors".into(), Value::Array(errors));
    }
    // The engine's own reading of `rw` (a bad one is the resolver's to refuse).
    let rw: Option<spec::Rw> = keys
        .get("rw")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let writes = rw.is_some_and(spec::Rw::writes);
    if keys.contains_key("cpus_allowed_policy")
        && !keys.contains_key("cpus_allowed")
        && !keys.contains_key("numa_cpu_nodes")
    {
        keys.remove("cpus_allowed_policy");
        notes.push("cpus_allowed_policy without cpus_allowed: fio places nothing; left out".into());
    }
    if !writes {
        for k in ["fsync", "fdatasync", "end_fsync"] {
            if keys.remove(k).is_some() {
                notes.push(format!(
                    "{k} on a job that does not write: fio flushes nothing; left out"
                ));
            }
        }
    }
    if keys.get("verify") == Some(&json!(true)) && writes {
        if d.do_verify != Some(false) {
            keys.insert("verify_read_back".into(), json!(true));
            notes.push(format!(
                "verify on a writing job: once its I/O ends it reads back every block it wrote and checks it (fio's verify phase){}; the read-back is counted in the report's `verify`, not in its reads",
                if d.time_based { ", after the whole `runtime` (fio verifies after every `size` written)" } else { "" }
            ));
        }
    } else if keys.remove("verify_backlog").is_some() {
        notes.push("verify_backlog applies to a writing job with `verify` only: left out".into());
    }
    // fio ends a size-based sequential pass with holes (`rw=write:112k`) once the walk
    // leaves the region, so a pass is fewer I/Os than `size` holds; the engine counts
    // bytes, so the pass is given as a number of I/Os.
    let skip = keys.get("seq_skip").and_then(Value::as_i64).unwrap_or(0);
    let sized_io = keys.contains_key("io_size")
        || keys.contains_key("bssplit")
        || keys.contains_key("bsrange");
    let sequential = !rw.is_some_and(spec::Rw::is_random);
    if let (false, true, false, Some(size)) = (
        d.time_based,
        skip > 0 && sequential,
        sized_io,
        keys.get("size").and_then(Value::as_u64),
    ) {
        let bs = keys.get("bs").and_then(Value::as_u64).unwrap_or(4096);
        let pass = size.div_ceil(bs + skip as u64);
        let n = pass * d.loops.unwrap_or(1);
        let ios = keys
            .get("number_ios")
            .and_then(Value::as_u64)
            .map_or(n, |m| m.min(n));
        keys.insert("number_ios".into(), json!(ios));
        notes.push(format!("rw with a skip of {skip} bytes: fio ends each pass at the region's end, {pass} I/Os here; fslab-engine does {ios} (`number_ios`)"));
    }
    if let Some(n) = d.loops.filter(|&n| n > 1 && !d.time_based) {
        let once = keys
            .get("io_size")
            .or_else(|| keys.get("size"))
            .and_then(Value::as_u64);
        match once {
            Some(b) => {
                keys.insert("io_size".into(), json!(b.saturating_mul(n)));
            }
            None => notes.push(format!(
                "loops={n}: the job has no `size` to repeat here; the engine does its target's size once"
            )),
        }
    }
    let rw = keys
        .get("rw")
        .and_then(Value::as_str)
        .unwrap_or("read")
        .to_string();
    let mix = keys.get("rwmixread").and_then(Value::as_u64).unwrap_or(50);
    let (rates, rate_mix, rate_notes) = d.rates.engine_keys(&rw, mix);
    for (k, v) in rates {
        keys.insert(k.into(), json!(v));
    }
    if let Some(m) = rate_mix {
        keys.insert("rwmixread".into(), json!(m));
    }
    notes.extend(rate_notes);
    // fio starts a time-based job over when it reaches `number_ios`; it never ends it.
    if d.time_based && keys.remove("number_ios").is_some() {
        notes.push("number_ios in a time-based job: fio starts the job over at its region's start each time it is reached; fslab-engine runs on through the region for the whole `runtime`".into());
    }
    for (k, v) in &overrides.set {
        keys.insert(k.clone(), v.clone());
    }
    // After `--set`, so nothing moves a file back out (and `check_overrides` refuses
    // the keys that would try).
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
    // fio lets a synchronous engine carry any iodepth and batch sizes (they have no
    // effect there); the engine refuses them, so they go, with a note.
    let engine = keys
        .get("ioengine")
        .and_then(Value::as_str)
        .unwrap_or("sync")
        .to_string();
    let sync = matches!(engine.as_str(), "sync" | "mmap" | "falloc" | "ftruncate");
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
    match d.file_op {
        Some(op) => files_job(d, op, name, &mut keys, &mut notes),
        None if d.nrfiles.is_some_and(|n| n > 1) && keys.contains_key("filename") => {
            // fio takes its files from `filename` when it names them: one file here.
            keys.remove("file_service_type");
            notes.push(format!(
                "nrfiles={} with filename: fio uses the one file `filename` names; so does fslab-engine",
                d.nrfiles.unwrap_or(1)
            ));
        }
        None if d.nrfiles.is_some_and(|n| n > 1) => {
            let n = d.nrfiles.unwrap_or(1);
            // fio's `size` is the clone's, over all its files; `filesize` each file's.
            let by_filesize = d
                .sources
                .get("size")
                .is_some_and(|(_, _, option)| option == "filesize");
            if let (false, Some(total)) = (by_filesize, keys.get("size").and_then(Value::as_u64)) {
                keys.insert("size".into(), json!(total / n));
                if !d.time_based {
                    keys.entry("io_size").or_insert(json!(total));
                }
            }
            keys.insert("nrfiles".into(), json!(n));
        }
        None => {
            keys.remove("file_service_type");
        }
    }
    // A trace named by a relative path is looked for beside the job file (the lab runs
    // job files from anywhere); fio looks in the current directory.
    if let (Some(log), Some((place, _, _))) = (
        keys.get("read_iolog")
            .and_then(Value::as_str)
            .map(str::to_string),
        d.sources.get("read_iolog"),
    ) {
        let beside = Path::new(&place.file)
            .parent()
            .filter(|p| !p.as_os_str().is_empty());
        if let (false, Some(dir)) = (Path::new(&log).is_absolute(), beside) {
            let joined = dir.join(&log);
            notes.push(format!(
                "read_iolog={log}: looked for beside the job file, `{}` (fio looks in the current directory)",
                joined.display()
            ));
            keys.insert("read_iolog".into(), json!(joined.display().to_string()));
        }
    }
    if keys.contains_key("read_iolog") {
        // The trace says what each I/O is: what fio's job says instead does not apply.
        let dropped: Vec<&str> = spec::REPLAY_SHAPED
            .iter()
            .copied()
            .filter(|k| keys.remove(*k).is_some())
            .collect();
        if !dropped.is_empty() {
            notes.push(format!(
                "read_iolog: the trace says what each I/O is; {} left out",
                dropped.join(", ")
            ));
        }
    }
    let resolved = spec::spec_from_value(Value::Object(keys)).and_then(|spec| {
        let job = spec.resolve()?;
        Ok((spec, job))
    });
    match resolved {
        Ok((spec, mut job)) => {
            notes.extend(spec.warnings(&job).into_iter().map(|w| w.message));
            job.beneath.clone_from(&overrides.within);
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

/// fio's file engines (`filecreate`, `filestat`, `filedelete`) as a files job: each
/// clone's `nrfiles` files in a tree of the job's own, `<directory>/<name>.files`.
fn files_job(
    d: &Draft,
    op: &str,
    name: &str,
    keys: &mut serde_json::Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let dir = keys
        .get("directory")
        .and_then(Value::as_str)
        .unwrap_or(".")
        .to_string();
    if keys.contains_key("filename") {
        notes.push(format!(
            "ioengine=file{op}: `filename` is left out; the job's files are made under `directory`"
        ));
    }
    let numjobs = keys.get("numjobs").and_then(Value::as_u64).unwrap_or(1);
    let nrfiles = d.nrfiles.unwrap_or(1);
    // `filesize` is each file's size; `size` is the job's, split over its files.
    let by_filesize = d
        .sources
        .get("size")
        .is_some_and(|(_, _, option)| option == "filesize");
    let size = keys.get("size").and_then(Value::as_u64).unwrap_or(0);
    let file_size = match op {
        // fio's filecreate only opens (creates) each file: it stays empty.
        "create" => 0,
        _ if by_filesize => size,
        _ => size / nrfiles.max(1),
    };
    let kept: Vec<(String, Value)> = keys
        .iter()
        .filter(|(k, _)| {
            spec::KEYS
                .iter()
                .any(|key| key.name == k.as_str() && key.kinds.contains(&spec::Kind::Files))
                && ![
                    "filename",
                    "directory",
                    "size",
                    "io_size",
                    "rw",
                    "bs",
                    "runtime",
                ]
                .contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    keys.clear();
    keys.extend(kept);
    keys.insert("kind".into(), json!("files"));
    keys.insert("op".into(), json!(op));
    keys.insert(
        "directory".into(),
        json!(std::path::Path::new(&dir)
            .join(format!("{name}.files"))
            .display()
            .to_string()),
    );
    keys.insert(
        "nr_files".into(),
        json!(nrfiles.saturating_mul(numjobs).max(1)),
    );
    keys.insert("file_size".into(), json!(file_size));
    if op != "create" {
        keys.insert("create_first".into(), json!(true));
    }
    notes.push(format!(
        "ioengine=file{op}: a files job (`op = \"{op}\"`) over {nrfiles} files per clone in `{dir}/{name}.files`{}; each file is one operation of the report",
        if op == "create" { "" } else { ", created first (unmeasured) as fio lays them out" }
    ));
    if op == "stat" {
        // fio stats a job's files again each loop, and a time-based job until `runtime`.
        match (d.time_based, d.runtime_s) {
            (true, Some(r)) => {
                keys.insert("loops".into(), json!(spec::MAX_LOOPS));
                keys.insert("runtime".into(), json!(r));
            }
            (true, None) => {
                keys.insert("loops".into(), json!(spec::MAX_LOOPS));
                keys.insert("runtime".into(), json!(UNTIL_STOPPED_S));
            }
            (false, _) => {
                if let Some(n) = d.loops.filter(|&n| n > 1) {
                    keys.insert("loops".into(), json!(n));
                }
            }
        }
    } else if d.time_based || d.loops.is_some_and(|n| n > 1) {
        notes.push(format!(
            "time_based, loops: a files job with `op = \"{op}\"` does its files once (fio would start over)"
        ));
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
        let waits: Vec<&str> = j
            .deps
            .iter()
            .map(|&k| &plan.jobs[k].at)
            .filter(|o| o.phase == j.at.phase)
            .map(|o| o.name.as_str())
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
    // Names and values are the file's: a terminal shows them, never acts on them.
    out.split('\n').map(escaped).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str, overrides: &Overrides) -> Result<Plan, Vec<Problem>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.fio");
        std::fs::write(&path, text).unwrap();
        load(&[path], &|_| None, overrides)
    }

    #[test]
    fn a_phase_is_a_barrier_for_every_job_in_it() {
        // fio starts [c] with [b], after [a]: not at once with [a].
        let plan = load_text(
            "[global]\nioengine=null\n[a]\n[b]\nstonewall\n[c]\n[d]\nwait_for=c\n",
            &Overrides::default(),
        )
        .unwrap();
        let phases: Vec<u32> = plan.jobs.iter().map(|j| j.at.phase).collect();
        assert_eq!(phases, [0, 1, 1, 1]);
        assert!(plan.jobs[1].deps.is_empty() && plan.jobs[2].deps.is_empty());
        assert_eq!(plan.jobs[3].deps, [2]);
        assert_eq!(plan.jobs[3].at.after, ["c"]);
    }

    #[test]
    fn thousands_of_stonewalls_check_in_linear_time() {
        let text: String = (0..4000)
            .map(|i| {
                format!(
                    "[j{i}]\nioengine=null\nstonewall\nwait_for=j{}\n",
                    i.max(1) - 1
                )
            })
            .collect::<String>()
            .replacen("wait_for=j0\n", "", 1);
        let plan = load_text(&text, &Overrides::default()).unwrap();
        assert_eq!(plan.jobs.len(), 4000);
        assert_eq!(plan.jobs[3999].at.phase, 3999);
        // What made it quadratic: a list of every job above, per stonewall.
        let after: usize = plan.jobs.iter().map(|j| j.at.after.len()).sum();
        assert_eq!(after, 3999, "one name per wait_for, none per stonewall");
        let deps: usize = plan.jobs.iter().map(|j| j.deps.len()).sum();
        assert_eq!(
            deps, 3999,
            "one dependency per wait_for, none per stonewall"
        );
    }

    #[test]
    fn globals_apply_to_every_job_below_with_its_own_kb_base() {
        let plan = load_text(
            "[global]\nioengine=null\nsize=1m\n[a]\n[b]\nkb_base=1000\n[global]\nbs=8k\n[c]\n",
            &Overrides::default(),
        )
        .unwrap();
        let sizes: Vec<_> = plan.jobs.iter().map(|j| (j.job.size, j.job.bs)).collect();
        assert_eq!(
            sizes,
            [
                (Some(1 << 20), 4096),
                (Some(1_000_000), 4096),
                (Some(1 << 20), 8192)
            ]
        );
    }

    #[test]
    fn a_global_randrepeat_0_seeds_each_job_apart() {
        let plan = load_text(
            "[global]\nioengine=null\nrandrepeat=0\n[a]\n[b]\n[c]\nrandseed=7\n",
            &Overrides::default(),
        )
        .unwrap();
        let seeds: Vec<u64> = plan.jobs.iter().map(|j| j.job.randseed).collect();
        assert_ne!(seeds[0], seeds[1]);
        assert_eq!(seeds[2], 7);
    }

    #[test]
    fn too_many_clones_are_refused() {
        let text = "[global]\nioengine=null\nnumjobs=1024\n[a]\n[b]\n[c]\n[d]\n[e]\n";
        let problems = load_text(text, &Overrides::default()).unwrap_err();
        assert!(
            problems[0].message.contains("5120 clones in all"),
            "{problems:?}"
        );
    }

    #[test]
    fn set_may_not_move_files_out_of_within() {
        for key in WITHIN_FIXED {
            let overrides = Overrides {
                set: vec![(key.to_string(), json!("/elsewhere"))],
                within: Some(PathBuf::from("/w")),
            };
            let problems = load_text("[j]\nrw=read\nsize=4k\n", &overrides).unwrap_err();
            assert!(
                problems.iter().any(
                    |p| p.place == "--set" && p.message.contains("cannot be set with --within")
                ),
                "{key}: {problems:?}"
            );
        }
        let overrides = Overrides {
            set: vec![("bs".into(), json!("8k"))],
            within: Some(PathBuf::from("/w")),
        };
        let plan = load_text("[j]\nrw=read\nsize=64k\nfilename=/abs/x\n", &overrides).unwrap();
        let job = &plan.jobs[0].job;
        assert_eq!(job.path_for(0), Some(PathBuf::from("/w/x")));
        assert_eq!(job.beneath.as_deref(), Some(Path::new("/w")));
        assert_eq!(job.bs, 8192);
    }

    #[test]
    fn an_included_line_is_located_not_quoted() {
        let line = "rw=SECRETVALUE123";
        let said = conceal("`SECRETVALUE123` is not a direction (read, write)", line);
        assert_eq!(said, "`…` is not a direction (read, write)");
        let said = conceal("12345 files per job are not supported", "nrfiles=12345");
        assert_eq!(said, "… files per job are not supported");
        // An option's own name stays: it says nothing of the file.
        let said = conceal(
            "has no `runtime`: fio would run until stopped",
            "time_based",
        );
        assert_eq!(said, "has no `runtime`: fio would run until stopped");
    }

    #[test]
    fn quoted_text_is_escaped_and_cut() {
        assert_eq!(shown("`a\nb\x1b`: x"), "`a\\x0ab\\x1b`: x");
        let long = format!("`{}`: bad", "x".repeat(100));
        let said = shown(&long);
        assert_eq!(said.chars().count(), MAX_QUOTED + 2 + ": bad".len());
        assert!(said.contains('…'));
        assert_eq!(shown("\u{202e}evil"), "\\u{202e}evil");
    }
}
