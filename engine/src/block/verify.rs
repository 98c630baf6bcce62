//! Self-verifying data (`verify = true`): each block written says where it belongs and
//! which write of that block it is; each block read is checked against that and against
//! the generation the engine expects there.
//!
//! A checksum alone cannot see a lost write: a block the device failed to overwrite
//! still holds an older, perfectly valid version of itself (fio's verify has this gap).
//! The expected generation of every block, kept across jobs in `verify_state`
//! (`verify_state.rs`), closes it.
//!
//! A block of `bs` bytes, little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `FSLABVFY` |
//! | 8..16 | the block's byte offset in the file or device |
//! | 16..20 | generation: 1 for the block's first write, +1 for each later one |
//! | 20..24 | crc32c of the whole block but these 4 bytes |
//! | 24..32 | the job's `randseed` (informational) |
//! | 32..bs | payload: pseudo-random, from (seed, offset, generation) |

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crc32c::{crc32c, crc32c_append};
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::diagnostics::{Warning, WarningKind};
use crate::report::{VerifyBad, VerifyClass, VerifyResult};
use crate::spec::VERIFY_BS_ALIGN;

pub const MAGIC: [u8; 8] = *b"FSLABVFY";
pub const HEADER_LEN: usize = 32;
const AT_OFFSET: usize = 8;
const AT_GENERATION: usize = 16;
const AT_CRC: usize = 20;
const AT_SEED: usize = 24;
/// The `bad` list's length: enough to see a pattern (one block, a run, every Nth).
pub const MAX_BAD: usize = 16;

// The spec only checks `bs` against the alignment; the header must fit in it, and the
// payload must be whole 8-byte words.
const _: () = assert!(HEADER_LEN as u64 <= VERIFY_BS_ALIGN && VERIFY_BS_ALIGN % 8 == 0);

/// What one read of a block gave back.
#[derive(Debug, Clone, Copy)]
pub enum ReadBack<'a> {
    /// The whole block.
    Data(&'a [u8]),
    /// The read failed with this errno.
    Failed(i32),
    /// The read returned this many bytes, fewer than `bs`.
    Short(usize),
}

/// How one read block compares with what was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Good,
    /// Never written as far as the engine knows: nothing to compare with.
    Unwritten,
    Bad(VerifyBad),
}

/// The checksum stored in a block: everything but the checksum's own bytes, so that a
/// flipped bit in the offset or generation is as corrupt as one in the payload (rather
/// than passing for a misplaced or stale block).
fn block_crc(block: &[u8]) -> u32 {
    crc32c_append(crc32c(&block[..AT_CRC]), &block[AT_CRC + 4..])
}

