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

    /// Moves the kept values, sorted increasing, to the end of `out`; the top-k is left
    /// empty (same `k`).
    pub(crate) fn drain_sorted_into(&mut self, out: &mut Vec<T>) {
        let start = out.len();
        out.extend(self.heap.drain());
        out[start..].sort_unstable();
    }
}

/// The `k` smallest values offered so far, kept **lazily**: offered values are appended to a
/// buffer, and when it holds `k + slack` values a selection (`select_nth_unstable`, `O(len)`)
/// keeps the `k` smallest. The companion of [`TopK`] for large `k` (tens to thousands), where
/// a heap's `O(log k)` sift with its unpredictable branches dominates a scan: appending is a
/// store, and the selection costs `O(1)` per offered value amortised.
///
/// [`worst`](Self::worst) is the worst value kept at the last selection, an upper bound of
/// the final `k`-th smallest (it only decreases): a value not below it can never enter, so
/// scans filter by it before offering, as with [`TopK`].
#[derive(Clone, Debug)]
pub(crate) struct LazyTopK<T> {
    k: usize,
    /// Selection happens when the buffer reaches `k + slack` values.
    slack: usize,
    buf: Vec<T>,
    worst: Option<T>,
}

impl<T: Ord + Copy> LazyTopK<T> {
    /// An empty top-`k` (`k = 0` keeps nothing) that selects every `max(k, 64)` values
    /// beyond `k`.
    pub(crate) fn new(k: usize) -> Self {
        LazyTopK {
            k,
            slack: k.max(64),
            buf: Vec::new(),
            worst: None,
        }
    }

    /// The worst value kept at the last selection (`None` before the first: any value
    /// may enter). Every value of the final top-k is `<=` it.
    #[inline(always)]
    pub(crate) fn worst(&self) -> Option<&T> {
        self.worst.as_ref()
    }

    /// Offers `x`, which the caller has checked to be below [`worst`](Self::worst) when there
    /// is one (checked in debug builds); `k = 0` drops it.
    #[inline]
    pub(crate) fn offer(&mut self, x: T) {
        debug_assert!(self.worst.is_none_or(|w| x < w));
        if self.k == 0 {
            return;
        }
        self.buf.push(x);
        if self.buf.len() >= self.k + self.slack {
            self.select();
        }
    }

    /// Keeps the `k` smallest values of the buffer and records the worst of them.
    #[inline(never)]
    fn select(&mut self) {
        if self.buf.len() > self.k {
            self.buf.select_nth_unstable(self.k - 1);
            self.buf.truncate(self.k);
            // After the selection, position k - 1 holds the k-th smallest: the worst kept.
            self.worst = Some(self.buf[self.k - 1]);
        }
    }

    /// The `k` smallest values offered (all of them if fewer), sorted increasing.
    pub(crate) fn into_sorted_vec(mut self) -> Vec<T> {
        self.select();
        self.buf.truncate(self.k);
        self.buf.sort_unstable();
        self.buf
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
            top.drain_sorted_into(&mut out);
            assert_eq!(out[1..], want[..]);
        }
        let mut top = TopK::new(2);
        top.offer(5);
        top.reset(1);
        assert!(!top.is_full());
        assert!(top.offer(9) && !top.offer(10) && top.offer(1));
        let mut out = Vec::new();
        top.drain_sorted_into(&mut out);
        assert_eq!(out, vec![1]);
    }

    #[test]
    fn lazy_topk_keeps_the_k_smallest_and_its_bound_only_falls() {
        let mut rng = Rng::new(5);
        for k in [0usize, 1, 2, 7, 50, 150, 400] {
            let xs: Vec<(u32, usize)> = (0..400).map(|i| (rng.below(60) as u32, i)).collect();
            let mut top = LazyTopK::new(k);
            let mut last = None;
            for &x in &xs {
                if top.worst().is_none_or(|w| x < *w) {
                    top.offer(x);
                }
                let w = top.worst().copied();
                assert!(last.is_none() || w <= last, "the bound rose");
                last = w;
            }
            let mut want = xs.clone();
            want.sort_unstable();
            want.truncate(k);
            if let Some(w) = last {
                assert!(want.last().is_some_and(|x| *x <= w));
            }
            assert_eq!(top.into_sorted_vec(), want);
        }
    }
}
