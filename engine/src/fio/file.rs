//! Reading fio job files as fio does (fio HOWTO, "Job file format"; init.c, parse.c):
//! INI sections, `;`/`#` comments (a whole line, or the rest of a line: fio cuts a value
//! at its first `;` or `#`), options outside any section refused, `include FILE` inside a
//! section (relative to the including file, nestable, no sections in it), `${VAR}` from
//! the environment (undefined is an error here, where fio silently uses an empty string),
//! and fio's keywords `$pagesize`, `$mb_memory`, `$ncpus`. Any section whose name starts
//! with `global` is a global section; its options apply to the jobs below it in the same
//! file (each file starts afresh, as in fio).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Problem;
use crate::input::{self, MAX_JOB_BYTES};

/// The most sections (jobs and globals) read from all the files together: fio's own
/// limit on jobs (`max_jobs`, 4096).
pub const MAX_SECTIONS: usize = 4096;
/// The most text read from the files and their includes together: an include may name
/// one file many times.
pub const MAX_TOTAL_BYTES: u64 = 4 * MAX_JOB_BYTES;
/// The most option and include lines read from the files and their includes together.
pub const MAX_OPTIONS: usize = 200_000;
/// Reading stops after this many problems: a file that is mostly wrong says so soon.
pub const MAX_PROBLEMS: usize = 1000;

/// Where an option or section was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file as it was named (relative names as given).
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// The line's text when it is in an included file: a problem there must not show
    /// it (the file may be anyone's: `include /root/secret`), only where it is.
    pub hidden: Option<Arc<str>>,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One `name=value` (or bare `name`) line.
#[derive(Debug, Clone)]
pub struct Opt {
    pub name: String,
    pub value: Option<String>,
    pub place: Place,
}

/// One `[section]` and its options, includes expanded.
#[derive(Debug, Clone)]
pub struct Section {
    pub name: String,
    pub place: Place,
    pub global: bool,
    pub options: Vec<Opt>,
    /// The index of the file (on the command line) it came from: a new file is an
    /// implicit stonewall.
    pub file_index: usize,
}

/// Values fio's keywords stand for on this machine.
#[derive(Debug, Clone, Copy)]
pub struct Keywords {
    pub pagesize: u64,
    pub mb_memory: u64,
    pub ncpus: u64,
}

impl Keywords {
    pub fn of_this_machine() -> Self {
        // SAFETY: sysconf only reads system configuration.
        let (page, pages, cpus) = unsafe {
            (
                libc::sysconf(libc::_SC_PAGESIZE),
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
            )
        };
        let page = u64::try_from(page).unwrap_or(4096);
        Self {
            pagesize: page,
            mb_memory: u64::try_from(pages).unwrap_or(0) * page / (1 << 20),
            ncpus: u64::try_from(cpus).unwrap_or(1),
        }
    }
}

/// Reads `files` in order into sections. Every problem is collected into `problems`.
pub fn read(
    files: &[PathBuf],
    env: &dyn Fn(&str) -> Option<String>,
    keywords: Keywords,
    problems: &mut Vec<Problem>,
) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut budget = Budget {
        bytes: MAX_TOTAL_BYTES,
        options: MAX_OPTIONS,
        spent: false,
    };
    for (index, path) in files.iter().enumerate() {
        let name = path.display().to_string();
        let text = match input::read_file(path, MAX_JOB_BYTES) {
            Ok(t) => t,
            Err(e) => {
                problems.push(
                    Problem::whole(&name, format!("cannot read the job file: it {e}"))
                        .hint("give a fio job file: a text file of `[job]` sections and `option=value` lines"),
                );
                continue;
            }
        };
        if budget.spend_bytes(text.len()).is_err() {
            problems.push(Problem::whole(&name, budget.said()));
            break;
        }
        let mut reader = Reader {
            env,
            keywords,
            problems,
            sections: &mut sections,
            file_index: index,
            depth: 0,
            budget: &mut budget,
        };
        reader.lines(&name, path, &text, false);
        if budget.spent {
            break;
        }
    }
    sections
}

/// What is left of the limits on all the files read together.
struct Budget {
    bytes: u64,
    options: usize,
    /// A limit was reached and said: reading stops.
    spent: bool,
}

impl Budget {
    fn spend_bytes(&mut self, n: usize) -> Result<(), ()> {
        match self.bytes.checked_sub(n as u64) {
            Some(left) => {
                self.bytes = left;
                Ok(())
            }
            None => {
                self.spent = true;
                Err(())
            }
        }
    }

    fn said(&self) -> String {
        format!(
            "the job files and their includes come to more than {} MiB, the most fslab-engine reads",
            MAX_TOTAL_BYTES >> 20
        )
    }
}

