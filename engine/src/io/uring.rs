//! `ioengine = "io_uring"`: one ring per thread, `iodepth` requests in flight.
//!
//! The ring is set up the way fio's t/io_uring does for peak rates: a single issuer
//! with deferred task work, the file and the buffers registered once, completions
//! drained in a batch per wake-up. Each request is timed from just before the
//! `io_uring_enter` that submits it to the moment its completion is seen, one clock
//! read per completion (fio reads the clock once per reaped batch).
//!
//! With `completion_spin`, a thread that finds too few completions polls for them (an
//! `io_uring_enter` that runs the deferred completions but does not sleep) for up to
//! that long before it sleeps: on a virtual machine a sleeping thread's wake-up can cost
//! more than a fast device's whole request. What is timed does not change; a completion
//! is seen sooner, and the CPU spent polling shows in the report's `cpu`.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use io_uring::{opcode, squeue, types, CompletionQueue, IoUring, Submitter};

use crate::block::worker::{Next, Worker};
use crate::buffers::Buffers;
use crate::clock::Instant;
use crate::io::RwFlags;
use crate::record::Op;

pub struct Queue {
    ring: IoUring,
    depth: u32,
    fixed_buffers: bool,
    flags: RwFlags,
    /// Flags of each enter that submits: a polling thread that went idle is woken.
    wake: u32,
}

/// How a job's ring is set up and what its requests carry.
#[derive(Debug, Clone, Copy, Default)]
pub struct Setup {
    pub flags: RwFlags,
    /// `sqthread_poll`: a kernel thread polls the submission queue, bound to this CPU
    /// if one is given.
    pub sqpoll: Option<Option<u32>>,
}

impl Setup {
    pub fn of(job: &crate::spec::Job) -> Self {
        let p = &job.pattern;
        Self {
            flags: RwFlags::of(job),
            sqpoll: p.sqthread_poll.then_some(p.sqthread_poll_cpu),
        }
    }
}

/// `IORING_ENTER_SQ_WAKEUP` (linux/io_uring.h).
const ENTER_SQ_WAKEUP: u32 = 2;

fn build(entries: u32, sqpoll: Option<Option<u32>>) -> io::Result<IoUring> {
    if let Some(cpu) = sqpoll {
        // Deferred task work needs the submitting task to run completions, which a
        // polling thread is not: the kernel refuses the two together. The idle time
        // (0: the kernel's default, a second) is fio's.
        let mut b = IoUring::builder();
        b.setup_sqpoll(0);
        if let Some(cpu) = cpu {
            b.setup_sqpoll_cpu(cpu);
        }
        return b.build(entries);
    }
    // Newest flags first; older kernels refuse them with EINVAL.
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
        .or_else(|_| IoUring::builder().build(entries))
}

/// `IORING_ENTER_GETEVENTS` (linux/io_uring.h): the enter reaps, and with deferred task
/// work only such an enter posts completions.
const ENTER_GETEVENTS: u32 = 1;

/// Submits `to_submit` entries and posts the completions that are ready, without
/// waiting: an enter with GETEVENTS and no minimum runs the ring's deferred completions
/// and returns at once (what fio's submit does each time).
fn post(submitter: &Submitter<'_>, to_submit: u32, wake: u32) -> io::Result<usize> {
    // SAFETY: no argument structure is passed (`None`), so the kernel reads nothing
    // beyond the ring, whose entries the caller has filled as for `submit`.
    unsafe { submitter.enter::<libc::sigset_t>(to_submit, 0, ENTER_GETEVENTS | wake, None) }
}

/// Submits `to_submit` entries and waits for `want` completions, polling (`post`) for up
/// to `spin` before sleeping.
fn submit_and_spin(
    submitter: &Submitter<'_>,
    cq: &mut CompletionQueue<'_>,
    to_submit: u32,
    want: usize,
    spin: Duration,
    wake: u32,
) -> io::Result<usize> {
    let submitted = post(submitter, to_submit, wake)?;
    let from = Instant::now();
    loop {
        cq.sync();
        if cq.len() >= want {
            return Ok(submitted);
        }
        if from.elapsed() >= spin {
            break;
        }
        post(submitter, 0, wake)?;
    }
    submitter.submit_and_wait(want).map(|n| n + submitted)
}

