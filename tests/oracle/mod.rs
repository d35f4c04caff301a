//! Brute-force oracles shared by the integration tests (`knn_graph`, `manku`) and the
//! `knn_graph` bench.

use simlsh::SignatureMatrix;
use simlsh::index::Hit;

/// Row `i`'s `k` nearest other rows by brute force: every other row sorted by
/// `(distance, id)`, the first `k`.
pub fn brute_knn(sigs: &SignatureMatrix, i: usize, k: usize) -> Vec<Hit> {
    let mut all: Vec<Hit> = (0..sigs.len())
        .filter(|&j| j != i)
        .map(|j| Hit {
            distance: sigs.distance(i, j),
            id: j as u32,
        })
        .collect();
    all.sort_unstable();
    all.truncate(k);
    all
}
