//! Application models (`kind = "oltp"`, `"mailstore"`) do the I/O they claim, checked
//! through the engine's own counters, on tmpfs (/dev/shm) and on the repository's disk.
//! Files live in temporary directories that are removed even when a test fails.

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

mod common;
use common::{engine_stdin, result, run_job};

fn shm_or_disk() -> (TempDir, bool) {
    if Path::new("/dev/shm").is_dir() {
        (tempfile::tempdir_in("/dev/shm").unwrap(), true)
    } else {
        (disk(), false)
    }
}

/// On the repository's disk: real fdatasync latency, and O_DIRECT works.
fn disk() -> TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// A small job; O_DIRECT except on tmpfs, which has none.
fn job(kind: &str, dir: &Path, tmpfs: bool, extra: &str) -> String {
    let data = if extra.contains("data_size") {
        ""
    } else {
        "data_size = \"8m\"\n"
    };
    format!(
        "kind = \"{kind}\"\ndirectory = \"{}\"\n{data}log_size = \"1m\"\ndirect = {}\n{extra}\n",
        dir.display(),
        !tmpfs
    )
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn oltp_does_the_io_it_claims() {
    let (dir, tmpfs) = shm_or_disk();
    let r = run_job(&job(
        "oltp",
        dir.path(),
        tmpfs,
        "runtime = \"1s\"\nnumjobs = 2\nscan_share = 0\ncheckpoint_interval = \"300ms\"",
    ));
    let app = &r["app"];
    let reads = u(&result(&r, "data_read")["ios"]);
    let writes = u(&result(&r, "data_write")["ios"]);
    // 11 page reads and 2 page updates per transaction: 5.5:1 exactly.
    assert!(reads > 0);
    assert_eq!(reads * 2, u(&app["pages_dirtied"]) * 11, "{app}");
    assert_eq!(
        u(&app["txn"]) * 11,
        reads,
        "every transaction reads 11 pages"
    );
    // Checkpoints write each dirty page once; the last one writes what is left.
    let ckpts = app["checkpoints"].as_array().unwrap();
    assert!(ckpts.last().unwrap()["last"].as_bool().unwrap());
    assert!(writes <= u(&app["pages_dirtied"]) && writes > 0);
    let data = &app["files"]["data"];
    assert_eq!(data["read"]["avg_bytes"], 8192.0);
    assert_eq!(data["write"]["avg_bytes"], 8192.0);
    // One fdatasync per checkpoint on the data file.
    assert!(u(&data["fsyncs"]) >= 3, "{data}");
    assert!(u(&data["fsyncs"]) <= ckpts.len() as u64);
    // Every commit is synchronous, and is covered by a flush.
    let c = &app["commits"];
    assert_eq!(c["count"], app["txn"]);
    assert_eq!(c["lazy"], 0);
    assert!(u(&c["flushes"]) <= u(&c["count"]));
    let log = &app["files"]["log"];
    assert_eq!(log["write"]["ios"], c["flushes"]);
    assert_eq!(
        u(&log["write"]["bytes"]) % 512,
        0,
        "log writes are whole sectors"
    );
    assert_eq!(r["fsync"]["count"], u(&data["fsyncs"]) + u(&log["fsyncs"]));
}

#[test]
fn a_steady_model_reports_its_window_and_the_app_numbers_made_from_it() {
    let (dir, tmpfs) = shm_or_disk();
    // Wide limits: what a steady model reports, not how steady this machine is.
    let r = run_job(&job(
        "oltp",
        dir.path(),
        tmpfs,
        "runtime = \"30s\"\nnumjobs = 2\ninterval = \"100ms\"\ncheckpoint_interval = \"200ms\"\nsteady_state = true\nsteady_window = 3\nsteady_range = \"90%\"\nsteady_slope = \"90%\"",
    ));
    let s = &r["steady_state"];
    assert_eq!(s["attained"], true, "{s}");
    assert_eq!(
        s["limits"]["round_s"], 1.0,
        "at least a second, and a checkpoint"
    );
    let rounds = s["window_rounds"].as_array().unwrap();
    let window_txn: u64 = rounds.iter().map(|x| u(&x["ios"])).sum();
    let txn = result(&r, "txn");
    assert_eq!(
        u(&txn["ios"]),
        window_txn,
        "the rate tracked is transactions"
    );
    let runtime = r["runtime_s"].as_f64().unwrap();
    assert!(runtime < 10.0, "{runtime}");
    let app = &r["app"];
    assert_eq!(
        app["txn"], txn["ios"],
        "the app section reads the window's results"
    );
    let per_s = app["txn_per_s"].as_f64().unwrap();
    assert!(
        (per_s - window_txn as f64 / runtime).abs() < 1e-6,
        "{per_s}"
    );
}

#[test]
fn oltp_scans_are_big_reads() {
    let (dir, tmpfs) = shm_or_disk();
    let r = run_job(&job(
        "oltp",
        dir.path(),
        tmpfs,
        "runtime = \"300ms\"\nscan_share = 1\n",
    ));
    let data = &r["app"]["files"]["data"];
    assert_eq!(data["read"]["avg_bytes"], 65536.0, "{data}");
    assert_eq!(r["app"]["scans"], data["read"]["ios"]);
    assert_eq!(r["app"]["commits"]["count"], 0, "scans commit nothing");
}

#[test]
fn checkpoint_bursts_show_in_the_series() {
    let (dir, tmpfs) = shm_or_disk();
    let r = run_job(&job(
        "oltp",
        dir.path(),
        tmpfs,
        "runtime = \"1.2s\"\ninterval = \"100ms\"\ncheckpoint_interval = \"500ms\"",
    ));
    let points = r["series"]["points"].as_array().unwrap();
    let with_writes = points.iter().filter(|p| !p["write"].is_null()).count();
    let with_txn = points.iter().filter(|p| !p["txn"].is_null()).count();
    // Data writes come only in the checkpoints' bursts (two, plus the last).
    assert!(with_txn >= 10, "{with_txn}");
    assert!(
        (2..=5).contains(&with_writes),
        "data writes in {with_writes} of {} points",
        points.len()
    );
    let peak = r["app"]["checkpoints"][0]["iops"].as_f64().unwrap();
    assert!(peak > 0.0);
}

#[test]
fn group_commit_covers_several_commits_per_flush() {
    let dir = disk();
    let r = run_job(&job(
        "oltp",
        dir.path(),
        false,
        "runtime = \"1s\"\nnumjobs = 8\ntxn_reads = 0\ntxn_writes = 1\ncheckpoint_interval = \"10s\"",
    ));
    let c = &r["app"]["commits"];
    assert!(
        u(&c["flushes"]) < u(&c["count"]),
        "8 users committing at once share flushes: {c}"
    );
    assert!(c["records_per_flush"].as_f64().unwrap() > 1.0);
}

#[test]
fn mailstore_cache_hits_cost_no_io() {
    let (dir, tmpfs) = shm_or_disk();
    // A cache as big as a 64-page DB: warm after the ramp, no data reads after it.
    let r = run_job(&job(
        "mailstore",
        dir.path(),
        tmpfs,
        "data_size = \"2m\"\ncache_size = \"2m\"\nruntime = \"500ms\"\nramp_time = \"300ms\"\nmaintenance_rate = 0",
    ));
    let cache = &r["app"]["cache"];
    assert!(u(&cache["lookups"]) > 100, "{cache}");
    assert_eq!(cache["hits"], cache["lookups"], "{cache}");
    assert_eq!(result(&r, "data_read")["ios"], 0);
    // Without a cache every lookup is a read.
    let r = run_job(&job(
        "mailstore",
        dir.path(),
        tmpfs,
        "cache_size = 0\nruntime = \"300ms\"\nmaintenance_rate = 0",
    ));
    assert_eq!(r["app"]["cache"]["hits"], 0);
    assert_eq!(result(&r, "data_read")["ios"], r["app"]["cache"]["lookups"]);
    assert!(r["app"]["maintenance"]["ios"] == 0);
}

#[test]
fn mailstore_mix_and_lazy_commits() {
    let dir = disk();
    let r = run_job(&job(
        "mailstore",
        dir.path(),
        false,
        "runtime = \"1s\"\nnumjobs = 4\nlazy_commit_share = 0.5\nmaintenance_rate = \"4m\"",
    ));
    let app = &r["app"];
    let ops = &app["ops"];
    let total: u64 = ["insert", "delete", "replace", "read"]
        .iter()
        .map(|k| u(&ops[k]))
        .sum();
    assert_eq!(total, u(&app["txn"]));
    let share = u(&ops["insert"]) as f64 / total as f64;
    assert!((share - 0.4).abs() < 0.1, "insert share {share}");
    let c = &app["commits"];
    assert_eq!(
        u(&c["count"]),
        total - u(&ops["read"]),
        "reads commit nothing"
    );
    let lazy = u(&c["lazy"]) as f64 / u(&c["count"]) as f64;
    assert!((lazy - 0.5).abs() < 0.15, "lazy share {lazy}");
    // A lazy commit does not wait for the disk: far below a synchronous one.
    let (l, s) = (
        c["lazy_lat_ns"]["p50"].as_f64().unwrap(),
        c["sync_lat_ns"]["p50"].as_f64().unwrap(),
    );
    assert!(l * 10.0 < s, "lazy p50 {l} ns vs sync p50 {s} ns");
    // Direct: the log is O_DSYNC, no fdatasync on it.
    assert_eq!(app["files"]["log"]["fsyncs"], 0);
    assert_eq!(app["files"]["data"]["read"]["avg_bytes"], 32768.0);
    assert!(
        u(&app["maintenance"]["ios"]) >= 10,
        "{}",
        app["maintenance"]
    );
    let js = &app["jetstress"];
    for k in ["transactional_iops", "db_reads_per_s", "log_writes_per_s"] {
        assert!(js[k].as_f64().unwrap() > 0.0, "{k}: {js}");
    }
}

#[test]
fn verdict_passes_and_fails_on_its_thresholds() {
    let (dir, tmpfs) = shm_or_disk();
    let base = "runtime = \"300ms\"\ncache_size = 0\n";
    let r = run_job(&job("mailstore", dir.path(), tmpfs, base));
    let v = &r["app"]["verdict"];
    assert_eq!(v["pass"], true, "{v}");
    // Thresholds below anything measurable: both checks fail.
    let r = run_job(&job(
        "mailstore",
        dir.path(),
        tmpfs,
        &format!("{base}read_lat_ms_max = 0.000001\nlog_lat_ms_max = 0.000001"),
    ));
    let v = &r["app"]["verdict"];
    assert_eq!(v["pass"], false, "{v}");
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c["pass"] == false), "{v}");
    assert!(checks[0]["value"].as_f64().unwrap() >= checks[0]["max"].as_f64().unwrap());
}

