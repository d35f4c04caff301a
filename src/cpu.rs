//! The CPU dispatch layer: which instruction-set extensions the kernels may use, decided once
//! per process, and the few architecture-specific helpers the indexes share.
//!
//! # The layer
//!
//! Every SIMD or popcount-dependent kernel of the crate comes as a **scalar reference**,
//! plain safe Rust built for the baseline target and correct everywhere, and, on x86-64,
//! **kernels compiled for extensions** (`#[target_feature]`) that give the same results:
//!
//! | kernels | scalar reference | x86-64 kernels | needs |
//! |---|---|---|---|
//! | Hamming distances and scans ([`crate::hamming`]) | `hamming::scalar` | `popcnt`, `avx2`, `avx512` sets | POPCNT; AVX2 + POPCNT; AVX-512F + AVX512_VPOPCNTDQ + AVX2 + POPCNT |
//! | Manku probes, MIH probes, self-join pair checks | the same loops, baseline `count_ones` | the loops compiled with POPCNT (`with_popcnt`) | POPCNT |
//! | signers' accumulation and dense products ([`crate::signers`]) | `*_scalar` kernels | AVX2 + FMA kernels | AVX2, FMA |
//! | exact cosines' dot products of dense vectors ([`crate::verify::dot`]) | `dot_scalar` | AVX2 + FMA kernel; AVX-512F kernel (same summation order, same bits) | AVX2, FMA; AVX-512F |
//! | hashed Gaussian signer's lookups and hash stream | `add_table_rows_scalar`, a software AES round | AVX2 + AES-NI kernel | AVX2, FMA, AES |
//!
//! The choice is made here and nowhere else: [`detected`] asks the CPU once
//! (`is_x86_feature_detected!`) and caches the answer; [`features`] is what the kernels may
//! use, that answer unless [`FORCE_SCALAR_ENV`] is set, and is cached too. Every dispatching
//! function reads [`features`], so one process never mixes levels, and setting
//! `SIMLSH_FORCE_SCALAR=1` runs every scalar reference (to compare results or speed, or to
//! rule the SIMD layer out). Compile-time `target_feature` settings play no part: a binary
//! built for baseline x86-64 uses POPCNT and AVX2 where the CPU has them.
//!
//! Each x86 kernel is tested against its scalar twin (the Hamming kernel sets in
//! `hamming::tests`, the signers' kernels in `signers::kernels`, the dot products in
//! `verify::vectors`, the probes and joins by
//! comparing a run with `SIMLSH_FORCE_SCALAR=1` in a child process with the dispatched run,
//! `tests/hamming_dispatch.rs`). Every `unsafe` block states why it is sound (`SAFETY:`).

use std::sync::OnceLock;

/// Name of the environment variable that forces the scalar reference kernels everywhere
/// when set to a non-empty value other than `0` (e.g. `SIMLSH_FORCE_SCALAR=1`). Read once,
/// at the first dispatch.
pub const FORCE_SCALAR_ENV: &str = "SIMLSH_FORCE_SCALAR";

/// Instruction-set extensions, as detected or as allowed to the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Features {
    /// The `POPCNT` instruction (one instruction per 64-bit popcount).
    pub popcnt: bool,
    /// AVX2 (256-bit integer vectors).
    pub avx2: bool,
    /// FMA (fused multiply-add; the signers use AVX2 + FMA kernels that do not fuse).
    pub fma: bool,
    /// AES-NI (the hashed Gaussian signer's hash stream; not part of [`name`](Self::name)).
    pub aes: bool,
    /// AVX-512 Foundation (512-bit vectors, mask registers).
    pub avx512f: bool,
    /// AVX512_VPOPCNTDQ (`vpopcntq`: the popcounts of the eight 64-bit lanes of a vector in
    /// one instruction).
    pub avx512vpopcntdq: bool,
}

impl Features {
    /// No extension: the scalar reference kernels.
    pub const SCALAR: Features = Features {
        popcnt: false,
        avx2: false,
        fma: false,
        aes: false,
        avx512f: false,
        avx512vpopcntdq: false,
    };

