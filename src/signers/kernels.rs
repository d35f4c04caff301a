//! Accumulation kernels shared by the signers: `acc[j] += ±w` driven by sign bits (hashing
//! trick, Rademacher matrices), `acc[j] += w · r[j]` (explicit Gaussian rows, pooled values),
//! and the packing of `acc[j] > 0` into words.
//!
//! **Exactness.** Every kernel performs exactly the same IEEE-754 operations, in the same order,
//! as its scalar reference, so signatures are bit-identical whichever kernel runs:
//! - signed adds compute `acc[j] + (±w)`; the AVX2 kernel selects `+w` or `−w` by the sign bit
//!   (a blend) and adds it, the same single rounding;
//! - `axpy` computes `acc[j] + (w · r[j])` with a separate multiply and add (never a fused
//!   multiply-add, whose single rounding would differ).
//!
//! **Dispatch.** The x86-64 kernels need AVX2 and FMA and are chosen once, at the first call,
//! from [`crate::cpu::features`]; other CPUs and platforms use the scalar reference, which is
//! always built. `SIMLSH_FORCE_SCALAR=1` forces the scalar kernels (see [`crate::cpu`]).
//!
//! **Register blocking.** [`add_signed_rows`] takes the sign words through a closure
//! `word(i, k)` (feature `i`, 64-lane block `k`) that is inlined into the kernel. The AVX2
//! kernel computes the words of up to 256 features into a small stack buffer, then adds them
//! to each 32-lane half of the block, whose four accumulators and four shift-count vectors fit
//! in the sixteen AVX2 registers: nothing spills, and no scalar code extracts bytes (a
//! variable shift moves each lane's bit to the sign, which selects `±w`). On W1 this took the
//! hashing trick from 5.2 to 4.5 ns per nonzero at f = 64 (criterion medians, one thread).

use std::sync::OnceLock;

/// Which kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
}

fn level() -> Level {
    static L: OnceLock<Level> = OnceLock::new();
    *L.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::features().avx2_fma() {
            return Level::Avx2Fma;
        }
        Level::Scalar
    })
}

/// Name of the accumulation kernels in use: `"avx2+fma"` or `"scalar"`.
pub fn kernel_name() -> &'static str {
    match level() {
        Level::Scalar => "scalar",
        #[cfg(target_arch = "x86_64")]
        Level::Avx2Fma => "avx2+fma",
    }
}

/// For each 64-lane block `k` of `acc` (`acc.len() == 64 · W`), and for each feature `i` in
/// order: `acc[64k + j] += ±weights[i]`, `+` where bit `j` of `word(i, k)` is set.
#[inline]
pub fn add_signed_rows<F: Fn(usize, usize) -> u64>(acc: &mut [f32], weights: &[f32], word: F) {
    assert_eq!(
        acc.len() % 64,
        0,
        "accumulator length must be a multiple of 64"
    );
    match level() {
        Level::Scalar => add_signed_rows_scalar(acc, weights, word),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` returns Avx2Fma only after detecting AVX2 and FMA on this CPU.
        Level::Avx2Fma => unsafe { x86::add_signed_rows(acc, weights, word) },
    }
}

/// Scalar reference of [`add_signed_rows`].
pub fn add_signed_rows_scalar<F: Fn(usize, usize) -> u64>(
    acc: &mut [f32],
    weights: &[f32],
    word: F,
) {
    for (k, block) in acc.chunks_exact_mut(64).enumerate() {
        for (i, &w) in weights.iter().enumerate() {
            let x = word(i, k);
            for (j, a) in block.iter_mut().enumerate() {
                let t = if x >> j & 1 == 1 { w } else { -w };
                *a += t;
            }
        }
    }
}

/// `acc[j] += w * row[j]` for `j < min(acc.len(), row.len())` (multiply, then add).
#[inline]
pub fn axpy(acc: &mut [f32], row: &[f32], w: f32) {
    match level() {
        Level::Scalar => axpy_scalar(acc, row, w),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` returns Avx2Fma only after detecting AVX2 and FMA on this CPU.
        Level::Avx2Fma => unsafe { x86::axpy(acc, row, w) },
    }
}

/// Scalar reference of [`axpy`].
pub fn axpy_scalar(acc: &mut [f32], row: &[f32], w: f32) {
    for (a, &r) in acc.iter_mut().zip(row) {
        *a += w * r;
    }
}

