//! Rows of a store: external ids, codes and what verification needs (normalised vectors or
//! weighted features), in flat arrays that live in memory or in a mapped segment file.

use crate::error::{Error, Result};
use crate::storage::Buf;
use crate::verify::dot;

/// What a store keeps of each item besides its code, for exact cosines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// Codes only: queries by radius or `k`.
    Codes,
    /// Dense vectors of a fixed dimension, kept normalised to unit length in `f32` (as
    /// [`DenseVectors`](crate::verify::DenseVectors) keeps them): exact cosines.
    Vectors {
        /// The dimension.
        dim: usize,
    },
    /// Documents, kept as their weighted features (a `u64` key and an `f32` weight per
    /// distinct feature, normalised, as [`SparseVectors`](crate::verify::SparseVectors)
    /// keeps them): exact cosines of the vectors the signatures sketch.
    Text,
}

impl Content {
    /// The name recorded in files (`codes`, `vectors`, `text`).
    pub fn name(self) -> &'static str {
        match self {
            Content::Codes => "codes",
            Content::Vectors { .. } => "vectors",
            Content::Text => "text",
        }
    }

    /// The content of a [`name`](Self::name), `vectors` of dimension `dim`.
    ///
    /// ```
    /// use simlsh::store::Content;
    ///
    /// assert_eq!(Content::from_name("vectors", Some(3))?, Content::Vectors { dim: 3 });
    /// assert!(Content::from_name("vectors", None).is_err());
    /// assert!(Content::from_name("images", None).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for another name, or `vectors` without `dim`.
    pub fn from_name(name: &str, dim: Option<usize>) -> Result<Content> {
        match (name, dim) {
            ("codes", _) => Ok(Content::Codes),
            ("vectors", Some(dim)) => Ok(Content::Vectors { dim }),
            ("vectors", None) => Err(Error::param("dim", "a vector store needs `dim`")),
            ("text", _) => Ok(Content::Text),
            (other, _) => Err(Error::param(
                "content",
                format!("`{other}` (codes, vectors, text)"),
            )),
        }
    }

    /// True when the store keeps what exact cosines need.
    pub fn has_cosine(self) -> bool {
        !matches!(self, Content::Codes)
    }
}

/// One item's verification data, owned: nothing, a normalised dense vector, or normalised
/// sparse features (keys strictly increasing).
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    /// Codes only.
    None,
    /// A unit-length vector (all zeros for a zero vector).
    Dense(Vec<f32>),
    /// Weighted features: keys strictly increasing, weights normalised.
    Sparse(Vec<u64>, Vec<f32>),
}

impl Payload {
    /// A borrowed view.
    pub(crate) fn as_ref(&self) -> PayRef<'_> {
        match self {
            Payload::None => PayRef::None,
            Payload::Dense(v) => PayRef::Dense(v),
            Payload::Sparse(k, w) => PayRef::Sparse(k, w),
        }
    }
}

/// A borrowed [`Payload`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum PayRef<'a> {
    None,
    Dense(&'a [f32]),
    Sparse(&'a [u64], &'a [f32]),
}

impl PayRef<'_> {
    /// The owned copy.
    pub(crate) fn to_owned(self) -> Payload {
        match self {
            PayRef::None => Payload::None,
            PayRef::Dense(v) => Payload::Dense(v.to_vec()),
            PayRef::Sparse(k, w) => Payload::Sparse(k.to_vec(), w.to_vec()),
        }
    }
}

/// The exact cosine of two payloads of the same content (both normalised), accumulated in
/// `f64` by the kernels of [`crate::verify`]; `None` for codes only.
pub(crate) fn cosine(a: PayRef<'_>, b: PayRef<'_>) -> Option<f64> {
    match (a, b) {
        (PayRef::Dense(x), PayRef::Dense(y)) => Some(dot(x, y)),
        (PayRef::Sparse(ka, wa), PayRef::Sparse(kb, wb)) => {
            Some(crate::verify::dot_sparse(ka, wa, kb, wb))
        }
        _ => None,
    }
}