    /// `"scalar"`, or the extensions joined by `+` (e.g. `"popcnt+avx2+fma"`,
    /// `"popcnt+avx2+fma+avx512f+avx512vpopcntdq"`).
    pub fn name(&self) -> String {
        let parts: Vec<&str> = [
            (self.popcnt, "popcnt"),
            (self.avx2, "avx2"),
            (self.fma, "fma"),
            (self.avx512f, "avx512f"),
            (self.avx512vpopcntdq, "avx512vpopcntdq"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if parts.is_empty() {
            "scalar".into()
        } else {
            parts.join("+")
        }
    }

    /// True when AVX2 and FMA are both available (the signers' vector kernels).
    pub fn avx2_fma(&self) -> bool {
        self.avx2 && self.fma
    }

    /// True when AVX2, FMA and AES-NI are available (the hashed Gaussian signer's kernel).
    pub fn avx2_fma_aes(&self) -> bool {
        self.avx2_fma() && self.aes
    }

    /// True when AVX-512F, AVX512_VPOPCNTDQ, AVX2 and POPCNT are all available (the
    /// `avx512` Hamming kernels, which fall back on AVX2 and POPCNT where 512-bit vectors do
    /// not pay).
    pub fn avx512_popcnt(&self) -> bool {
        self.avx512f && self.avx512vpopcntdq && self.avx2 && self.popcnt
    }
}

/// What this CPU supports (asked once, then cached), whatever [`FORCE_SCALAR_ENV`] says;
/// [`Features::SCALAR`] on other architectures.
pub fn detected() -> Features {
    static DETECTED: OnceLock<Features> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            Features {
                popcnt: std::arch::is_x86_feature_detected!("popcnt"),
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
                aes: std::arch::is_x86_feature_detected!("aes"),
                avx512f: std::arch::is_x86_feature_detected!("avx512f"),
                avx512vpopcntdq: std::arch::is_x86_feature_detected!("avx512vpopcntdq"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Features::SCALAR
        }
    })
}

/// Whether [`FORCE_SCALAR_ENV`] is set (to a non-empty value other than `0`), read once.
pub fn forced_scalar() -> bool {
    static FORCED: OnceLock<bool> = OnceLock::new();
    *FORCED.get_or_init(|| {
        std::env::var_os(FORCE_SCALAR_ENV).is_some_and(|v| !v.is_empty() && v != "0")
    })
}

/// The extensions the kernels may use: [`detected`], or none when [`forced_scalar`].
/// Decided at the first call and cached for the life of the process.
pub fn features() -> Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    *FEATURES.get_or_init(|| {
        if forced_scalar() {
            Features::SCALAR
        } else {
            detected()
        }
    })
}

/// The cores this process may run on (`std::thread::available_parallelism`, which honours
/// CPU affinity and control-group quotas), at least 1.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The number of worker threads for a requested count, the one rule of the command line's
/// `--threads` and the Python package's `threads=`, read as scikit-learn reads `n_jobs`:
/// `None` or `-1` for every core ([`cores`]), `-2` for all but one, `-k` for all but
/// `k - 1` (at least one thread), a count above the cores clamped to them (more threads than
/// cores only add switching and memory, never speed: the results do not depend on the
/// count).
///
/// ```
/// use simlsh::cpu::{cores, threads};
/// assert_eq!(threads(None)?, cores());
/// assert_eq!(threads(Some(-1))?, cores());
/// assert_eq!(threads(Some(-2))?, (cores() - 1).max(1));
/// assert_eq!(threads(Some(i64::MIN))?, 1);
/// assert_eq!(threads(Some(1))?, 1);
/// assert_eq!(threads(Some(100_000))?, cores());
/// assert!(threads(Some(0)).is_err());
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for `0`.
pub fn threads(requested: Option<i64>) -> crate::Result<usize> {
    match requested {
        None | Some(-1) => Ok(cores()),
        Some(0) => Err(crate::Error::param(
            "threads",
            "0: expected at least 1, or -1 for every core (-2 for all but one)",
        )),
        Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX).min(cores())),
        Some(n) => {
            let spare = usize::try_from(n.unsigned_abs() - 1).unwrap_or(usize::MAX);
            Ok(cores().saturating_sub(spare).max(1))
        }
    }
}

