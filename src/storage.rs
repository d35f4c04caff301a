//! Flat arrays that live either in memory or in shared bytes (a memory-mapped file, or a
//! buffer handed over by the caller).
//!
//! Every index keeps its data in a few flat arrays of plain numbers (codes, ids, offsets).
//! [`Buf<T>`] is such an array: an owned `Vec<T>`, or a slice of shared, read-only
//! [`Bytes`] (a memory map of an index file, or the bytes an index was read from), borrowed
//! without copying. Both deref to `&[T]`, so search code is the same for both; an index
//! loaded from shared bytes that is then modified copies the array it changes into an owned
//! `Vec` first ([`Buf::to_mut`]).
//!
//! ```
//! use simlsh::storage::{Buf, Bytes};
//!
//! let bytes = Bytes::copied(&[1u8, 0, 0, 0, 2, 0, 0, 0]);
//! let buf = Buf::<u32>::shared(bytes.clone(), 0, 2).expect("in range and aligned");
//! assert_eq!(&buf[..], &[u32::from_le(1), u32::from_le(2)]);
//! // Out of range or misaligned: refused when made, never a panic when read.
//! assert!(Buf::<u32>::shared(bytes.clone(), 4, 2).is_none());
//! assert!(Buf::<u32>::shared(bytes, 1, 1).is_none());
//! ```

use std::ops::Deref;
use std::sync::Arc;

use bytemuck::Pod;
use memmap2::Mmap;

/// Shared, immutable bytes: a read-only memory map, or any buffer (`Vec<u8>`, a buffer of
/// another library) behind an [`Arc`]. Cloning shares them.
///
/// The buffer's [`AsRef<[u8]>`] is called once, when the `Bytes` are made: the slice it gives
/// is the bytes from then on (an `&self` borrow of a value that the `Arc` keeps alive and
/// shared stays valid and unchanged while the value lives, so it is kept as a pointer and a
/// length). Reading the bytes, or an array borrowed from them, is then a pointer and a length,
/// with no call and no check (the arrays of an opened index are read in the indexes' inner
/// loops).
#[derive(Clone)]
pub struct Bytes {
    /// Keeps the buffer alive: a memory map, an aligned copy ([`Bytes::copied`]) or a
    /// caller's buffer ([`Bytes::new`], `From<Vec<u8>>`).
    _owner: Arc<dyn Send + Sync>,
    /// True for a memory map.
    mapped: bool,
    /// The start of the buffer's bytes, as its `AsRef` gave them when the `Bytes` were made.
    ptr: *const u8,
    /// Their length.
    len: usize,
}

// SAFETY: `ptr` points into the buffer that `_owner` keeps alive, which is `Send + Sync` (a
// memory map, an aligned copy, or a caller's buffer required to be both); the bytes are only
// ever read, through shared references.
unsafe impl Send for Bytes {}
// SAFETY: as for `Send`: shared, immutable bytes of a `Sync` owner.
unsafe impl Sync for Bytes {}

impl Bytes {
    /// Bytes shared with the caller (no copy); `data.as_ref()` is read once, here.
    pub fn new(data: Arc<dyn AsRef<[u8]> + Send + Sync>) -> Self {
        let (ptr, len) = {
            let s = (*data).as_ref();
            (s.as_ptr(), s.len())
        };
        Bytes {
            // Boxed once more: the caller's `dyn AsRef` is not a `dyn Send + Sync`.
            _owner: Arc::new(data),
            mapped: false,
            ptr,
            len,
        }
    }

    /// A copy of `data`, in a buffer aligned for every element type.
    pub fn copied(data: &[u8]) -> Self {
        let copy = Arc::new(Aligned::copy(data));
        let (ptr, len) = (copy.as_bytes().as_ptr(), copy.as_bytes().len());
        Bytes {
            _owner: copy,
            mapped: false,
            ptr,
            len,
        }
    }

