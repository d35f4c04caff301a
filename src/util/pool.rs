//! A pool of reusable scratch values (per-query buffers of the indexes), so that concurrent
//! queries each get their own without allocating one per query.

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

/// Scratch values waiting to be reused. Cloning gives an empty pool (scratch is never
/// shared between index copies).
#[derive(Default)]
pub(crate) struct Pool<T> {
    items: Mutex<Vec<T>>,
}

impl<T: Default> Pool<T> {
    /// A value from the pool (a new one if the pool is empty), returned to it on drop.
    pub(crate) fn get(&self) -> PoolGuard<'_, T> {
        let item = self
            .items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        PoolGuard {
            pool: self,
            item: Some(item),
        }
    }
}

impl<T> Clone for Pool<T> {
    fn clone(&self) -> Self {
        Pool {
            items: Mutex::new(Vec::new()),
        }
    }
}

impl<T> std::fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.items.lock().map_or(0, |v| v.len());
        write!(f, "Pool({n} idle)")
    }
}

/// A value taken from a [`Pool`], given back when dropped.
pub(crate) struct PoolGuard<'a, T> {
    pool: &'a Pool<T>,
    item: Option<T>,
}

impl<T> Deref for PoolGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item.as_ref().expect("present until drop")
    }
}

impl<T> DerefMut for PoolGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.item.as_mut().expect("present until drop")
    }
}

impl<T> Drop for PoolGuard<'_, T> {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            self.pool
                .items
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_reused_and_clones_start_empty() {
        let pool: Pool<Vec<u8>> = Pool::default();
        {
            let mut a = pool.get();
            a.extend_from_slice(b"abc");
            let b = pool.get();
            assert!(b.is_empty(), "a second concurrent value is a new one");
        }
        let a = pool.get();
        assert!(a.capacity() >= 3, "a returned value is reused");
        drop(a);
        assert_eq!(format!("{:?}", pool.clone()), "Pool(0 idle)");
        assert_eq!(format!("{pool:?}"), "Pool(2 idle)");
    }
}
