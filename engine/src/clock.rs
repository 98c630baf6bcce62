//! The engine's clock: every latency is the difference of two of its readings, and
//! every deadline and interval boundary is one.
//!
//! A reading must cost little next to what it times (a buffered 4 KiB read from tmpfs
//! takes ~1.5 us). On x86-64, where the kernel keeps time with the CPU's time-stamp
//! counter itself (its clocksource is `tsc`, which it keeps only for a counter that
//! ticks at a constant rate and agrees across CPUs) and the CPU says the counter is
//! invariant, a reading is one `rdtsc`: ~11 ns on the 2-vCPU VM of docs/performance.md,
//! where `clock_gettime` through the vDSO costs ~29 ns. The counter's rate is measured
//! against CLOCK_MONOTONIC once, when the clock is first read (0.5 ms: on that VM 200
//! calibrations were within 20 ppm of a 200 ms one, 3.5 ppm rms; 50 times under the
//! histograms' 0.1%, and every engine run pays it). fio does the same by default
//! (`clocksource=cpu`). Elsewhere, or with `FSLAB_CLOCK=monotonic`, a reading is
//! CLOCK_MONOTONIC in nanoseconds. The report's `engine.clock` names the one used.

use std::ops::{Add, AddAssign, Sub};
use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable that forces CLOCK_MONOTONIC.
pub const ENV: &str = "FSLAB_CLOCK";

/// How long the counter's rate is measured against CLOCK_MONOTONIC.
const CALIBRATE_NS: u64 = 500_000;

/// A point in time on the engine's clock: ticks of its source since an arbitrary origin.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Instant(u64);