    /// A memory map.
    pub(crate) fn mapped(map: Mmap) -> Self {
        let (ptr, len) = (map.as_ptr(), map.len());
        Bytes {
            _owner: Arc::new(map),
            mapped: true,
            ptr,
            len,
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` and `len` are the slice the owner gave when these `Bytes` were made
        // (a map's pages and an aligned copy's words do not move; a caller's buffer behind
        // the shared `Arc` cannot be freed or changed while `_owner` holds it, see the type's
        // doc), and `_owner` lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// True when the bytes are a memory map (whose pages belong to the page cache).
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// These bytes, or an aligned copy when their start is not aligned for `u64` (so that
    /// arrays at aligned offsets can be borrowed in place).
    pub(crate) fn aligned(self) -> Self {
        if (self.ptr as usize).is_multiple_of(std::mem::align_of::<u64>()) {
            self
        } else {
            Bytes::copied(self.as_slice())
        }
    }
}

impl From<Vec<u8>> for Bytes {
    /// The vector's bytes, shared without copying.
    fn from(v: Vec<u8>) -> Self {
        Bytes::new(Arc::new(v))
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_mapped() { "mapped" } else { "shared" };
        write!(f, "Bytes({kind}, {} bytes)", self.as_slice().len())
    }
}

/// Bytes in a buffer of `u64` words, aligned for every element type.
struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    fn copy(data: &[u8]) -> Self {
        let mut words = vec![0u64; data.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..data.len()].copy_from_slice(data);
        Aligned {
            words,
            len: data.len(),
        }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }
}

/// A flat array of `T`, owned or borrowed from shared [`Bytes`].
pub struct Buf<T: Pod>(Repr<T>);

enum Repr<T: Pod> {
    Owned(Vec<T>),
    /// `len` elements at `ptr`, inside `bytes` and aligned for `T` (checked when made).
    Shared {
        bytes: Bytes,
        ptr: *const T,
        len: usize,
    },
}

// SAFETY: a shared array is a read-only view of `bytes` (which is `Send + Sync`) as plain
// numbers (`T: Pod` holds no pointers or references); an owned one is a `Vec<T>`.
unsafe impl<T: Pod + Send> Send for Buf<T> {}
// SAFETY: as for `Send`: shared arrays are never written, owned ones only through `&mut`.
unsafe impl<T: Pod + Sync> Sync for Buf<T> {}

impl<T: Pod> Buf<T> {
    /// An owned array.
    pub fn owned(v: Vec<T>) -> Self {
        Buf(Repr::Owned(v))
    }

    /// `len` elements at byte `offset` of `bytes`, in place; `None` if the range is out of
    /// the bytes or misaligned for `T`.
    pub fn shared(bytes: Bytes, offset: usize, len: usize) -> Option<Self> {
        let size = len.checked_mul(std::mem::size_of::<T>())?;
        let end = offset.checked_add(size)?;
        let slice = bytes.as_slice().get(offset..end)?;
        let ptr = bytemuck::try_cast_slice::<u8, T>(slice).ok()?.as_ptr();
        Some(Buf(Repr::Shared { bytes, ptr, len }))
    }

    /// The elements, mutable; an array of shared bytes is copied into an owned vector first.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Repr::Shared { .. } = self.0 {
            self.0 = Repr::Owned(self.to_vec());
        }
        match &mut self.0 {
            Repr::Owned(v) => v,
            Repr::Shared { .. } => unreachable!("converted to owned above"),
        }
    }

    /// True when the data lives in a memory map.
    pub fn is_mapped(&self) -> bool {
        matches!(&self.0, Repr::Shared { bytes, .. } if bytes.is_mapped())
    }

    /// True when the data is borrowed from shared bytes (a memory map or a caller's buffer).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared { .. })
    }

    /// Bytes of heap memory this array holds (0 for an array of shared bytes, whose memory
    /// belongs to the map's page cache or to whoever shares the buffer).
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Owned(v) => v.capacity() * std::mem::size_of::<T>(),
            Repr::Shared { .. } => 0,
        }
    }

    /// Bytes of data, owned or shared.
    pub fn data_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }
}

impl<T: Pod> Deref for Buf<T> {
    type Target = [T];

    // A pointer and a length in both cases: the indexes read their arrays through this in
    // their inner loops.
    #[inline]
    fn deref(&self) -> &[T] {
        match &self.0 {
            Repr::Owned(v) => v,
            // SAFETY: `Buf::shared` checked that the `len` elements at `ptr` lie inside
            // `bytes` and are aligned for `T`; `bytes` is held here, so they stay alive and
            // unchanged (see `Bytes`), and any bit pattern is a valid `T: Pod`.
            Repr::Shared { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl<T: Pod> AsRef<[T]> for Buf<T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T: Pod> Default for Buf<T> {
    fn default() -> Self {
        Buf::owned(Vec::new())
    }
}

impl<T: Pod> From<Vec<T>> for Buf<T> {
    fn from(v: Vec<T>) -> Self {
        Buf::owned(v)
    }
}

impl<T: Pod> Clone for Buf<T> {
    fn clone(&self) -> Self {
        Buf(match &self.0 {
            Repr::Owned(v) => Repr::Owned(v.clone()),
            Repr::Shared { bytes, ptr, len } => Repr::Shared {
                bytes: bytes.clone(),
                ptr: *ptr,
                len: *len,
            },
        })
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Buf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_mapped() {
            "mapped"
        } else if self.is_shared() {
            "shared"
        } else {
            "owned"
        };
        write!(
            f,
            "Buf<{}>({kind}, {} elements)",
            std::any::type_name::<T>(),
            self.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_arrays_are_checked_when_made() {
        let b = Bytes::copied(&(0u8..64).collect::<Vec<_>>());
        let w = Buf::<u64>::shared(b.clone(), 8, 7).unwrap();
        assert_eq!(w.len(), 7);
        assert_eq!(w[0], u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]));
        assert!(w.is_shared() && !w.is_mapped() && w.heap_bytes() == 0);
        // Misaligned offset, range past the end, overflowing length.
        assert!(Buf::<u64>::shared(b.clone(), 4, 1).is_none());
        assert!(Buf::<u64>::shared(b.clone(), 8, 8).is_none());
        assert!(Buf::<u64>::shared(b.clone(), 0, usize::MAX).is_none());
        // A misaligned start of the bytes themselves: a u32 at byte 1 of an aligned buffer.
        assert!(Buf::<u32>::shared(b, 1, 1).is_none());
    }

    /// Bytes whose start is one byte past an aligned word.
    struct Shifted(Vec<u64>);

    impl AsRef<[u8]> for Shifted {
        fn as_ref(&self) -> &[u8] {
            &bytemuck::cast_slice(&self.0)[1..]
        }
    }

    #[test]
    fn misaligned_bytes_get_an_aligned_copy() {
        let words: Vec<u64> = (0..4).map(|i| 0x0102_0304_0506_0708 * (i + 1)).collect();
        let shifted = Bytes::new(Arc::new(Shifted(words.clone())));
        assert!(Buf::<u64>::shared(shifted.clone(), 0, 1).is_none());
        let b = shifted.clone().aligned();
        assert_eq!(&b[..], &shifted[..]);
        let s = Buf::<u64>::shared(b, 0, 3).unwrap();
        let raw: &[u8] = bytemuck::cast_slice(&words);
        assert_eq!(s[0], u64::from_ne_bytes(raw[1..9].try_into().unwrap()));
        let mut m = s.clone();
        m.to_mut().push(7);
        assert_eq!(m.len(), 4);
        assert!(!m.is_shared() && s.is_shared());
    }

    /// A buffer whose `AsRef` gives one of two arrays, in turn.
    struct Flipping {
        calls: std::sync::atomic::AtomicUsize,
        halves: [Vec<u64>; 2],
    }

    impl AsRef<[u8]> for Flipping {
        fn as_ref(&self) -> &[u8] {
            let i = self
                .calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            bytemuck::cast_slice(&self.halves[i % 2])
        }
    }

    #[test]
    fn a_callers_buffer_is_read_once_when_made() {
        let flipping = Arc::new(Flipping {
            calls: Default::default(),
            halves: [vec![1, 2, 3], vec![7; 5]],
        });
        let b = Bytes::new(flipping.clone());
        assert_eq!(flipping.calls.load(std::sync::atomic::Ordering::Relaxed), 1);
        // The bytes and every array borrowed from them are the first answer, for good.
        for _ in 0..3 {
            assert_eq!(b.len(), 24);
            let a = Buf::<u64>::shared(b.clone(), 0, 3).unwrap();
            assert_eq!(&a[..], &[1, 2, 3]);
            assert!(Buf::<u64>::shared(b.clone(), 0, 4).is_none());
        }
        assert_eq!(flipping.calls.load(std::sync::atomic::Ordering::Relaxed), 1);
        // The buffer lives as long as an array borrowed from it does.
        let a = Buf::<u64>::shared(b, 8, 2).unwrap();
        drop(flipping);
        assert_eq!(&a[..], &[2, 3]);
    }
}