fn u64_at(block: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(block: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(block[at..at + 4].try_into().expect("4 bytes"))
}

/// Classifies one read of the block at `offset`, whose last recorded write gave it
/// generation `expected` (0: never written). The order matters: a failed read has no
/// content to judge; an unwritten block has nothing to be compared with; only a block
/// whose checksum holds has an offset and a generation worth believing.
pub fn classify(read: ReadBack, offset: u64, expected: u32) -> Verdict {
    let bad = |class, detail: String| VerifyBad {
        offset,
        class,
        errno: None,
        expected_generation: expected,
        found_generation: None,
        found_offset: None,
        detail,
    };
    let block = match read {
        ReadBack::Data(b) => b,
        ReadBack::Failed(errno) => {
            let msg = std::io::Error::from_raw_os_error(errno);
            return Verdict::Bad(VerifyBad {
                errno: Some(errno),
                ..bad(VerifyClass::Unreadable, format!("read failed: {msg}"))
            });
        }
        ReadBack::Short(n) => {
            return Verdict::Bad(bad(
                VerifyClass::Unreadable,
                format!("short read: {n} bytes"),
            ))
        }
    };
    if expected == 0 {
        return Verdict::Unwritten;
    }
    if block[..8] != MAGIC {
        return Verdict::Bad(bad(
            VerifyClass::Corrupt,
            format!("bad magic {}", hex(&block[..8])),
        ));
    }
    let stored = u32_at(block, AT_CRC);
    let computed = block_crc(block);
    if stored != computed {
        return Verdict::Bad(bad(
            VerifyClass::Corrupt,
            format!("crc32c mismatch: stored {stored:08x}, computed {computed:08x}"),
        ));
    }
    let found_offset = u64_at(block, AT_OFFSET);
    let found = u32_at(block, AT_GENERATION);
    let valid = |class, detail| {
        Verdict::Bad(VerifyBad {
            found_generation: Some(found),
            found_offset: Some(found_offset),
            ..bad(class, detail)
        })
    };
    if found_offset != offset {
        return valid(
            VerifyClass::Misplaced,
            format!("written for offset {found_offset} (generation {found})"),
        );
    }
    if found < expected {
        return valid(
            VerifyClass::Stale,
            format!("generation {found}, expected {expected}"),
        );
    }
    if found > expected {
        return valid(
            VerifyClass::Corrupt,
            format!("generation {found}, expected {expected}: newer than any write recorded"),
        );
    }
    Verdict::Good
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// splitmix64's finalizer: a cheap bijection that spreads every input bit over the word.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Writes the header and payload of generation `generation` of the block at `offset`.
/// The payload is one random pattern XORed with a word drawn from (seed, offset,
/// generation): as incompressible as the pattern, different in every 8 bytes from any
/// other block or generation, and a memory pass to make rather than a random stream.
pub fn fill(block: &mut [u8], pattern: &[u64], seed: u64, offset: u64, generation: u32) {
    let key = mix(seed ^ mix(offset ^ mix(u64::from(generation))));
    for (dst, w) in block[HEADER_LEN..].chunks_exact_mut(8).zip(pattern) {
        dst.copy_from_slice(&(w ^ key).to_le_bytes());
    }
    block[..8].copy_from_slice(&MAGIC);
    block[AT_OFFSET..AT_OFFSET + 8].copy_from_slice(&offset.to_le_bytes());
    block[AT_GENERATION..AT_GENERATION + 4].copy_from_slice(&generation.to_le_bytes());
    block[AT_SEED..AT_SEED + 8].copy_from_slice(&seed.to_le_bytes());
    let crc = block_crc(block);
    block[AT_CRC..AT_CRC + 4].copy_from_slice(&crc.to_le_bytes());
}

/// One thread's verification: the expected generation of every block of its part of the
/// target (the whole target with `numjobs = 1`; its own region or file otherwise), and
/// what the reads found. No other thread writes that part, unless the part is `Shared`.
pub struct Verifier {
    /// Threads writing one region: the generations live in a table they share.
    shared: Option<Arc<Shared>>,
    bs: u64,
    seed: u64,
    /// Where the thread's part starts: block i is the `bs` bytes at `base + i * bs`.
    base: u64,
    expected: Vec<u32>,
    pattern: Vec<u64>,
    result: VerifyResult,
    /// `verify_backlog`: writes completed and not yet read back, after how many writes
    /// the next ones are read back, the writes since the last batch, and the read-backs
    /// owed.
    backlog: VecDeque<u64>,
    backlog_every: u64,
    since_batch: u64,
    owed: u64,
    /// `verify_read_back`: the blocks this job wrote (a bit each).
    wrote: Option<Vec<u64>>,
    /// Where in its block the writes fall (one offset modulo `bs` for all, the usual
    /// case); a write elsewhere in its block (`seq_skip` not a multiple of `bs`) makes
    /// the per-block table.
    phase: Option<u64>,
    phases: Option<Vec<u32>>,
}

impl Verifier {
    /// `expected` holds one generation per block from `base` (from the state file, or
    /// zeros).
    pub fn new(bs: u64, seed: u64, expected: Vec<u32>, state_file: Option<String>) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x7e51_f1ed);
        let pattern = (0..(bs as usize - HEADER_LEN) / 8)
            .map(|_| rng.next_u64())
            .collect();
        Self {
            shared: None,
            bs,
            seed,
            base: 0,
            expected,
            pattern,
            result: VerifyResult {
                state_file,
                ..VerifyResult::default()
            },
            backlog: VecDeque::new(),
            backlog_every: 0,
            since_batch: 0,
            owed: 0,
            wrote: None,
            phase: None,
            phases: None,
        }
    }

    /// The thread shares its region with others: generations in `table` (whose blocks
    /// run from the target's start), each block taken by one thread's I/O at a time.
    pub fn sharing(mut self, table: Arc<Shared>) -> Self {
        self.wrote = self
            .wrote
            .map(|_| vec![0; table.generations.len().div_ceil(64)]);
        self.shared = Some(table);
        self
    }

    /// The table this thread shares with others, if it does.
    pub fn shared(&self) -> Option<&Shared> {
        self.shared.as_deref()
    }

    #[inline]
    fn expected_at(&self, b: usize) -> u32 {
        match &self.shared {
            Some(t) => t.generations[b].load(Ordering::Acquire),
            None => self.expected[b],
        }
    }

    /// The thread's part starts at `base` (a region of its own).
    pub fn from(mut self, base: u64) -> Self {
        self.base = base;
        self
    }

    /// After every `every` writes completed, read them back (`verify_backlog`).
    pub fn with_backlog(mut self, every: u64) -> Self {
        self.backlog_every = every;
        self
    }

    /// Keep which blocks were written, to read them back at the end (`verify_read_back`).
    pub fn with_read_back(mut self, on: bool) -> Self {
        self.wrote = on.then(|| vec![0; self.expected.len().div_ceil(64)]);
        self
    }

    #[inline]
    fn block(&self, offset: u64) -> usize {
        ((offset - self.base) / self.bs) as usize
    }

    /// Fills a write buffer with the next generation of the block at `offset`. Its
    /// expected generation moves only when the write completes (`written`): a write
    /// that failed may or may not have reached the device.
    #[inline]
    pub fn prepare_write(&self, buf: &mut [u8], offset: u64) {
        let generation = self.expected_at(self.block(offset)).saturating_add(1);
        fill(buf, &self.pattern, self.seed, offset, generation);
    }

    /// A write prepared for `offset` completed.
    #[inline]
    pub fn written(&mut self, offset: u64) {
        let b = self.block(offset);
        match &self.shared {
            // The block is this thread's until its I/O completes: no other write races.
            Some(t) => {
                let g = t.generations[b].load(Ordering::Acquire).saturating_add(1);
                t.generations[b].store(g, Ordering::Release);
            }
            None => self.expected[b] = self.expected[b].saturating_add(1),
        }
        self.result.blocks_written += 1;
        if self.backlog_every > 0 {
            self.backlog.push_back(offset);
            self.since_batch += 1;
            if self.since_batch == self.backlog_every {
                self.since_batch = 0;
                self.owed += self.backlog_every;
            }
        }
        if let Some(wrote) = &mut self.wrote {
            wrote[b / 64] |= 1 << (b % 64);
            let within = (offset - self.base) % self.bs;
            match (self.phase, &mut self.phases) {
                (None, _) => self.phase = Some(within),
                (Some(p), None) if p == within => {}
                (Some(p), None) => {
                    let mut all = vec![p as u32; self.blocks()];
                    all[b] = within as u32;
                    self.phases = Some(all);
                }
                (_, Some(all)) => all[b] = within as u32,
            }
        }
    }

    /// The next block to read back under `verify_backlog`, oldest write first, once a
    /// batch is owed.
    #[inline]
    pub fn next_backlog(&mut self) -> Option<u64> {
        if self.owed == 0 {
            return None;
        }
        let offset = self.backlog.pop_front()?;
        self.owed -= 1;
        Some(offset)
    }

    /// The blocks of the thread's part.
    pub fn blocks(&self) -> usize {
        match &self.shared {
            Some(t) => t.generations.len(),
            None => self.expected.len(),
        }
    }

    /// Where block `b` was written by this job (`verify_read_back`), if it was.
    #[inline]
    pub fn written_at(&self, b: usize) -> Option<u64> {
        let wrote = self.wrote.as_deref()?;
        if wrote[b / 64] & (1 << (b % 64)) == 0 {
            return None;
        }
        let within = match &self.phases {
            Some(all) => u64::from(all[b]),
            None => self.phase.unwrap_or(0),
        };
        Some(self.base + b as u64 * self.bs + within)
    }

    /// The read-back's blocks and time, for the report.
    pub fn read_back_done(&mut self, blocks: u64, secs: f64) {
        self.result.read_back_blocks = blocks;
        self.result.read_back_s = secs;
    }

    /// Classifies one read of the block at `offset` and counts it.
    pub fn read(&mut self, read: ReadBack, offset: u64) {
        let verdict = classify(read, offset, self.expected_at(self.block(offset)));
        let r = &mut self.result;
        r.blocks_read += 1;
        match verdict {
            Verdict::Good => r.good += 1,
            Verdict::Unwritten => r.unwritten += 1,
            Verdict::Bad(bad) => {
                *match bad.class {
                    VerifyClass::Corrupt => &mut r.corrupt,
                    VerifyClass::Misplaced => &mut r.misplaced,
                    VerifyClass::Stale => &mut r.stale,
                    VerifyClass::Unreadable => &mut r.unreadable,
                } += 1;
                // A block read again and again would fill the list with itself.
                if r.bad.len() < MAX_BAD && !r.bad.iter().any(|b| b.offset == bad.offset) {
                    r.bad.push(bad);
                }
            }
        }
    }

    /// The expected generation of every block, for the state file.
    pub fn generations(&self) -> &[u32] {
        &self.expected
    }

    pub fn result(&self) -> &VerifyResult {
        &self.result
    }

    pub fn into_result(self) -> VerifyResult {
        self.result
    }
}