/// The submission entry for one request; `slot` comes back as the completion's user data.
fn entry(
    fixed_buffers: bool,
    flags: RwFlags,
    w: &mut Worker,
    op: Op,
    slot: u32,
    offset: u64,
    len: u64,
) -> squeue::Entry {
    let buf = w.buffers.ptr(slot);
    let prio = w.ioprio(op, len);
    let rw_flags = flags.of_op(op);
    let len = len as u32;
    let (n, offset) = w.locate(offset);
    let file = types::Fixed(n as u32);
    // The kernel takes an atomic write only from a plain user buffer (an iterator of one
    // user segment), not from a registered one: EINVAL.
    let fixed_buffers = fixed_buffers && rw_flags & libc::RWF_ATOMIC == 0;
    let e = match (op, fixed_buffers) {
        (Op::Read, true) => opcode::ReadFixed::new(file, buf, len, 0)
            .offset(offset)
            .ioprio(prio)
            .rw_flags(rw_flags)
            .build(),
        (Op::Write, true) => opcode::WriteFixed::new(file, buf, len, 0)
            .offset(offset)
            .ioprio(prio)
            .rw_flags(rw_flags)
            .build(),
        (Op::Read, false) => opcode::Read::new(file, buf, len)
            .offset(offset)
            .ioprio(prio)
            .rw_flags(rw_flags)
            .build(),
        (Op::Write, false) => opcode::Write::new(file, buf, len)
            .offset(offset)
            .ioprio(prio)
            .rw_flags(rw_flags)
            .build(),
        // A hole punched: on a file it frees the blocks; on a device the kernel
        // zeroes the range without writing (an unmap where the device has one, else
        // the request fails EOPNOTSUPP). The sync engine sends a device BLKDISCARD.
        (Op::Trim, _) => opcode::Fallocate::new(file, u64::from(len))
            .offset(offset)
            .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
            .build(),
        (Op::Files | Op::Log | Op::Txn | Op::Background, _) => {
            unreachable!("block jobs only read, write and trim")
        }
    };
    e.user_data(u64::from(slot))
}

/// How a queue submits and reaps (fio's names).
#[derive(Debug, Clone, Copy)]
pub struct Batching {
    /// Refilled requests gathered before an enter submits them (`iodepth_batch_submit`).
    pub submit: usize,
    /// Completions to wait for per wake-up (`iodepth_batch_complete_min`).
    pub complete_min: usize,
    /// How long to poll for them before sleeping (`completion_spin`).
    pub spin: Duration,
}

impl Batching {
    /// fio's defaults: submit each request at once, wake for each completion, no spin.
    pub const EACH: Batching = Batching {
        submit: 1,
        complete_min: 1,
        spin: Duration::ZERO,
    };
}

/// Queues one request.
///
/// # Safety
/// `e`'s buffer must stay valid and untouched until its completion is reaped: a slot of
/// this worker's Buffers that has no request in flight.
unsafe fn push(sq: &mut io_uring::SubmissionQueue<'_>, e: squeue::Entry) {
    // SAFETY: the caller's promise above.
    if unsafe { sq.push(&e) }.is_err() {
        // A polling thread takes entries on its own time: this queue's view of what it
        // took may be stale. It has taken every entry whose request completed.
        sq.sync();
        // SAFETY: as above.
        unsafe {
            sq.push(&e)
                .expect("the ring has a slot per request in flight")
        };
    }
}

/// Publishes the pushed entries and times them from now, just before the enter that
/// submits them.
fn stamp(
    sq: &mut io_uring::SubmissionQueue<'_>,
    fresh: &mut Vec<u32>,
    slots: &mut [(Op, u64, u64, Instant)],
) {
    sq.sync();
    let ts = Instant::now();
    for &s in fresh.iter() {
        slots[s as usize].3 = ts;
    }
    fresh.clear();
}

/// Whether the job goes on after an enter: a signal or a short-handed kernel
/// (EINTR, EAGAIN, EBUSY) leaves the entries queued for the next enter; anything else
/// stops the job.
fn went_on(w: &mut Worker, entered: io::Result<usize>) -> bool {
    match entered {
        Ok(_) => true,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
            ) =>
        {
            true
        }
        Err(e) => {
            w.fail(
                Op::Read,
                0,
                e.raw_os_error(),
                format!("io_uring_enter failed: {e}"),
            );
            false
        }
    }
}

