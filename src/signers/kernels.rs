//! Accumulation kernels shared by the signers: `acc[j] += ±w` driven by bits (hashing trick,
//! Rademacher matrices) and `acc[j] += w · r[j]` (explicit Gaussian rows).
//!
//! Every kernel performs exactly the same IEEE-754 operations, in the same order, as its scalar
//! reference (`acc[j] = acc[j] + t` with `t = ±w` or `t = w * r[j]`, a multiply then an add,
//! never a fused multiply-add), so signatures are bit-identical whichever kernel runs. The
//! AVX2 kernels are chosen once at run time with `is_x86_feature_detected!`; the environment
//! variable `SIMLSH_FORCE_SCALAR=1` forces the scalar ones.

use std::sync::OnceLock;

/// `acc[j] += if bit j of word { w } else { -w }` for the 64 lanes of one block: scalar
/// reference.
#[inline]
pub fn add_signed_block_scalar(acc: &mut [f32; 64], word: u64, w: f32) {
    for (j, a) in acc.iter_mut().enumerate() {
        let t = if word >> j & 1 == 1 { w } else { -w };
        *a += t;
    }
}

/// For each 64-lane block `k` of `acc` (`acc.len() == 64 · W`), and for each feature `i` in
/// order: `acc[64k + j] += ±weights[i]`, `+` where bit `j` of `words[i · W + k]` is set.
///
/// The block is held in registers while all features are added, which is what makes the
/// hashing trick fast; the order of additions into each lane is the feature order, as in the
/// scalar reference.
pub fn add_signed_rows(acc: &mut [f32], weights: &[f32], words: &[u64]) {
    assert_eq!(acc.len() % 64, 0);
    assert_eq!(words.len(), weights.len() * (acc.len() / 64));
    (kernels().add_signed_rows)(acc, weights, words)
}

/// Scalar reference of [`add_signed_rows`].
pub fn add_signed_rows_scalar(acc: &mut [f32], weights: &[f32], words: &[u64]) {
    let nw = acc.len() / 64;
    for (k, block) in acc.chunks_exact_mut(64).enumerate() {
        let block: &mut [f32; 64] = block.try_into().expect("64 lanes");
        for (i, &w) in weights.iter().enumerate() {
            add_signed_block_scalar(block, words[i * nw + k], w);
        }
    }
}

/// `acc[j] += w * row[j]` for `j < row.len()`: scalar reference (multiply, then add).
#[inline]
pub fn axpy_scalar(acc: &mut [f32], row: &[f32], w: f32) {
    for (a, &r) in acc.iter_mut().zip(row) {
        *a += w * r;
    }
}

/// `acc[j] += w * row[j]`, dispatched (multiply then add, as the scalar reference).
#[inline]
pub fn axpy(acc: &mut [f32], row: &[f32], w: f32) {
    (kernels().axpy)(acc, row, w)
}

type SignedRows = fn(&mut [f32], &[f32], &[u64]);
type Axpy = fn(&mut [f32], &[f32], f32);

struct Kernels {
    name: &'static str,
    add_signed_rows: SignedRows,
    axpy: Axpy,
}

fn kernels() -> &'static Kernels {
    static K: OnceLock<Kernels> = OnceLock::new();
    K.get_or_init(|| {
        let scalar = Kernels {
            name: "scalar",
            add_signed_rows: add_signed_rows_scalar,
            axpy: axpy_scalar,
        };
        if std::env::var_os("SIMLSH_FORCE_SCALAR").is_some_and(|v| v == "1") {
            return scalar;
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            return Kernels {
                name: "avx2",
                add_signed_rows: x86::add_signed_rows_avx2_safe,
                axpy: x86::axpy_avx2_safe,
            };
        }
        scalar
    })
}

