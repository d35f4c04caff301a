//! Signing dense batches by a register-blocked matrix product fused with the sign step.
//!
//! For an `N × D` input and a `D × f` matrix, the product is computed in blocks of 6 rows ×
//! 16 columns held in twelve AVX2 registers (a BLIS-style micro-kernel; the matrix is first
//! packed into panels of 16 columns), and each block's values go straight to the sign test:
//! the `N × f` product is never stored.
//!
//! **Exactness.** The product's summation order (and its use of fused multiply-adds) differs
//! from the canonical order of the signers (feature by feature, multiply then add), so its
//! values may differ in the last bits. Both are within `γ_{D+2}·Σ_i |x_i·r_ij|` of the exact
//! value (`γ_n = n·u/(1 − n·u)`, `u = 2^-24`), which is at most `γ_{D+2}·‖x‖·‖r_j‖`. A value
//! farther than twice that from zero has the same sign in both; every other value (a fraction
//! of about `10⁻³` of bits for random data) is recomputed in the canonical order. So the bits
//! are exactly those of [`Signer::sign_sparse`](super::Signer::sign_sparse), whichever kernel
//! runs. A 10% margin on the bound covers its own rounding in `f32`.

use std::sync::OnceLock;

use crate::signature::words_for;

/// Rows per micro-kernel block.
const MR: usize = 6;
/// Columns per panel (two 8-lane registers).
const NR: usize = 16;

/// A `D × f` matrix prepared for batch products.
pub(crate) struct Projector<'a> {
    /// The matrix, row-major `D × f` (row `i` is the column of feature `i`).
    r: &'a [f32],
    d: usize,
    f: usize,
    /// Panels of 16 columns: panel `p` is `D × 16`, row-major, zero-padded past `f`.
    panels: Vec<f32>,
    /// Norms of the columns `r_j`, padded to a multiple of 16.
    col_norm: Vec<f32>,
    /// `2.2·γ_{D+2}`: the two computations differ by at most `2·γ_{D+2}·‖x‖·‖r_j‖`; the 10%
    /// margin covers the rounding of the bound itself (relative `O(γ_D)`).
    scale: f32,
    /// An absolute floor for values near underflow.
    tiny: f32,
}

impl<'a> Projector<'a> {
    pub(crate) fn new(r: &'a [f32], d: usize, f: usize) -> Self {
        assert_eq!(r.len(), d * f);
        let np = f.div_ceil(NR);
        let mut panels = vec![0f32; np * d * NR];
        for p in 0..np {
            for i in 0..d {
                for c in 0..NR.min(f - p * NR) {
                    panels[(p * d + i) * NR + c] = r[i * f + p * NR + c];
                }
            }
        }
        let mut col_norm = vec![0f32; np * NR];
        for (j, n) in col_norm.iter_mut().enumerate().take(f) {
            *n = (0..d)
                .map(|i| (r[i * f + j] as f64).powi(2))
                .sum::<f64>()
                .sqrt() as f32;
        }
        let u = f32::EPSILON as f64 / 2.0;
        let n = (d + 2) as f64;
        let gamma = n * u / (1.0 - n * u);
        Projector {
            r,
            d,
            f,
            panels,
            col_norm,
            scale: (2.2 * gamma) as f32,
            tiny: (n * f32::MIN_POSITIVE as f64 * 4.0) as f32,
        }
    }

