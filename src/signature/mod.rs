//! Signatures: f-bit codes packed into `u64` words.
//!
//! Bit `j` of a signature lives in word `j / 64` at bit position `j % 64` (least significant
//! bit first). A signature of `f` bits takes [`words_for`]`(f)` words; bits beyond `f` in the last
//! word are always zero, so the Hamming distance of two signatures is the popcount of the XOR of
//! their words.
//!
//! [`Signature`] holds one signature; [`SignatureMatrix`] holds `N` signatures of the same width
//! contiguously (row-major, `N × words`), generic over its storage (`Vec<u64>`, a slice, or a
//! memory map), convertible to and from `ndarray::Array2<u64>` and viewable row by row without
//! copying.

use ndarray::{Array2, ArrayView2};

use crate::error::{Error, Result};
use crate::hamming;

/// Number of `u64` words that hold `bits` bits.
pub const fn words_for(bits: usize) -> usize {
    bits.div_ceil(64)
}

/// Mask of the valid bits of the last word of an `bits`-bit signature.
pub const fn last_word_mask(bits: usize) -> u64 {
    match bits % 64 {
        0 => u64::MAX,
        r => (1u64 << r) - 1,
    }
}

/// The widest signature simlsh makes or reads: `2^20` bits (128 KiB per signature). Every
/// signer, index, file reader and planner checks widths against it with [`check_bits`], so
/// a width read from an option or a file header can never ask for an unbounded allocation.
pub const MAX_BITS: usize = 1 << 20;

/// Checks a signature width `f`: `1 ≤ f ≤` [`MAX_BITS`]. The one rule for every width.
///
/// ```
/// use simlsh::signature::{MAX_BITS, check_bits};
/// assert!(check_bits(64).is_ok() && check_bits(MAX_BITS).is_ok());
/// assert!(check_bits(0).is_err() && check_bits(MAX_BITS + 1).is_err());
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] naming `bits` and the limit.
pub fn check_bits(bits: usize) -> Result<()> {
    if bits == 0 {
        return Err(Error::param("bits", "a signature needs at least 1 bit"));
    }
    if bits > MAX_BITS {
        return Err(Error::param(
            "bits",
            format!("{bits} bits is more than the limit of {MAX_BITS} bits (2^20)"),
        ));
    }
    Ok(())
}

/// Checks that `words` holds whole `bits`-bit rows with zero padding; returns the row count.
fn check_rows(bits: usize, words: &[u64]) -> Result<usize> {
    check_bits(bits)?;
    let w = words_for(bits);
    if !words.len().is_multiple_of(w) {
        return Err(Error::LengthMismatch {
            what: "signature data (words) is not a whole number of rows",
            left: words.len(),
            right: w,
        });
    }
    let mask = last_word_mask(bits);
    if mask != u64::MAX
        && let Some(row) = words.chunks_exact(w).position(|r| r[w - 1] & !mask != 0)
    {
        return Err(Error::PaddingBits { row, bits });
    }
    Ok(words.len() / w)
}

/// One `f`-bit signature.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Signature {
    bits: usize,
    words: Vec<u64>,
}

impl Signature {
    /// An all-zero signature of `bits` bits.
    pub fn zeros(bits: usize) -> Result<Self> {
        check_bits(bits)?;
        Ok(Signature {
            bits,
            words: vec![0; words_for(bits)],
        })
    }

    /// A signature from its packed words; fails if the length is not `words_for(bits)` or if a
    /// bit beyond `bits` is set.
    pub fn from_words(bits: usize, words: Vec<u64>) -> Result<Self> {
        check_rows(bits, &words)?;
        if words.len() != words_for(bits) {
            return Err(Error::LengthMismatch {
                what: "signature words",
                left: words.len(),
                right: words_for(bits),
            });
        }
        Ok(Signature { bits, words })
    }

    /// A signature from one boolean per bit.
    pub fn from_bools(bools: &[bool]) -> Result<Self> {
        let mut s = Signature::zeros(bools.len())?;
        for (j, &b) in bools.iter().enumerate() {
            s.set(j, b);
        }
        Ok(s)
    }

    /// The width `f` in bits.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// The packed words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Consumes the signature, returning its words.
    pub fn into_words(self) -> Vec<u64> {
        self.words
    }

    /// Bit `j`.
    ///
    /// # Panics
    /// If `j >= self.bits()`.
    pub fn get(&self, j: usize) -> bool {
        assert!(j < self.bits, "bit {j} out of range for {} bits", self.bits);
        self.words[j / 64] >> (j % 64) & 1 == 1
    }

    /// Sets bit `j` to `value`.
    ///
    /// # Panics
    /// If `j >= self.bits()`.
    pub fn set(&mut self, j: usize, value: bool) {
        assert!(j < self.bits, "bit {j} out of range for {} bits", self.bits);
        let m = 1u64 << (j % 64);
        if value {
            self.words[j / 64] |= m;
        } else {
            self.words[j / 64] &= !m;
        }
    }

    /// Number of bits set.
    pub fn count_ones(&self) -> u32 {
        hamming::popcount(&self.words) as u32
    }

    /// Hamming distance to `other`, which must have the same width.
    pub fn distance(&self, other: &Signature) -> Result<u32> {
        if self.bits != other.bits {
            return Err(Error::BitsMismatch {
                expected: self.bits,
                got: other.bits,
            });
        }
        hamming::distance(&self.words, &other.words)
    }
}

impl std::fmt::Display for Signature {
    /// Hexadecimal, most significant word first (so a 64-bit signature prints as its `u64`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for w in self.words.iter().rev() {
            write!(f, "{w:016x}")?;
        }
        Ok(())
    }
}