/// Name of the accumulation kernels in use (`"avx2"` or `"scalar"`).
pub fn kernel_name() -> &'static str {
    kernels().name
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! AVX2 kernels. Each is an `unsafe fn` with `#[target_feature(enable = "avx2")]` and a
    //! safe wrapper that is only installed by the dispatcher after `is_x86_feature_detected!`.

    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// `SIGN[b]`: for each of the 8 bits of byte `b`, `0` if the bit is set (add +w) or the
    /// sign bit `0x8000_0000` if it is clear (add −w), as 8 × u32.
    fn sign_table() -> &'static [[u32; 8]; 256] {
        static T: OnceLock<Box<[[u32; 8]; 256]>> = OnceLock::new();
        T.get_or_init(|| {
            let mut t = Box::new([[0u32; 8]; 256]);
            for (b, row) in t.iter_mut().enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = if b >> j & 1 == 1 { 0 } else { 0x8000_0000 };
                }
            }
            t
        })
    }

    /// Safe entry installed by the dispatcher.
    pub fn add_signed_rows_avx2_safe(acc: &mut [f32], weights: &[f32], words: &[u64]) {
        let table = sign_table();
        // SAFETY: the dispatcher installs this function only when AVX2 was detected, and
        // `add_signed_rows` checked the lengths.
        unsafe { add_signed_rows_avx2(acc, weights, words, table) }
    }

    /// AVX2 version of `add_signed_rows_scalar`: eight 8-lane accumulators stay in registers
    /// for a whole 64-lane block; for each feature, each byte of its word selects 8 sign
    /// masks, XORed into the broadcast weight (exactly `±w`) and added.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn add_signed_rows_avx2(
        acc: &mut [f32],
        weights: &[f32],
        words: &[u64],
        table: &[[u32; 8]; 256],
    ) {
        let nw = acc.len() / 64;
        assert!(acc.len() % 64 == 0 && words.len() == weights.len() * nw);
        for (k, block) in acc.chunks_exact_mut(64).enumerate() {
            let p = block.as_mut_ptr();
            // SAFETY: `block` has 64 f32s; each unaligned load/store covers 8 of them.
            unsafe {
                let mut a = [_mm256_setzero_ps(); 8];
                for (l, v) in a.iter_mut().enumerate() {
                    *v = _mm256_loadu_ps(p.add(8 * l));
                }
                for (i, &w) in weights.iter().enumerate() {
                    let wv = _mm256_set1_ps(w);
                    let x = words[i * nw + k];
                    for (l, v) in a.iter_mut().enumerate() {
                        let m =
                            _mm256_loadu_ps(table[(x >> (8 * l)) as usize & 0xff].as_ptr().cast());
                        *v = _mm256_add_ps(*v, _mm256_xor_ps(wv, m));
                    }
                }
                for (l, v) in a.iter().enumerate() {
                    _mm256_storeu_ps(p.add(8 * l), *v);
                }
            }
        }
    }

    /// Safe entry installed by the dispatcher.
    pub fn axpy_avx2_safe(acc: &mut [f32], row: &[f32], w: f32) {
        // SAFETY: the dispatcher installs this function only when AVX2 was detected.
        unsafe { axpy_avx2(acc, row, w) }
    }

    /// `acc[j] = acc[j] + w * row[j]` with separate multiply and add (no FMA), 8 lanes at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn axpy_avx2(acc: &mut [f32], row: &[f32], w: f32) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn avx2_kernels_equal_scalar_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            let mut r = Rng::new(3);
            for &words in &[1usize, 2, 3, 4, 7] {
                for &n in &[0usize, 1, 5, 64, 333] {
                    let keys: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();
                    let weights: Vec<f32> = (0..n).map(|_| (r.gaussian() * 3.0) as f32).collect();
                    let hw: Vec<u64> = (0..n * words)
                        .map(|t| crate::rng::expand(keys[t / words], (t % words) as u64))
                        .collect();
                    let init: Vec<f32> = (0..64 * words).map(|_| r.gaussian() as f32).collect();
                    let (mut a, mut b) = (init.clone(), init.clone());
                    add_signed_rows_scalar(&mut a, &weights, &hw);
                    x86::add_signed_rows_avx2_safe(&mut b, &weights, &hw);
                    assert_eq!(
                        a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                        b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                    );
                }
            }
            for &len in &[0usize, 1, 7, 8, 9, 63, 64, 65, 300] {
                let row: Vec<f32> = (0..len).map(|_| r.gaussian() as f32).collect();
                let init: Vec<f32> = (0..len).map(|_| r.gaussian() as f32).collect();
                let (mut a, mut b) = (init.clone(), init);
                axpy_scalar(&mut a, &row, 0.3711);
                x86::axpy_avx2_safe(&mut b, &row, 0.3711);
                assert_eq!(
                    a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    }
}