/// The payload column of a set of rows.
#[derive(Clone, Debug)]
pub(crate) enum Pay {
    None,
    Dense {
        dim: usize,
        data: Buf<f32>,
    },
    /// `offsets` has one entry per row plus one.
    Sparse {
        offsets: Buf<u64>,
        keys: Buf<u64>,
        weights: Buf<f32>,
    },
}

impl Pay {
    /// An empty column for `content`.
    pub(crate) fn empty(content: Content) -> Pay {
        match content {
            Content::Codes => Pay::None,
            Content::Vectors { dim } => Pay::Dense {
                dim,
                data: Buf::owned(Vec::new()),
            },
            Content::Text => Pay::Sparse {
                offsets: Buf::owned(vec![0]),
                keys: Buf::owned(Vec::new()),
                weights: Buf::owned(Vec::new()),
            },
        }
    }
}

/// Rows: external ids, codes (`words` per row), payloads.
#[derive(Clone, Debug)]
pub(crate) struct Rows {
    pub(crate) words: usize,
    pub(crate) ids: Buf<u64>,
    pub(crate) codes: Buf<u64>,
    pub(crate) pay: Pay,
}

impl Rows {
    /// No rows.
    pub(crate) fn empty(words: usize, content: Content) -> Rows {
        Rows {
            words,
            ids: Buf::owned(Vec::new()),
            codes: Buf::owned(Vec::new()),
            pay: Pay::empty(content),
        }
    }

    /// An empty set with room for `n` rows.
    pub(crate) fn with_capacity(words: usize, content: Content, n: usize) -> Rows {
        let mut r = Rows::empty(words, content);
        r.ids.to_mut().reserve(n);
        r.codes.to_mut().reserve(n * words);
        if let Pay::Dense { dim, data } = &mut r.pay {
            data.to_mut().reserve(n * *dim);
        }
        r
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    pub(crate) fn code(&self, i: usize) -> &[u64] {
        &self.codes[i * self.words..(i + 1) * self.words]
    }

    pub(crate) fn payload(&self, i: usize) -> PayRef<'_> {
        match &self.pay {
            Pay::None => PayRef::None,
            Pay::Dense { dim, data } => PayRef::Dense(&data[i * dim..(i + 1) * dim]),
            Pay::Sparse {
                offsets,
                keys,
                weights,
            } => {
                let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
                PayRef::Sparse(&keys[a..b], &weights[a..b])
            }
        }
    }

    /// Appends a row (the payload matches the column: checked by the caller).
    pub(crate) fn push(&mut self, id: u64, code: &[u64], payload: PayRef<'_>) {
        self.ids.to_mut().push(id);
        self.codes.to_mut().extend_from_slice(code);
        match (&mut self.pay, payload) {
            (Pay::Dense { data, .. }, PayRef::Dense(v)) => data.to_mut().extend_from_slice(v),
            (
                Pay::Sparse {
                    offsets,
                    keys,
                    weights,
                },
                PayRef::Sparse(k, w),
            ) => {
                keys.to_mut().extend_from_slice(k);
                weights.to_mut().extend_from_slice(w);
                offsets.to_mut().push(keys.len() as u64);
            }
            _ => {}
        }
    }

    /// Bytes of heap memory and of mapped files held.
    pub(crate) fn bytes(&self) -> (usize, usize) {
        let mut heap = self.ids.heap_bytes() + self.codes.heap_bytes();
        let mut mapped = mapped_bytes(&self.ids) + mapped_bytes(&self.codes);
        let mut add = |h: usize, m: usize| {
            heap += h;
            mapped += m;
        };
        match &self.pay {
            Pay::None => {}
            Pay::Dense { data, .. } => add(data.heap_bytes(), mapped_bytes(data)),
            Pay::Sparse {
                offsets,
                keys,
                weights,
            } => {
                add(offsets.heap_bytes(), mapped_bytes(offsets));
                add(keys.heap_bytes(), mapped_bytes(keys));
                add(weights.heap_bytes(), mapped_bytes(weights));
            }
        }
        (heap, mapped)
    }
}

/// Bytes of a mapped array (0 for an owned one).
fn mapped_bytes<T: bytemuck::Pod>(b: &Buf<T>) -> usize {
    if b.is_mapped() { b.data_bytes() } else { 0 }
}
