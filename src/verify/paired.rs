//! The exact cosine of given pairs of rows, one row from each of two sets (e.g. the candidate
//! pairs of a distributed join, each with both rows at hand).

use rayon::prelude::*;

use super::{SparseVectors, Vectors};
use crate::error::{Error, Result};
use crate::text::Tokenizer;

/// The exact cosine of each pair of rows (`a[i]`, `b[i]`), in parallel: the cosine the
/// verified joins compute, bit for bit (0 when either row has norm 0).
///
/// ```
/// use ndarray::array;
/// use simlsh::verify::{DenseVectors, paired_cosines};
///
/// let a = DenseVectors::new(array![[1.0f32, 0.0], [0.0, 2.0]].view())?;
/// let b = DenseVectors::new(array![[0.0f32, 1.0], [0.0, 3.0]].view())?;
/// assert_eq!(paired_cosines(&a, &b)?, vec![0.0, 1.0]);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::LengthMismatch`] when `a` and `b` differ in rows, or in columns
/// ([`Vectors::check_pairable`]).
pub fn paired_cosines<V: Vectors>(a: &V, b: &V) -> Result<Vec<f64>> {
    if a.len() != b.len() {
        return Err(Error::LengthMismatch {
            what: "a vs b rows",
            left: a.len(),
            right: b.len(),
        });
    }
    a.check_pairable(b, "a vs b columns")?;
    Ok((0..a.len())
        .into_par_iter()
        .map(|i| a.cosine_with(i, b, i))
        .collect())
}

/// The exact cosine of each pair of documents (`a[i]`, `b[i]`), of their weighted features as
/// `tokenizer` gives them ([`SparseVectors::from_features`]): the cosine the verified join of
/// the same documents computes, bit for bit.
///
/// ```
/// use simlsh::text::Tokenizer;
/// use simlsh::verify::paired_text_cosines;
///
/// let tok = Tokenizer::builder().build()?;
/// let c = paired_text_cosines(&tok, &["a b c", "x"], &["a b d", ""])?;
/// assert!((c[0] - 2.0 / 3.0).abs() < 1e-6);
/// assert_eq!(c[1], 0.0);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::LengthMismatch`] when `a` and `b` differ in length; [`Error::NonFinite`] for a
/// non-finite weight.
pub fn paired_text_cosines<S: AsRef<str> + Sync>(
    tokenizer: &Tokenizer,
    a: &[S],
    b: &[S],
) -> Result<Vec<f64>> {
    if a.len() != b.len() {
        return Err(Error::LengthMismatch {
            what: "a vs b rows",
            left: a.len(),
            right: b.len(),
        });
    }
    let vectors = |docs: &[S]| -> Result<SparseVectors> {
        let f: Vec<_> = docs
            .par_iter()
            .map(|d| tokenizer.features(d.as_ref()))
            .collect();
        SparseVectors::from_features(f.iter())
    };
    paired_cosines(&vectors(a)?, &vectors(b)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::exact_cosine;
    use crate::verify::{CsrVectors, DenseVectors};
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn paired_cosines_equal_the_definition_and_the_joins_cosine() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let (n, dim) = (50, 12);
        let mut draw = || -> Vec<f32> {
            (0..n * dim)
                .map(|k| {
                    // A quarter zeros (and whole zero rows now and then) for the sparse side.
                    let v = rng.random_range(-1.0f32..1.0);
                    if k % 4 == 0 || (k / dim) % 17 == 3 {
                        0.0
                    } else {
                        v
                    }
                })
                .collect()
        };
        let (xa, xb) = (draw(), draw());
        let (ma, mb) = (
            ndarray::ArrayView2::from_shape((n, dim), &xa).unwrap(),
            ndarray::ArrayView2::from_shape((n, dim), &xb).unwrap(),
        );
        let (da, db) = (
            DenseVectors::new(ma).unwrap(),
            DenseVectors::new(mb).unwrap(),
        );
        let dense = paired_cosines(&da, &db).unwrap();
        let (sa, sb) = (
            sprs::CsMat::csr_from_dense(ma, 0.0),
            sprs::CsMat::csr_from_dense(mb, 0.0),
        );
        let sparse = paired_cosines(
            &CsrVectors::new(sa.view()).unwrap(),
            &CsrVectors::new(sb.view()).unwrap(),
        )
        .unwrap();
        for i in 0..n {
            let (x, y) = (&xa[i * dim..(i + 1) * dim], &xb[i * dim..(i + 1) * dim]);
            let want = exact_cosine(x, y);
            // Dense rows are normalised once in f32: a relative error of a few f32 ulps per
            // column; CSR rows keep their f64 norms.
            let tol = 2.0 * dim as f64 * f64::from(f32::EPSILON);
            assert!(
                (dense[i] - want).abs() < tol,
                "row {i}: {} vs {want}",
                dense[i]
            );
            assert!(
                (sparse[i] - want).abs() < 1e-12,
                "row {i}: {} vs {want}",
                sparse[i]
            );
            // Bit for bit the cosine a join of the same rows computes.
            assert_eq!(dense[i].to_bits(), da.cosine_with(i, &db, i).to_bits());
        }
        assert_eq!(dense[3], 0.0); // a zero row
    }

    #[test]
    fn pairs_of_different_shapes_are_errors_not_panics() {
        let a = DenseVectors::new(ndarray::Array2::<f32>::ones((3, 4)).view()).unwrap();
        let b = DenseVectors::new(ndarray::Array2::<f32>::ones((2, 4)).view()).unwrap();
        let c = DenseVectors::new(ndarray::Array2::<f32>::ones((3, 5)).view()).unwrap();
        let e = paired_cosines(&a, &b).unwrap_err().to_string();
        assert!(
            e.contains("a vs b rows") && e.contains('3') && e.contains('2'),
            "{e}"
        );
        let e = paired_cosines(&a, &c).unwrap_err().to_string();
        assert!(
            e.contains("columns") && e.contains('4') && e.contains('5'),
            "{e}"
        );
        let tok = Tokenizer::builder().build().unwrap();
        assert!(paired_text_cosines(&tok, &["a"], &["a", "b"]).is_err());
    }

    #[test]
    fn text_pairs_take_the_tokenizers_features() {
        let tok = Tokenizer::builder().build().unwrap();
        let (a, b) = (
            ["the cat sat", "one two", "", "x y"],
            ["the cat ran", "one two", "a", "x y z w"],
        );
        let got = paired_text_cosines(&tok, &a, &b).unwrap();
        let all: Vec<_> = a.iter().chain(&b).map(|d| tok.features(d)).collect();
        let v = SparseVectors::from_features(all.iter()).unwrap();
        for (i, c) in got.iter().enumerate() {
            assert_eq!(c.to_bits(), v.cosine(i, a.len() + i).to_bits(), "pair {i}");
        }
        // Equal documents (rows normalised in f32), and a featureless one.
        assert!((got[1] - 1.0).abs() < 1e-6, "{}", got[1]);
        assert_eq!(got[2], 0.0);
    }
}