struct Reader<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    keywords: Keywords,
    problems: &'a mut Vec<Problem>,
    sections: &'a mut Vec<Section>,
    file_index: usize,
    depth: usize,
    budget: &'a mut Budget,
}

/// Includes nested deeper than this are a loop.
const MAX_INCLUDE_DEPTH: usize = 16;

impl Reader<'_> {
    fn lines(&mut self, name: &str, path: &Path, text: &str, included: bool) {
        // An included file continues the section that included it.
        let mut in_section = included;
        for (i, raw) in text.lines().enumerate() {
            if self.budget.spent {
                return;
            }
            if self.problems.len() >= MAX_PROBLEMS {
                self.budget.spent = true;
                return;
            }
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            let place = Place {
                file: name.to_string(),
                line: i + 1,
                hidden: included.then(|| Arc::from(line)),
            };
            if let Some(rest) = line.strip_prefix('[') {
                let Some(sname) = rest.strip_suffix(']') else {
                    self.problems.push(Problem::at(
                        &place,
                        None,
                        None,
                        format!("`{line}`: a section header is `[name]`"),
                    ));
                    continue;
                };
                if included {
                    self.problems.push(
                        Problem::at(
                            &place,
                            None,
                            None,
                            format!(
                                "`[{sname}]`: an included file may not hold sections (fio's rule)"
                            ),
                        )
                        .hint("move the section into the including file"),
                    );
                    continue;
                }
                let sname = sname.trim();
                if sname.is_empty() {
                    self.problems.push(Problem::at(
                        &place,
                        None,
                        None,
                        "a section needs a name".to_string(),
                    ));
                    continue;
                }
                if self.sections.len() == MAX_SECTIONS {
                    self.problems.push(
                        Problem::at(
                            &place,
                            None,
                            None,
                            format!("a section past the {MAX_SECTIONS}th: fslab-engine reads at most {MAX_SECTIONS} (fio's own limit on jobs)"),
                        )
                        .hint("split the file, or use `numjobs` for many like jobs"),
                    );
                    self.budget.spent = true;
                    return;
                }
                self.sections.push(Section {
                    name: sname.to_string(),
                    place,
                    global: sname.starts_with("global"),
                    options: Vec::new(),
                    file_index: self.file_index,
                });
                in_section = true;
                continue;
            }
            if let Some(target) = line.strip_prefix("include ").map(str::trim) {
                if self.budget.options == 0 {
                    self.problems.push(Problem::at(
                        &place,
                        None,
                        Some("include"),
                        format!("a line past the {MAX_OPTIONS}th option or include: fslab-engine reads at most {MAX_OPTIONS}"),
                    ));
                    self.budget.spent = true;
                    return;
                }
                self.budget.options -= 1;
                if !in_section {
                    self.problems.push(Problem::at(
                        &place,
                        None,
                        Some("include"),
                        "is outside any section".to_string(),
                    ));
                    continue;
                }
                self.include(&place, path, target);
                continue;
            }
            if !in_section {
                self.problems.push(
                    Problem::at(
                        &place,
                        None,
                        None,
                        format!("`{line}` is outside any section"),
                    )
                    .hint("options belong to a `[job]` or `[global]` section"),
                );
                continue;
            }
            let (key, value) = match line.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (line, None),
            };
            let section = self.sections.last().map(|s| s.name.clone());
            let value = match value.map(|v| self.expand(v, &place, section.as_deref(), key)) {
                Some(Some(v)) => Some(v),
                Some(None) => continue,
                None => None,
            };
            if self.budget.options == 0 {
                self.problems.push(Problem::at(
                    &place,
                    None,
                    None,
                    format!("an option line past the {MAX_OPTIONS}th: fslab-engine reads at most {MAX_OPTIONS}"),
                ));
                self.budget.spent = true;
                return;
            }
            self.budget.options -= 1;
            if let Some(s) = self.sections.last_mut() {
                s.options.push(Opt {
                    name: key.to_string(),
                    value,
                    place,
                });
            }
        }
    }

    fn include(&mut self, place: &Place, including: &Path, target: &str) {
        if self.depth >= MAX_INCLUDE_DEPTH {
            self.problems.push(Problem::at(
                place,
                None,
                Some("include"),
                format!("`{target}`: includes nest deeper than {MAX_INCLUDE_DEPTH} (a loop?)"),
            ));
            return;
        }
        let path = match including.parent() {
            Some(dir) if Path::new(target).is_relative() => dir.join(target),
            _ => PathBuf::from(target),
        };
        match input::read_file(&path, MAX_JOB_BYTES) {
            Ok(text) => {
                if self.budget.spend_bytes(text.len()).is_err() {
                    let said = self.budget.said();
                    self.problems
                        .push(Problem::at(place, None, Some("include"), said));
                    return;
                }
                self.depth += 1;
                let name = path.display().to_string();
                self.lines(&name, &path, &text, true);
                self.depth -= 1;
            }
            Err(e) => {
                let hint = match e {
                    input::ReadError::Io(_) => {
                        "an include is relative to the file that includes it"
                    }
                    _ => "include a fio job file: `option=value` lines",
                };
                self.problems.push(
                    Problem::at(
                        place,
                        None,
                        Some("include"),
                        format!("`{}` {}", path.display(), include_error(&e)),
                    )
                    .hint(hint),
                );
            }
        }
    }

    /// `${VAR}` and fio's `$keywords` replaced; `None` (a problem recorded) when a
    /// variable is undefined.
    fn expand(
        &mut self,
        value: &str,
        place: &Place,
        section: Option<&str>,
        key: &str,
    ) -> Option<String> {
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        let mut ok = true;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let tail = &rest[at + 1..];
            if let Some(body) = tail.strip_prefix('{') {
                let Some(end) = body.find('}') else {
                    self.problems.push(Problem::at(
                        place,
                        section,
                        Some(key),
                        format!("`{value}`: a `${{` is not closed"),
                    ));
                    return None;
                };
                let var = &body[..end];
                if !is_variable_name(var) {
                    self.problems.push(
                        Problem::at(
                            place,
                            section,
                            Some(key),
                            format!("`${{{var}}}`: a variable's name is letters, digits and `_`, not starting with a digit"),
                        )
                        .hint("write the name itself, e.g. `${DIR}` (fio does not nest `${...}`)"),
                    );
                    ok = false;
                    rest = &body[end + 1..];
                    continue;
                }
                match (self.env)(var) {
                    Some(v) => out.push_str(&v),
                    None => {
                        self.problems.push(
                            Problem::at(place, section, Some(key), format!("`${{{var}}}` is not defined"))
                                .hint(format!("set it in the environment (`{var}=... fslab-engine ...`); fio would use an empty string")),
                        );
                        ok = false;
                    }
                }
                rest = &body[end + 1..];
                continue;
            }
            let word: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let v = match word.as_str() {
                "pagesize" => Some(self.keywords.pagesize),
                "mb_memory" => Some(self.keywords.mb_memory),
                "ncpus" => Some(self.keywords.ncpus),
                _ => None,
            };
            match v {
                Some(v) => out.push_str(&v.to_string()),
                // `filename_format`'s own keywords, filled in per file by the option.
                None if FILE_KEYWORDS.contains(&word.as_str()) => {
                    out.push('$');
                    out.push_str(&word);
                }
                None => {
                    self.problems.push(
                        Problem::at(place, section, Some(key), format!("`${word}` is not one of fio's keywords"))
                            .hint("fio knows `$pagesize`, `$mb_memory`, `$ncpus` (and in `filename_format`, `$jobname`, `$jobnum`, `$filenum`); environment variables are written `${NAME}`"),
                    );
                    ok = false;
                }
            }
            rest = &tail[word.len()..];
        }
        out.push_str(rest);
        ok.then_some(out)
    }
}

