//! Files workloads (`kind = "files"`) do what they claim on small trees, on tmpfs
//! (/dev/shm) and on the repository's disk. Trees live in temporary directories that
//! are removed even when a test fails.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use assert_cmd::Command;
use fslab_engine::files::set::FileSet;
use tempfile::TempDir;

mod common;
use common::run_job;

/// Temporary directories: one on tmpfs when there is one, one on the repository's disk.
fn places() -> Vec<TempDir> {
    let mut v = Vec::new();
    if Path::new("/dev/shm").is_dir() {
        v.push(tempfile::tempdir_in("/dev/shm").unwrap());
    }
    v.push(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap());
    v
}

fn job(op: &str, dir: &Path, extra: &str) -> String {
    format!(
        "kind = \"files\"\nop = \"{op}\"\ndirectory = \"{}\"\n{extra}\n",
        dir.display()
    )
}

/// Every file under `root`: relative path -> (content, mode, mtime ns).
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, u32, i128)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                let rel = e.path().strip_prefix(root).unwrap().display().to_string();
                let mtime = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
                out.insert(
                    rel,
                    (std::fs::read(e.path()).unwrap(), m.mode() & 0o7777, mtime),
                );
            }
        }
    }
    out
}

fn set_of(text: &str) -> FileSet {
    let (_, job) = fslab_engine::spec::load(text).unwrap();
    FileSet::from_job(&job)
}

const SET: &str = "nr_files = 300\nfiles_per_dir = 40\nsize_buckets = [[100, 1], [5000, 1], [70000, 1]]\ndup_share = 0.2\nrandseed = 7";

#[test]
fn create_makes_exactly_the_set_and_is_deterministic() {
    for place in places() {
        let a = place.path().join("a");
        let r = run_job(&job("create", &a, SET));
        assert_eq!(r["files"]["created"], 300);
        assert_eq!(r["results"][0]["op"], "create");
        assert_eq!(r["results"][0]["ios"], 300);
        let ta = tree(&a);
        assert_eq!(ta.len(), 300);
        let set = set_of(&job("create", &a, SET));
        let total: u64 = (0..300).map(|i| set.size(i)).sum();
        assert_eq!(r["files"]["bytes"], total);
        for i in 0..300 {
            let d = set.dir_rel(i / 40);
            let (content, _, _) = &ta[&format!("{d}/f{i:09}")];
            assert_eq!(content.len() as u64, set.size(i));
        }
        let b = place.path().join("b");
        let r2 = run_job(&job("create", &b, &format!("{SET}\nnumjobs = 4")));
        assert_eq!(r2["files"]["created"], 300);
        let tb = tree(&b);
        assert!(ta.keys().eq(tb.keys()));
        assert!(
            ta.values().zip(tb.values()).all(|(x, y)| x.0 == y.0),
            "same seed, same bytes"
        );
        let c = place.path().join("c");
        run_job(&job(
            "create",
            &c,
            &SET.replace("randseed = 7", "randseed = 8"),
        ));
        let tc = tree(&c);
        assert!(
            ta.values().zip(tc.values()).any(|(x, y)| x.0 != y.0),
            "another seed differs"
        );
    }
}

#[test]
fn sizes_follow_the_distribution() {
    let fixed = set_of("kind = \"files\"\nop = \"create\"\ndirectory = \"/x\"\nnr_files = 1000\nfile_size = \"16k\"");
    assert!((0..1000).all(|i| fixed.size(i) == 16384));
    let ln = set_of("kind = \"files\"\nop = \"create\"\ndirectory = \"/x\"\nnr_files = 20001\nfile_size = \"64k\"\nsize_dist = \"lognormal\"\nsize_sigma = 1.5");
    let mut sizes: Vec<u64> = (0..20001).map(|i| ln.size(i)).collect();
    sizes.sort_unstable();
    let median = sizes[10000] as f64;
    assert!((median / 65536.0 - 1.0).abs() < 0.05, "median {median}");
    assert!(sizes[0] < 10_000 && sizes[20000] > 1_000_000, "spread");
    let b = set_of("kind = \"files\"\nop = \"create\"\ndirectory = \"/x\"\nnr_files = 20000\nsize_buckets = [[\"4k\", 3], [\"1m\", 1]]");
    let small = (0..20000).filter(|&i| b.size(i) == 4096).count();
    let big = (0..20000).filter(|&i| b.size(i) == 1 << 20).count();
    assert_eq!(small + big, 20000);
    assert!((small as f64 / 20000.0 - 0.75).abs() < 0.02, "{small}");
}