/// Where readings come from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    /// The CPU's time-stamp counter (`rdtsc`).
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC)`.
    Monotonic,
}

impl Source {
    /// The name the report gives it (`engine.clock`).
    pub fn name(self) -> &'static str {
        match self {
            Source::Tsc => "tsc",
            Source::Monotonic => "CLOCK_MONOTONIC",
        }
    }
}

/// A source and its rate: nanoseconds = ticks * `ns_per_tick_q32` / 2^32.
#[derive(Clone, Copy, Debug)]
struct Scale {
    source: Source,
    ns_per_tick_q32: u64,
}

impl Scale {
    const MONOTONIC: Scale = Scale {
        source: Source::Monotonic,
        ns_per_tick_q32: 1 << 32,
    };

    #[inline]
    fn read(self) -> u64 {
        match self.source {
            Source::Tsc => tsc(),
            Source::Monotonic => monotonic_ns(),
        }
    }

    #[inline]
    fn to_ns(self, ticks: u64) -> u64 {
        ((u128::from(ticks) * u128::from(self.ns_per_tick_q32)) >> 32) as u64
    }

    /// Rounded up, so that a time plus a duration converts back to at least that
    /// duration: exactly, for a counter of 1 GHz or faster.
    fn to_ticks(self, ns: u128) -> u64 {
        (ns << 32)
            .div_ceil(u128::from(self.ns_per_tick_q32))
            .min(u128::from(u64::MAX)) as u64
    }
}

static SCALE: OnceLock<Scale> = OnceLock::new();

#[inline]
fn scale() -> Scale {
    *SCALE.get_or_init(detect)
}

/// The source every reading of this process comes from (measuring the counter's rate
/// on first use).
pub fn source() -> Source {
    scale().source
}

/// Checks `FSLAB_CLOCK`: unset (the engine's choice) or `monotonic`.
pub fn check_env() -> Result<(), String> {
    forced_monotonic().map(|_| ())
}

/// Whether `FSLAB_CLOCK` asks for CLOCK_MONOTONIC; an error for any other value.
fn forced_monotonic() -> Result<bool, String> {
    match std::env::var(ENV) {
        Err(std::env::VarError::NotPresent) => Ok(false),
        Ok(v) if v == "monotonic" => Ok(true),
        Ok(v) => Err(format!("`{v}` is not `monotonic`, the one value it takes")),
        Err(std::env::VarError::NotUnicode(_)) => Err("it is not UTF-8".into()),
    }
}

fn detect() -> Scale {
    // A bad value was refused before anything ran (`check_env`); here it counts as unset.
    if forced_monotonic() == Ok(true) {
        return Scale::MONOTONIC;
    }
    if tsc_trusted() {
        if let Some(s) = calibrate() {
            return s;
        }
    }
    Scale::MONOTONIC
}

/// Whether the kernel keeps time with the counter and the CPU says it is invariant.
fn tsc_trusted() -> bool {
    let kernel =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc");
    kernel && invariant_tsc()
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use std::arch::x86_64::__cpuid;
    // CPUID 0x80000007 EDX bit 8: the counter runs at a constant rate in every P-, C-
    // and T-state (Linux's constant_tsc + nonstop_tsc).
    let max_ext = __cpuid(0x8000_0000).eax;
    max_ext >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn tsc() -> u64 {
    // Not serialising: a reading may move by a few cycles around its neighbours, which
    // is nothing next to a system call.
    // SAFETY: rdtsc has no preconditions; every x86-64 CPU has it.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn tsc() -> u64 {
    unreachable!("the time-stamp counter is only read on x86-64")
}

#[inline]
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is our own local; CLOCK_MONOTONIC cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One counter reading and the CLOCK_MONOTONIC time beside it: of a few tries, the one
/// whose two bracketing counter readings are closest (an interrupt in between spoils one).
fn pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..8 {
        let a = tsc();
        let ns = monotonic_ns();
        let b = tsc();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, ns);
        }
    }
    (best.1, best.2)
}

/// The counter's rate against CLOCK_MONOTONIC over `CALIBRATE_NS`; `None` when it is
/// not plausible (outside 100 MHz - 20 GHz, or not moving forward).
fn calibrate() -> Option<Scale> {
    let (t0, n0) = pair();
    while monotonic_ns().saturating_sub(n0) < CALIBRATE_NS {
        std::hint::spin_loop();
    }
    let (t1, n1) = pair();
    let ticks = t1.checked_sub(t0).filter(|&t| t > 0)?;
    let ns = n1.checked_sub(n0)?;
    let q32 = (u128::from(ns) << 32) / u128::from(ticks);
    let plausible = (1u128 << 32) / 20..=(1u128 << 32) * 10;
    plausible.contains(&q32).then_some(Scale {
        source: Source::Tsc,
        ns_per_tick_q32: q32 as u64,
    })
}

impl Instant {
    #[inline]
    pub fn now() -> Instant {
        Instant(scale().read())
    }

    /// Nanoseconds from `earlier` to this instant; 0 if `earlier` is later.
    #[inline]
    pub fn nanos_since(self, earlier: Instant) -> u64 {
        scale().to_ns(self.0.saturating_sub(earlier.0))
    }

    /// The time from `earlier` to this instant; zero if `earlier` is later.
    #[inline]
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.nanos_since(earlier))
    }

    /// The time since this instant.
    #[inline]
    pub fn elapsed(self) -> Duration {
        Instant::now().saturating_duration_since(self)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(scale().to_ticks(d.as_nanos())))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(scale().to_ticks(d.as_nanos())))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating, as `std::time::Instant`'s.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_agree_with_the_standard_clock() {
        // Whichever source this machine gets, 30 ms on it are 30 ms of CLOCK_MONOTONIC
        // (std's Instant) within 1%: a wrong rate (a factor of the counter's frequency,
        // a lost shift) is off by far more.
        let (a, sa) = (Instant::now(), std::time::Instant::now());
        std::thread::sleep(Duration::from_millis(30));
        let (b, sb) = (Instant::now(), std::time::Instant::now());
        let ours = (b - a).as_nanos() as f64;
        let std = (sb - sa).as_nanos() as f64;
        assert!((ours / std - 1.0).abs() < 0.01, "{ours} ns vs {std} ns");
    }

    #[test]
    fn adding_a_duration_moves_by_that_duration() {
        let a = Instant::now();
        for d in [1u64, 999, 1_000_000, 3_600_000_000_000] {
            let b = a + Duration::from_nanos(d);
            // Exact where a tick is at most a nanosecond (every TSC of this century,
            // CLOCK_MONOTONIC), so that deadlines and interval ends land where asked.
            assert_eq!(b.nanos_since(a), d);
        }
        assert_eq!(a.nanos_since(a + Duration::from_secs(1)), 0, "saturates");
    }

    #[test]
    fn the_scale_converts_both_ways() {
        let s = Scale {
            source: Source::Tsc,
            ns_per_tick_q32: 1 << 31, // a 2 GHz counter: 0.5 ns per tick
        };
        assert_eq!(s.to_ns(2_000_000_000), 1_000_000_000);
        assert_eq!(s.to_ticks(1_000_000_000), 2_000_000_000);
        assert_eq!(Scale::MONOTONIC.to_ns(123), 123);
        assert_eq!(Scale::MONOTONIC.to_ticks(123), 123);
        // An hour of a 16 GHz counter does not overflow.
        let fast = Scale {
            source: Source::Tsc,
            ns_per_tick_q32: 1 << 28,
        };
        assert_eq!(fast.to_ns(57_600_000_000_000), 3_600_000_000_000);
    }

    #[test]
    fn a_calibrated_counter_has_a_plausible_rate() {
        if !tsc_trusted() {
            return; // nothing to calibrate here; `detect` takes CLOCK_MONOTONIC
        }
        let s = calibrate().expect("a trusted counter calibrates");
        let ghz = (1u128 << 32) as f64 / s.ns_per_tick_q32 as f64;
        assert!((0.1..20.0).contains(&ghz), "{ghz} GHz");
    }
}