/// `NAME` in `${NAME}`: what a shell would take for a variable's name.
fn is_variable_name(var: &str) -> bool {
    let mut chars = var.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why an include is not read, said of its path.
fn include_error(e: &input::ReadError) -> String {
    match e {
        input::ReadError::Io(io) => format!("cannot be read: {io}"),
        other => other.to_string(),
    }
}

/// A line without its comment: fio cuts at the first `;` or `#` anywhere.
fn strip_comment(line: &str) -> &str {
    match line.find([';', '#']) {
        Some(i) => &line[..i],
        None => line,
    }
}

/// The keywords `filename_format` fills in per file, left for it by the reader.
const FILE_KEYWORDS: &[&str] = &["jobname", "jobnum", "filenum", "clientuid"];

#[cfg(test)]
mod tests {
    use super::*;

    fn keywords() -> Keywords {
        Keywords {
            pagesize: 4096,
            mb_memory: 1024,
            ncpus: 2,
        }
    }

    fn read_text(text: &str, env: &dyn Fn(&str) -> Option<String>) -> (Vec<Section>, Vec<Problem>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.fio");
        std::fs::write(&path, text).unwrap();
        let mut problems = Vec::new();
        let sections = read(&[path], env, keywords(), &mut problems);
        (sections, problems)
    }

    #[test]
    fn sections_options_comments_and_bare_options() {
        let text = "; a comment\n[global]\nbs=4k ; inline\n# another\n[job-1]\nrw = randread\ntime_based\n";
        let (s, p) = read_text(text, &|_| None);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(s.len(), 2);
        assert!(s[0].global && !s[1].global);
        assert_eq!(s[0].options[0].value.as_deref(), Some("4k"));
        assert_eq!(s[1].options[0].name, "rw");
        assert_eq!(s[1].options[0].value.as_deref(), Some("randread"));
        assert_eq!(s[1].options[1].value, None);
        assert_eq!(s[1].options[1].place.line, 7);
    }

    #[test]
    fn variables_and_keywords_are_expanded_and_undefined_ones_refused() {
        let env = |v: &str| (v == "BS").then(|| "8k".to_string());
        let (s, p) = read_text(
            "[j]\nbs=${BS}\nsize=(4*$pagesize)\nfilename=${NOPE}\n",
            &env,
        );
        assert_eq!(s[0].options[0].value.as_deref(), Some("8k"));
        assert_eq!(s[0].options[1].value.as_deref(), Some("(4*4096)"));
        assert_eq!(p.len(), 1);
        assert!(
            p[0].to_string()
                .contains("j.fio:4 [j] filename: `${NOPE}` is not defined"),
            "{}",
            p[0]
        );
    }

    #[test]
    fn options_outside_a_section_and_sections_in_includes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inc.fio"), "iodepth=8\n").unwrap();
        std::fs::write(dir.path().join("bad.fio"), "[x]\n").unwrap();
        let main = dir.path().join("m.fio");
        std::fs::write(
            &main,
            "bs=4k\n[j]\ninclude inc.fio\ninclude bad.fio\ninclude missing.fio\n",
        )
        .unwrap();
        let mut p = Vec::new();
        let s = read(&[main], &|_| None, keywords(), &mut p);
        assert_eq!(s[0].options[0].name, "iodepth");
        let said: Vec<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said[0].contains("m.fio:1") && said[0].contains("outside any section"));
        assert!(said[1].contains("bad.fio:1") && said[1].contains("may not hold sections"));
        assert!(said[2].contains("m.fio:5") && said[2].contains("cannot be read"));
    }

    #[test]
    fn includes_of_devices_fifos_and_binary_files_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::fs::write(dir.path().join("bin"), b"rw=read\0\x01").unwrap();
        let main = dir.path().join("m.fio");
        std::fs::write(
            &main,
            "[j]\ninclude /dev/zero\ninclude /dev/urandom\ninclude fifo\ninclude bin\ninclude /proc/self/environ\n",
        )
        .unwrap();
        let mut p = Vec::new();
        read(&[main], &|_| None, keywords(), &mut p);
        let said: Vec<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 5, "{said:?}");
        assert!(said[0].contains("m.fio:2 include: `/dev/zero` is a character device"));
        assert!(said[1].contains("m.fio:3") && said[1].contains("character device"));
        assert!(said[2].contains("m.fio:4") && said[2].contains("is a FIFO"));
        assert!(said[3].contains("m.fio:5") && said[3].contains("NUL byte at offset 7"));
        assert!(said[4].contains("m.fio:6") && said[4].contains("NUL byte"));
    }

    #[test]
    fn sections_past_the_limit_are_refused_once() {
        let text: String = (0..MAX_SECTIONS + 10)
            .map(|i| format!("[j{i}]\nrw=read\n"))
            .collect();
        let (s, p) = read_text(&text, &|_| None);
        assert_eq!(s.len(), MAX_SECTIONS);
        assert_eq!(p.len(), 1, "{p:?}");
        let at = format!("j.fio:{}: a section past the 4096th", 2 * MAX_SECTIONS + 1);
        assert!(p[0].to_string().contains(&at), "{}", p[0]);
    }

    #[test]
    fn a_self_include_stops_at_the_byte_budget_or_depth() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("m.fio");
        let inc = dir.path().join("loop.fio");
        std::fs::write(&main, "[j]\ninclude loop.fio\n").unwrap();
        std::fs::write(&inc, "include loop.fio\n".repeat(10)).unwrap();
        let mut p = Vec::new();
        read(&[main], &|_| None, keywords(), &mut p);
        assert!(!p.is_empty());
    }

    #[test]
    fn variable_names_are_checked() {
        let env = |v: &str| (v == "X").then(|| "4k".to_string());
        let (_, p) = read_text("[j]\nbs=${${X}}\nsize=${}\n", &env);
        let said: Vec<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("a variable's name is letters"), "{said:?}");
        assert!(!p[0].hint.as_deref().unwrap().contains("${X="), "{p:?}");
    }
}
