//! Every fio option fslab-engine knows, in one table: **mapped** (translated into the
//! engine's own job keys with fio's meaning), **inert** (accepted, listed in the output,
//! no effect, with the reason) or **refused** (with the reason). A name in no row is
//! refused as unknown, with the closest known name. docs/fio.md is generated from this
//! table (`fslab-engine fio-options`; a test fails when the committed copy is stale).

use serde_json::{json, Value};

use super::file::Place;
use super::value::{self, KbBase};

/// What a job's options have set so far: engine keys and the fio-only state that decides
/// the rest (time or size, phases, groups).
#[derive(Debug, Default, Clone)]
pub struct Draft {
    /// Engine job keys (docs/job-keys.md).
    pub keys: serde_json::Map<String, Value>,
    pub kb_base: Option<KbBase>,
    pub time_based: bool,
    pub runtime_s: Option<f64>,
    pub stonewall: bool,
    pub new_group: bool,
    pub wait_for: Option<String>,
    pub group_reporting: bool,
    /// `libaio` or `posixaio`, when the job asked for one of them.
    pub async_engine: Option<String>,
    /// `loops`: a size-based job's passes over its `size`.
    pub loops: Option<u64>,
    /// `rate`, `rate_iops` and their minimums, per direction (reads, writes): the
    /// engine paces a thread's total, worked out once `rw` and the mix are known.
    pub rates: Rates,
    /// `continue_on_error` (`none`, `read`, `write`, `io`) and `ignore_error`'s lists for
    /// reads and writes (`None`: fio's default, EIO and EILSEQ), made one engine list
    /// once both are known.
    pub continue_on: Option<&'static str>,
    /// `ioengine=filecreate`, `filestat`, `filedelete`: the files op (`create`...).
    pub file_op: Option<&'static str>,
    /// `nrfiles`: more than 1 only with a file engine.
    pub nrfiles: Option<u64>,
    /// `ioengine=cpuio` and its `cpuload` (percent) and `cpuchunks` (microseconds).
    pub cpuio: bool,
    /// `ioengine=exec`: a null job with its `program` beside it.
    pub exec: bool,
    pub cpuload: Option<u64>,
    pub cpuchunks: Option<u64>,
    /// `dedupe_mode=working_set`: the working-set keys apply (else they are dropped).
    pub dedupe_working_set: bool,
    /// `do_verify` (fio's default 1): a writing verify job reads back what it wrote.
    pub do_verify: Option<bool>,
    /// `exitall`, `exit_what`, `exitall_on_error`: kept in the plan, done by the runner.
    pub exitall: bool,
    pub exit_what: Option<&'static str>,
    pub exitall_on_error: bool,
    pub ignore_error: [Option<Vec<String>>; 2],
    /// Things fio does that the engine does differently, said once per job.
    pub notes: Vec<String>,
    /// Which option (place, section, name) last set each engine key: the engine's own
    /// complaints about a key are told at the option.
    pub sources: std::collections::BTreeMap<String, (Place, String, String)>,
}

/// fio's per-direction rates, as given.
#[derive(Debug, Default, Clone)]
pub struct Rates {
    pub bytes: Option<[Option<u64>; 2]>,
    pub iops: Option<[Option<u64>; 2]>,
    pub bytes_min: Option<[Option<u64>; 2]>,
    pub iops_min: Option<[Option<u64>; 2]>,
}

impl Rates {
    /// The engine's `rate`/`rate_iops` (and minimums) for a thread's total, from fio's
    /// per-direction ones, and the mix they make. fio paces each direction on its own
    /// and lets the rates, not `rwmixread`, set a mixed job's mix (measured: `rate_iops=2000`
    /// at `rwmixread=70` gives 2000 reads and 2000 writes a second); so a mixed job with
    /// both rates runs at their sum, mixed as they are. With one direction's rate only, fio
    /// lets the other run free, which a total cannot say: the engine keeps the mix and
    /// paces the total so that the paced direction keeps its rate (a note says so).
    pub fn engine_keys(
        &self,
        rw: &str,
        rwmixread: u64,
    ) -> (Vec<(&'static str, u64)>, Option<u64>, Vec<String>) {
        let m = match rw {
            "read" | "randread" => 1.0,
            "write" | "randwrite" => 0.0,
            _ => rwmixread as f64 / 100.0,
        };
        let mixed = m > 0.0 && m < 1.0;
        let mut keys = Vec::new();
        let mut mix = None;
        let mut notes = Vec::new();
        for (key, pair) in [
            ("rate", self.bytes),
            ("rate_iops", self.iops),
            ("rate_min", self.bytes_min),
            ("rate_iops_min", self.iops_min),
        ] {
            let Some([r, w]) = pair else { continue };
            let total = match (r.filter(|_| m > 0.0), w.filter(|_| m < 1.0)) {
                (Some(r), Some(w)) if mixed => {
                    if key == "rate" || key == "rate_iops" {
                        mix = Some(((100 * r) as f64 / (r + w) as f64).round() as u64);
                    }
                    r + w
                }
                (Some(r), None) if mixed => {
                    notes.push(format!("{key}={r} for reads only: fio lets the writes run free; fslab-engine keeps `rwmixread` and paces the total so that reads keep {r}"));
                    (r as f64 / m).round() as u64
                }
                (None, Some(w)) if mixed => {
                    notes.push(format!("{key}={w} for writes only: fio lets the reads run free; fslab-engine keeps `rwmixread` and paces the total so that writes keep {w}"));
                    (w as f64 / (1.0 - m)).round() as u64
                }
                (Some(a), _) | (_, Some(a)) => a,
                (None, None) => continue,
            };
            keys.push((key, total.max(1)));
        }
        if let Some(mix) = mix {
            notes.push(format!(
                "fio paces reads and writes apart, and their rates set the mix: fslab-engine paces each thread's total ({}) with `rwmixread = {mix}`",
                keys.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
            ));
        }
        (keys, mix, notes)
    }
}

/// A per-direction value: `a` for both, `a,b` reads and writes (an empty part: none),
/// a third part (trims) ignored.
fn per_direction(
    v: &str,
    one: impl Fn(&str) -> Result<u64, String>,
) -> Result<[Option<u64>; 2], String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let read = |p: &str| {
        if p.is_empty() {
            Ok(None)
        } else {
            one(p).map(Some)
        }
    };
    match parts[..] {
        [a] => {
            let x = read(a)?;
            Ok([x, x])
        }
        [a, b] | [a, b, _] => Ok([read(a)?, read(b)?]),
        _ => Err(format!(
            "`{v}`: at most reads, writes and trims (`,` between them)"
        )),
    }
}

impl Draft {
    fn base(&self) -> KbBase {
        self.kb_base.unwrap_or(KbBase::Binary)
    }
    fn set(&mut self, key: &str, v: Value) {
        self.keys.insert(key.to_string(), v);
    }
}

/// Sets the draft from one option's value (`None`: written bare).
pub type Apply = fn(&mut Draft, Option<&str>) -> Result<(), String>;

#[derive(Clone, Copy)]
pub enum Class {
    Mapped(Apply),
    Inert(&'static str),
    Refused(&'static str),
}

pub struct FioOption {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub class: Class,
    /// What the mapping means, for docs/fio.md (mapped rows).
    pub means: &'static str,
}

const fn mapped(
    name: &'static str,
    aliases: &'static [&'static str],
    apply: Apply,
    means: &'static str,
) -> FioOption {
    FioOption {
        name,
        aliases,
        class: Class::Mapped(apply),
        means,
    }
}
const fn inert(
    name: &'static str,
    aliases: &'static [&'static str],
    why: &'static str,
) -> FioOption {
    FioOption {
        name,
        aliases,
        class: Class::Inert(why),
        means: "",
    }
}
const fn refused(
    name: &'static str,
    aliases: &'static [&'static str],
    why: &'static str,
) -> FioOption {
    FioOption {
        name,
        aliases,
        class: Class::Refused(why),
        means: "",
    }
}

fn need(v: Option<&str>) -> Result<&str, String> {
    v.ok_or_else(|| "needs a value".to_string())
}

