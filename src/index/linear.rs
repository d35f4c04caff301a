//! The exact linear scan: every query compared with every stored code by hardware popcount.

use rayon::prelude::*;

use super::{HammingIndex, Hit, Id, check_code, check_queries};
use crate::error::{Error, Result};
use crate::hamming;
use crate::signature::{SignatureMatrix, words_for};
use crate::storage::Buf;

/// Exact search by scanning every stored code with the dispatched popcount kernels
/// ([`crate::hamming`]); a batch of queries shares one pass over the data. The oracle of the
/// conformance suite, and the fastest choice for wide codes or few queries.
///
/// Codes are kept in increasing id order, so the kernels' tie-break by position is the
/// tie-break by id. Memory: `8 · words_for(f) + 4` bytes per code.
#[derive(Clone, Debug)]
pub struct LinearScan {
    bits: usize,
    codes: Buf<u64>,
    ids: Buf<u32>,
    /// Whether the contents are known to be valid (built here, or checked).
    validated: bool,
    /// The signer of the codes and the source of a loaded index.
    pub(crate) meta: crate::index::IndexMeta,
}

impl LinearScan {
    /// An empty index of `bits`-bit codes.
    pub fn new(bits: usize) -> Result<Self> {
        super::check_bits(bits)?;
        Ok(LinearScan {
            bits,
            codes: Buf::default(),
            ids: Buf::default(),
            validated: true,
            meta: crate::index::IndexMeta::default(),
        })
    }

    /// An index of the rows of `sigs`, with ids `0..N`.
    pub fn build<S: AsRef<[u64]>>(sigs: &SignatureMatrix<S>) -> Result<Self> {
        let n = u32::try_from(sigs.len())
            .map_err(|_| Error::param("signatures", "more than 2^32 rows"))?;
        crate::memory::check(
            &format!("a linear scan of {n} {}-bit codes", sigs.bits()),
            (sigs.as_slice().len() as u64 * 8).saturating_add(u64::from(n) * 4),
        )?;
        Ok(LinearScan {
            bits: sigs.bits(),
            codes: sigs.as_slice().to_vec().into(),
            ids: (0..n).collect::<Vec<_>>().into(),
            validated: true,
            meta: crate::index::IndexMeta::default(),
        })
    }

    /// An index over given arrays: `codes` row-major in increasing id order, `ids` strictly
    /// increasing (as in an index file). Only the shapes are checked (`O(1)`); the order of
    /// the ids and the padding bits are checked by [`validate`](HammingIndex::validate), and
    /// before the first change.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a width out of `1..=MAX_BITS`, or codes that do not
    /// hold one code per id.
    pub fn from_parts(bits: usize, codes: Buf<u64>, ids: Buf<u32>) -> Result<Self> {
        super::check_bits(bits)?;
        if ids.len().checked_mul(words_for(bits)) != Some(codes.len()) {
            return Err(Error::param(
                "section codes",
                format!("{} words for {} ids of {bits} bits", codes.len(), ids.len()),
            ));
        }
        Ok(LinearScan {
            bits,
            codes,
            ids,
            validated: false,
            meta: crate::index::IndexMeta::default(),
        })
    }

    /// Checks the contents once before the first change of a loaded index.
    fn ensure_valid(&mut self) -> Result<()> {
        if !self.validated {
            self.validate()?;
            self.validated = true;
        }
        Ok(())
    }

    /// The stored codes, row-major, in increasing id order.
    pub fn codes(&self) -> &[u64] {
        &self.codes
    }

    /// The stored ids, increasing.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    fn words(&self) -> usize {
        words_for(self.bits)
    }

    fn hits(&self, found: impl IntoIterator<Item = (usize, u32)>, out: &mut Vec<Hit>) {
        out.clear();
        out.extend(found.into_iter().map(|(i, d)| Hit {
            distance: d,
            id: self.ids[i],
        }));
        out.sort_unstable();
    }
}

impl HammingIndex for LinearScan {
    crate::index::meta::meta_methods!();

    fn spec(&self) -> super::IndexSpec {
        super::IndexSpec::Linear
    }