/// A region that several threads write and verify (`numjobs` > 1 on one file): each
/// block's generation, and which blocks have an I/O in flight. A thread takes a block
/// before its I/O to it and gives it back when it completes, so the I/Os to a block
/// never overlap, whichever threads issue them: each read then knows the one generation
/// it must find. (fio's verify keeps a log per clone, so a clone that reads a block
/// another overwrote reports it corrupt.)
pub struct Shared {
    generations: Vec<AtomicU32>,
    busy: Vec<AtomicU64>,
    bs: u64,
}

impl Shared {
    pub fn new(blocks: usize, bs: u64) -> Self {
        Self {
            generations: (0..blocks).map(|_| AtomicU32::new(0)).collect(),
            busy: (0..blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            bs,
        }
    }

    /// Takes the block holding `offset` for one I/O; false while another thread has it.
    #[inline]
    pub fn take(&self, offset: u64) -> bool {
        let b = (offset / self.bs) as usize;
        let bit = 1u64 << (b % 64);
        self.busy[b / 64].fetch_or(bit, Ordering::AcqRel) & bit == 0
    }

    /// Gives the block holding `offset` back once its I/O completed.
    #[inline]
    pub fn give_back(&self, offset: u64) {
        let b = (offset / self.bs) as usize;
        self.busy[b / 64].fetch_and(!(1u64 << (b % 64)), Ordering::AcqRel);
    }
}

/// The threads' findings as one (each verified a part of its own): counts summed, the
/// first bad blocks of each in thread order, the read-back's time the longest.
pub fn merge(parts: impl IntoIterator<Item = VerifyResult>) -> Option<VerifyResult> {
    let mut all: Option<VerifyResult> = None;
    for p in parts {
        let Some(m) = &mut all else {
            all = Some(p);
            continue;
        };
        m.blocks_written += p.blocks_written;
        m.blocks_read += p.blocks_read;
        m.good += p.good;
        m.corrupt += p.corrupt;
        m.misplaced += p.misplaced;
        m.stale += p.stale;
        m.unreadable += p.unreadable;
        m.unwritten += p.unwritten;
        m.read_back_blocks += p.read_back_blocks;
        m.read_back_s = m.read_back_s.max(p.read_back_s);
        let room = MAX_BAD.saturating_sub(m.bad.len());
        m.bad.extend(p.bad.into_iter().take(room));
    }
    all
}

/// The `verify_failed` warning, when any block read back bad.
pub fn warning(r: &VerifyResult) -> Option<Warning> {
    let first = r.bad.first()?;
    let bad = r.corrupt + r.misplaced + r.stale + r.unreadable;
    let by_class: Vec<String> = [
        (r.corrupt, VerifyClass::Corrupt),
        (r.misplaced, VerifyClass::Misplaced),
        (r.stale, VerifyClass::Stale),
        (r.unreadable, VerifyClass::Unreadable),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, c)| format!("{n} {}", c.name()))
    .collect();
    Some(Warning::new(
        WarningKind::VerifyFailed,
        format!(
            "verify: {bad} of {} blocks bad ({}); first at offset {} ({}: {})",
            r.blocks_read,
            by_class.join(", "),
            first.offset,
            first.class.name(),
            first.detail
        ),
        "the data read back is not what was written: `verify.bad` lists the first blocks. \
         corrupt: damaged, zeroed or torn; misplaced: written at another offset; stale: an \
         older version came back (a lost write); unreadable: the read failed. The job's \
         status stays ok: judge it on these counts",
    ))
}

