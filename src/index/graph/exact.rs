//! The exact-code table: every stored code, found in `O(1)`, so that a query holding a stored
//! code always gets it back at distance 0 whatever the graph does (pgvector#972 returned
//! rows at distance 257 while an exact match existed).
//!
//! Open addressing with linear probing over a power-of-two array of `node + 1` (0: empty),
//! at most half full, deletions by backward shift. The home slot is a stable hash of the
//! code ([`code_hash`]: XXH3-64 chained over the words), so the table can be saved and
//! memory-mapped.

use crate::rng::hash_u64;

/// Stable hash of a code: XXH3-64 of each word (its 8 little-endian bytes), the previous
/// hash as the seed.
pub(super) fn code_hash(code: &[u64]) -> u64 {
    code.iter().fold(0u64, |h, &x| hash_u64(x, h))
}

/// Table slots for `nodes` codes: a power of two at least twice as large (at least 16).
pub(super) fn capacity(nodes: usize) -> usize {
    nodes.saturating_mul(2).next_power_of_two().max(16)
}

/// The node holding `code`, if any.
pub(super) fn find(table: &[u32], codes: &[u64], w: usize, code: &[u64]) -> Option<u32> {
    let mask = table.len().checked_sub(1)?;
    let mut i = code_hash(code) as usize & mask;
    // A table at most half full has an empty slot; the bound guards a corrupt file.
    for _ in 0..table.len() {
        match table[i] {
            0 => return None,
            v => {
                let node = (v - 1) as usize;
                if codes.get(node * w..(node + 1) * w) == Some(code) {
                    return Some(node as u32);
                }
            }
        }
        i = (i + 1) & mask;
    }
    None
}

/// Adds `node` (whose code is not stored yet), growing the table when it would be more than
/// half full.
pub(super) fn insert(table: &mut Vec<u32>, codes: &[u64], w: usize, node: u32, nodes: usize) {
    if table.len() < capacity(nodes) {
        *table = build(codes, w, nodes);
        return;
    }
    place(table, codes, w, node);
}

fn place(table: &mut [u32], codes: &[u64], w: usize, node: u32) {
    let mask = table.len() - 1;
    let code = &codes[node as usize * w..(node as usize + 1) * w];
    let mut i = code_hash(code) as usize & mask;
    while table[i] != 0 {
        i = (i + 1) & mask;
    }
    table[i] = node + 1;
}

/// The table of nodes `0..nodes` (distinct codes).
pub(super) fn build(codes: &[u64], w: usize, nodes: usize) -> Vec<u32> {
    let mut table = vec![0u32; capacity(nodes)];
    for node in 0..nodes as u32 {
        place(&mut table, codes, w, node);
    }
    table
}

/// Removes `node` (stored, its code still in `codes`).
pub(super) fn remove(table: &mut [u32], codes: &[u64], w: usize, node: u32) {
    let mask = table.len() - 1;
    let home = |v: u32| {
        let n = (v - 1) as usize;
        code_hash(&codes[n * w..(n + 1) * w]) as usize & mask
    };
    let code = &codes[node as usize * w..(node as usize + 1) * w];
    let mut i = code_hash(code) as usize & mask;
    while table[i] != node + 1 {
        if table[i] == 0 {
            return;
        }
        i = (i + 1) & mask;
    }
    // Backward shift: move later entries of the run into the hole when their home allows.
    let mut j = i;
    loop {
        j = (j + 1) & mask;
        if table[j] == 0 {
            break;
        }
        let k = home(table[j]);
        // The entry at j may move to i iff i lies cyclically in [k, j).
        let movable = if i <= j {
            k <= i || k > j
        } else {
            k <= i && k > j
        };
        if movable {
            table[i] = table[j];
            i = j;
        }
    }
    table[i] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_found_through_inserts_and_removals() {
        let w = 2;
        // Codes with colliding low hash bits are likely among 300 in a table of 1,024.
        let codes: Vec<u64> = (0..300u64).flat_map(|i| [i * 7919, i ^ 0xff]).collect();
        let mut table = build(&codes, w, 100);
        for n in 100..300u32 {
            insert(&mut table, &codes, w, n, n as usize + 1);
        }
        for n in 0..300u32 {
            let c = &codes[n as usize * w..(n as usize + 1) * w];
            assert_eq!(find(&table, &codes, w, c), Some(n));
        }
        for n in (0..300u32).step_by(3) {
            remove(&mut table, &codes, w, n);
        }
        for n in 0..300u32 {
            let c = &codes[n as usize * w..(n as usize + 1) * w];
            let want = (n % 3 != 0).then_some(n);
            assert_eq!(find(&table, &codes, w, c), want, "node {n}");
        }
        assert_eq!(find(&table, &codes, w, &[1, 1]), None);
        assert_eq!(table.iter().filter(|&&v| v != 0).count(), 200);
    }

    #[test]
    fn the_hash_is_pinned() {
        // Saved tables depend on it: it must never change.
        assert_eq!(code_hash(&[]), 0);
        assert_eq!(code_hash(&[0]), hash_u64(0, 0));
        assert_eq!(code_hash(&[1, 2]), hash_u64(2, hash_u64(1, 0)));
        assert_eq!(code_hash(&[0x0123_4567_89ab_cdef]), 0xb78d_f414_2842_77a6);
    }
}
