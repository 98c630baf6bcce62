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
    /// Things fio does that the engine does differently, said once per job.
    pub notes: Vec<String>,
    /// Which option (place, section, name) last set each engine key: the engine's own
    /// complaints about a key are told at the option.
    pub sources: std::collections::BTreeMap<String, (Place, String, String)>,
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
    let s = value::size(need(v)?, d.base())?;
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
    if modifier.is_some() {
        return Err(format!("`{v}`: the `:N` offset modifier is not supported"));
    }
    let engine = match rw {
        "read" => "read",
        "write" => "write",
        "randread" => "randread",
        "randwrite" => "randwrite",
        "rw" | "readwrite" => "readwrite",
        "randrw" => "randrw",
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(format!("`{v}`: trims are not supported"))
        }
        _ => {
            return Err(format!(
                "`{v}` is not a direction (read, write, randread, randwrite, rw, randrw)"
            ))
        }
    };
    d.set("rw", json!(engine));
    Ok(())
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
        return Err(format!("`{v}`: block size ranges are not supported"));
    }
    // `4k,8k` is reads,writes(,trims); an empty part keeps the default.
    let sizes: Vec<u64> = v
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| value::size(p, d.base()))
        .collect::<Result<_, _>>()?;
    if sizes.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!(
            "`{v}`: different read and write block sizes are not supported"
        ));
    }
    let Some(&bs) = sizes.first() else {
        return Err("needs a value".into());
    };
    d.set("bs", json!(bs));
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
    let engine = match v {
        "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => "sync",
        "io_uring" => "io_uring",
        "libaio" | "posixaio" => {
            d.notes.push(format!(
                "ioengine={v} runs on io_uring: the same asynchronous queue of `iodepth` requests"
            ));
            "io_uring"
        }
        "null" => "null",
        _ => {
            return Err(format!(
                "`{v}` is not an engine fslab-engine has (psync, sync, pvsync, pvsync2, vsync, io_uring, libaio, posixaio, null)"
            ))
        }
    };
    d.set("ioengine", json!(engine));
    Ok(())
}
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
    match value::int(need(v)?)? {
        1 => Ok(()),
        n => {
            let _ = d;
            Err(format!("{n}: repeating a job (`loops` > 1) is not supported; fslab repeats runs itself (`repeat` in a study)"))
        }
    }
}
fn a_zero_buffers(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    if value::boolean(v)? {
        d.set("buffer_content", json!("zeros"));
    }
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
fn a_offset(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let _ = d;
    match value::size(need(v)?, KbBase::Binary)? {
        0 => Ok(()),
        _ => Err("a start offset other than 0 is not supported".into()),
    }
}
fn a_nrfiles(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let _ = d;
    match value::int(need(v)?)? {
        1 => Ok(()),
        n => Err(format!(
            "{n} files per job are not supported (one file per job clone)"
        )),
    }
}
fn a_random_distribution(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let _ = d;
    match need(v)? {
        "random" => Ok(()),
        other => Err(format!(
            "`{other}`: only `random` (uniform) offsets are supported"
        )),
    }
}
fn a_norandommap(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let _ = (d, value::boolean(v)?);
    Ok(())
}
fn a_sync(d: &mut Draft, v: Option<&str>) -> Result<(), String> {
    let _ = d;
    match need(v)? {
        "0" | "none" => Ok(()),
        other => Err(format!("`{other}`: O_SYNC/O_DSYNC writes are not supported (`fsync=1` flushes after every write)")),
    }
}

/// fio's options as fslab-engine reads them (names and aliases as fio spells them).
pub const OPTIONS: &[FioOption] = &[
    mapped("name", &[], a_name, "the job's name (the section name when not set)"),
    inert("description", &[], "a comment"),
    mapped("rw", &["readwrite"], a_rw, "`rw`; `rw`/`readwrite` is the engine's `readwrite`"),
    mapped("bs", &["blocksize"], a_bs, "`bs`; a `read,write` pair only when equal"),
    mapped("size", &[], |d, v| size_key(d, "size", v), "`size`"),
    mapped("filesize", &[], |d, v| size_key(d, "size", v), "`size` (one file per job)"),
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
    mapped("loops", &[], a_loops, "1 only"),
    mapped("zero_buffers", &[], a_zero_buffers, "`buffer_content = \"zeros\"`"),
    mapped("verify", &[], a_verify, "a checksum method: `verify` (the engine's own header and crc32c); 0 or none: off"),
    mapped("offset", &[], a_offset, "0 only"),
    mapped("nrfiles", &[], a_nrfiles, "1 only"),
    mapped("random_distribution", &[], a_random_distribution, "`random` only (uniform)"),
    mapped("norandommap", &[], a_norandommap, "the engine's random offsets are drawn with repeats, as with norandommap"),
    mapped("sync", &[], a_sync, "0/none only"),
    inert("thread", &[], "the engine always runs its clones as threads"),
    inert("do_verify", &[], "a job with `verify` always checks what it reads"),
    inert("verify_fatal", &[], "bad blocks are counted and warned about, never fatal"),
    inert("refill_buffers", &[], "the engine gives every write fresh content"),
    inert("scramble_buffers", &[], "the engine gives every write fresh content"),
    inert("invalidate", &[], "the engine does not drop the file's page cache first (fslab's lab drops caches before each run)"),
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
    refused("fdatasync", &[], "fdatasync is not supported; `fsync` flushes after every N writes"),
    refused("startdelay", &[], "start delays are not supported; order jobs with `stonewall` or `wait_for`"),
    refused("exitall", &[], "a job cannot end the others early"),
    refused("exitall_on_error", &[], "a job cannot end the others early"),
    refused("continue_on_error", &[], "an I/O error ends the job (its report keeps the errno)"),
    refused("rate", &[], "rate limits are not supported"),
    refused("rate_iops", &[], "rate limits are not supported"),
    refused("rate_min", &["ratemin"], "rate limits are not supported"),
    refused("rate_iops_min", &[], "rate limits are not supported"),
    refused("rate_process", &[], "rate limits are not supported"),
    refused("thinktime", &[], "think time is not supported"),
    refused("bsrange", &["blocksize_range"], "block size ranges are not supported"),
    refused("bssplit", &[], "block size mixes are not supported"),
    refused("offset_increment", &[], "per-clone offsets are not supported"),
    refused("number_ios", &[], "`io_size` bounds a size-based job"),
    refused("openfiles", &[], "one file per job clone"),
    refused("filename_format", &[], "files in a directory are named `NAME.CLONE.0`"),
    refused("file_service_type", &[], "one file per job clone"),
    refused("zonemode", &[], "zoned I/O is not supported"),
    refused("zonesize", &[], "zoned I/O is not supported"),
    refused("zonerange", &[], "zoned I/O is not supported"),
    refused("cpus_allowed", &[], "CPU pinning is not supported"),
    refused("cpumask", &[], "CPU pinning is not supported"),
    refused("numa_cpu_nodes", &[], "NUMA placement is not supported"),
    refused("numa_mem_policy", &[], "NUMA placement is not supported"),
    refused("gtod_reduce", &[], "it would remove latency measurements the report keeps"),
    refused("disable_lat", &[], "it would remove latency measurements the report keeps"),
    refused("disable_clat", &[], "it would remove latency measurements the report keeps"),
    refused("disable_slat", &[], "it would remove latency measurements the report keeps"),
    refused("disable_bw_measurement", &["disable_bw"], "it would remove measurements the report keeps"),
    refused("steadystate", &["ss"], "use the engine's `steady_state` (SNIA's rule; docs/engine.md)"),
    refused("steadystate_duration", &["ss_dur"], "use the engine's `steady_state` (SNIA's rule; docs/engine.md)"),
    refused("steadystate_ramp_time", &["ss_ramp"], "use the engine's `steady_state` (SNIA's rule; docs/engine.md)"),
    refused("steadystate_check_interval", &["ss_interval"], "use the engine's `steady_state` (SNIA's rule; docs/engine.md)"),
    refused("hipri", &[], "polled completions are not supported"),
    refused("sqthread_poll", &[], "an SQ polling thread is not supported"),
    refused("buffer_compress_percentage", &[], "compressible buffers are not supported (`zero_buffers` for all zeros)"),
    refused("buffer_pattern", &[], "buffer patterns are not supported"),
    refused("dedupe_percentage", &[], "deduplicable buffers are not supported"),
    refused("verify_backlog", &[], "verification happens as blocks are read"),
    refused("verify_pattern", &[], "pattern verification is not supported"),
    refused("verify_state_save", &[], "the engine's `verify_state` keeps generations across jobs"),
    refused("verify_state_load", &[], "the engine's `verify_state` keeps generations across jobs"),
    refused("trim_percentage", &[], "trims are not supported"),
    refused("lockmem", &[], "memory locking is not supported"),
    refused("pre_read", &[], "pre-reading is not supported"),
    refused("exec_prerun", &[], "running commands is not supported"),
    refused("exec_postrun", &[], "running commands is not supported"),
    refused("flow", &[], "flow control between jobs is not supported"),
    refused("atomic", &[], "atomic writes are not supported"),
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
