//! [`IndexMeta`]: what every index keeps besides its search structure: the signer of its
//! codes and, for an index loaded from a file or bytes, where its contents came from (to be
//! verified before they are written anywhere).

use std::fmt;
use std::sync::Arc;

use super::SignerRecord;
use crate::error::Result;

/// The source a loaded index was opened from (a file or bytes in the
/// [format](crate::persist::format)), kept so that the contents it carries over are verified
/// before they are written anywhere: an index opened in `O(1)` from a corrupt file must not be
/// saved with a fresh, valid checksum. Implemented by the persistence module.
pub(crate) trait Origin: fmt::Debug + Send + Sync {
    /// Verifies the source whole once (checksum, then every invariant of what it holds).
    fn verify(&self) -> Result<()>;

    /// True once the source has been verified.
    fn is_verified(&self) -> bool;
}

/// The record every index keeps besides its search structure: the signer that made its codes
/// ([`SignerRecord`], when known) and the source it was loaded from, if any (see
/// [`HammingIndex::verify_source`](super::HammingIndex::verify_source)). Every index holds
/// one, and [`HammingIndex`](super::HammingIndex) provides `signer`, `set_signer`,
/// `verify_source` and `is_verified` from it.
#[derive(Clone, Default)]
pub struct IndexMeta {
    signer: Option<SignerRecord>,
    origin: Option<Arc<dyn Origin>>,
}

impl IndexMeta {
    /// The signer of the stored codes, when recorded.
    pub fn signer(&self) -> Option<&SignerRecord> {
        self.signer.as_ref()
    }

    /// Records the signer of the stored codes of a `bits`-bit index (`None` forgets it).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) when the record's width is
    /// not `bits`.
    pub fn set_signer(&mut self, bits: usize, signer: Option<SignerRecord>) -> Result<()> {
        super::signer::set(&mut self.signer, bits, signer)
    }

    /// Verifies the source the index was loaded from, once (`Ok` at once when it has none).
    ///
    /// # Errors
    /// As [`HammingIndex::verify_source`](super::HammingIndex::verify_source).
    pub fn verify_source(&self) -> Result<()> {
        self.origin.as_ref().map_or(Ok(()), |o| o.verify())
    }

    /// False while the source the index was loaded from is not verified.
    pub fn is_verified(&self) -> bool {
        self.origin.as_ref().is_none_or(|o| o.is_verified())
    }

    /// Records the source the index was loaded from.
    pub(crate) fn set_origin(&mut self, origin: Arc<dyn Origin>) {
        self.origin = Some(origin);
    }
}

/// The methods of [`HammingIndex`](super::HammingIndex) that every index implements the same
/// way from its `meta` field (`meta`, `meta_mut`, `as_any`), written once.
macro_rules! meta_methods {
    () => {
        fn meta(&self) -> &$crate::index::IndexMeta {
            &self.meta
        }

        fn meta_mut(&mut self) -> &mut $crate::index::IndexMeta {
            &mut self.meta
        }

        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    };
}
pub(crate) use meta_methods;

impl fmt::Debug for IndexMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexMeta")
            .field("signer", &self.signer)
            .field("origin", &self.origin)
            .finish()
    }
}