#[test]
fn copy_is_byte_identical_and_keeps_mode_and_mtime() {
    for place in places() {
        let src = place.path().join("src");
        run_job(&job("create", &src, SET));
        // Give some files other modes, so the copy has something to keep.
        let f = src.join("d0001/f000000041");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        for threads in [1, 4] {
            let dst = place.path().join(format!("dst{threads}"));
            let r = run_job(&format!(
                "{}dest = \"{}\"\nnumjobs = {threads}",
                job("copy", &src, ""),
                dst.display()
            ));
            assert_eq!(r["files"]["copied"], 300);
            assert_eq!(tree(&src), tree(&dst), "contents, modes and mtimes");
            let sm = std::fs::metadata(src.join("d0002")).unwrap();
            let dm = std::fs::metadata(dst.join("d0002")).unwrap();
            assert_eq!((sm.mode(), sm.mtime()), (dm.mode(), dm.mtime()));
        }
    }
}

#[test]
fn mutate_then_sync_converges() {
    for place in places() {
        let src = place.path().join("src");
        let dst = place.path().join("dst");
        run_job(&job("create", &src, SET));
        let copy = format!("{}dest = \"{}\"", job("copy", &src, ""), dst.display());
        run_job(&copy);
        let before = tree(&src);
        let m = run_job(&job("mutate", &src, "mutate_share = 0.2"));
        let (changed, deleted) = (
            m["files"]["copied"].as_u64().unwrap(),
            m["files"]["deleted"].as_u64().unwrap(),
        );
        assert!(changed > 20 && deleted > 3, "{m}");
        assert_ne!(before, tree(&src));
        // A file only in dest must go.
        std::fs::write(dst.join("d0000/stray"), b"x").unwrap();
        std::fs::create_dir(dst.join("straydir")).unwrap();
        std::fs::write(dst.join("straydir/y"), b"y").unwrap();
        let sync = copy.replace("op = \"copy\"", "op = \"sync\"");
        let s = run_job(&format!("{sync}\nnumjobs = 4"));
        assert_eq!(
            s["files"]["copied"].as_u64().unwrap(),
            changed + deleted,
            "{s}"
        );
        assert_eq!(s["files"]["deleted"].as_u64().unwrap(), deleted + 2);
        assert_eq!(tree(&src), tree(&dst));
        let again = run_job(&sync);
        assert_eq!(again["files"]["copied"], 0, "nothing left to do");
    }
}

#[test]
fn dupes_finds_exactly_the_planted_groups() {
    for place in places() {
        let dir = place.path().join("set");
        let text = job("create", &dir, SET);
        run_job(&text);
        let set = set_of(&text);
        let mut planted: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for i in 0..300 {
            planted
                .entry(set.source(i))
                .or_default()
                .push(format!("{}/f{i:09}", set.dir_rel(i / 40)));
        }
        let mut expected: Vec<Vec<String>> =
            planted.into_values().filter(|g| g.len() > 1).collect();
        for g in &mut expected {
            g.sort();
        }
        expected.sort();
        assert!(!expected.is_empty());
        let mut answers = Vec::new();
        for threads in [1, 4] {
            let r = run_job(&job("dupes", &dir, &format!("numjobs = {threads}")));
            let got: Vec<Vec<String>> =
                serde_json::from_value(r["files"]["dupe_groups"].clone()).unwrap();
            assert_eq!(got, expected);
            assert_eq!(r["files"]["dupe_group_count"], expected.len());
            answers.push(r["files"].clone());
        }
        assert_eq!(answers[0], answers[1]);
    }
}

#[test]
fn scan_totals_match_the_files_and_du() {
    for place in places() {
        let dir = place.path().join("set");
        let text = job("create", &dir, SET);
        let c = run_job(&text);
        let mut answers = Vec::new();
        for threads in [1, 4] {
            let r = run_job(&job("scan", &dir, &format!("numjobs = {threads}")));
            assert_eq!(r["files"]["bytes"], c["files"]["bytes"]);
            assert_eq!(r["files"]["files"], 300);
            let totals = r["files"]["scan_totals"].as_object().unwrap().clone();
            assert_eq!(totals.len(), 9, "8 directories and the root: {totals:?}");
            let files: u64 = totals.values().map(|t| t["files"].as_u64().unwrap()).sum();
            assert_eq!(files, 300);
            if let Ok(out) = std::process::Command::new("du")
                .arg("-sb")
                .arg(dir.join("d0003"))
                .output()
            {
                if out.status.success() {
                    let du: u64 = String::from_utf8_lossy(&out.stdout)
                        .split_whitespace()
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert_eq!(totals["d0003"]["bytes"], du);
                }
            }
            answers.push(r["files"].clone());
        }
        assert_eq!(answers[0], answers[1]);
    }
}