/// `key` = the value read as a size, in bytes (with the job's `kb_base`).
fn size_key(d: &mut Draft, key: &str, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    // fio splits a value at `:` (or `-`) and stores each part in turn into a one-value
    // option: `size=64k:256k` is 256k, the last (measured with fio 3.33).
    let t = v.trim();
    if !t.starts_with(['(', '-']) {
        if let Some(cut) = t.rfind([':', '-']) {
            let last = &t[cut + 1..];
            for part in t.split([':', '-']) {
                value::size(part, d.base())?;
            }
            d.notes.push(format!(
                "{key}={t}: fio takes a list here as its last value, {last}"
            ));
            return size_key(d, key, Some(last));
        }
    }
    // A share of the file or device: the engine's `size`/`offset` take it as it is.
    if matches!(key, "size" | "offset") && v.trim().ends_with('%') {
        d.set(key, json!(v.trim()));
        return Ok(());
    }
    let s = value::size(v, d.base())?;
    d.set(key, json!(s));
    Ok(())
}

/// `key` = the value read as a whole number.
fn int_key(d: &mut Draft, key: &str, v: Option<&str>) -> Result<(), String> {
    d.set(key, json!(value::int(need(v)?)?));
    Ok(())
}

/// `key` = the value read as a boolean (bare is true).
fn bool_key(d: &mut Draft, key: &str, v: Option<&str>) -> Result<(), String> {
    d.set(key, json!(value::boolean(v)?));
    Ok(())
}

/// `key` = the value read as a time, in seconds.
fn time_key(d: &mut Draft, key: &str, v: Option<&str>) -> Result<(), String> {
    d.set(key, json!(value::time_s(need(v)?)?));
    Ok(())
}

fn a_name(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("name", json!(need(v)?));
    Ok(())
}
fn a_rw(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    let (rw, modifier) = match v.split_once(':') {
        Some((a, b)) => (a, Some(b)),
        None => (v, None),
    };
    let engine = match rw {
        "read" => "read",
        "write" => "write",
        "randread" => "randread",
        "randwrite" => "randwrite",
        "rw" | "readwrite" => "readwrite",
        "randrw" => "randrw",
        "trim" => "trim",
        "randtrim" => "randtrim",
        "trimwrite" | "randtrimwrite" => {
            return Err(format!(
                "`{v}`: a trim followed by a write of the same block is not supported (`trim` and `randtrim` are)"
            ))
        }
        _ => {
            return Err(format!(
                "`{v}` is not a direction (read, write, randread, randwrite, rw, randrw, trim, randtrim)"
            ))
        }
    };
    d.set("rw", json!(engine));
    match modifier.map(str::trim).filter(|m| !m.is_empty()) {
        None => {
            d.keys.remove("seq_skip");
            d.keys.remove("seq_run");
        }
        Some(m) if engine.starts_with("rand") => {
            let n = value::int(m).map_err(|e| format!("`{v}`: {e}"))?;
            d.set("seq_run", json!(n.max(1)));
        }
        Some(m) => {
            let (neg, body) = match m.strip_prefix('-') {
                Some(b) => (true, b),
                None => (false, m),
            };
            let n = value::size(body, d.base()).map_err(|e| format!("`{v}`: {e}"))? as i64;
            d.set("seq_skip", json!(if neg { -n } else { n }));
        }
    }
    Ok(())
}
fn a_rw_sequencer(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let _ = d;
    match need(v)? {
        "sequential" => Ok(()),
        other => Err(format!("`{other}`: only `sequential` (a new offset follows each I/O; `identical` repeats one) is supported")),
    }
}
fn a_bs(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    // `4k-16k` is a range; a `-` in an expression (`(8-4)k`... `(0-1)`) or a leading
    // one is arithmetic or a sign, told as such by `value::size`.
    let range = v.split(',').any(|p| {
        let p = p.trim();
        !p.starts_with('(') && (p.contains(':') || p.get(1..).is_some_and(|r| r.contains('-')))
    });
    if range {
        return a_bsrange(d, Some(&v.replace(':', "-")));
    }
    // `4k,8k` is reads,writes(,trims); an empty part keeps the default.
    let sizes: Vec<u64> = v
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| value::size(p, d.base()))
        .collect::<Result<_, _>>()?;
    let Some(&bs) = sizes.first() else {
        return Err("needs a value".into());
    };
    d.set("bs", json!(bs));
    d.keys.remove("bssplit");
    // `4k,64k`: reads and writes each their own size, as a mix of one size each.
    if let [r, w, ..] = sizes[..] {
        if r != w {
            d.set("bssplit", json!(format!("{r}/100,{w}/100")));
        }
    }
    Ok(())
}
fn a_filename(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    if v.replace("\\:", "").contains(':') {
        return Err(format!(
            "`{v}`: several files (`a:b`) per job are not supported"
        ));
    }
    d.set("filename", json!(v.replace("\\:", ":")));
    Ok(())
}
fn a_directory(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    if v.replace("\\:", "").contains(':') {
        return Err(format!(
            "`{v}`: several directories (`a:b`) per job are not supported"
        ));
    }
    d.set("directory", json!(v));
    Ok(())
}
fn a_filename_format(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    if v.contains("$clientuid") {
        return Err(format!(
            "`{v}`: `$clientuid` names a client of fio's client/server mode, which fslab-engine does not have"
        ));
    }
    d.set("filename_format", json!(v));
    Ok(())
}
fn a_cmdprio_percentage(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let [r, w] = per_direction(need(v)?, value::int)?;
    let (r, w) = (r.unwrap_or(0), w.unwrap_or(0));
    if r > 100 || w > 100 {
        return Err(format!("{}% is more than 100", r.max(w)));
    }
    d.set("cmdprio_percentage", json!([r, w]));
    Ok(())
}
/// `cmdprio_class`, `cmdprio`: fio's per-direction pair; the engine takes one value.
fn a_cmdprio_one(d: &mut Draft, v: Option<&str>, key: &str) -> Result<(), String> {
    let [r, w] = per_direction(need(v)?, value::int)?;
    let one = r.or(w).ok_or("needs a value")?;
    if w.is_some_and(|w| w != one) {
        return Err(format!(
            "`{}`: reads and writes with a {key} each are not supported (one value)",
            need(v)?
        ));
    }
    d.set(key, json!(one));
    Ok(())
}
fn a_donorname(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("donorname", json!(need(v)?));
    Ok(())
}
fn a_inplace(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("inplace", json!(value::boolean(v)?));
    Ok(())
}
fn a_program(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("program", json!(need(v)?));
    Ok(())
}
fn a_arguments(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("arguments", json!(v.unwrap_or("")));
    Ok(())
}
fn a_grace_time(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("grace_time", json!(value::int(need(v)?)?));
    Ok(())
}
fn a_std_redirect(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("std_redirect", json!(value::boolean(v)?));
    Ok(())
}
fn a_cpuload(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let n = value::int(need(v)?)?;
    if n == 0 {
        return Err("0: a CPU job needs a load (1..100)".into());
    }
    d.cpuload = Some(n.min(100));
    Ok(())
}
fn a_cpuchunks(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let n = value::int(need(v)?)?;
    if n == 0 || n > 1_000_000 {
        return Err(format!("{n} is out of range (1 to 1000000 microseconds)"));
    }
    d.cpuchunks = Some(n);
    Ok(())
}
fn a_cpumode(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    match need(v)? {
        "noop" => Ok(()),
        "qsort" => {
            d.notes.push(
                "cpumode=qsort: fslab-engine spins for the same CPU time instead of sorting".into(),
            );
            Ok(())
        }
        other => Err(format!("`{other}` is not one of noop, qsort")),
    }
}
fn a_exitall(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.exitall = value::boolean(v)?;
    Ok(())
}
fn a_exitall_on_error(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.exitall_on_error = value::boolean(v)?;
    Ok(())
}
fn a_exit_what(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.exit_what = Some(match need(v)? {
        "group" => "group",
        "stonewall" => "stonewall",
        "all" => "all",
        other => return Err(format!("`{other}` is not one of group, stonewall, all")),
    });
    Ok(())
}
fn a_continue_on_error(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    let on = match v {
        "none" | "0" => "none",
        "read" => "read",
        "write" => "write",
        "io" | "all" | "1" => "io",
        "verify" => {
            d.notes.push("continue_on_error=verify: a verify problem never ends the engine's job (it is counted in `verify`)".into());
            "none"
        }
        other => {
            return Err(format!(
                "`{other}` is not one of none, read, write, io, verify, all"
            ))
        }
    };
    d.continue_on = Some(on);
    Ok(())
}
fn a_ignore_error(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    let mut lists: [Option<Vec<String>>; 2] = [None, None];
    for (i, part) in v.split(',').enumerate() {
        let part = part.trim();
        if i >= 3 {
            return Err(format!(
                "`{v}`: at most reads, writes and verify (`,` between them)"
            ));
        }
        if part.is_empty() || i == 2 {
            continue;
        }
        let mut list = Vec::new();
        for e in part.split(':').map(str::trim).filter(|e| !e.is_empty()) {
            match e.parse::<i32>() {
                Ok(n) if n > 0 => list.push(n.to_string()),
                _ if crate::errno::by_name(e).is_some() => list.push(e.to_ascii_uppercase()),
                _ => {
                    return Err(format!(
                        "`{e}` is not an error name fslab-engine knows, nor a number"
                    ))
                }
            }
        }
        lists[i] = Some(list);
    }
    d.ignore_error = lists;
    Ok(())
}
fn a_buffered(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("direct", json!(!value::boolean(v)?));
    Ok(())
}
fn a_runtime(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.runtime_s = Some(value::time_s(need(v)?)?);
    Ok(())
}
fn a_time_based(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.time_based = value::boolean(v)?;
    Ok(())
}
fn a_rwmixwrite(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let w = value::int(need(v)?)?;
    if w > 100 {
        return Err(format!("{w} is more than 100"));
    }
    d.set("rwmixread", json!(100 - w));
    Ok(())
}
fn a_ioengine(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    d.async_engine = None;
    d.cpuio = false;
    d.exec = false;
    d.file_op = None;
    d.notes
        .retain(|n| !n.contains("runs on io_uring") && !n.contains("cpp_null"));
    let engine = match v {
        "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => "sync",
        "io_uring" => "io_uring",
        "libaio" | "posixaio" => {
            d.async_engine = Some(v.to_string());
            d.notes.push(format!(
                "ioengine={v} runs on io_uring: the same asynchronous queue of `iodepth` requests"
            ));
            "io_uring"
        }
        "null" => "null",
        // fio's example of an external engine: its null engine, written in C++.
        "cpp_null" => {
            d.notes.push(
                "ioengine=cpp_null (fio's null engine, built as an external C++ engine) runs as `null`".into(),
            );
            "null"
        }
        "falloc" => "falloc",
        "ftruncate" => "ftruncate",
        "e4defrag" => "e4defrag",
        "mmap" => "mmap",
        // fio's file-operation engines: a files job (the runner sets `kind`).
        "filecreate" | "filestat" | "filedelete" => {
            d.file_op = Some(match v {
                "filecreate" => "create",
                "filestat" => "stat",
                _ => "delete",
            });
            "sync"
        }
        // fio's CPU burner: cycles of `cpuchunks` spun, with think time between them
        // for the `cpuload` share; the engine's null engine spins and thinks alike.
        "cpuio" => {
            d.cpuio = true;
            "null"
        }
        // fio's exec engine moves no data: it starts a program and looks in on it.
        "exec" => {
            d.exec = true;
            "null"
        }
        _ => {
            let needs = ELSEWHERE
                .iter()
                .find(|(prefix, _)| v == *prefix || v.starts_with(&format!("{prefix}_")))
                .map(|(_, needs)| *needs);
            return Err(match needs {
                Some(needs) => format!("`{v}` needs {needs}, which fslab-engine does not drive"),
                None => format!(
                    "`{v}` is not an engine fslab-engine has (psync, sync, pvsync, pvsync2, vsync, io_uring, libaio, posixaio, null, falloc, ftruncate, mmap, e4defrag, exec, cpuio, filecreate, filestat, filedelete)"
                ),
            });
        }
    };
    d.set("ioengine", json!(engine));
    Ok(())
}