/// One line for people: what was checked and what was found.
pub fn summary(r: &VerifyResult) -> String {
    let mut line = format!(
        "verify: {} blocks written, {} read: {} good, {} corrupt, {} misplaced, {} stale, {} unreadable, {} unwritten",
        r.blocks_written, r.blocks_read, r.good, r.corrupt, r.misplaced, r.stale, r.unreadable, r.unwritten
    );
    if r.read_back_blocks > 0 {
        line.push_str(&format!(
            "; {} read back after the job in {:.2} s",
            r.read_back_blocks, r.read_back_s
        ));
    }
    if let Some(s) = &r.state_file {
        line.push_str(&format!("; state {s}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS: usize = 4096;

    fn pattern() -> Vec<u64> {
        Verifier::new(BS as u64, 7, vec![], None).pattern
    }

    fn block(offset: u64, generation: u32) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        fill(&mut b, &pattern(), 7, offset, generation);
        b
    }

    fn class(v: &Verdict) -> Option<VerifyClass> {
        match v {
            Verdict::Bad(b) => Some(b.class),
            _ => None,
        }
    }

    #[test]
    fn threads_sharing_a_region_check_each_others_writes() {
        let table = Arc::new(Shared::new(4, BS as u64));
        let mut a = Verifier::new(BS as u64, 7, vec![], None).sharing(Arc::clone(&table));
        let mut b = Verifier::new(BS as u64, 7, vec![], None).sharing(Arc::clone(&table));
        // A block is one thread's at a time.
        assert!(table.take(8192));
        assert!(!table.take(8192 + 100), "taken by the first");
        let mut first = vec![0u8; BS];
        a.prepare_write(&mut first, 8192);
        a.written(8192);
        table.give_back(8192);
        // B overwrites it: generation 2, from the shared table.
        assert!(table.take(8192));
        let mut second = vec![0u8; BS];
        b.prepare_write(&mut second, 8192);
        b.written(8192);
        table.give_back(8192);
        // A reads what B wrote: good, not "bad header" as a log per thread would say;
        // the first write, read back as if the second were lost, is stale.
        a.read(ReadBack::Data(&second), 8192);
        a.read(ReadBack::Data(&first), 8192);
        let r = a.result();
        assert_eq!((r.good, r.stale, r.corrupt), (1, 1, 0));
        assert_eq!(r.bad[0].expected_generation, 2);
    }

    #[test]
    fn a_block_as_written_is_good() {
        let b = block(8192, 3);
        assert_eq!(classify(ReadBack::Data(&b), 8192, 3), Verdict::Good);
        assert_eq!(&b[..8], b"FSLABVFY");
        assert_eq!(u64_at(&b, AT_OFFSET), 8192);
        assert_eq!(u32_at(&b, AT_GENERATION), 3);
        assert_eq!(u64_at(&b, AT_SEED), 7);
    }

    #[test]
    fn two_generations_and_two_offsets_differ_in_every_word() {
        let (a, b, c) = (block(0, 1), block(0, 2), block(4096, 1));
        for other in [&b, &c] {
            let same = a[HEADER_LEN..]
                .chunks(8)
                .zip(other[HEADER_LEN..].chunks(8))
                .filter(|(x, y)| x == y)
                .count();
            assert_eq!(same, 0);
        }
    }

    #[test]
    fn the_classes_come_in_their_order() {
        let good = block(8192, 2);
        // A failed read is unreadable whatever the state says, even for a block never written.
        for expected in [0, 2] {
            let v = classify(ReadBack::Failed(libc::EIO), 8192, expected);
            assert_eq!(class(&v), Some(VerifyClass::Unreadable));
        }
        // Unwritten before any check: a zeroed block the engine never wrote is no alarm.
        assert_eq!(
            classify(ReadBack::Data(&vec![0; BS]), 8192, 0),
            Verdict::Unwritten
        );
        // Corrupt before misplaced and stale: a damaged header's offset and generation
        // mean nothing. A block for another offset, older, with one payload bit flipped:
        let mut b = block(4096, 1);
        b[100] ^= 1;
        assert_eq!(
            class(&classify(ReadBack::Data(&b), 8192, 2)),
            Some(VerifyClass::Corrupt)
        );
        // Misplaced before stale: an old block of another offset is misplaced.
        let v = classify(ReadBack::Data(&block(4096, 1)), 8192, 2);
        assert_eq!(class(&v), Some(VerifyClass::Misplaced));
        let Verdict::Bad(bad) = v else { unreachable!() };
        assert_eq!(
            (bad.found_offset, bad.found_generation),
            (Some(4096), Some(1))
        );
        let v = classify(ReadBack::Data(&block(8192, 1)), 8192, 2);
        assert_eq!(class(&v), Some(VerifyClass::Stale));
        let Verdict::Bad(bad) = v else { unreachable!() };
        assert_eq!(bad.detail, "generation 1, expected 2");
        let v = classify(ReadBack::Data(&block(8192, 3)), 8192, 2);
        assert_eq!(class(&v), Some(VerifyClass::Corrupt));
        assert_eq!(classify(ReadBack::Data(&good), 8192, 2), Verdict::Good);
    }

    #[test]
    fn a_flipped_header_bit_is_corrupt_not_misplaced_or_stale() {
        for at in [AT_OFFSET + 1, AT_GENERATION, AT_SEED + 3, 0] {
            let mut b = block(8192, 2);
            b[at] ^= 0x10;
            let v = classify(ReadBack::Data(&b), 8192, 2);
            assert_eq!(class(&v), Some(VerifyClass::Corrupt), "byte {at}: {v:?}");
        }
    }

    #[test]
    fn failed_and_short_reads_are_unreadable_with_their_errno() {
        let v = classify(ReadBack::Failed(libc::EIO), 4096, 1);
        let Verdict::Bad(bad) = v else {
            panic!("{v:?}")
        };
        assert_eq!(bad.class, VerifyClass::Unreadable);
        assert_eq!(bad.errno, Some(libc::EIO));
        assert_eq!(bad.found_generation, None);
        assert!(bad.detail.contains("Input/output error"), "{}", bad.detail);
        let v = classify(ReadBack::Short(100), 4096, 1);
        let Verdict::Bad(bad) = v else {
            panic!("{v:?}")
        };
        assert_eq!((bad.class, bad.errno), (VerifyClass::Unreadable, None));
        assert_eq!(bad.detail, "short read: 100 bytes");
    }

    #[test]
    fn the_verifier_counts_each_read_and_lists_each_bad_block_once() {
        let mut v = Verifier::new(BS as u64, 7, vec![1, 1, 0], None);
        let mut buf = vec![0u8; BS];
        v.prepare_write(&mut buf, 0);
        v.written(0);
        assert_eq!(v.generations(), [2, 1, 0]);
        v.read(ReadBack::Data(&buf), 0);
        for _ in 0..3 {
            v.read(ReadBack::Failed(libc::EIO), 4096);
        }
        v.read(ReadBack::Data(&buf), 8192);
        let r = v.result();
        assert_eq!(
            (
                r.blocks_written,
                r.blocks_read,
                r.good,
                r.unreadable,
                r.unwritten
            ),
            (1, 5, 1, 3, 1)
        );
        assert_eq!(r.bad.len(), 1);
        let w = warning(r).unwrap();
        assert_eq!(
            w.message,
            "verify: 3 of 5 blocks bad (3 unreadable); first at offset 4096 (unreadable: read failed: Input/output error (os error 5))"
        );
    }

    #[test]
    fn no_bad_block_no_warning() {
        let mut v = Verifier::new(BS as u64, 7, vec![1], None);
        v.read(ReadBack::Data(&block(0, 1)), 0);
        assert_eq!(v.result().good, 1);
        assert!(warning(v.result()).is_none());
    }
}