/// Packs `acc[j] > 0` for `j < bits` into `out` (`words_for(bits)` words; padding bits zero).
#[inline]
pub fn pack_signs(acc: &[f32], bits: usize, out: &mut [u64]) {
    assert!(acc.len() >= 64 * out.len() && out.len() * 64 >= bits);
    match level() {
        Level::Scalar => pack_signs_scalar(acc, bits, out),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` returns Avx2Fma only after detecting AVX2 and FMA on this CPU, and
        // the lengths were checked above.
        Level::Avx2Fma => unsafe { x86::pack_signs(acc, bits, out) },
    }
}

/// Scalar reference of [`pack_signs`].
pub fn pack_signs_scalar(acc: &[f32], bits: usize, out: &mut [u64]) {
    for (k, w) in out.iter_mut().enumerate() {
        let lanes = &acc[64 * k..(64 * k + 64).min(bits)];
        *w = lanes
            .iter()
            .enumerate()
            .fold(0u64, |x, (j, &v)| x | ((v > 0.0) as u64) << j);
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! AVX2 + FMA kernels. Each is an `unsafe fn` with `#[target_feature(enable = "avx2,fma")]`,
    //! called only by the dispatcher after `is_x86_feature_detected!`.

    use std::arch::x86_64::*;

    /// Shift counts that move bit `8g + j` of a 32-bit lane to its sign bit (bit 31), for
    /// lane `j` of group `g` (four groups cover 32 bits).
    const SHIFTS: [[i32; 8]; 4] = {
        let mut t = [[0i32; 8]; 4];
        let mut g = 0;
        while g < 4 {
            let mut j = 0;
            while j < 8 {
                t[g][j] = 31 - (8 * g + j) as i32;
                j += 1;
            }
            g += 1;
        }
        t
    };

    /// Features whose words are buffered per pass of [`add_signed_rows`].
    const WORDS_BUF: usize = 256;

    /// AVX2 version of `add_signed_rows_scalar`. Each 64-lane block is done in two halves of
    /// 32 lanes, whose four 8-lane accumulators stay in registers (with the four shift-count
    /// vectors, nothing spills). For each feature, the half's 32 bits of its word are
    /// broadcast, a variable shift moves bit `j` of each lane's byte to the sign bit, and a
    /// blend on that sign picks `+w` or `−w`, which is added: exactly `acc + (±w)`, as in the
    /// scalar reference. The words of up to [`WORDS_BUF`] features are computed once per block
    /// and read by both halves.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA; `acc.len()` must be a multiple of 64.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn add_signed_rows<F: Fn(usize, usize) -> u64>(
        acc: &mut [f32],
        weights: &[f32],
        word: F,
    ) {
        // SAFETY: SHIFTS rows are 8 i32s (32 bytes) each.
        let shifts: [__m256i; 4] =
            std::array::from_fn(|g| unsafe { _mm256_loadu_si256(SHIFTS[g].as_ptr().cast()) });
        let mut words = [0u64; WORDS_BUF];
        for (k, block) in acc.chunks_exact_mut(64).enumerate() {
            for (c, ws) in weights.chunks(WORDS_BUF).enumerate() {
                let words = &mut words[..ws.len()];
                for (i, x) in words.iter_mut().enumerate() {
                    *x = word(c * WORDS_BUF + i, k);
                }
                for (half, lanes) in block.chunks_exact_mut(32).enumerate() {
                    let p = lanes.as_mut_ptr();
                    // SAFETY: `lanes` has 32 f32s; each unaligned load/store covers 8 of
                    // them, at offsets 0, 8, 16, 24.
                    unsafe {
                        let mut a = [_mm256_setzero_ps(); 4];
                        for (l, v) in a.iter_mut().enumerate() {
                            *v = _mm256_loadu_ps(p.add(8 * l));
                        }
                        for (&x, &w) in words.iter().zip(ws) {
                            let pos = _mm256_set1_ps(w);
                            let neg = _mm256_set1_ps(-w);
                            let h = _mm256_set1_epi32((x >> (32 * half)) as u32 as i32);
                            for (v, sh) in a.iter_mut().zip(&shifts) {
                                let s = _mm256_castsi256_ps(_mm256_sllv_epi32(h, *sh));
                                *v = _mm256_add_ps(*v, _mm256_blendv_ps(neg, pos, s));
                            }
                        }
                        for (l, v) in a.iter().enumerate() {
                            _mm256_storeu_ps(p.add(8 * l), *v);
                        }
                    }
                }
            }
        }
    }

    /// `acc[j] = acc[j] + w * row[j]` with separate multiply and add (no FMA), 8 lanes at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy(acc: &mut [f32], row: &[f32], w: f32) {
        let n = acc.len().min(row.len());
        let (a, r) = (acc.as_mut_ptr(), row.as_ptr());
        let wv = _mm256_set1_ps(w);
        let mut j = 0;
        // SAFETY: j + 8 <= n <= both lengths for every vector access.
        unsafe {
            while j + 8 <= n {
                let prod = _mm256_mul_ps(wv, _mm256_loadu_ps(r.add(j)));
                _mm256_storeu_ps(a.add(j), _mm256_add_ps(_mm256_loadu_ps(a.add(j)), prod));
                j += 8;
            }
        }
        super::axpy_scalar(&mut acc[j..n], &row[j..n], w);
    }

    /// Packs `acc[j] > 0` with a compare and a sign-bit mask per 8 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX2; `acc.len() >= 64 · out.len()` and `64 · out.len() >= bits`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn pack_signs(acc: &[f32], bits: usize, out: &mut [u64]) {
        let zero = _mm256_setzero_ps();
        for (k, w) in out.iter_mut().enumerate() {
            let mut x = 0u64;
            for l in 0..8 {
                // SAFETY: 64k + 8l + 8 <= 64 · out.len() <= acc.len().
                let v = unsafe { _mm256_loadu_ps(acc.as_ptr().add(64 * k + 8 * l)) };
                let m = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(v, zero)) as u64;
                x |= m << (8 * l);
            }
            let valid = bits.saturating_sub(64 * k).min(64);
            *w = if valid == 64 {
                x
            } else {
                x & ((1u64 << valid) - 1)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn bits_of(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn simd_kernels_equal_scalar_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::detected().avx2_fma() {
            let mut r = Rng::new(3);
            for &words in &[1usize, 2, 3, 4, 7] {
                for &n in &[0usize, 1, 5, 64, 333] {
                    let keys: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();
                    let weights: Vec<f32> = (0..n).map(|_| (r.gaussian() * 3.0) as f32).collect();
                    let word = |i: usize, k: usize| crate::rng::expand(keys[i], k as u64);
                    let init: Vec<f32> = (0..64 * words).map(|_| r.gaussian() as f32).collect();
                    let (mut a, mut b) = (init.clone(), init.clone());
                    add_signed_rows_scalar(&mut a, &weights, word);
                    // SAFETY: features detected above.
                    unsafe { x86::add_signed_rows(&mut b, &weights, word) };
                    assert_eq!(bits_of(&a), bits_of(&b));
                    for bits in [64 * words - 63, 64 * words - 1, 64 * words] {
                        let (mut pa, mut pb) = (vec![0; words], vec![0; words]);
                        pack_signs_scalar(&a, bits, &mut pa);
                        // SAFETY: features detected above; lengths as required.
                        unsafe { x86::pack_signs(&a, bits, &mut pb) };
                        assert_eq!(pa, pb);
                    }
                }
            }
            for &len in &[0usize, 1, 7, 8, 9, 63, 64, 65, 300] {
                let row: Vec<f32> = (0..len).map(|_| r.gaussian() as f32).collect();
                let init: Vec<f32> = (0..len).map(|_| r.gaussian() as f32).collect();
                let (mut a, mut b) = (init.clone(), init);
                axpy_scalar(&mut a, &row, 0.3711);
                // SAFETY: features detected above.
                unsafe { x86::axpy(&mut b, &row, 0.3711) };
                assert_eq!(bits_of(&a), bits_of(&b));
            }
        }
    }

    #[test]
    fn pack_handles_zero_negative_zero_and_padding() {
        let mut acc = vec![0f32; 128];
        acc[0] = 1.0;
        acc[1] = -0.0;
        acc[2] = f32::MIN_POSITIVE;
        acc[70] = 3.0;
        acc[127] = 1.0;
        let mut out = [0u64; 2];
        pack_signs(&acc, 100, &mut out);
        assert_eq!(out, [0b101, 1 << 6]);
    }
}