/// fio's engines that drive something other than a file or block device, and what.
const ELSEWHERE: &[(&str, &str)] = &[
    (
        "dev-dax",
        "persistent memory (a device-DAX character device)",
    ),
    (
        "libpmem",
        "persistent memory (libpmem on a DAX file system)",
    ),
    ("pmemblk", "persistent memory (libpmemblk)"),
    ("dfs", "a DAOS pool"),
    ("gfapi", "a GlusterFS volume (libgfapi)"),
    ("http", "an HTTP, S3 or Swift service"),
    ("ime", "a DDN IME server"),
    (
        "io_uring_cmd",
        "an NVMe character device (/dev/ngXnY) and passthrough commands",
    ),
    ("libcufile", "GPUDirect Storage (cuFile)"),
    ("libhdfs", "an HDFS cluster"),
    ("libiscsi", "an iSCSI target"),
    ("librpma", "RDMA hardware (librpma)"),
    ("mtd", "a raw flash (MTD) device"),
    ("nbd", "an NBD server"),
    ("net", "a network peer"),
    ("netsplice", "a network peer"),
    ("nfs", "an NFS server (libnfs)"),
    ("rados", "a Ceph cluster (librados)"),
    ("rbd", "a Ceph cluster (librbd)"),
    ("rdma", "RDMA hardware"),
    ("sg", "a SCSI generic device (/dev/sgN) and SCSI commands"),
    ("xnvme", "the xNVMe library"),
];
fn a_randrepeat(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    if !value::boolean(v)? {
        d.set("randseed", json!(clock_seed(0)));
    }
    Ok(())
}

/// fio's seed with `randrepeat=0`: from the clock, a different sequence each run; `job`
/// (its index) keeps jobs that share a global `randrepeat=0` apart.
pub fn clock_seed(job: usize) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_nanos() as u64);
    now ^ (job as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}
