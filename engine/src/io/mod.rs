//! Backends: each drives a `Worker` until it says it is done.
//!
//! `sync` and `null` do one request at a time; `uring` keeps `iodepth` in flight.

pub mod sync;
pub mod uring;
