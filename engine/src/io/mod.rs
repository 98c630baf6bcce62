//! Backends: each drives a `Worker` until it says it is done.
//!
//! `sync` and `null` do one request at a time; `uring` keeps `iodepth` in flight.
//! `fdtable` gives a worker a descriptor table of its own, as a process per job would.

pub mod fdtable;
pub mod sync;
pub mod uring;