    /// Signs the rows of `x` (row-major, `rows × D`) into `out` (`rows × words_for(f)`).
    pub(crate) fn sign_rows(&self, x: &[f32], out: &mut [u64]) {
        let (d, w) = (self.d, words_for(self.f));
        let rows = x.len() / d;
        debug_assert_eq!(out.len(), rows * w);
        out.fill(0);
        let mut signs = [Signs::default(); MR];
        let mut thr = [0f32; MR];
        for start in (0..rows).step_by(MR) {
            let m = MR.min(rows - start);
            let xb = &x[start * d..(start + m) * d];
            for (t, row) in thr.iter_mut().zip(xb.chunks_exact(d)) {
                *t = self.scale * sum_squares(row).sqrt();
            }
            for p in 0..self.f.div_ceil(NR) {
                let panel = &self.panels[p * d * NR..(p + 1) * d * NR];
                let cn: &[f32; NR] = self.col_norm[p * NR..(p + 1) * NR].try_into().expect("16");
                (kernel())(
                    Block {
                        x: xb,
                        d,
                        m,
                        panel,
                        thr: &thr,
                        col_norm: cn,
                        tiny: self.tiny,
                    },
                    &mut signs,
                );
                let valid = if self.f - p * NR >= NR {
                    u16::MAX
                } else {
                    (1u16 << (self.f - p * NR)) - 1
                };
                let j0 = p * NR;
                for (i, sg) in signs.iter().enumerate().take(m) {
                    let dst = &mut out[(start + i) * w..(start + i + 1) * w];
                    let mut bits = sg.positive & valid;
                    let mut unsure = sg.uncertain & valid;
                    while unsure != 0 {
                        let c = unsure.trailing_zeros() as usize;
                        unsure &= unsure - 1;
                        let row = &xb[i * d..(i + 1) * d];
                        if self.canonical(row, j0 + c) > 0.0 {
                            bits |= 1 << c;
                        } else {
                            bits &= !(1 << c);
                        }
                    }
                    dst[j0 / 64] |= (bits as u64) << (j0 % 64);
                }
            }
        }
    }

    /// `Σ_i x_i · r_ij` in the canonical order: increasing `i`, zeros skipped, multiply then add.
    fn canonical(&self, row: &[f32], j: usize) -> f32 {
        let mut e = 0f32;
        for (i, &xi) in row.iter().enumerate() {
            if xi != 0.0 {
                e += xi * self.r[i * self.f + j];
            }
        }
        e
    }
}

/// `Σ v²` with eight independent partial sums (so it vectorises); used only for the bound,
/// whose safety factor covers the summation order.
fn sum_squares(v: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = v.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().map(|x| x * x).sum();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x * x;
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// One micro-kernel call: rows `x` (`m × d`), a panel (`d × 16`), and the per-row and
/// per-column factors of the certainty bound.
pub(crate) struct Block<'a> {
    x: &'a [f32],
    d: usize,
    m: usize,
    panel: &'a [f32],
    thr: &'a [f32; MR],
    col_norm: &'a [f32; NR],
    tiny: f32,
}

/// The sign bits of a row's 16 values `g_c`: `positive` has bit `c` set when `g_c > 0`,
/// `uncertain` when `g_c` is not finite or `|g_c| ≤ thr · col_norm[c] + tiny`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Signs {
    positive: u16,
    uncertain: u16,
}

/// Computes `g[i][c] = Σ_k x[i·d + k] · panel[k·16 + c]` for the block's `m` rows and
/// classifies the values into [`Signs`].
type Kernel = fn(Block<'_>, &mut [Signs; MR]);

fn classify(g: f32, bound: f32) -> (bool, bool) {
    (g > 0.0, !(g.is_finite() && g.abs() > bound))
}

fn kernel() -> Kernel {
    static K: OnceLock<Kernel> = OnceLock::new();
    *K.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::features().avx2_fma() {
            return x86::block_safe;
        }
        block_scalar
    })
}