    fn bits(&self) -> usize {
        self.bits
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn bytes(&self) -> usize {
        self.codes.data_bytes() + self.ids.data_bytes()
    }

    fn validate(&self) -> Result<()> {
        super::check_codes(self.bits, &self.codes)?;
        super::check_increasing("section ids", &self.ids)
    }

    fn insert(&mut self, id: Id, code: &[u64]) -> Result<()> {
        check_code(self.bits, code)?;
        self.ensure_valid()?;
        let pos = match self.ids.binary_search(&id) {
            Ok(_) => return Err(Error::param("id", format!("id {id} is already stored"))),
            Err(p) => p,
        };
        let w = self.words();
        self.ids.to_mut().insert(pos, id);
        let codes = self.codes.to_mut();
        codes.splice(pos * w..pos * w, code.iter().copied());
        Ok(())
    }

    fn remove(&mut self, id: Id) -> Result<bool> {
        self.ensure_valid()?;
        let Ok(pos) = self.ids.binary_search(&id) else {
            return Ok(false);
        };
        let w = self.words();
        self.ids.to_mut().remove(pos);
        self.codes.to_mut().drain(pos * w..(pos + 1) * w);
        Ok(true)
    }

    fn insert_batch(&mut self, ids: &[Id], codes: &[u64]) -> Result<()> {
        super::check_batch(self.bits, ids, codes)?;
        self.ensure_valid()?;
        let w = self.words();
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_unstable_by_key(|&i| ids[i]);
        if let Some(&i) = order
            .iter()
            .find(|&&i| self.ids.binary_search(&ids[i]).is_ok())
        {
            return Err(super::duplicate(ids[i]));
        }
        let (new_ids, new_codes) =
            super::rows::merge_by_id(w, (&self.ids, &self.codes), (ids, codes), &order);
        self.ids = new_ids.into();
        self.codes = new_codes.into();
        Ok(())
    }

    fn remove_batch(&mut self, ids: &[Id]) -> Result<usize> {
        self.ensure_valid()?;
        let rm = crate::index::rows::sorted_unique(ids.to_vec());
        let w = self.words();
        let (ids, codes) = (self.ids.to_mut(), self.codes.to_mut());
        let removed = super::rows::retain_rows(ids, codes, w, 0, super::rows::not_in_sorted(&rm));
        Ok(removed)
    }

    fn radius_into(&self, query: &[u64], r: u32, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        let mut found = Vec::new();
        hamming::scan_radius(query, &self.codes, self.words(), r, |_, i, d| {
            found.push((i, d))
        })?;
        self.hits(found, out);
        Ok(())
    }

    fn knn_into(&self, query: &[u64], k: usize, out: &mut Vec<Hit>) -> Result<()> {
        check_code(self.bits, query)?;
        let res = hamming::scan_knn(query, &self.codes, self.words(), k)?;
        self.hits(res[0].iter().map(|n| (n.row, n.distance)), out);
        Ok(())
    }

    fn radius_batch(&self, queries: &[u64], r: u32) -> Result<Vec<Vec<Hit>>> {
        let w = check_queries(self.bits, queries)?;
        let chunks: Vec<Vec<Vec<Hit>>> = queries
            .par_chunks(w * hamming::SCAN_QUERY_BATCH)
            .map(|qs| {
                let mut found: Vec<Vec<(usize, u32)>> = vec![Vec::new(); qs.len() / w];
                hamming::scan_radius(qs, &self.codes, w, r, |q, i, d| found[q].push((i, d)))?;
                Ok(found
                    .into_iter()
                    .map(|f| {
                        let mut out = Vec::new();
                        self.hits(f, &mut out);
                        out
                    })
                    .collect())
            })
            .collect::<Result<_>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    fn knn_batch(&self, queries: &[u64], k: usize) -> Result<Vec<Vec<Hit>>> {
        let w = check_queries(self.bits, queries)?;
        hamming::scan_knn_batched(queries, &self.codes, w, k, |ns| {
            ns.iter()
                .map(|n| Hit {
                    distance: n.distance,
                    id: self.ids[n.row],
                })
                .collect()
        })
    }
}
