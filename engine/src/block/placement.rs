//! Where a job's threads run and take their memory from: `cpus_allowed` (with
//! `cpus_allowed_policy`), `numa_cpu_nodes` and `numa_mem_policy`, as fio's options of
//! those names. Each thread places itself before it allocates its buffers.

use std::collections::BTreeSet;

/// The most CPUs and NUMA nodes a list may name.
const MAX_CPUS: usize = 1024;

/// `"0-3,6"` -> {0, 1, 2, 3, 6}.
pub fn parse_list(text: &str) -> Result<BTreeSet<usize>, String> {
    let mut out = BTreeSet::new();
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("`{text}` has an empty entry"));
        }
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{part}` is not a number or a range (`0-3`)"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if b < a || b >= MAX_CPUS {
            return Err(format!(
                "`{part}` is out of range (0..{MAX_CPUS}, low-high)"
            ));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// A memory policy: `default`, `local`, `prefer:N`, `bind:LIST`, `interleave:LIST`.
#[derive(Debug, Clone, PartialEq)]
pub struct MemPolicy {
    mode: i32,
    nodes: BTreeSet<usize>,
}

pub fn parse_mem_policy(text: &str) -> Result<MemPolicy, String> {
    const DEFAULT: i32 = 0;
    const PREFERRED: i32 = 1;
    const BIND: i32 = 2;
    const INTERLEAVE: i32 = 3;
    const LOCAL: i32 = 4;
    let (name, list) = match text.split_once(':') {
        Some((n, l)) => (n.trim(), Some(l.trim())),
        None => (text.trim(), None),
    };
    let (mode, needs) = match name {
        "default" => (DEFAULT, false),
        "local" => (LOCAL, false),
        "prefer" => (PREFERRED, true),
        "bind" => (BIND, true),
        "interleave" => (INTERLEAVE, true),
        other => {
            return Err(format!(
                "`{other}` is not a policy (default, local, prefer:N, bind:LIST, interleave:LIST)"
            ))
        }
    };
    let nodes = match (needs, list) {
        (true, Some(l)) => parse_list(l)?,
        (true, None) => return Err(format!("`{name}` needs nodes (`{name}:0`)")),
        (false, Some(_)) => return Err(format!("`{name}` takes no nodes")),
        (false, None) => BTreeSet::new(),
    };
    if mode == PREFERRED && nodes.len() != 1 {
        return Err("`prefer` takes one node".into());
    }
    Ok(MemPolicy { mode, nodes })
}

/// The CPUs of NUMA nodes `nodes`, from sysfs.
fn node_cpus(nodes: &BTreeSet<usize>) -> std::io::Result<BTreeSet<usize>> {
    let mut cpus = BTreeSet::new();
    for n in nodes {
        let path = format!("/sys/devices/system/node/node{n}/cpulist");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("NUMA node {n} is not on this machine ({path}: {e})"),
            )
        })?;
        let text = text.trim();
        if !text.is_empty() {
            cpus.extend(parse_list(text).map_err(std::io::Error::other)?);
        }
    }
    Ok(cpus)
}

/// Places the calling thread (thread `t` of the job): its CPUs, then its memory policy.
pub fn apply(
    cpus_allowed: Option<&str>,
    split: bool,
    numa_cpu_nodes: Option<&str>,
    mem: Option<&str>,
    t: u32,
) -> std::io::Result<()> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    let mut cpus: Option<BTreeSet<usize>> =
        cpus_allowed.map(parse_list).transpose().map_err(bad)?;
    if let Some(nodes) = numa_cpu_nodes {
        let of_nodes = node_cpus(&parse_list(nodes).map_err(bad)?)?;
        cpus = Some(match cpus {
            Some(c) => c.intersection(&of_nodes).copied().collect(),
            None => of_nodes,
        });
    }
    if let Some(mut set) = cpus {
        if split && !set.is_empty() {
            let one = *set
                .iter()
                .nth(t as usize % set.len())
                .expect("index within the set");
            set = BTreeSet::from([one]);
        }
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it for
        // indexes below CPU_SETSIZE (1024, which parse_list bounds).
        let rc = unsafe {
            let mut mask: libc::cpu_set_t = std::mem::zeroed();
            for c in &set {
                libc::CPU_SET(*c, &mut mask);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask)
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot run on CPUs {set:?}: {e} (none of them online?)"),
            ));
        }
    }
    if let Some(text) = mem {
        let p = parse_mem_policy(text).map_err(bad)?;
        let mut mask = [0u64; MAX_CPUS / 64];
        for n in &p.nodes {
            mask[n / 64] |= 1 << (n % 64);
        }
        let (ptr, max) = if p.nodes.is_empty() {
            (std::ptr::null::<u64>(), 0)
        } else {
            (mask.as_ptr(), MAX_CPUS + 1)
        };
        // SAFETY: the mask holds `max - 1` bits, as set_mempolicy reads them.
        let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, p.mode, ptr, max) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot set the memory policy `{text}`: {e}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_policies_parse_as_fio_writes_them() {
        assert_eq!(parse_list("0-2,5").unwrap(), BTreeSet::from([0, 1, 2, 5]));
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("a").is_err());
        assert_eq!(
            parse_mem_policy("bind:0").unwrap().nodes,
            BTreeSet::from([0])
        );
        assert!(parse_mem_policy("prefer:0-1").is_err());
        assert!(parse_mem_policy("local:0").is_err());
        assert!(parse_mem_policy("spread").is_err());
    }

    #[test]
    fn a_thread_runs_where_it_is_placed() {
        // CPU 0 and node 0 exist on every Linux machine.
        std::thread::spawn(|| {
            apply(Some("0"), false, Some("0"), Some("bind:0"), 0).unwrap();
            // SAFETY: a zeroed set filled in by the kernel.
            let on = unsafe {
                let mut m: libc::cpu_set_t = std::mem::zeroed();
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut m);
                (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &m))
                    .collect::<Vec<_>>()
            };
            assert_eq!(on, [0]);
            assert!(
                apply(None, false, Some("999"), None, 0).is_err(),
                "no node 999"
            );
        })
        .join()
        .unwrap();
    }
}