#[test]
fn touch_chmod_xattr_stat_delete_reach_every_file() {
    for place in places() {
        let dir = place.path().join("set");
        run_job(&job(
            "create",
            &dir,
            "nr_files = 120\nfiles_per_dir = 50\nfile_size = 10",
        ));
        let old = tree(&dir);
        std::thread::sleep(std::time::Duration::from_millis(20));
        run_job(&job("touch", &dir, "numjobs = 2"));
        let touched = tree(&dir);
        assert!(
            old.iter().all(|(k, v)| touched[k].2 > v.2),
            "every mtime moved"
        );
        run_job(&job("chmod", &dir, "mode = \"0604\"\nnumjobs = 2"));
        assert!(tree(&dir).values().all(|v| v.1 == 0o604));
        let r = run_job(&job("xattr", &dir, ""));
        assert_eq!(r["files"]["files"], 120);
        let has_getfattr = std::process::Command::new("getfattr")
            .arg("--version")
            .output()
            .is_ok();
        if has_getfattr {
            let out = std::process::Command::new("getfattr")
                .args(["-R", "-n", "user.fslab", "--only-values"])
                .arg(&dir)
                .output()
                .unwrap();
            assert!(out.status.success());
        }
        let s = run_job(&job("stat", &dir, "numjobs = 3"));
        assert_eq!(s["files"]["files"], 120);
        assert_eq!(s["files"]["bytes"], 1200);
        let d = run_job(&job("delete", &dir, "numjobs = 2"));
        assert_eq!(d["files"]["deleted"], 120);
        assert!(!dir.exists(), "delete leaves nothing");
    }
}

#[test]
fn loops_do_the_tree_again_and_runtime_stops_them() {
    let place = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = place.path().join("set");
    run_job(&job(
        "create",
        &dir,
        "nr_files = 150\nfiles_per_dir = 40\nfile_size = 10",
    ));
    // Three threads, four passes: each pass ends for all before the next begins, so
    // every file is done exactly four times, each directory walked four times.
    let s = run_job(&job("stat", &dir, "numjobs = 3\nloops = 4"));
    assert_eq!(s["files"]["files"], 600);
    assert_eq!(s["files"]["bytes"], 6000);
    assert_eq!(
        s["files"]["dirs"],
        4 * 5,
        "the root and four directories, four times"
    );
    // Passes without end, cut short by `runtime`.
    let t = run_job(&job(
        "stat",
        &dir,
        "numjobs = 2\nloops = 4294967296\nruntime = \"300ms\"",
    ));
    let (files, runtime) = (
        t["files"]["files"].as_u64().unwrap(),
        t["runtime_s"].as_f64().unwrap(),
    );
    assert!(files > 150, "more than one pass in 300 ms: {files}");
    assert!(
        (0.3..1.0).contains(&runtime),
        "stopped at runtime: {runtime} s"
    );
    // A pass that changes the tree is not done twice: `loops` is ignored, with a warning.
    let d = run_job(&job("delete", &dir, "loops = 2"));
    assert_eq!(d["files"]["deleted"], 150);
    assert!(
        d["warnings"].to_string().contains("`loops` has no effect"),
        "{d}"
    );
}

fn refused(text: &str) -> String {
    let out = Command::cargo_bin("fslab-engine")
        .unwrap()
        .args(["run", "-"])
        .write_stdin(text.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(out.stdout.is_empty());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_files_jobs_exit_2_with_every_message() {
    let err = refused("kind = \"files\"\nop = \"copy\"\nnr_file = 3\ndup_share = 2");
    assert!(err.contains("`nr_file`: unknown key"), "{err}");
    assert!(err.contains("did you mean `nr_files`?"), "{err}");
    let err = refused("kind = \"files\"\nop = \"copy\"\ndup_share = 2");
    assert!(err.contains("`directory`: is required"), "{err}");
    assert!(err.contains("`dest`: is required"), "{err}");
    let err = refused("kind = \"files\"\nop = \"create\"\ndirectory = \"/tmp/x\"\nnr_files = 0\ndup_share = 2\nsize_buckets = []\nfile_size = \"4k\"");
    assert!(
        err.contains("`nr_files`: 0 is out of range (1..=100000000)"),
        "{err}"
    );
    assert!(
        err.contains("`dup_share`: 2 is out of range (0..=1)"),
        "{err}"
    );
    assert!(err.contains("`size_buckets`: is empty"), "{err}");
    assert!(err.contains("`file_size`: cannot be combined"), "{err}");
    let err = refused("kind = \"files\"\ndirectory = \"/tmp/x\"\nop = \"chmdo\"");
    assert!(err.contains("did you mean `chmod`?"), "{err}");
    let err = refused("filename = \"/tmp/x\"\nsize = \"1m\"\nnr_files = 3");
    assert!(err.contains("only applies to `kind = \"files\"`"), "{err}");
    let err = refused("kind = \"files\"\nop = \"scan\"\ndirectory = \"/nonexistent/fslab\"");
    assert!(err.contains("is not a directory"), "{err}");
    let place = tempfile::tempdir().unwrap();
    std::fs::write(place.path().join("x"), b"x").unwrap();
    let err = refused(&job("create", place.path(), ""));
    assert!(err.contains("is not empty"), "{err}");
}