fn a_group_reporting(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.group_reporting = value::boolean(v)?;
    Ok(())
}
fn a_stonewall(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.stonewall = value::boolean(v)?;
    Ok(())
}
fn a_new_group(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.new_group = value::boolean(v)?;
    Ok(())
}
fn a_wait_for(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.wait_for = Some(need(v)?.to_string());
    Ok(())
}
fn a_kb_base(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.kb_base = Some(match value::int(need(v)?)? {
        1024 => KbBase::Binary,
        1000 => KbBase::Decimal,
        n => return Err(format!("{n}: kb_base is 1024 or 1000")),
    });
    Ok(())
}
fn a_loops(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let n = value::int(need(v)?)?;
    if n == 0 {
        return Err("0: a job runs at least once".into());
    }
    d.loops = Some(n);
    Ok(())
}
/// A size-mix text in the engine's units: each size read with the job's `kb_base`.
fn sizes_text(d: &Draft, v: &str, sep: char) -> Result<String, String> {
    let mut out = String::new();
    for (i, dir) in v.split(',').enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, entry) in dir.split(':').enumerate() {
            if entry.trim().is_empty() {
                continue;
            }
            if j > 0 {
                out.push(':');
            }
            let (size, rest) = match entry.split_once(sep) {
                Some((a, b)) => (a, Some(b)),
                None => (entry, None),
            };
            out.push_str(&value::size(size.trim(), d.base())?.to_string());
            if let Some(r) = rest {
                out.push(sep);
                let r = r.trim();
                if sep == '-' {
                    out.push_str(&value::size(r, d.base())?.to_string());
                } else {
                    out.push_str(r);
                }
            }
        }
    }
    Ok(out)
}
fn a_bssplit(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let t = sizes_text(d, need(v)?, '/')?;
    d.keys.remove("bsrange");
    d.set("bssplit", json!(t));
    Ok(())
}
fn a_bsrange(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let t = sizes_text(d, need(v)?, '-')?;
    // `4k-4k` is one size.
    let ends: Vec<&str> = t.split(',').collect();
    if ends
        .iter()
        .all(|e| e.split_once('-').is_some_and(|(a, b)| a == b))
        && ends.windows(2).all(|w| w[0] == w[1])
    {
        let bs = ends[0].split('-').next().unwrap_or("4096");
        d.set("bs", json!(bs.parse::<u64>().map_err(|e| e.to_string())?));
        return Ok(());
    }
    d.keys.remove("bssplit");
    d.set("bsrange", json!(t));
    Ok(())
}
fn a_offset(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    size_key(d, "offset", Some(v))
}
fn a_nrfiles(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    match value::int(need(v)?)? {
        0 => Err("0: a job has at least one file".into()),
        n => {
            d.nrfiles = Some(n);
            Ok(())
        }
    }
}
fn a_random_distribution(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    crate::block::distribution::parse(v)?;
    d.set("random_distribution", json!(v.trim()));
    Ok(())
}
fn a_rate(d: &mut Draft, v: Option<&str>, iops: bool, min: bool) -> Result<(), String> {
    let base = d.base();
    let pair = if iops {
        per_direction(need(v)?, value::int)?
    } else {
        per_direction(need(v)?, |p| value::size(p, base))?
    };
    let slot = match (iops, min) {
        (false, false) => &mut d.rates.bytes,
        (true, false) => &mut d.rates.iops,
        (false, true) => &mut d.rates.bytes_min,
        (true, true) => &mut d.rates.iops_min,
    };
    *slot = Some(pair);
    Ok(())
}
fn a_rate_process(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    match need(v)? {
        p @ ("linear" | "poisson") => {
            d.set("rate_process", json!(p));
            Ok(())
        }
        other => Err(format!("`{other}` is not a rate process (linear, poisson)")),
    }
}
fn a_thinktime(d: &mut Draft, key: &str, v: Option<&str>) -> Result<(), String> {
    d.set(key, json!(value::time_us(need(v)?)?));
    Ok(())
}
fn a_startdelay(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    if v.contains('-') && !v.trim_start().starts_with('(') {
        return Err(format!(
            "`{v}`: a random start delay (a range) is not supported; give one time"
        ));
    }
    d.set("startdelay", json!(value::time_s(v)?));
    Ok(())
}
fn a_buffer_pattern(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    crate::buffers::parse_pattern(v)?;
    d.set("buffer_pattern", json!(v));
    Ok(())
}
fn a_percent(d: &mut Draft, key: &str, v: Option<&str>) -> Result<(), String> {
    let n = value::int(need(v)?)?;
    if n > 100 {
        return Err(format!("{n} is more than 100"));
    }
    d.set(key, json!(n));
    Ok(())
}
fn a_dedupe_mode(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.dedupe_working_set = match need(v)? {
        "repeat" => false,
        "working_set" => true,
        other => return Err(format!("`{other}` is not one of repeat, working_set")),
    };
    Ok(())
}
/// fio's steady state (`ss=iops:10%`) as the engine's: a window of rounds whose rates
/// span at most twice fio's deviation from the mean (`iops`, `bw`), or whose line moves at
/// most fio's slope (`iops_slope`, `bw_slope`).
fn a_ss(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    let (what, limit) = v
        .split_once(':')
        .ok_or_else(|| format!("`{v}`: fio's form is `iops:10%`, `bw_slope:1%`..."))?;
    let pct: f64 = limit
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{limit}` is not a percentage"))?;
    if !limit.trim().ends_with('%') {
        return Err(format!(
            "`{limit}`: only a limit in percent of the mean is supported"
        ));
    }
    d.set("steady_state", json!(true));
    match what.trim() {
        "iops" | "bw" => d.set(
            "steady_range",
            json!(format!("{}%", (2.0 * pct).min(100.0))),
        ),
        "iops_slope" | "bw_slope" => d.set("steady_slope", json!(format!("{}%", pct.min(100.0)))),
        other => {
            return Err(format!(
                "`{other}` is not a steady-state measure (iops, bw, iops_slope, bw_slope)"
            ))
        }
    }
    d.notes.push(format!(
        "ss={v} is judged by the engine's steady state (docs/engine.md): a window of 1 s rounds, {} (the engine stops once steady, as fio does)",
        if what.trim().ends_with("_slope") { "whose line may move at most that share of the mean" } else { "whose rates may span at most twice that share of the mean" }
    ));
    Ok(())
}
fn a_ss_dur(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let secs = value::time_s(need(v)?)?;
    // The engine's window holds at most 25 rounds: longer ones get longer rounds.
    let window = secs.round().clamp(2.0, 25.0);
    d.set("steady_window", json!(window as u64));
    d.set("steady_round", json!((secs / window).max(1.0)));
    Ok(())
}
fn a_zero_buffers(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    if value::boolean(v)? {
        d.set("buffer_content", json!("zeros"));
    }
    Ok(())
}
fn a_do_verify(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.do_verify = Some(value::boolean(v)?);
    Ok(())
}
fn a_verify(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let v = need(v)?;
    match v {
        "0" | "none" => {
            d.set("verify", json!(false));
        }
        "crc32c" | "crc32c-intel" | "crc32" | "crc16" | "crc7" | "crc64" | "md5" | "sha1"
        | "sha256" | "sha512" | "sha3-224" | "sha3-256" | "sha3-384" | "sha3-512" | "xxhash"
        | "meta" => {
            d.notes.push(format!(
                "verify={v} uses fslab-engine's own block header (offset, generation, crc32c): it also finds misplaced and lost writes (docs/engine.md, \"Verify\")"
            ));
            d.set("verify", json!(true));
        }
        _ => {
            return Err(format!(
                "`{v}`: pattern verification is not supported (a checksum method, e.g. crc32c, is)"
            ))
        }
    }
    Ok(())
}
fn a_zonemode(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let _ = d;
    match need(v)? {
        "none" | "strided" => Ok(()),
        "zbd" => Err("`zbd` needs a zoned block device (SMR or ZNS), which this job's target is not known to be; fslab-engine does not drive zone commands".into()),
        other => Err(format!("`{other}` is not a zone mode fslab-engine has (none, strided)")),
    }
}
fn a_fadvise_hint(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let on = match v.map(str::trim) {
        Some("sequential" | "random") => true,
        Some("none") => false,
        other => value::boolean(other)?,
    };
    d.set("fadvise_hint", json!(on));
    Ok(())
}
fn a_norandommap(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    d.set("norandommap", json!(value::boolean(v)?));
    Ok(())
}
fn a_sync(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let mode = match need(v)?.trim() {
        "0" | "none" => "none",
        "1" | "sync" => "sync",
        "dsync" => "dsync",
        other => {
            return Err(format!(
                "`{other}` is not a sync mode (0/none, 1/sync, dsync)"
            ))
        }
    };
    d.set("sync", json!(mode));
    Ok(())
}

/// fio's options as fslab-engine reads them (names and aliases as fio spells them).
pub const OPTIONS: &[FioOption] = &[
    mapped("name", &[], a_name, "the job's name (the section name when not set)"),
    inert("description", &[], "a comment"),
    mapped("rw", &["readwrite"], a_rw, "`rw`; `rw`/`readwrite` is the engine's `readwrite`; `:N` is `seq_skip` (sequential: bytes skipped after each I/O, negative backwards) or `seq_run` (random: I/Os per random offset)"),
    mapped("rw_sequencer", &[], a_rw_sequencer, "`sequential` only (fio's default)"),
    mapped("bs", &["blocksize"], a_bs, "`bs`; a `read,write` pair of different sizes is a `bssplit` of one size each"),
    mapped("bssplit", &[], a_bssplit, "`bssplit` (the same syntax; sizes read with the job's `kb_base`)"),
    mapped("bsrange", &["blocksize_range"], a_bsrange, "`bsrange`; `4k-4k` is `bs`"),
    mapped("blockalign", &["ba"], |d, v| size_key(d, "blockalign", v), "`blockalign` (one value for reads and writes)"),
    mapped("size", &[], |d, v| size_key(d, "size", v), "`size` (bytes, or in percent of the file or device)"),
    mapped("filesize", &[], |d, v| {
        let t = need(v)?.trim();
        if let Some((low, high)) = t.split_once(['-', ':']).filter(|_| !t.starts_with('(')) {
            let (l, h) = (value::size(low, d.base())?, value::size(high, d.base())?);
            if l != h {
                return Err(format!("`{t}`: a range of file sizes (each file a random size within it) is not supported by fslab-engine; give one size"));
            }
            return size_key(d, "size", Some(low));
        }
        size_key(d, "size", Some(t))
    }, "`size` (one file per job; a range only when its ends are equal)"),
    mapped("io_size", &["io_limit"], |d, v| size_key(d, "io_size", v), "`io_size`"),
    mapped("filename", &[], a_filename, "`filename` (one file; `\\:` escapes a colon)"),
    mapped("directory", &[], a_directory, "`directory`; files are `NAME.CLONE.0` in it, as fio names them"),
    mapped("numjobs", &[], |d, v| int_key(d, "numjobs", v), "`numjobs`: clones, one thread each"),
    mapped("iodepth", &[], |d, v| int_key(d, "iodepth", v), "`iodepth`"),
    mapped("iodepth_batch_complete_min", &["iodepth_batch_complete"], |d, v| int_key(d, "iodepth_batch_complete_min", v), "`iodepth_batch_complete_min`"),
    mapped("iodepth_batch_submit", &["iodepth_batch"], |d, v| int_key(d, "iodepth_batch_submit", v), "`iodepth_batch_submit`"),
    inert("iodepth_batch_complete_max", &[], "the engine reaps every completion already posted"),
    inert("iodepth_low", &[], "the engine refills the queue as requests complete"),
    mapped("direct", &[], |d, v| bool_key(d, "direct", v), "`direct` (O_DIRECT)"),
    mapped("buffered", &[], a_buffered, "`direct = !buffered`"),
    mapped("runtime", &["timeout"], a_runtime, "with `time_based`: `runtime`; without it fio stops at `size` or `runtime`, whichever first: the engine runs `size` (a note says so)"),
    mapped("time_based", &[], a_time_based, "the job is time-based: `runtime`"),
    mapped("ramp_time", &[], |d, v| time_key(d, "ramp_time", v), "`ramp_time`"),
    mapped("rwmixread", &[], |d, v| int_key(d, "rwmixread", v), "`rwmixread`"),
    mapped("rwmixwrite", &[], a_rwmixwrite, "`rwmixread = 100 - rwmixwrite`"),
    mapped("fsync", &[], |d, v| int_key(d, "fsync", v), "`fsync`: after every N writes"),
    mapped("end_fsync", &[], |d, v| bool_key(d, "end_fsync", v), "`end_fsync`"),
    mapped("ioengine", &[], a_ioengine, "psync, sync, pvsync, pvsync2, vsync: `sync`; io_uring; libaio, posixaio: `io_uring` (a note says so); null"),
    mapped("randrepeat", &[], a_randrepeat, "1 (fio's default): the engine's fixed seed; 0: a seed from the clock"),
    mapped("allrandrepeat", &[], a_randrepeat, "as `randrepeat`"),
    mapped("randseed", &[], |d, v| int_key(d, "randseed", v), "`randseed`"),
    mapped("group_reporting", &[], a_group_reporting, "the jobs of a reporting group are also reported as one (`groups` in the report)"),
    mapped("stonewall", &["wait_for_previous"], a_stonewall, "the job starts after every job above it ended; a new phase and reporting group"),
    mapped("new_group", &[], a_new_group, "a new reporting group"),
    mapped("wait_for", &[], a_wait_for, "the job starts after the named job above it ended"),
    mapped("kb_base", &[], a_kb_base, "how size suffixes are read (1024: all binary; 1000: SI)"),
    mapped("loops", &[], a_loops, "a size-based job's `io_size` is `loops` times its size (with the random map, every block once per loop); no effect on a time-based job"),
    mapped("zero_buffers", &[], a_zero_buffers, "`buffer_content = \"zeros\"`"),
    mapped("verify", &[], a_verify, "a checksum method: `verify` (the engine's own header and crc32c); 0 or none: off"),
    mapped("offset", &["fileoffset"], a_offset, "`offset` (bytes, or in percent of the file or device)"),
    mapped("offset_increment", &[], |d, v| size_key(d, "offset_increment", v), "`offset_increment`: each clone's region starts this much after the one before"),
    mapped("number_ios", &[], |d, v| int_key(d, "number_ios", v), "`number_ios`: each clone stops after this many I/Os"),
    mapped("nrfiles", &["nr_files"], a_nrfiles, "`nrfiles`: each clone's files (`size` is split over them unless `filesize` gives each one's); with the file engines, the files each clone makes, looks at or removes"),
    mapped("random_distribution", &[], a_random_distribution, "`random_distribution`: random, zipf, pareto, normal (gauss), zoned, zoned_abs, fio's syntax (one set for reads and writes)"),
    mapped("norandommap", &[], a_norandommap, "`norandommap`: offsets drawn with repeats; without it, every block once per pass (a keyed permutation; a bitmap where I/Os span several blocks, cut short at a block done as fio's)"),
    inert("random_generator", &[], "the engine draws with its own generator (xoshiro256++): tausworthe and lfsr change which numbers come, not their law; the random map gives lfsr's every-block-once"),
    mapped("rate", &[], |d, v| a_rate(d, v, false, false), "`rate` per thread; fio's per-direction `r,w` becomes the thread's total at the job's mix (a note says so)"),
    mapped("rate_iops", &[], |d, v| a_rate(d, v, true, false), "`rate_iops` per thread, as `rate`"),
    mapped("rate_min", &["ratemin"], |d, v| a_rate(d, v, false, true), "`rate_min`: below it the report warns `rate_short` (fio ends the job)"),
    mapped("rate_iops_min", &[], |d, v| a_rate(d, v, true, true), "`rate_iops_min`, as `rate_min`"),
    mapped("rate_process", &[], a_rate_process, "`rate_process`: linear or poisson"),
    inert("rate_cycle", &[], "the engine checks the rate over the whole run (`rate` in the report)"),
    inert("rate_ignore_thinktime", &[], "the engine's schedule pauses for think time"),
    mapped("thinktime", &[], |d, v| a_thinktime(d, "thinktime", v), "`thinktime` (a bare number is microseconds, as in fio)"),
    mapped("thinktime_spin", &[], |d, v| a_thinktime(d, "thinktime_spin", v), "`thinktime_spin` (microseconds when bare)"),
    mapped("thinktime_blocks", &[], |d, v| int_key(d, "thinktime_blocks", v), "`thinktime_blocks`"),
    inert("thinktime_blocks_type", &[], "the engine counts I/Os as it issues them"),
    mapped("startdelay", &[], a_startdelay, "`startdelay` (one time; not a range)"),
    mapped("buffer_compress_percentage", &[], |d, v| a_percent(d, "buffer_compress_percentage", v), "`buffer_compress_percentage`"),
    mapped("buffer_compress_chunk", &[], |d, v| size_key(d, "buffer_compress_chunk", v), "`buffer_compress_chunk`"),
    mapped("dedupe_percentage", &[], |d, v| a_percent(d, "dedupe_percentage", v), "`dedupe_percentage`: a dedupe write repeats one of the thread's last 256 unique writes"),
    mapped("dedupe_mode", &[], a_dedupe_mode, "`repeat` (a dedupe write repeats one of the thread's last 256 unique writes) or `working_set` (`dedupe_working_set_percentage`)"),
    mapped("dedupe_working_set_percentage", &[], |d, v| {
        let p: f64 = need(v)?.trim().parse().map_err(|_| format!("`{}` is not a number", need(v).unwrap_or_default()))?;
        d.set("dedupe_working_set_percentage", json!(p));
        Ok(())
    }, "`dedupe_working_set_percentage` (with `dedupe_mode=working_set`; default 5, fio's)"),
    mapped("dedupe_global", &[], |d, v| bool_key(d, "dedupe_global", v), "`dedupe_global`"),
    mapped("buffer_pattern", &[], a_buffer_pattern, "`buffer_pattern`: `0x` hex and quoted strings, joined by `|`"),
    mapped("refill_buffers", &[], |d, v| bool_key(d, "refill_buffers", v), "`refill_buffers`: fresh random bytes for every write"),
    mapped("steadystate", &["ss"], a_ss, "`steady_state` with `steady_range` (twice fio's deviation, for iops and bw) or `steady_slope` (iops_slope, bw_slope); a note says how the rules differ"),
    mapped("steadystate_duration", &["ss_dur"], a_ss_dur, "`steady_window` rounds of `steady_round` covering the same time (at most 25 rounds)"),
    inert("steadystate_ramp_time", &["ss_ramp"], "the engine judges each window as it comes; a ramp only delays the first judgement"),
    inert("steadystate_check_interval", &["ss_interval"], "the engine's rounds are whole seconds or more"),
    mapped("sync", &[], a_sync, "`sync`: 1/sync opens the files O_SYNC, dsync O_DSYNC"),
    inert("thread", &["threads"], "the engine always runs its clones as threads"),
    mapped("do_verify", &[], a_do_verify, "1 (fio's default): a writing job with `verify` reads back every block it wrote once its I/O ends (`verify_read_back`); 0: it does not"),
    inert("verify_fatal", &[], "bad blocks are counted and warned about, never fatal"),
    inert("scramble_buffers", &[], "the engine stamps every write with its offset and a counter (`refill_buffers` for fresh bytes)"),
    mapped("invalidate", &[], |d, v| bool_key(d, "invalidate", v), "`invalidate` (on unless the file says 0, as in fio)"),
    mapped("zonemode", &[], a_zonemode, "`none` or `strided` (zones by `zonesize`); `zbd` needs a zoned block device"),
    mapped("zonesize", &[], |d, v| size_key(d, "zonesize", v), "`zonesize`"),
    mapped("zonerange", &[], |d, v| size_key(d, "zonerange", v), "`zonerange`"),
    mapped("zoneskip", &[], |d, v| size_key(d, "zoneskip", v), "`zoneskip`"),
    mapped("prio", &[], |d, v| int_key(d, "prio", v), "`prio`: each thread's I/O priority level (ioprio_set)"),
    mapped("prioclass", &[], |d, v| int_key(d, "prioclass", v), "`prioclass`: each thread's I/O priority class"),
    mapped("fadvise_hint", &[], a_fadvise_hint, "`fadvise_hint` (on unless the file says 0, as in fio; `sequential`/`random` are taken as on)"),
    inert("overwrite", &[], "the engine lays the file out in full before writing"),
    inert("create_on_open", &[], "files are made before the job"),
    inert("fallocate", &[], "the engine lays files out by writing them"),
    inert("unlink", &[], "files are left in place (fslab's lab removes what it made)"),
    inert("unit_base", &[], "the report gives bytes and bytes per second"),
    inert("clocksource", &[], "the engine times with the TSC where the kernel keeps time with it, else CLOCK_MONOTONIC (report: engine.clock)"),
    inert("percentile_list", &[], "the report has p50 to p99.99 and the whole histogram"),
    inert("clat_percentiles", &[], "the report has completion latency percentiles always"),
    inert("lat_percentiles", &[], "the report has completion latency percentiles always"),
    inert("slat_percentiles", &[], "the engine measures submission to completion"),
    inert("disk_util", &[], "fslab's lab samples the devices (telemetry)"),
    inert("per_job_logs", &[], "the report's `series` holds the intervals"),
    inert("write_bw_log", &[], "the report's `series` holds the intervals"),
    inert("write_iops_log", &[], "the report's `series` holds the intervals"),
    inert("write_lat_log", &[], "the report's `series` holds the intervals"),
    inert("write_hist_log", &[], "the report holds the whole histogram"),
    inert("log_avg_msec", &[], "the series interval is the engine's `interval`"),
    inert("log_hist_msec", &[], "the report holds the whole histogram"),
    inert("fixedbufs", &[], "the engine chooses its io_uring set-up itself"),
    inert("registerfiles", &[], "the engine chooses its io_uring set-up itself"),
    inert("gtod_reduce", &[], "the engine times every I/O anyway; its own cost per I/O is measured (docs/performance.md)"),
    inert("disable_lat", &[], "the engine times every I/O anyway"),
    inert("disable_clat", &[], "the engine times every I/O anyway"),
    inert("disable_slat", &[], "the engine measures submission to completion"),
    inert("disable_bw_measurement", &["disable_bw"], "the engine keeps its series anyway"),
    inert("log_prio", &[], "the report's `series` holds the intervals"),
    inert("log_offset", &[], "the report's `series` holds the intervals"),
    inert("io_submit_mode", &[], "the job's own thread submits (fio's `inline`); `offload` only moves submission to another thread"),
    inert("create_serialize", &[], "files are laid out before the job starts"),
    inert("verify_dump", &[], "bad blocks are listed in the report's `verify`"),
    inert("verify_async", &[], "verification happens as blocks are read"),
    inert("verify_interval", &[], "the engine's verify checks whole blocks"),
    inert("error_dump", &[], "errors are in the report's `errors`"),
    mapped("fdatasync", &[], |d, v| int_key(d, "fdatasync", v), "`fdatasync`: after every N writes"),
    mapped("fsync_on_close", &[], |d, v| bool_key(d, "end_fsync", v), "`end_fsync`: the file is fsynced when the job ends"),
    mapped("exitall", &[], a_exitall, "when the job ends, it ends others (`exit_what`): the run's `exitall` in the plan"),
    mapped("exit_what", &[], a_exit_what, "which jobs `exitall` ends: `group`, `stonewall` (those running), `all`"),
    mapped("exitall_on_error", &[], a_exitall_on_error, "when the job fails, it ends the others of its group"),
    mapped("cmdprio_percentage", &[], a_cmdprio_percentage, "`cmdprio_percentage` (`[reads, writes]`)"),
    mapped("cmdprio_class", &[], |d, v| a_cmdprio_one(d, v, "cmdprio_class"), "`cmdprio_class` (one class for both directions)"),
    mapped("cmdprio", &[], |d, v| a_cmdprio_one(d, v, "cmdprio"), "`cmdprio` (one level for both directions)"),
    mapped("cmdprio_bssplit", &[], |d, v| {
        d.set("cmdprio_bssplit", json!(need(v)?.trim()));
        Ok(())
    }, "`cmdprio_bssplit`"),
    mapped("cpuload", &[], a_cpuload, "with `ioengine=cpuio`: the share of each cycle spun; the rest is `thinktime`"),
    mapped("cpuchunks", &["cpucycle"], a_cpuchunks, "with `ioengine=cpuio`: one cycle's spin, microseconds (`null_lat`)"),
    mapped("cpumode", &[], a_cpumode, "with `ioengine=cpuio`: `noop` spins; `qsort` spins too (the same CPU time, not a sort)"),
    mapped(
        "continue_on_error",
        &[],
        a_continue_on_error,
        "`continue_on_error` (`all` is `io`: verify problems never end the engine's job)",
    ),
    mapped(
        "ignore_error",
        &[],
        a_ignore_error,
        "`continue_errors`: the errors of the kinds `continue_on_error` names",
    ),
    inert("openfiles", &[], "one file is open at a time (one per clone; the file engines open each file once)"),
    mapped(
        "filename_format",
        &[],
        a_filename_format,
        "`filename_format` (`$jobname`, `$jobnum`, `$filenum`; one file per clone)",
    ),
    mapped("file_service_type", &[], |d, v| {
        let v = need(v)?.trim();
        crate::spec::file_service(v)?;
        d.set("file_service_type", json!(v));
        Ok(())
    }, "`file_service_type` (roundrobin, sequential, random; `:N` I/Os per turn) with `nrfiles`; the file engines do each file once, in order"),
    mapped("latency_target", &[], |d, v| a_thinktime(d, "latency_target", v), "`latency_target` (a bare number is microseconds): the queue-depth search, fio's rule"),
    mapped("latency_window", &[], |d, v| a_thinktime(d, "latency_window", v), "`latency_window` (a bare number is microseconds)"),
    mapped("latency_percentile", &[], |d, v| {
        let p: f64 = need(v)?.trim().parse().map_err(|_| format!("`{}` is not a number", need(v).unwrap_or_default()))?;
        d.set("latency_percentile", json!(p));
        Ok(())
    }, "`latency_percentile`"),
    mapped("latency_run", &[], |d, v| bool_key(d, "latency_run", v), "`latency_run`"),
    mapped("flow", &[], |d, v| {
        let n = value::int(need(v)?)?;
        if n == 0 {
            return Err("0: a job in a flow has a weight of 1 or more".into());
        }
        d.set("flow", json!(n));
        Ok(())
    }, "`flow` (the job's weight among the jobs of its `flow_id`)"),
    mapped("flow_id", &[], |d, v| int_key(d, "flow_id", v), "`flow_id`"),
    mapped("flow_sleep", &[], |d, v| a_thinktime(d, "flow_sleep", v), "`flow_sleep` (a bare number is microseconds)"),
    mapped("fill_device", &["fill_fs"], |d, v| bool_key(d, "fill_device", v), "`fill_device` (writes only: fio's fill-then-read is not supported)"),
    mapped("cpus_allowed", &[], |d, v| {
        d.set("cpus_allowed", json!(need(v)?.trim()));
        Ok(())
    }, "`cpus_allowed`"),
    mapped("cpus_allowed_policy", &[], |d, v| {
        let v = need(v)?;
        if !matches!(v, "shared" | "split") {
            return Err(format!("`{v}` is not one of shared, split"));
        }
        d.set("cpus_allowed_policy", json!(v));
        Ok(())
    }, "`cpus_allowed_policy`"),
    mapped("cpumask", &[], |d, v| {
        let v = need(v)?.trim();
        let bits = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(hex) => u128::from_str_radix(hex, 16),
            None => v.parse::<u128>(),
        }
        .map_err(|_| format!("`{v}` is not a CPU bit mask (e.g. 0xf or 15)"))?;
        if bits == 0 {
            return Err(format!("`{v}` allows no CPU"));
        }
        let cpus: Vec<String> = (0..128).filter(|c| bits >> c & 1 == 1).map(|c: u32| c.to_string()).collect();
        d.set("cpus_allowed", json!(cpus.join(",")));
        Ok(())
    }, "`cpus_allowed`: the mask's CPUs as a list"),
    mapped("numa_cpu_nodes", &[], |d, v| {
        d.set("numa_cpu_nodes", json!(need(v)?.trim()));
        Ok(())
    }, "`numa_cpu_nodes`"),
    mapped("numa_mem_policy", &[], |d, v| {
        d.set("numa_mem_policy", json!(need(v)?.trim()));
        Ok(())
    }, "`numa_mem_policy`"),
    refused("hipri", &[], "polled completions (IORING_SETUP_IOPOLL) need a device with poll queues (NVMe with `nvme.poll_queues`), which fslab-engine does not drive yet"),
    mapped("sqthread_poll", &[], |d, v| bool_key(d, "sqthread_poll", v), "`sqthread_poll` (IORING_SETUP_SQPOLL)"),
    mapped("verify_backlog", &[], |d, v| int_key(d, "verify_backlog", v), "`verify_backlog`: after every N writes, those N blocks are read back and checked (measured as reads)"),
    inert("verify_backlog_batch", &["verify_batch"], "a backlog's blocks are read back all together, `verify_backlog` of them"),
    inert("verify_pattern", &[], "the engine's verify writes and checks its own checksummed payload, which finds any change a pattern would"),
    refused("verify_state_save", &[], "the engine's `verify_state` keeps generations across jobs"),
    refused("verify_state_load", &[], "the engine's `verify_state` keeps generations across jobs"),
    refused("trim_percentage", &[], "trims are not supported"),
    refused("lockmem", &[], "memory locking is not supported"),
    refused("pre_read", &[], "pre-reading is not supported"),
    refused("exec_prerun", &[], "running commands is not supported"),
    refused("exec_postrun", &[], "running commands is not supported"),
    mapped("atomic", &[], |d, v| {
        let on = value::boolean(v)?;
        d.set("atomic", json!(on));
        if on {
            d.set("direct", json!(true));
        }
        Ok(())
    }, "`atomic` (RWF_ATOMIC on each write, as fio 3.38 and later send it; fio 3.33 opens the file with an O_ATOMIC flag Linux lacks). Implies `direct`, as in fio"),
    inert("allow_file_create", &[], "the engine lays out the files a job needs before it starts"),
    inert("allow_mounted_write", &[], "writes to a block device pass the engine's own gate (`allow_device_write`, which the lab sets only for devices it made or the user named)"),
    inert("create_fsync", &[], "files are laid out before the job, unmeasured"),
    refused("create_only", &[], "a job that only lays out its files is not supported: the engine lays them out before measuring"),
    inert("lockfile", &[], "the engine does not serialize jobs' I/O to one file"),
    inert("unique_filename", &[], "the engine's file names are the job's name and clone number (or `filename`)"),
    refused("unlink_each_loop", &[], "removing the files after each loop is not supported"),
    refused("file_append", &[], "appending at the end of the file is not supported"),
    refused("opendir", &[], "taking a directory tree's files as a job's files is not supported"),
    inert("block_error_percentiles", &[], "the engine reports no trim error histogram"),
    inert("bwavgtime", &[], "the series interval is the engine's `interval`"),
    inert("iopsavgtime", &[], "the series interval is the engine's `interval`"),
    inert("ratecycle", &[], "the engine paces each I/O on a schedule rather than averaging over a window"),
    inert("rwmixcycle", &[], "obsolete in fio"),
    inert("flow_watermark", &[], "obsolete in fio"),
    inert("significant_figures", &[], "the report holds full numbers"),
    inert("unified_rw_reporting", &[], "the report gives each op its own result"),
    inert("stats", &[], "the engine always keeps its statistics"),
    inert("gtod_cpu", &[], "the engine reads the clock itself"),
    inert("log_max_value", &[], "the report's `series` holds the intervals"),
    inert("log_entries", &[], "the report's `series` holds the intervals"),
    inert("log_hist_coarseness", &[], "the report's latency histograms are HdrHistograms"),
    inert("log_compression", &[], "the engine writes no log files"),
    inert("log_compression_cpus", &[], "the engine writes no log files"),
    inert("log_store_compressed", &[], "the engine writes no log files"),
    inert("log_unix_epoch", &[], "the report's series is in seconds from the job's start"),
    inert("log_alternate_epoch", &[], "the report's series is in seconds from the job's start"),
    inert("log_alternate_epoch_clock_id", &[], "the report's series is in seconds from the job's start"),
    inert("write_iolog", &[], "the engine writes no I/O log"),
    mapped("read_iolog", &[], |d, v| {
        d.set("read_iolog", json!(need(v)?.trim()));
        Ok(())
    }, "`read_iolog` (version 2 or 3; its files laid out under `directory`, timed as recorded unless `replay_no_stall`)"),
    inert("read_iolog_chunked", &[], "the engine always reads a trace a line at a time"),
    mapped("replay_no_stall", &[], |d, v| bool_key(d, "replay_no_stall", v), "`replay_no_stall`"),
    refused("replay_redirect", &[], "sending every I/O of a trace to one file or device is not supported: the trace's files are laid out under `directory`"),
    refused("replay_scale", &[], "scaling a trace's offsets down is not supported (`read_iolog` replays them as recorded)"),
    refused("replay_align", &[], "aligning a trace's offsets is not supported (`read_iolog` replays them as recorded)"),
    mapped("replay_time_scale", &[], |d, v| int_key(d, "replay_time_scale", v), "`replay_time_scale` (percent)"),
    refused("replay_skip", &[], "leaving out a trace's reads, writes, trims or syncs is not supported (`read_iolog` replays them all)"),
    refused("merge_blktrace_file", &[], "blktrace traces are not read: `read_iolog` takes fio's iolog (version 2 or 3)"),
    refused("merge_blktrace_scalars", &[], "blktrace traces are not read: `read_iolog` takes fio's iolog (version 2 or 3)"),
    refused("merge_blktrace_iters", &[], "blktrace traces are not read: `read_iolog` takes fio's iolog (version 2 or 3)"),
    inert("iomem", &["mem"], "the engine's buffers are page-aligned anonymous memory (registered with io_uring)"),
    inert("iomem_align", &["mem_align"], "the engine's buffers are page-aligned"),
    inert("hugepage-size", &[], "the engine's buffers are page-aligned anonymous memory"),
    mapped("nice", &[], |d, v| {
        let t = need(v)?.trim();
        let n: i32 = t.parse().map_err(|_| format!("`{t}` is not a nice value (-20 to 19)"))?;
        d.set("nice", json!(n));
        Ok(())
    }, "`nice` (each thread's own)"),
    refused("uid", &[], "the engine runs as the user that starts it"),
    refused("gid", &[], "the engine runs as the user that starts it"),
    refused("cgroup", &[], "cgroups are not managed by the engine; start it inside the cgroup"),
    refused("cgroup_weight", &[], "cgroups are not managed by the engine; start it inside the cgroup"),
    inert("cgroup_nodelete", &[], "cgroups are not managed by the engine"),
    refused("ioscheduler", &[], "the I/O scheduler is a setting of the target, not of the job: set it before the run (`/sys/block/<dev>/queue/scheduler`)"),
    refused("max_latency", &[], "ending a job at its first slow I/O is not supported (`latency_target` searches for the depth that holds a limit)"),
    inert("offset_align", &[], "applies to an offset in percent, which is aligned to the job's block size"),
    refused("percentage_random", &["percentage_sequential"], "a mix of random and sequential I/O in one job is not supported"),
    refused("bs_is_seq_rand", &[], "block sizes for sequential and random I/O rather than reads and writes are not supported"),
    refused("bs_unaligned", &["blocksize_unaligned"], "I/O sizes not aligned to the block size are not supported"),
    inert("softrandommap", &[], "the random map never runs out: a permutation, or a bitmap kept whole"),
    inert("serialize_overlap", &[], "the engine keeps two I/Os to one block from flying at once only with `verify`"),
    refused("sync_file_range", &[], "sync_file_range is not supported (`fsync` and `fdatasync` are)"),
    refused("thinktime_iotime", &[], "think time after a span of I/O time is not supported (`thinktime_blocks` is)"),
    refused("write_barrier", &[], "barrier writes are not supported"),
    mapped("write_hint", &[], |d, v| {
        let t = need(v)?.trim().to_ascii_lowercase();
        if !matches!(t.as_str(), "none" | "short" | "medium" | "long" | "extreme") {
            return Err(format!("`{t}` is not a write hint (none, short, medium, long, extreme)"));
        }
        d.set("write_hint", json!(t));
        Ok(())
    }, "`write_hint` (fcntl F_SET_RW_HINT on each file)"),
    refused("trim_backlog", &[], "verifying trimmed blocks is not supported"),
    refused("trim_backlog_batch", &[], "verifying trimmed blocks is not supported"),
    refused("trim_verify_zero", &[], "verifying trimmed blocks is not supported"),
    refused("experimental_verify", &[], "the engine's verify reads back from its own record of what was written"),
    refused("verify_only", &[], "verifying without writing: run a reading job with `verify` and the writer's `verify_state`"),
    inert("verifysort", &[], "the read-back goes in offset order"),
    inert("verifysort_nr", &[], "the read-back goes in offset order"),
    refused("verify_offset", &[], "the engine's verify header is at the block's start"),
    inert("verify_async_cpus", &[], "verification happens in the thread that reads"),
    refused("gpu_dev_id", &[], "GPU memory for buffers is not supported"),
    refused("profile", &[], "fio's built-in profiles are not supported"),
    refused("ignore_zone_limits", &[], "zoned block devices are not driven by fslab-engine"),
    refused("max_open_zones", &[], "zoned block devices are not driven by fslab-engine"),
    refused("job_max_open_zones", &[], "zoned block devices are not driven by fslab-engine"),
    refused("read_beyond_wp", &[], "zoned block devices are not driven by fslab-engine"),
    refused("zone_reset_frequency", &[], "zoned block devices are not driven by fslab-engine"),
    refused("zone_reset_threshold", &[], "zoned block devices are not driven by fslab-engine"),
    refused("zonecapacity", &[], "zoned block devices are not driven by fslab-engine"),
    inert("stat_type", &[], "the files kind's stat is statx"),
    inert("nonvectored", &[], "the engine chooses its io_uring set-up itself"),
    inert("force_async", &[], "the engine chooses its io_uring set-up itself"),
    inert("userspace_reap", &[], "libaio runs on io_uring, which reaps in user space"),
    mapped("sqthread_poll_cpu", &[], |d, v| int_key(d, "sqthread_poll_cpu", v), "`sqthread_poll_cpu` (with `sqthread_poll`; fio ignores it without, and so is it left out)"),
    refused("hipri_percentage", &[], "polled completions (IORING_SETUP_IOPOLL) need a device with poll queues (NVMe with `nvme.poll_queues`), which fslab-engine does not drive yet"),
    mapped("nowait", &[], |d, v| bool_key(d, "nowait", v), "`nowait` (RWF_NOWAIT)"),
    mapped("uncached", &[], |d, v| {
        d.set("uncached", json!(value::int(need(v)?)? != 0));
        Ok(())
    }, "`uncached` (RWF_DONTCACHE, as fio 3.40 and later send it; fio 3.33 sends 0x40, which Linux now reads as RWF_ATOMIC). Buffered I/O only: left out with `direct`, as fio ignores it there"),
    // The options of fio's other engines: the engine is refused, naming what it needs.
    mapped("arguments", &[], a_arguments, "with `ioengine=exec`: the program's arguments (`%r` the runtime in seconds, `%n` the job's name)"),
    inert("bindname", &[], "an option of fio's rdma engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("brick", &[], "an option of fio's glusterfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("busy_poll", &[], "an option of fio's rados, rbd engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("busy_wait_polling", &[], "an option of fio's librpma_fio engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("chunck_size", &[], "an option of fio's libhdfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("chunk_size", &[], "an option of fio's dfs, libhdfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("clientname", &[], "an option of fio's rados, rbd engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("clustername", &[], "an option of fio's rados, rbd engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("cmd_type", &[], "an option of fio's io_uring engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("conf", &[], "an option of fio's rados engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("cont", &[], "an option of fio's dfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("cuda_io", &[], "an option of fio's libcufile engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("direct_write_to_pmem", &[], "an option of fio's librpma_fio engine, which fslab-engine refuses (`ioengine` says why)"),
    mapped("donorname", &[], a_donorname, "with `ioengine=e4defrag`: the donor file, beside the job's file"),
    inert("dummy", &[], "an option of fio's skeleton_external engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("exit_on_io_done", &[], "a cpuio job runs for its own `runtime`"),
    inert("gpu_dev_ids", &[], "an option of fio's libcufile engine, which fslab-engine refuses (`ioengine` says why)"),
    mapped("grace_time", &[], a_grace_time, "with `ioengine=exec`: seconds between SIGTERM and SIGKILL at the job's end"),
    inert("hdfs_use_direct", &[], "an option of fio's libhdfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("hdfsdirectory", &[], "an option of fio's libhdfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("hostname", &[], "an option of fio's libhdfs, net, rdma engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_host", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_mode", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_pass", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_s3_key", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_s3_keyid", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_s3_region", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_s3_sse_customer_algorithm", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_s3_sse_customer_key", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_s3_storage_class", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_swift_auth_token", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_user", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("http_verbose", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("https", &[], "an option of fio's http engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("initiator", &[], "an option of fio's libiscsi engine, which fslab-engine refuses (`ioengine` says why)"),
    mapped("inplace", &[], a_inplace, "with `ioengine=e4defrag`: fallocate the donor per write and truncate it after"),
    inert("interface", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("listen", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("mss", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("namenode", &[], "an option of fio's libhdfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("nfs_url", &[], "an option of fio's nfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("no_completion_thread", &[], "an option of fio's windowsaio engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("nodelay", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("object_class", &[], "an option of fio's dfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("pingpong", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("pool", &[], "an option of fio's dfs, rados, rbd engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("port", &[], "an option of fio's libhdfs, librpma_fio, net, rdma engine, which fslab-engine refuses (`ioengine` says why)"),
    mapped("program", &[], a_program, "with `ioengine=exec`: the program run beside the job"),
    inert("proto", &[], "an option of fio's net, rdma engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("protocol", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("rbdname", &[], "an option of fio's rbd engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("readfua", &[], "an option of fio's sg engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("serverip", &[], "an option of fio's librpma_fio engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("sg_write_mode", &[], "an option of fio's sg engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("single-instance", &[], "an option of fio's glusterfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("single_instance", &[], "an option of fio's libhdfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("skip_bad", &[], "an option of fio's mtd engine, which fslab-engine refuses (`ioengine` says why)"),
    mapped("std_redirect", &[], a_std_redirect, "with `ioengine=exec`: the program's output to `<name>.stdout`/`.stderr` (default), else to the engine's stderr"),
    inert("stream_id", &[], "an option of fio's sg engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("svcl", &[], "an option of fio's dfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("thp", &[], "an option of the mmap engine, which fslab-engine does not have"),
    inert("touch_objects", &[], "an option of fio's rados engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("ttl", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("uri", &[], "an option of fio's nbd engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("verb", &[], "an option of fio's rdma engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("volume", &[], "an option of fio's glusterfs engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("window_size", &[], "an option of fio's net engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("writefua", &[], "an option of fio's sg engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("xnvme_admin", &[], "an option of fio's xnvme engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("xnvme_async", &[], "an option of fio's xnvme engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("xnvme_be", &[], "an option of fio's xnvme engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("xnvme_dev_nsid", &[], "an option of fio's xnvme engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("xnvme_iovec", &[], "an option of fio's xnvme engine, which fslab-engine refuses (`ioengine` says why)"),
    inert("xnvme_sync", &[], "an option of fio's xnvme engine, which fslab-engine refuses (`ioengine` says why)"),
];

/// The row for `name` (a name or an alias), or `None`.
pub fn find(name: &str) -> Option<&'static FioOption> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// Every name and alias, for "did you mean".
pub fn names() -> impl Iterator<Item = &'static str> {
    OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
}

/// docs/fio.md's table of options, from `OPTIONS`.
pub fn markdown_table() -> String {
    let mut out =
        String::from("| option | aliases | class | what fslab-engine does |\n|---|---|---|---|\n");
    for o in OPTIONS {
        let (class, what) = match o.class {
            Class::Mapped(_) => ("mapped", o.means),
            Class::Inert(why) => ("inert", why),
            Class::Refused(why) => ("refused", why),
        };
        let aliases = o
            .aliases
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!(
            "| `{}` | {aliases} | {class} | {what} |\n",
            o.name
        ));
    }
    out
}