#[test]
fn bad_keys_are_refused_before_anything_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "kind = \"mailstore\"\ndirectory = \"{}\"\nruntime = 1\nop_mix = [1, 2]\nlazy_commit_share = 2\ntxn_reads = 3\npage_sise = \"8k\"\n",
        dir.path().display()
    );
    let (code, _, err) = engine_stdin("run", &text);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean `page_size`"), "{err}");
    // Type and range problems come all at once once the keys are known.
    let text = format!(
        "kind = \"mailstore\"\ndirectory = \"{}\"\nruntime = 1\nop_mix = [1, 2]\nlazy_commit_share = 2\ntxn_reads = 3\nioengine = \"io_uring\"\n",
        dir.path().display()
    );
    let (code, _, err) = engine_stdin("run", &text);
    assert_eq!(code, 2);
    for key in ["op_mix", "lazy_commit_share", "txn_reads", "ioengine"] {
        assert!(err.contains(&format!("`{key}`")), "{key}: {err}");
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    // Model keys in a block job, and a model without runtime.
    let (code, _, _) = engine_stdin("check", "filename = \"/f\"\ncache_size = \"1m\"\n");
    assert_eq!(code, 2);
    let (code, _, err) = engine_stdin("check", "kind = \"oltp\"\ndirectory = \"/d\"\n");
    assert_eq!(code, 2);
    assert!(err.contains("`runtime`"));
}

