//! Accumulation kernels shared by the signers: `acc[j] += ±w` driven by sign bits (hashing
//! trick, Rademacher matrices), `acc[j] += w · r[j]` (explicit Gaussian rows, pooled values),
//! `acc[j] += w · T[m]` with `m` from an AES-expanded hash stream (the hashed Gaussian
//! signer), and the packing of `acc[j] > 0` into words.
//!
//! **Exactness.** Every kernel performs exactly the same IEEE-754 operations, in the same order,
//! as its scalar reference, so signatures are bit-identical whichever kernel runs:
//! - signed adds compute `acc[j] + (±w)`; the AVX2 kernel selects `+w` or `−w` by the sign bit
//!   (a blend) and adds it, the same single rounding;
//! - `axpy` computes `acc[j] + (w · r[j])` with a separate multiply and add (never a fused
//!   multiply-add, whose single rounding would differ);
//! - table lookups compute `acc[j] + (w · T[m])`: the AVX2 kernel multiplies the 8-entry
//!   table by `w` once per feature (the same products) and picks them by index (`vpermps`);
//!   its hash stream is the AES round of [`stream_block`], by the AES-NI instruction.
//!
//! **Dispatch.** The x86-64 kernels need AVX2 and FMA (the table kernel also AES-NI) and are
//! chosen once, at the first call, from [`crate::cpu::features`]; other CPUs and platforms use
//! the scalar reference, which is always built. `SIMLSH_FORCE_SCALAR=1` forces the scalar
//! kernels (see [`crate::cpu`]).
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