/// Scalar reference of the micro-kernel.
fn block_scalar(b: Block<'_>, out: &mut [Signs; MR]) {
    for (i, o) in out.iter_mut().enumerate().take(b.m) {
        let mut v = [0f32; NR];
        let row = &b.x[i * b.d..(i + 1) * b.d];
        for (k, &a) in row.iter().enumerate() {
            let p = &b.panel[k * NR..(k + 1) * NR];
            for c in 0..NR {
                v[c] += a * p[c];
            }
        }
        *o = Signs::default();
        for (c, &g) in v.iter().enumerate() {
            let (pos, unsure) = classify(g, b.thr[i] * b.col_norm[c] + b.tiny);
            o.positive |= (pos as u16) << c;
            o.uncertain |= (unsure as u16) << c;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Block, MR, NR, Signs};

    /// Safe entry, installed by the dispatcher only after AVX2 and FMA were detected.
    pub(super) fn block_safe(b: Block<'_>, out: &mut [Signs; MR]) {
        assert!(b.m >= 1 && b.m <= MR && b.x.len() >= b.m * b.d && b.panel.len() >= b.d * NR);
        // SAFETY: the CPU supports AVX2 and FMA (checked by the dispatcher); the lengths were
        // checked just above.
        unsafe {
            match b.m {
                6 => block::<6>(b, out),
                5 => block::<5>(b, out),
                4 => block::<4>(b, out),
                3 => block::<3>(b, out),
                2 => block::<2>(b, out),
                _ => block::<1>(b, out),
            }
        }
    }

    /// `M` rows × 16 columns in `2·M` registers, one broadcast per row and two panel loads per
    /// step of the inner dimension; then the sign and certainty masks by vector compares.
    ///
    /// # Safety
    /// AVX2 and FMA; `x.len() >= M·d`, `panel.len() >= 16·d`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn block<const M: usize>(b: Block<'_>, out: &mut [Signs; MR]) {
        let (xp, pp, d) = (b.x.as_ptr(), b.panel.as_ptr(), b.d);
        let mut acc = [[_mm256_setzero_ps(); 2]; M];
        // SAFETY: k < d, so every x read is below M·d and every panel read below 16·d; the
        // column norms are 16 floats.
        unsafe {
            for k in 0..d {
                let b0 = _mm256_loadu_ps(pp.add(k * NR));
                let b1 = _mm256_loadu_ps(pp.add(k * NR + 8));
                for (i, a) in acc.iter_mut().enumerate() {
                    let xv = _mm256_broadcast_ss(&*xp.add(i * d + k));
                    a[0] = _mm256_fmadd_ps(xv, b0, a[0]);
                    a[1] = _mm256_fmadd_ps(xv, b1, a[1]);
                }
            }
            let zero = _mm256_setzero_ps();
            let abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
            let tiny = _mm256_set1_ps(b.tiny);
            let cn = [
                _mm256_loadu_ps(b.col_norm.as_ptr()),
                _mm256_loadu_ps(b.col_norm.as_ptr().add(8)),
            ];
            for (i, a) in acc.iter().enumerate() {
                let t = _mm256_set1_ps(b.thr[i]);
                let (mut pos, mut sure) = (0u16, 0u16);
                for h in 0..2 {
                    let bound = _mm256_add_ps(_mm256_mul_ps(t, cn[h]), tiny);
                    // |g| > bound is false for NaN (ordered compare) and true for ±inf, so
                    // infinities are also excluded: inf > any finite bound would pass.
                    let certain = _mm256_and_ps(
                        _mm256_cmp_ps::<_CMP_GT_OQ>(_mm256_and_ps(a[h], abs_mask), bound),
                        _mm256_cmp_ps::<_CMP_LT_OQ>(
                            _mm256_and_ps(a[h], abs_mask),
                            _mm256_set1_ps(f32::INFINITY),
                        ),
                    );
                    pos |= (_mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(a[h], zero)) as u16)
                        << (8 * h);
                    sure |= (_mm256_movemask_ps(certain) as u16) << (8 * h);
                }
                out[i] = Signs {
                    positive: pos,
                    uncertain: !sure,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn kernels_classify_like_the_scalar_reference() {
        // The products may differ in the last bits, but a value classified as certain by one
        // kernel has the same sign in the other.
        let mut rng = Rng::new(9);
        for d in [1usize, 7, 64, 385] {
            let x: Vec<f32> = (0..MR * d).map(|_| rng.gaussian() as f32).collect();
            let panel: Vec<f32> = (0..NR * d).map(|_| rng.gaussian() as f32).collect();
            let mut thr = [0f32; MR];
            thr.iter_mut().for_each(|t| *t = 1e-3);
            let cn = [1f32; NR];
            for m in 1..=MR {
                let (mut a, mut b) = ([Signs::default(); MR], [Signs::default(); MR]);
                let blk = || Block {
                    x: &x,
                    d,
                    m,
                    panel: &panel,
                    thr: &thr,
                    col_norm: &cn,
                    tiny: 0.0,
                };
                block_scalar(blk(), &mut a);
                (kernel())(blk(), &mut b);
                for i in 0..m {
                    let sure = !a[i].uncertain & !b[i].uncertain;
                    assert_eq!(
                        a[i].positive & sure,
                        b[i].positive & sure,
                        "d={d} m={m} row {i}"
                    );
                }
            }
        }
    }
}