/// Pages of `path` in the page cache (util-linux's `fincore`), or None without it.
fn resident_pages(path: &Path) -> Option<u64> {
    let out = std::process::Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "PAGES"])
        .arg(path)
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

#[test]
fn an_uncached_model_leaves_its_files_out_of_the_page_cache() {
    // On the repository's disk: tmpfs pages are the file, and cannot be dropped.
    let dir = disk();
    let base = "runtime = \"500ms\"\ncache_size = 0\ndata_size = \"16m\"\n";
    let buffered = format!(
        "kind = \"mailstore\"\ndirectory = \"{}\"\nlog_size = \"1m\"\ndirect = false\n{base}",
        dir.path().display()
    );
    let data = dir.path().join("job.data");
    let (code, out, err) = engine_stdin("run", &format!("name = \"job\"\n{buffered}"));
    assert_eq!(code, 0, "{err}");
    let Some(cached) = resident_pages(&data) else {
        return; // no fincore: nothing to look with
    };
    assert!(cached > 0, "a buffered run leaves pages behind: {out}");
    std::fs::remove_file(&data).unwrap();
    let (code, _, err) = engine_stdin(
        "run",
        &format!("name = \"job\"\n{buffered}uncached = true\n"),
    );
    if err.contains("Operation not supported") {
        return; // a kernel before 6.14, or a file system without RWF_DONTCACHE
    }
    assert_eq!(code, 0, "{err}");
    let left = resident_pages(&data).unwrap();
    assert!(
        left * 4 < cached,
        "uncached left {left} pages, buffered {cached}"
    );
    // And `uncached` with direct I/O is refused: it means nothing there.
    let (code, _, err) = engine_stdin(
        "check",
        &format!(
            "{}uncached = true\n",
            buffered.replace("direct = false", "direct = true")
        ),
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("`uncached`: only applies to buffered I/O"),
        "{err}"
    );
}