/// `N` signatures of the same width `f`, stored contiguously row by row (`N × words_for(f)`
/// words), over any storage that derefs to `[u64]`: a `Vec<u64>` (the default), a borrowed
/// slice, or a memory-mapped file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SignatureMatrix<S = Vec<u64>> {
    bits: usize,
    words: usize,
    rows: usize,
    data: S,
}

impl<S: AsRef<[u64]>> SignatureMatrix<S> {
    /// Wraps `data` (row-major, `words_for(bits)` words per row). Checks that the length is a
    /// whole number of rows and that no padding bit is set.
    pub fn from_parts(bits: usize, data: S) -> Result<Self> {
        let rows = check_rows(bits, data.as_ref())?;
        Ok(SignatureMatrix {
            bits,
            words: words_for(bits),
            rows,
            data,
        })
    }

    /// Number of signatures.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when there are no signatures.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Width `f` in bits.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// Words per signature.
    pub fn words_per_row(&self) -> usize {
        self.words
    }

    /// All words, row-major.
    pub fn as_slice(&self) -> &[u64] {
        self.data.as_ref()
    }

    /// The storage.
    pub fn storage(&self) -> &S {
        &self.data
    }

    /// Row `i` as a slice of words (no copy).
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn row(&self, i: usize) -> &[u64] {
        &self.data.as_ref()[i * self.words..(i + 1) * self.words]
    }

    /// Iterator over the rows, as word slices.
    pub fn rows(&self) -> std::slice::ChunksExact<'_, u64> {
        self.data.as_ref().chunks_exact(self.words)
    }

    /// Row `i` copied into a [`Signature`].
    pub fn get(&self, i: usize) -> Signature {
        Signature {
            bits: self.bits,
            words: self.row(i).to_vec(),
        }
    }

    /// Hamming distance between rows `i` and `j`.
    pub fn distance(&self, i: usize, j: usize) -> u32 {
        hamming::Kernels::dispatched().distance_eq(self.row(i), self.row(j))
    }

    /// A zero-copy `N × words` ndarray view.
    pub fn view(&self) -> ArrayView2<'_, u64> {
        ArrayView2::from_shape((self.rows, self.words), self.data.as_ref())
            .expect("length is rows × words by construction")
    }

    /// A copy as an `N × words` array.
    pub fn to_array2(&self) -> Array2<u64> {
        self.view().to_owned()
    }

    /// A borrowed matrix over the same data.
    pub fn borrowed(&self) -> SignatureMatrix<&[u64]> {
        SignatureMatrix {
            bits: self.bits,
            words: self.words,
            rows: self.rows,
            data: self.data.as_ref(),
        }
    }

    /// Rows `range` as a borrowed matrix (no copy).
    ///
    /// # Panics
    /// If the range is out of bounds.
    pub fn slice_rows(&self, range: std::ops::Range<usize>) -> SignatureMatrix<&[u64]> {
        SignatureMatrix {
            bits: self.bits,
            words: self.words,
            rows: range.len(),
            data: &self.data.as_ref()[range.start * self.words..range.end * self.words],
        }
    }
}

impl SignatureMatrix<Vec<u64>> {
    /// `rows` all-zero signatures of `bits` bits.
    pub fn zeros(rows: usize, bits: usize) -> Result<Self> {
        check_bits(bits)?;
        Ok(SignatureMatrix {
            bits,
            words: words_for(bits),
            rows,
            data: vec![0; rows * words_for(bits)],
        })
    }

    /// An empty matrix of `bits`-bit signatures, to [`push`](Self::push) into.
    pub fn new(bits: usize) -> Result<Self> {
        Self::zeros(0, bits)
    }

    /// From an `N × words` array; `bits` must satisfy `words_for(bits) == words` and padding
    /// bits must be zero.
    pub fn from_array2(array: Array2<u64>, bits: usize) -> Result<Self> {
        check_bits(bits)?;
        if array.ncols() != words_for(bits) {
            return Err(Error::LengthMismatch {
                what: "array columns vs words for the signature width",
                left: array.ncols(),
                right: words_for(bits),
            });
        }
        let data = if array.is_standard_layout() {
            let (v, offset) = array.into_raw_vec_and_offset();
            debug_assert!(offset.unwrap_or(0) == 0);
            v
        } else {
            array.iter().copied().collect()
        };
        Self::from_parts(bits, data)
    }

    /// Into an `N × words` array (no copy).
    pub fn into_array2(self) -> Array2<u64> {
        Array2::from_shape_vec((self.rows, self.words), self.data)
            .expect("length is rows × words by construction")
    }

    /// From signatures of equal width.
    pub fn from_signatures<'a>(
        bits: usize,
        sigs: impl IntoIterator<Item = &'a Signature>,
    ) -> Result<Self> {
        let mut m = Self::new(bits)?;
        for s in sigs {
            m.push(s)?;
        }
        Ok(m)
    }

    /// Appends one signature.
    pub fn push(&mut self, sig: &Signature) -> Result<()> {
        self.push_words(sig.bits, sig.words())
    }

    /// Appends one signature given as words.
    pub fn push_words(&mut self, bits: usize, words: &[u64]) -> Result<()> {
        if bits != self.bits {
            return Err(Error::BitsMismatch {
                expected: self.bits,
                got: bits,
            });
        }
        check_rows(bits, words)?;
        if words.len() != self.words {
            return Err(Error::LengthMismatch {
                what: "signature words",
                left: words.len(),
                right: self.words,
            });
        }
        self.data.extend_from_slice(words);
        self.rows += 1;
        Ok(())
    }

    /// All words, mutable, for writers that keep padding bits zero.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.data
    }

    /// Consumes the matrix, returning its words.
    pub fn into_vec(self) -> Vec<u64> {
        self.data
    }
}
