//! The `k` smallest values seen so far: a bounded max-heap, the one top-k of the crate (the
//! scan kernels' [`Neighbor`](crate::hamming::Neighbor)s, the indexes' hits and packed
//! `(distance, id)` keys).

use std::collections::BinaryHeap;

/// The `k` smallest values offered so far (by `Ord`), in a max-heap whose top is the worst
/// kept value. Offering costs one comparison with the worst value unless the value enters.
#[derive(Clone, Debug)]
pub(crate) struct TopK<T> {
    k: usize,
    heap: BinaryHeap<T>,
}

impl<T: Ord> Default for TopK<T> {
    /// A top-0 (keeps nothing until [`reset`](Self::reset)).
    fn default() -> Self {
        TopK {
            k: 0,
            heap: BinaryHeap::new(),
        }
    }
}

impl<T: Ord + Copy> TopK<T> {
    /// An empty top-`k` (`k = 0` keeps nothing).
    pub(crate) fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// Empties the top-k and sets its size to `k`, keeping the allocation.
    pub(crate) fn reset(&mut self, k: usize) {
        self.k = k;
        self.heap.clear();
    }

    /// True when `k` values are kept.
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        self.heap.len() >= self.k
    }

    /// The worst value kept, once the top-k is full (`None` before: any value enters).
    #[inline(always)]
    pub(crate) fn worst(&self) -> Option<&T> {
        if self.is_full() {
            self.heap.peek()
        } else {
            None
        }
    }

    /// Offers `x`; returns whether it entered (replacing the worst value when full).
    #[inline]
    pub(crate) fn offer(&mut self, x: T) -> bool {
        if self.heap.len() < self.k {
            self.heap.push(x);
            true
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if x < *worst {
                *worst = x;
                true
            } else {
                false
            }
        } else {
            false
        }
    }

    /// Removes and yields the kept values in no particular order (the top-k is left empty,
    /// same `k`).
    pub(crate) fn drain(&mut self) -> std::collections::binary_heap::Drain<'_, T> {
        self.heap.drain()
    }

    /// The kept values, sorted increasing.
    pub(crate) fn into_sorted_vec(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }

    /// Moves the kept values, sorted increasing, to the end of `out`; the top-k is left
    /// empty (same `k`).
    pub(crate) fn drain_sorted_into(&mut self, out: &mut Vec<T>) {
        let start = out.len();
        out.extend(self.heap.drain());
        out[start..].sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn keeps_the_k_smallest_of_any_sequence() {
        let mut rng = Rng::new(3);
        for k in [0usize, 1, 2, 7, 50] {
            let xs: Vec<u32> = (0..200).map(|_| rng.below(40) as u32).collect();
            let mut top = TopK::new(k);
            for &x in &xs {
                let would = !top.is_full() || top.worst().is_some_and(|w| x < *w);
                assert_eq!(top.offer(x), would);
            }
            let mut want = xs.clone();
            want.sort_unstable();
            want.truncate(k);
            assert_eq!(top.worst().copied(), want.last().copied().filter(|_| k > 0));
            let mut out = vec![99];
            top.clone().drain_sorted_into(&mut out);
            assert_eq!(out[1..], want[..]);
            assert_eq!(top.into_sorted_vec(), want);
        }
        let mut top = TopK::new(2);
        top.offer(5);
        top.reset(1);
        assert!(!top.is_full());
        assert!(top.offer(9) && !top.offer(10) && top.offer(1));
        assert_eq!(top.into_sorted_vec(), vec![1]);
    }
}