impl Queue {
    /// Sets up the ring in the calling thread, which must be the one that runs it.
    /// `fds`: the thread's files, registered in order (an entry names its file by number).
    pub fn new(fds: &[RawFd], buffers: &Buffers, depth: u32, setup: Setup) -> io::Result<Self> {
        let ring = build(depth.next_power_of_two(), setup.sqpoll)?;
        ring.submitter().register_files(fds)?;
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
            flags: setup.flags,
            wake: if setup.sqpoll.is_some() {
                ENTER_SQ_WAKEUP
            } else {
                0
            },
        })
    }

    /// Runs until the worker is done, submitting and reaping as `batching` says. A paced
    /// worker (a rate, think time) may leave slots empty until its next I/O is due; the
    /// thread then waits for a completion or that moment, whichever comes first.
    pub fn run(mut self, w: &mut Worker, batching: Batching) {
        let depth = self.depth as usize;
        let fixed = self.fixed_buffers;
        let (flags, wake) = (self.flags, self.wake);
        let start = Instant::now();
        let mut slots: Vec<(Op, u64, u64, Instant)> = vec![(Op::Read, 0, 0, start); depth];
        // Slots pushed but not yet submitted; each is timed from just before the enter
        // that submits it.
        let mut fresh: Vec<u32> = Vec::with_capacity(depth);
        let mut free: Vec<u32> = (0..self.depth).rev().collect();
        let mut inflight = 0usize;
        // The paced worker's next I/O is due then; `done`: it has no more.
        let mut due: Option<Instant> = None;
        let mut done = false;
        let (submitter, mut sq, mut cq) = self.ring.split();

        loop {
            if !done && !free.is_empty() {
                let now = Instant::now();
                if due.is_none_or(|t| now >= t) {
                    due = None;
                    while let Some(&slot) = free.last() {
                        if inflight >= w.depth_cap(depth) {
                            break;
                        }
                        match w.next(now) {
                            Next::Io(op, offset, len) => {
                                free.pop();
                                w.prepare(op, slot, offset, len);
                                slots[slot as usize] = (op, offset, len, now);
                                // SAFETY: a free slot has no request in flight.
                                unsafe {
                                    push(&mut sq, entry(fixed, flags, w, op, slot, offset, len))
                                };
                                fresh.push(slot);
                                inflight += 1;
                            }
                            Next::Wait(t) => {
                                due = Some(t);
                                break;
                            }
                            Next::Done => {
                                done = true;
                                break;
                            }
                        }
                    }
                }
            }
            if inflight == 0 {
                match due {
                    Some(t) if !done => {
                        w.idle(t);
                        continue;
                    }
                    _ => break,
                }
            }
            stamp(&mut sq, &mut fresh, &mut slots);
            // Waiting for several completions per wake-up saves CPU, but a request that
            // completed early is seen (and timed) later: 1 unless the job asks.
            let want = batching.complete_min.min(inflight);
            let entered = match due {
                Some(t) if !done => {
                    let ts = types::Timespec::from(t.saturating_duration_since(Instant::now()));
                    let args = types::SubmitArgs::new().timespec(&ts);
                    match submitter.submit_with_args(want, &args) {
                        Err(e) if e.raw_os_error() == Some(libc::ETIME) => Ok(0),
                        r => r,
                    }
                }
                _ if batching.spin.is_zero() => submitter.submit_and_wait(want),
                _ => submit_and_spin(
                    &submitter,
                    &mut cq,
                    sq.len() as u32,
                    want,
                    batching.spin,
                    wake,
                ),
            };
            if !went_on(w, entered) {
                break;
            }
            // Learn which entries the kernel consumed, so their slots can be refilled.
            sq.sync();
            cq.sync();
            let mut left = cq.len();
            let mut stop = false;
            for cqe in &mut cq {
                let now = Instant::now();
                left -= 1;
                let slot = cqe.user_data() as u32;
                let (op, offset, len, submitted) = slots[slot as usize];
                inflight -= 1;
                // A failed I/O stops the job (`next` then says so), unless verify counted
                // it as an unreadable block: its slot then goes on to the next block.
                if w.check(op, slot, offset, len, cqe.result() as isize)
                    && w.done(op, slot, offset, len, submitted, now)
                {
                    w.fsync();
                }
                let mut refilled = false;
                if !done && due.is_none() && inflight < w.depth_cap(depth) {
                    match w.next(now) {
                        Next::Io(op, offset, len) => {
                            w.prepare(op, slot, offset, len);
                            slots[slot as usize] = (op, offset, len, now);
                            // SAFETY: this slot's previous request has just been reaped.
                            unsafe { push(&mut sq, entry(fixed, flags, w, op, slot, offset, len)) };
                            fresh.push(slot);
                            inflight += 1;
                            refilled = true;
                        }
                        Next::Wait(t) => due = Some(t),
                        Next::Done => done = true,
                    }
                }
                if !refilled {
                    free.push(slot);
                }
                // Submitting as soon as `submit` requests are ready keeps the device fed
                // while this thread reaps the rest, and each such enter also posts the
                // completions that arrived meanwhile, so fewer waits find none (fio's
                // default, `iodepth_batch_submit = 1`). The batch's last refill goes with
                // the next wait's enter: one call instead of two.
                if left > 0 && fresh.len() >= batching.submit && !stop {
                    stamp(&mut sq, &mut fresh, &mut slots);
                    stop = !went_on(w, post(&submitter, sq.len() as u32, wake));
                }
            }
            if stop {
                break;
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