/// A kernel body that [`with_popcnt`] compiles with hardware `POPCNT`: a small struct
/// holding the arguments, whose [`run`](Self::run) must be `#[inline(always)]` (a closure
/// would not do: it is not inlined into the `POPCNT` function, so its `count_ones` would stay
/// the baseline bit trick).
pub(crate) trait PopcntBody {
    /// What the body returns.
    type Output;

    /// The body; `#[inline(always)]` in every implementation.
    fn run(self) -> Self::Output;
}

/// Runs `body` compiled with hardware `POPCNT` when [`features`] allows it (its `count_ones`
/// become one instruction each), else as it is (the scalar reference: a bit trick on
/// baseline x86-64). Same result either way.
#[inline(always)]
pub(crate) fn with_popcnt<B: PopcntBody>(body: B) -> B::Output {
    #[cfg(target_arch = "x86_64")]
    if features().popcnt {
        // SAFETY: `features().popcnt` is true only when `is_x86_feature_detected!("popcnt")`
        // found POPCNT on this CPU.
        return unsafe { run_popcnt(body) };
    }
    body.run()
}

/// `body.run()` compiled with `POPCNT` (the `#[inline(always)]` body is inlined here).
///
/// # Safety
/// The CPU has POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn run_popcnt<B: PopcntBody>(body: B) -> B::Output {
    body.run()
}

/// Hints the CPU to fetch the cache line holding `p` into all cache levels (no effect on
/// other architectures, and never on results).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is only a hint: it never faults, whatever the address, and has no
    // architectural effect; SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_follow_detection_and_the_switch() {
        let d = detected();
        assert_eq!(detected(), d, "cached");
        if forced_scalar() {
            assert_eq!(features(), Features::SCALAR);
        } else {
            assert_eq!(features(), d);
        }
        #[cfg(target_arch = "x86_64")]
        assert_eq!(d.popcnt, std::arch::is_x86_feature_detected!("popcnt"));
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            d.avx512vpopcntdq,
            std::arch::is_x86_feature_detected!("avx512vpopcntdq")
        );
        assert_eq!(Features::SCALAR.name(), "scalar");
        assert!(!Features::SCALAR.avx2_fma() && !Features::SCALAR.avx512_popcnt());
        let all = Features {
            popcnt: true,
            avx2: true,
            fma: true,
            aes: true,
            avx512f: true,
            avx512vpopcntdq: true,
        };
        assert_eq!(all.name(), "popcnt+avx2+fma+avx512f+avx512vpopcntdq");
        assert!(all.avx2_fma() && all.avx2_fma_aes() && all.avx512_popcnt());
        assert!(!Features { aes: false, ..all }.avx2_fma_aes());
        assert!(
            !Features {
                avx512vpopcntdq: false,
                ..all
            }
            .avx512_popcnt()
        );
        let some = Features {
            fma: false,
            aes: false,
            avx512f: false,
            avx512vpopcntdq: false,
            ..all
        };
        assert_eq!(some.name(), "popcnt+avx2");
        // `with_popcnt` gives the scalar result, and prefetching any address is harmless.
        struct Count<'a>(&'a [u64]);
        impl PopcntBody for Count<'_> {
            type Output = u32;
            #[inline(always)]
            fn run(self) -> u32 {
                self.0.iter().map(|w| w.count_ones()).sum()
            }
        }
        let x = [0xF0F0_u64, u64::MAX, 1];
        assert_eq!(with_popcnt(Count(&x)), 8 + 64 + 1);
        prefetch(x.as_ptr().wrapping_add(1 << 40));
    }
}
