//! `ioengine = "io_uring"`: one ring per thread, `iodepth` requests in flight.
//!
//! The ring is set up the way fio's t/io_uring does for peak rates: a single issuer
//! with deferred task work, the file and the buffers registered once, completions
//! drained in a batch per wake-up. Each request is timed from just before the
//! `io_uring_enter` that submits it to the moment its completion is seen, one clock
//! read per completion (fio reads the clock once per reaped batch).

use std::io;
use std::os::fd::RawFd;
use std::time::Instant;

use io_uring::{opcode, squeue, types, IoUring};

use crate::block::worker::Worker;
use crate::buffers::Buffers;
use crate::record::Op;

pub struct Queue {
    ring: IoUring,
    depth: u32,
    fixed_buffers: bool,
}

fn build(entries: u32) -> io::Result<IoUring> {
    // Newest flags first; older kernels refuse them with EINVAL.
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
        .or_else(|_| IoUring::builder().build(entries))
}

/// The submission entry for one request; `slot` comes back as the completion's user data.
fn entry(fixed_buffers: bool, w: &Worker, op: Op, slot: u32, offset: u64) -> squeue::Entry {
    let buf = w.buffers.ptr(slot);
    let len = w.bs as u32;
    let file = types::Fixed(0);
    let e = match (op, fixed_buffers) {
        (Op::Read, true) => opcode::ReadFixed::new(file, buf, len, 0)
            .offset(offset)
            .build(),
        (Op::Write, true) => opcode::WriteFixed::new(file, buf, len, 0)
            .offset(offset)
            .build(),
        (Op::Read, false) => opcode::Read::new(file, buf, len).offset(offset).build(),
        (Op::Write, false) => opcode::Write::new(file, buf, len).offset(offset).build(),
        (Op::Files | Op::Log | Op::Txn | Op::Background, _) => {
            unreachable!("block jobs only read and write")
        }
    };
    e.user_data(u64::from(slot))
}

impl Queue {
    /// Sets up the ring in the calling thread, which must be the one that runs it.
    pub fn new(fd: RawFd, buffers: &Buffers, depth: u32) -> io::Result<Self> {
        let ring = build(depth.next_power_of_two())?;
        ring.submitter().register_files(&[fd])?;
        let iov = libc::iovec {
            iov_base: buffers.ptr(0).cast(),
            iov_len: buffers.len() * depth as usize,
        };
        // SAFETY: the iovec covers the worker's Buffers, which outlive the ring (the
        // worker owns both and drops the ring first). Registration can fail under a
        // low RLIMIT_MEMLOCK; plain reads and writes then do the same job a bit slower.
        let fixed_buffers = unsafe { ring.submitter().register_buffers(&[iov]) }.is_ok();
        Ok(Self {
            ring,
            depth,
            fixed_buffers,
        })
    }

    /// Runs until the worker is done; waits for at least `batch_min` completions per
    /// `io_uring_enter` (fio's `iodepth_batch_complete_min`).
    pub fn run(mut self, w: &mut Worker, batch_min: usize) {
        let depth = self.depth as usize;
        let fixed = self.fixed_buffers;
        let start = Instant::now();
        let mut slots: Vec<(Op, u64, Instant)> = vec![(Op::Read, 0, start); depth];
        let mut fresh: Vec<u32> = Vec::with_capacity(depth);
        let mut inflight = 0usize;
        let mut pending: Vec<squeue::Entry> = Vec::with_capacity(depth);

        for slot in 0..self.depth {
            let Some((op, offset)) = w.next(Instant::now()) else {
                break;
            };
            w.prepare(op, slot, offset);
            slots[slot as usize] = (op, offset, start);
            pending.push(entry(self.fixed_buffers, w, op, slot, offset));
            fresh.push(slot);
        }
        let entries: Vec<squeue::Entry> = std::mem::take(&mut pending);
        let (submitter, mut sq, mut cq) = self.ring.split();
        for e in &entries {
            // SAFETY: every entry points into this worker's Buffers at a distinct slot,
            // and the slot is not reused until its completion has been reaped.
            unsafe {
                sq.push(e)
                    .expect("the ring has a slot per request in flight")
            };
            inflight += 1;
        }
        while inflight > 0 {
            sq.sync();
            let ts = Instant::now();
            for &s in &fresh {
                slots[s as usize].2 = ts;
            }
            fresh.clear();
            // Waiting for several completions per wake-up saves CPU, but a request that
            // completed early is seen (and timed) later: 1 unless the job asks.
            let want = batch_min.min(inflight);
            match submitter.submit_and_wait(want) {
                Ok(_) => {}
                // Interrupted by a signal, or the kernel is short of resources: reap what
                // completed and try again.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                    ) => {}
                Err(e) => {
                    w.fail(
                        Op::Read,
                        0,
                        e.raw_os_error(),
                        format!("io_uring_enter failed: {e}"),
                    );
                    break;
                }
            }
            // Learn which entries the kernel consumed, so their slots can be refilled.
            sq.sync();
            cq.sync();
            for cqe in &mut cq {
                let now = Instant::now();
                let slot = cqe.user_data() as u32;
                let (op, offset, submitted) = slots[slot as usize];
                inflight -= 1;
                // A failed I/O stops the job (`next` then says so), unless verify counted
                // it as an unreadable block: its slot then goes on to the next block.
                if w.check(op, offset, cqe.result() as isize)
                    && w.done(op, slot, offset, submitted, now)
                {
                    w.fsync();
                }
                if let Some((op, offset)) = w.next(now) {
                    w.prepare(op, slot, offset);
                    slots[slot as usize] = (op, offset, now);
                    let e = entry(fixed, w, op, slot, offset);
                    // SAFETY: as above; this slot's previous request has completed.
                    unsafe {
                        sq.push(&e)
                            .expect("the ring has a slot per request in flight")
                    };
                    fresh.push(slot);
                    inflight += 1;
                }
            }
        }
        // Closing a ring releases its registered file in a kernel work queue, after the
        // process may have exited: a file system unmounted right after the engine
        // would then still be busy. Unregistering waits for nothing in flight (none
        // is) and drops the file here and now.
        let _ = submitter.unregister_files();
        if fixed {
            let _ = submitter.unregister_buffers();
        }
    }
}
