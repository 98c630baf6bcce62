//! The engine's own CPU use, from getrusage(RUSAGE_SELF): all threads together.

use std::time::Duration;

use crate::report::Cpu;

pub struct Usage {
    user: Duration,
    sys: Duration,
    nvcsw: u64,
    nivcsw: u64,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000)
}

pub fn usage() -> Usage {
    // SAFETY: getrusage fills the zeroed struct we pass; RUSAGE_SELF cannot fail.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the pointer is to our own local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    Usage {
        user: tv(ru.ru_utime),
        sys: tv(ru.ru_stime),
        nvcsw: ru.ru_nvcsw as u64,
        nivcsw: ru.ru_nivcsw as u64,
    }
}

/// CPU used since `before`, over `wall` of elapsed time.
pub fn since(before: &Usage, wall: Duration) -> Cpu {
    let now = usage();
    let user_s = now.user.saturating_sub(before.user).as_secs_f64();
    let sys_s = now.sys.saturating_sub(before.sys).as_secs_f64();
    let wall_s = wall.as_secs_f64().max(1e-9);
    Cpu {
        user_s,
        sys_s,
        usage_pct: (user_s + sys_s) / wall_s * 100.0,
        ctx_voluntary: now.nvcsw.saturating_sub(before.nvcsw),
        ctx_involuntary: now.nivcsw.saturating_sub(before.nivcsw),
    }
}
