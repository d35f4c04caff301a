//! How much memory this process may still allocate, and allocations checked against it.
//!
//! Sizes read from files and parameters from callers (a pool of `2^32` values, `10^8`
//! permutations, a matrix of a recorded dimension) can ask for more memory than the process
//! may have. Allocating it anyway ends the process: the allocator aborts when the address
//! space is capped (`ulimit -v`), and where memory is overcommitted the kernel kills the
//! process when the pages are touched. Every builder of the library therefore checks what it
//! is about to allocate against [`available`] and asks the allocator fallibly
//! (`try_reserve`), so that either gives [`Error::OutOfMemory`] naming what was asked for.
//!
//! [`available`] is the least of what each limit on this process leaves:
//!
//! | limit | read from |
//! |---|---|
//! | the system's available memory | `MemAvailable` of `/proc/meminfo` |
//! | the control group's limit (containers, systemd units) | `memory.max` − `memory.current` (cgroup v2), `memory.limit_in_bytes` − `memory.usage_in_bytes` (v1) |
//! | the address space (`ulimit -v`, `RLIMIT_AS`) | `Max address space` of `/proc/self/limits` − `VmSize` |
//! | the data segment (`ulimit -d`, `RLIMIT_DATA`) | `Max data size` − `VmData` |
//!
//! Where none can be read (other systems), it is unbounded and the fallible allocation alone
//! guards.
//!
//! ```
//! let free = simlsh::memory::available();
//! assert!(free > 0);
//! // A request beyond it is an error, not an abort.
//! assert!(simlsh::memory::check("a test table", u64::MAX).is_err());
//! ```

use std::collections::TryReserveError;

use crate::error::{Error, Result};

/// Bytes this process may still allocate: the least of the system's available memory, its
/// control group's remaining memory and the remaining address space and data segment under
/// its resource limits (see the [module docs](self)); `u64::MAX` where none is known.
pub fn available() -> u64 {
    let mut least = u64::MAX;
    if let Some(m) = meminfo_available() {
        least = least.min(m);
    }
    if let Some(c) = cgroup_remaining() {
        least = least.min(c);
    }
    if let Some(r) = rlimit_remaining() {
        least = least.min(r);
    }
    least
}

/// `Ok` when `bytes` fit in [`available`] memory; otherwise [`Error::OutOfMemory`] naming
/// `what`.
///
/// # Errors
/// [`Error::OutOfMemory`].
pub fn check(what: &str, bytes: u64) -> Result<()> {
    let free = available();
    if bytes > free {
        return Err(Error::OutOfMemory {
            what: what.to_string(),
            needed: bytes,
            available: free,
        });
    }
    Ok(())
}

/// The bytes of `n` values of `T`, or `u64::MAX` when that overflows.
pub fn bytes_of<T>(n: usize) -> u64 {
    (n as u64).saturating_mul(std::mem::size_of::<T>() as u64)
}

/// Reserves room for `additional` more values in `v`: checked against [`available`], then
/// asked of the allocator fallibly.
///
/// # Errors
/// [`Error::OutOfMemory`] naming `what`.
pub fn reserve<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<()> {
    check(what, bytes_of::<T>(additional))?;
    v.try_reserve_exact(additional)
        .map_err(|e| refused(what, bytes_of::<T>(additional), e))
}

/// A vector of `n` copies of `value`, allocated as [`reserve`] does.
///
/// # Errors
/// [`Error::OutOfMemory`] naming `what`.
pub fn filled<T: Clone>(n: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, n, what)?;
    v.resize(n, value);
    Ok(v)
}

/// The error of an allocation the allocator refused.
pub(crate) fn refused(what: &str, bytes: u64, _e: TryReserveError) -> Error {
    Error::OutOfMemory {
        what: what.to_string(),
        needed: bytes,
        available: available(),
    }
}

/// Blocks of at least this many bytes are mapped apart by the allocator once
/// [`return_freed_memory`] has run, and unmapped when freed.
pub const MAPPED_BLOCK_BYTES: usize = 1 << 20;

/// Makes the memory a run frees go back to the system, so that its resident size follows what
/// it holds (a run under a memory budget). With glibc's allocator, blocks of
/// [`MAPPED_BLOCK_BYTES`] or more are then always mapped apart (by default the threshold rises
/// to the largest block freed, up to 32 MiB, and later blocks below it stay in the heap when
/// freed), and the free memory at the heap's end is returned now. Elsewhere it does nothing.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` and `malloc_trim` only change and apply the settings of glibc's
        // allocator and take no pointers (with another global allocator they act on an unused
        // heap).
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_BLOCK_BYTES as libc::c_int);
            libc::malloc_trim(0);
        }
    }
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn meminfo_available() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&m, "MemAvailable:")
}

/// A `Key:   123 kB` line of a `/proc` file, in bytes.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let v = text.lines().find_map(|l| l.strip_prefix(key))?;
    let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// What the control group of this process has left: its limit minus its usage.
fn cgroup_remaining() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let mut least: Option<u64> = None;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        // cgroup v2 ("0::/path"): memory.max is "max" when unlimited. v1: the memory
        // controller's hierarchy. Inside a container the group's path may not exist in its
        // own mount: the mount's root then is the group.
        let (limit_file, usage_file, root) = if controllers.is_empty() {
            ("memory.max", "memory.current", "/sys/fs/cgroup")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "/sys/fs/cgroup/memory",
            )
        } else {
            continue;
        };
        for dir in [format!("{root}{path}"), root.to_string()] {
            let (Some(limit), Some(usage)) = (
                read(&format!("{dir}/{limit_file}")),
                read(&format!("{dir}/{usage_file}")),
            ) else {
                continue;
            };
            let left = limit.saturating_sub(usage);
            least = Some(least.map_or(left, |l| l.min(left)));
            break;
        }
    }
    least
}

/// What the soft limits on address space and data segment leave.
fn rlimit_remaining() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let soft = |name: &str| -> Option<u64> {
        let rest = limits.lines().find_map(|l| l.strip_prefix(name))?;
        rest.split_whitespace().next()?.parse().ok()
    };
    let (space, data) = (soft("Max address space"), soft("Max data size"));
    if space.is_none() && data.is_none() {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let used = |key| kib_field(&status, key).unwrap_or(0);
    let left = |limit: Option<u64>, used: u64| limit.map(|l| l.saturating_sub(used));
    [left(space, used("VmSize:")), left(data, used("VmData:"))]
        .into_iter()
        .flatten()
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_parse_in_bytes() {
        let m = "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(kib_field(m, "MemAvailable:"), Some(1_024_000));
        assert_eq!(kib_field(m, "MemFree:"), None);
    }

    #[test]
    fn requests_beyond_the_limit_are_errors() {
        assert!(available() > 0);
        let e = check("a pool of 2^62 values", u64::MAX).unwrap_err();
        assert!(
            matches!(
                e,
                Error::OutOfMemory {
                    needed: u64::MAX,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("a pool of 2^62 values"), "{e}");
        assert!(filled(usize::MAX / 2, 0u8, "a huge table").is_err());
        assert_eq!(filled(3, 7u32, "a small table").unwrap(), vec![7, 7, 7]);
    }
}