/// Whether the table kernel may use AVX2, FMA and AES-NI.
#[cfg(target_arch = "x86_64")]
fn aes() -> bool {
    crate::cpu::features().avx2_fma_aes()
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

/// Round keys of the hash stream of [`stream_block`]: the first 256 bits of the fraction of
/// π (as in Blowfish), in register byte order.
pub const STREAM_KEYS: [[u8; 16]; 2] = [
    0x13198a2e_03707344_243f6a88_85a308d3u128.to_le_bytes(),
    0x082efa98_ec4e6c89_a4093822_299f31d0u128.to_le_bytes(),
];

/// Block `k` of the hash stream of a feature `key`: 256 bits as eight 32-bit words. Word
/// `4h + c` (`h` = 0, 1) is bytes `4c..4c+4` (little-endian) of
/// `AESENC(AESENC(S, K1), K2)`, where the 16-byte state `S` holds `key` then `2k + h`
/// (each 8 bytes, little-endian) and `K1`, `K2` are [`STREAM_KEYS`]: two AES rounds, after
/// which every output bit depends on every input bit. `key` is already a strong 64-bit hash
/// of the feature; the rounds only expand it.
pub fn stream_block(key: u64, k: u64) -> [u32; 8] {
    let mut out = [0u32; 8];
    for h in 0..2 {
        let mut s = [0u8; 16];
        s[..8].copy_from_slice(&key.to_le_bytes());
        s[8..].copy_from_slice(&(2 * k + h).to_le_bytes());
        let x = super::aes::aesenc(super::aes::aesenc(s, STREAM_KEYS[0]), STREAM_KEYS[1]);
        for c in 0..4 {
            out[4 * h as usize + c] =
                u32::from_le_bytes(x[4 * c..4 * c + 4].try_into().expect("4 bytes"));
        }
    }
    out
}

/// For each 64-lane block `k` of `acc` (`acc.len() == 64 · W`), and for each feature `i` in
/// order: with `d = stream_block(key(i), k)`, lane `8g + l` of the block (`g`, `l` in `0..8`)
/// gets `acc += weights[i] · tables[g % 2][(d[l] >> 3g) & 7]`. The feature keys come through
/// a closure inlined into the kernel (a key may be hashed as it is needed); it is called
/// once per feature and block.
#[inline]
pub fn add_table_rows<F: Fn(usize) -> u64>(
    acc: &mut [f32],
    weights: &[f32],
    key: F,
    tables: &[[f32; 8]; 2],
) {
    assert_eq!(
        acc.len() % 64,
        0,
        "accumulator length must be a multiple of 64"
    );
    #[cfg(target_arch = "x86_64")]
    if aes() {
        // SAFETY: `aes()` is true only after AVX2, FMA and AES were detected on this CPU.
        unsafe { x86::add_table_rows(acc, weights, key, tables) };
        return;
    }
    add_table_rows_scalar(acc, weights, key, tables)
}

/// Scalar reference of [`add_table_rows`].
pub fn add_table_rows_scalar<F: Fn(usize) -> u64>(
    acc: &mut [f32],
    weights: &[f32],
    key: F,
    tables: &[[f32; 8]; 2],
) {
    for (i, &w) in weights.iter().enumerate() {
        let key = key(i);
        for (k, block) in acc.chunks_exact_mut(64).enumerate() {
            let d = stream_block(key, k as u64);
            for (j, a) in block.iter_mut().enumerate() {
                let (g, l) = (j / 8, j % 8);
                *a += w * tables[g % 2][(d[l] >> (3 * g) & 7) as usize];
            }
        }
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

/// The fast Walsh–Hadamard transform in place (unnormalised: `H` with entries `±1`), by
/// stages of butterflies `(p, q) → (p + q, p − q)` at strides `1, 2, 4, …`; `x.len()` must be
/// a power of two. The AVX2 kernel does the first three stages inside each 8-lane register
/// (permutes and a blend) and the others 8 butterflies at a time: the same additions and
/// subtractions of the same operands as [`fwht_scalar`], so the same bits.
pub fn fwht(x: &mut [f32]) {
    assert!(x.len().is_power_of_two(), "a power of two");
    match level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `level()` returns Avx2Fma only after detecting AVX2 and FMA on this CPU; the
        // length is a power of two (checked above), as the kernel requires.
        Level::Avx2Fma if x.len() >= 8 => unsafe { x86::fwht(x) },
        _ => fwht_scalar(x),
    }
}

/// Scalar reference of [`fwht`].
pub fn fwht_scalar(x: &mut [f32]) {
    let n = x.len();
    let mut h = 1;
    while h < n {
        for block in x.chunks_exact_mut(2 * h) {
            let (a, b) = block.split_at_mut(h);
            for (u, v) in a.iter_mut().zip(b.iter_mut()) {
                let (p, q) = (*u, *v);
                *u = p + q;
                *v = p - q;
            }
        }
        h *= 2;
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! AVX2 + FMA kernels. Each is an `unsafe fn` with `#[target_feature(enable = "avx2,fma")]`,
    //! called only by the dispatcher once [`crate::cpu::features`] allows them.

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

    /// AVX2 + AES-NI version of `add_table_rows_scalar`. A block's eight 8-lane accumulators
    /// stay in registers while every feature is added: its 256 stream bits are two AES
    /// blocks computed in registers (`aesenc` twice each), the two tables are multiplied by
    /// its weight (one `vmulps` each, the products of the scalar reference), and each group
    /// of 8 lanes shifts the stream right by `3g` and picks its values with `vpermps`, which
    /// reads the low 3 bits of each 32-bit index.
    ///
    /// # Safety
    /// The CPU must support AVX2, FMA and AES; `acc.len()` must be a multiple of 64.
    #[target_feature(enable = "avx2,fma,aes")]
    pub unsafe fn add_table_rows<F: Fn(usize) -> u64>(
        acc: &mut [f32],
        weights: &[f32],
        key: F,
        tables: &[[f32; 8]; 2],
    ) {
        // SAFETY: the tables are 8 f32s (32 bytes) and the round keys 16 bytes each.
        let (ta, tb, k1, k2) = unsafe {
            (
                _mm256_loadu_ps(tables[0].as_ptr()),
                _mm256_loadu_ps(tables[1].as_ptr()),
                _mm_loadu_si128(super::STREAM_KEYS[0].as_ptr().cast()),
                _mm_loadu_si128(super::STREAM_KEYS[1].as_ptr().cast()),
            )
        };
        for (k, block) in acc.chunks_exact_mut(64).enumerate() {
            let p = block.as_mut_ptr();
            // SAFETY: `block` has 64 f32s; the 8 loads and stores cover 8 each at 8·l.
            let mut a: [__m256; 8] =
                std::array::from_fn(|l| unsafe { _mm256_loadu_ps(p.add(8 * l)) });
            let c0 = _mm_set_epi64x(2 * k as i64, 0);
            let c1 = _mm_set_epi64x(2 * k as i64 + 1, 0);
            for (i, &w) in weights.iter().enumerate() {
                let kv = _mm_set_epi64x(0, key(i) as i64);
                let x0 = _mm_aesenc_si128(_mm_aesenc_si128(_mm_or_si128(kv, c0), k1), k2);
                let x1 = _mm_aesenc_si128(_mm_aesenc_si128(_mm_or_si128(kv, c1), k1), k2);
                let r = _mm256_set_m128i(x1, x0);
                let wv = _mm256_set1_ps(w);
                let (twa, twb) = (_mm256_mul_ps(wv, ta), _mm256_mul_ps(wv, tb));
                macro_rules! group {
                    ($g:literal, $t:ident) => {
                        let idx = _mm256_srli_epi32::<{ 3 * $g }>(r);
                        a[$g] = _mm256_add_ps(a[$g], _mm256_permutevar8x32_ps($t, idx));
                    };
                }
                group!(0, twa);
                group!(1, twb);
                group!(2, twa);
                group!(3, twb);
                group!(4, twa);
                group!(5, twb);
                group!(6, twa);
                group!(7, twb);
            }
            for (l, v) in a.iter().enumerate() {
                // SAFETY: as for the loads.
                unsafe { _mm256_storeu_ps(p.add(8 * l), *v) };
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
    /// [`super::fwht`]: stages 1, 2 and 4 within each register (the partner lanes brought by
    /// a permute; the lower lane of a butterfly keeps `p + q`, the upper `p − q`, chosen by a
    /// blend), then 8 butterflies per instruction pair.
    ///
    /// # Safety
    /// The CPU must support AVX2; `x.len()` is a power of two ≥ 8.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fwht(x: &mut [f32]) {
        let n = x.len();
        let p = x.as_mut_ptr();
        for k in (0..n).step_by(8) {
            // SAFETY: k + 8 <= n, a multiple of 8.
            let mut v = unsafe { _mm256_loadu_ps(p.add(k)) };
            // Stride 1: lane i pairs with i ^ 1. Lower lanes take v + partner = p + q, upper
            // ones partner − v = p − q.
            let w = _mm256_permute_ps::<0b10_11_00_01>(v);
            v = _mm256_blend_ps::<0b1010_1010>(_mm256_add_ps(v, w), _mm256_sub_ps(w, v));
            // Stride 2: lane i pairs with i ^ 2.
            let w = _mm256_permute_ps::<0b01_00_11_10>(v);
            v = _mm256_blend_ps::<0b1100_1100>(_mm256_add_ps(v, w), _mm256_sub_ps(w, v));
            // Stride 4: the two 128-bit halves.
            let w = _mm256_permute2f128_ps::<0x01>(v, v);
            v = _mm256_blend_ps::<0b1111_0000>(_mm256_add_ps(v, w), _mm256_sub_ps(w, v));
            // SAFETY: as the load.
            unsafe { _mm256_storeu_ps(p.add(k), v) };
        }
        let mut h = 8;
        while h < n {
            for block in (0..n).step_by(2 * h) {
                for j in (block..block + h).step_by(8) {
                    // SAFETY: j + h + 8 <= block + 2h <= n.
                    unsafe {
                        let a = _mm256_loadu_ps(p.add(j));
                        let b = _mm256_loadu_ps(p.add(j + h));
                        _mm256_storeu_ps(p.add(j), _mm256_add_ps(a, b));
                        _mm256_storeu_ps(p.add(j + h), _mm256_sub_ps(a, b));
                    }
                }
            }
            h *= 2;
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
    fn table_kernel_equals_scalar_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::detected().avx2_fma_aes() {
            let mut r = Rng::new(8);
            let tables: [[f32; 8]; 2] =
                std::array::from_fn(|_| std::array::from_fn(|_| r.gaussian() as f32));
            for &words in &[1usize, 2, 3, 5] {
                for &n in &[0usize, 1, 7, 64, 300] {
                    let keys: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();
                    let weights: Vec<f32> = (0..n).map(|_| (r.gaussian() * 3.0) as f32).collect();
                    let init: Vec<f32> = (0..64 * words).map(|_| r.gaussian() as f32).collect();
                    let (mut a, mut b) = (init.clone(), init);
                    add_table_rows_scalar(&mut a, &weights, |i| keys[i], &tables);
                    // SAFETY: features detected above; lengths as required.
                    unsafe { x86::add_table_rows(&mut b, &weights, |i| keys[i], &tables) };
                    assert_eq!(bits_of(&a), bits_of(&b), "words={words} n={n}");
                }
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

    #[test]
    fn fwht_kernel_equals_the_scalar_reference_bit_for_bit() {
        let mut rng = Rng::new(17);
        for n in [1usize, 2, 4, 8, 16, 64, 1024, 4096] {
            for scale in [1.0f64, 1e-30, 1e30] {
                let x: Vec<f32> = (0..n).map(|_| (rng.gaussian() * scale) as f32).collect();
                let (mut a, mut b) = (x.clone(), x);
                fwht(&mut a);
                fwht_scalar(&mut b);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&a),
                    bits(&b),
                    "n = {n}, scale {scale}, kernel {}",
                    kernel_name()
                );
            }
        }
    }
}
