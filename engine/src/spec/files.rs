//! `kind = "files"`: the keys of a file-management job, checked for its `op`.

use super::parse::{range, size};
use super::{
    FileOp, Job, JobSpec, ModeValue, SizeDist, MAX_FILES_PER_DIR, MAX_FILE_SIZE, MAX_LOOPS,
    MAX_NR_FILES,
};
use crate::error::JobError;

impl JobSpec {
    /// The keys of a files job, checked, into `job`; those its `op` does not use stay
    /// `None`. Other kinds are refused these keys by the key table (`KEYS`).
    pub(super) fn resolve_files(&self, job: &mut Job, e: &mut Vec<JobError>) {
        let Some(op) = self.op else {
            e.push(
                JobError::new("op", "is required with `kind = \"files\"`").hint(
                    "e.g. `op = \"create\"`; one of create, copy, sync, mutate, scan, dupes, touch, chmod, xattr, delete, stat",
                ),
            );
            return;
        };
        job.op = Some(op);
        match self.directory.as_deref() {
            None => e.push(
                JobError::new("directory", "is required with `kind = \"files\"`")
                    .hint("the root of the file tree, e.g. `directory = \"/mnt/test/set\"`"),
            ),
            Some("") => {}
            Some(_) if self.filename.is_some() => e.push(JobError::new(
                "filename",
                "does not apply to `kind = \"files\"`: the tree is `directory`",
            )),
            Some(_) => {}
        }
        if matches!(op, FileOp::Copy | FileOp::Sync) {
            match self.dest.as_deref() {
                None => e.push(
                    JobError::new("dest", format!("is required with `op = \"{}\"`", op.name()))
                        .hint("the tree to write to, e.g. `dest = \"/mnt/test/copy\"`"),
                ),
                Some("") => e.push(JobError::new("dest", "is empty")),
                Some(d) if Some(d) == self.directory.as_deref() => {
                    e.push(JobError::new("dest", "is the same as `directory`"))
                }
                Some(d) => job.dest = Some(d.to_string()),
            }
        }
        let create_first = self.create_first.unwrap_or(false);
        if create_first && matches!(op, FileOp::Create | FileOp::Copy | FileOp::Sync) {
            e.push(
                JobError::new(
                    "create_first",
                    format!("does not apply to `op = \"{}\"`", op.name()),
                )
                .hint("it readies the set for an op that works on one (stat, delete, scan...)"),
            );
        }
        job.create_first = create_first;
        if op == FileOp::Create || create_first {
            let nr = self.nr_files.unwrap_or(1000);
            range("nr_files", nr, 1, MAX_NR_FILES, e);
            job.nr_files = Some(nr);
            let per_dir = self.files_per_dir.unwrap_or(1000);
            range("files_per_dir", per_dir, 1, MAX_FILES_PER_DIR, e);
            job.files_per_dir = Some(per_dir);
            let dup = self.dup_share.unwrap_or(0.0);
            range("dup_share", dup, 0.0, 1.0, e);
            job.dup_share = Some(dup);
            let file_size = size("file_size", &self.file_size, e);
            if let Some(s) = file_size {
                range("file_size", s, 0, MAX_FILE_SIZE, e);
            }
            if let Some(buckets) = &self.size_buckets {
                for key in ["file_size", "size_dist", "size_sigma"] {
                    if self.is_set(key) {
                        e.push(
                            JobError::new(key, "cannot be combined with `size_buckets`").hint(
                                "give sizes either as buckets or as `file_size` (+ `size_dist`)",
                            ),
                        );
                    }
                }
                if buckets.is_empty() {
                    e.push(
                        JobError::new("size_buckets", "is empty")
                            .hint("e.g. `size_buckets = [[\"4k\", 3], [\"1m\", 1]]`"),
                    );
                }
                let mut resolved = Vec::new();
                for (i, (sv, w)) in buckets.iter().enumerate() {
                    let key = format!("size_buckets[{i}]");
                    let b = size(&key, &Some(sv.clone()), e);
                    if let Some(b) = b {
                        range(&key, b, 0, MAX_FILE_SIZE, e);
                    }
                    if !(w.is_finite() && *w > 0.0) {
                        e.push(JobError::new(
                            &key,
                            format!("weight {w} must be more than 0"),
                        ));
                    }
                    resolved.push((b.unwrap_or(0), *w));
                }
                job.size_buckets = Some(resolved);
            } else {
                let dist = self.size_dist.unwrap_or(SizeDist::Fixed);
                job.size_dist = Some(dist);
                job.file_size = Some(file_size.unwrap_or(16 << 10));
                if dist == SizeDist::Lognormal {
                    let sigma = self.size_sigma.unwrap_or(1.0);
                    range("size_sigma", sigma, 0.0, 4.0, e);
                    job.size_sigma = Some(sigma);
                }
            }
        }
        if op == FileOp::Mutate {
            let share = self.mutate_share.unwrap_or(0.1);
            range("mutate_share", share, 0.0, 1.0, e);
            job.mutate_share = Some(share);
        }
        if op == FileOp::Chmod {
            let bits = match &self.mode {
                None => Some(0o640),
                Some(ModeValue::Bits(b)) => Some(*b),
                Some(ModeValue::Text(t)) => {
                    let digits = t.trim_start_matches("0o");
                    u32::from_str_radix(digits, 8).ok().or_else(|| {
                        e.push(
                            JobError::new("mode", format!("{t:?} is not an octal mode"))
                                .hint("e.g. `mode = \"0640\"`"),
                        );
                        None
                    })
                }
            };
            if let Some(b) = bits {
                if b > 0o7777 {
                    e.push(JobError::new(
                        "mode",
                        format!("{b:o} is out of range (0..=7777 octal)"),
                    ));
                }
                job.mode = Some(format!("{b:04o}"));
            }
        }
        if let Some(n) = self.loops.filter(|_| super::REPEATABLE.contains(&op)) {
            range("loops", n, 1, MAX_LOOPS, e);
            job.loops = Some(n);
        }
    }
}
