//! Flat arrays that live either in memory or in a memory-mapped file.
//!
//! Every index keeps its data in a few flat arrays of plain numbers (codes, ids, offsets).
//! [`Buf<T>`] is such an array: an owned `Vec<T>`, or a slice of a read-only memory map of an
//! index file, borrowed without copying. Both deref to `&[T]`, so search code is the same for
//! both; an index loaded from a map that is then modified copies the array it changes into an
//! owned `Vec` first ([`Buf::to_mut`]).

use std::ops::Deref;
use std::sync::Arc;

use bytemuck::Pod;
use memmap2::Mmap;

/// A flat array of `T`, owned or borrowed from a shared memory map.
pub enum Buf<T: Pod> {
    /// An owned vector.
    Owned(Vec<T>),
    /// `len` elements at byte `offset` of a memory map; the offset is aligned for `T`
    /// (checked when the file is opened).
    Mapped {
        /// The map, shared by all the arrays of one file.
        map: Arc<Mmap>,
        /// Byte offset of the first element.
        offset: usize,
        /// Number of elements.
        len: usize,
    },
}

impl<T: Pod> Buf<T> {
    /// A mapped array; `None` if the range is out of the map or misaligned for `T`.
    pub fn mapped(map: Arc<Mmap>, offset: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let end = offset.checked_add(bytes)?;
        let slice = map.get(offset..end)?;
        bytemuck::try_cast_slice::<u8, T>(slice).ok()?;
        Some(Buf::Mapped { map, offset, len })
    }

    /// The elements, mutable; a mapped array is copied into an owned vector first.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Buf::Mapped { .. } = self {
            *self = Buf::Owned(self.to_vec());
        }
        match self {
            Buf::Owned(v) => v,
            Buf::Mapped { .. } => unreachable!("converted to owned above"),
        }
    }

    /// True when the data lives in a memory map.
    pub fn is_mapped(&self) -> bool {
        matches!(self, Buf::Mapped { .. })
    }

    /// Bytes of heap memory this array holds (0 for a mapped array, whose pages belong to the
    /// page cache).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Buf::Owned(v) => v.capacity() * std::mem::size_of::<T>(),
            Buf::Mapped { .. } => 0,
        }
    }

    /// Bytes of data, owned or mapped.
    pub fn data_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }
}

impl<T: Pod> Deref for Buf<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Buf::Owned(v) => v,
            Buf::Mapped { map, offset, len } => {
                let bytes = &map[*offset..*offset + *len * std::mem::size_of::<T>()];
                bytemuck::cast_slice(bytes)
            }
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
        Buf::Owned(Vec::new())
    }
}

impl<T: Pod> From<Vec<T>> for Buf<T> {
    fn from(v: Vec<T>) -> Self {
        Buf::Owned(v)
    }
}

impl<T: Pod> Clone for Buf<T> {
    fn clone(&self) -> Self {
        match self {
            Buf::Owned(v) => Buf::Owned(v.clone()),
            Buf::Mapped { map, offset, len } => Buf::Mapped {
                map: Arc::clone(map),
                offset: *offset,
                len: *len,
            },
        }
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Buf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_mapped() { "mapped" } else { "owned" };
        write!(
            f,
            "Buf<{}>({kind}, {} elements)",
            std::any::type_name::<T>(),
            self.len()
        )
    }
}
