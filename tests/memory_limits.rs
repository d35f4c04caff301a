//! Requests no process can hold are typed errors, never aborts: each test runs in a child
//! process under an address-space cap (`ulimit -v`), where an allocation the library did not
//! check would abort the process and fail the test.

use std::collections::BTreeMap;
use std::process::Command;

use simlsh::Error;
use simlsh::index::{
    HammingIndex, LinearScan, MultiIndex, PermutationIndex, PermutedTables, SignerRecord,
};
use simlsh::signature::SignatureMatrix;
use simlsh::signers::{Distribution, HyperplaneSigner, PooledSigner, SignerSpec};

/// Set in the child process.
const CHILD: &str = "SIMLSH_MEMORY_LIMITS_CHILD";
/// The cap of the child's address space, in KiB (2 GiB).
const CAP_KIB: u64 = 2 << 20;

/// Runs test `name` again in a child process capped at [`CAP_KIB`]; true in the child
/// (where the test body runs), false in the parent (after checking that the child passed).
fn in_capped_child(name: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the capped child failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

fn out_of_memory<T>(r: simlsh::Result<T>, what: &str) {
    match r {
        Err(Error::OutOfMemory {
            needed, available, ..
        }) => {
            assert!(needed > available, "{what}: {needed} <= {available}");
            assert!(available <= CAP_KIB << 10, "{what}: {available} available");
        }
        Err(e) => panic!("{what}: {e}"),
        Ok(_) => panic!("{what}: built"),
    }
}

#[test]
fn builders_check_memory_against_the_process_limits() {
    if !in_capped_child("builders_check_memory_against_the_process_limits") {
        return;
    }
    assert!(simlsh::memory::available() <= CAP_KIB << 10);
    // A pool of 2^32 values (16 GiB).
    out_of_memory(
        PooledSigner::builder().bits(64).pool_size(1 << 32).build(),
        "pool",
    );
    // 10^8 permutations of 64 bits (25.6 GB), empty or built.
    let b = PermutationIndex::builder().permutations(100_000_000);
    out_of_memory(b.empty(64), "empty permutation index");
    let codes = SignatureMatrix::from_parts(64, (0..100u64).collect::<Vec<_>>()).unwrap();
    out_of_memory(b.build(&codes), "permutation index");
    // A Gaussian matrix of D = 2^24 × 256 (16 GiB).
    out_of_memory(
        HyperplaneSigner::builder().dim(1 << 24).bits(256).build(),
        "matrix",
    );
    // k-NN results with k far beyond the stored codes.
    let idx = LinearScan::build(&codes).unwrap();
    out_of_memory(idx.knn_flat(&[0u64; 3], 1 << 40), "k-NN results");
    assert_eq!(idx.knn_flat(&[0u64; 3], 200).unwrap().ids.len(), 600);
}

/// The index builders check what they copy and build against the process's memory: 150
/// million 64-bit codes (1.2 GB, zero pages never touched) fit under the 2 GiB cap, a linear
/// scan (its copy of the codes and the ids), permuted tables or a multi-index of them do not.
#[test]
fn index_builders_check_memory_against_the_process_limits() {
    if !in_capped_child("index_builders_check_memory_against_the_process_limits") {
        return;
    }
    let codes = SignatureMatrix::from_parts(64, vec![0u64; 150_000_000]).unwrap();
    out_of_memory(LinearScan::build(&codes), "linear scan");
    out_of_memory(
        PermutedTables::builder().radius(3).build(&codes),
        "permuted tables",
    );
    out_of_memory(MultiIndex::builder().build(&codes), "multi-index");
    drop(codes);
    // What fits is built.
    let small = SignatureMatrix::from_parts(64, (0..1000u64).collect::<Vec<_>>()).unwrap();
    assert_eq!(LinearScan::build(&small).unwrap().len(), 1000);
    assert_eq!(
        PermutedTables::builder()
            .radius(3)
            .build(&small)
            .unwrap()
            .len(),
        1000
    );
    assert_eq!(MultiIndex::builder().build(&small).unwrap().len(), 1000);
}

/// A record of an old very sparse file holds only the measured density: recognising it counts
/// the matrix's draws (no matrix is held), and a dimension whose matrix the process could not
/// hold is refused at once instead of being drawn.
#[test]
fn old_very_sparse_records_are_recognised_without_building() {
    if !in_capped_child("old_very_sparse_records_are_recognised_without_building") {
        return;
    }
    let record = |dim: u64, measured: &str| -> BTreeMap<String, String> {
        [
            ("signer.kind", "very-sparse".to_string()),
            ("signer.bits", "64".into()),
            ("signer.seed", "3".into()),
            ("signer.dim", dim.to_string()),
            ("signer.density", measured.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    // D = 2^40: terabytes; refused without drawing.
    let t = std::time::Instant::now();
    out_of_memory(
        SignerSpec::from_params(&record(1 << 40, "0.000001")),
        "huge",
    );
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    // A real one: the measured density of the default matrix is recognised, another refused.
    let built = HyperplaneSigner::builder()
        .dim(5000)
        .bits(64)
        .seed(3)
        .distribution(Distribution::VerySparse { density: None })
        .build()
        .unwrap();
    let info = simlsh::Signer::info(&built);
    let measured = &info.params.iter().find(|p| p.0 == "density").unwrap().1;
    let spec = SignerSpec::from_params(&record(5000, measured)).unwrap();
    assert!(
        spec.same_signer(
            &"very-sparse"
                .parse::<SignerSpec>()
                .unwrap()
                .bits(64)
                .seed(3)
                .dim(5000)
        )
    );
    assert!(SignerSpec::from_params(&record(5000, "0.500000")).is_err());
}

/// Comparing signer records compares parameters: records naming a pool of 2^32 values or a
/// matrix of 2^40 rows are compared without building either (the capped child would abort).
#[test]
fn records_are_compared_by_parameters() {
    if !in_capped_child("records_are_compared_by_parameters") {
        return;
    }
    let spec = |s: &str| s.parse::<SignerSpec>().unwrap().bits(128).seed(9);
    let rec = |s: SignerSpec| SignerRecord::from_spec(&s);
    let huge_pool = spec("pooled:pool=4294967296");
    assert!(rec(huge_pool.clone()).same_signer(&rec(huge_pool.clone())));
    assert!(!rec(huge_pool.clone()).same_signer(&rec(spec("pooled"))));
    assert!(huge_pool.same_signer(&huge_pool.clone()));
    // Defaults resolved: super-bit's depth min(D, f), very sparse's density 1/√D or the one
    // `nnz` asks for.
    let d = 1u64 << 40;
    assert!(
        spec("super-bit")
            .dim(d)
            .same_signer(&spec("super-bit:depth=128").dim(d))
    );
    assert!(
        !spec("super-bit")
            .dim(d)
            .same_signer(&spec("super-bit:depth=64").dim(d))
    );
    let density = 1.0 / (d as f64).sqrt();
    let explicit = spec(&format!("very-sparse:density={density}")).dim(d);
    assert!(spec("very-sparse").dim(d).same_signer(&explicit));
    assert!(rec(spec("very-sparse").dim(d)).same_signer(&rec(explicit.clone())));
    let nnz = spec("very-sparse:nnz=100").dim(d);
    let p = (4.605_170_185_988_092f64 / 100.0).min(1.0).max(density);
    assert!(nnz.same_signer(&spec(&format!("very-sparse:density={p}")).dim(d)));
    assert!(!nnz.same_signer(&explicit));
    // Other width, seed or dimension: another signer; hashed signers take any dimension.
    assert!(!explicit.same_signer(&explicit.clone().dim(d + 1)));
    assert!(!explicit.same_signer(&explicit.clone().seed(10)));
    assert!(
        spec("hashed-gaussian")
            .dim(5)
            .same_signer(&spec("hashed-gaussian"))
    );
    assert!(!spec("hashed-gaussian").same_signer(&spec("hashed-gaussian").bits(64)));
}

/// The streaming self-join holds a bounded batch of pairs, whatever the radius: at radius 64
/// on 64-bit codes every pair of 20,000 rows is one (2·10^8 pairs, 2.4 GB as a list), counted
/// here under the 2 GiB cap.
#[test]
fn a_join_where_every_pair_is_one_streams_in_bounded_memory() {
    if !in_capped_child("a_join_where_every_pair_is_one_streams_in_bounded_memory") {
        return;
    }
    let n = 20_000u64;
    let mut rng = simlsh::rng::Rng::new(5);
    let codes: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let sigs = SignatureMatrix::from_parts(64, codes).unwrap();
    let (mut count, mut far) = (0u64, 0u32);
    let reported = simlsh::join::self_join_each(&sigs, 64, |p| {
        count += 1;
        far = far.max(p.distance);
        assert!(p.i < p.j);
    })
    .unwrap();
    assert_eq!((reported, count), (n * (n - 1) / 2, n * (n - 1) / 2));
    assert!(far > 50);
}

/// Union-find labels are allocated as checked as the parents: under the 2 GiB cap, 2^28
/// shared parents (1 GiB) are made but their labels (1 GiB more) are refused, and so are the
/// labels of 2^27 sequential points (8 bytes per point, then 8 more), or 2^29 of them at all.
#[test]
fn union_find_labels_check_memory_against_the_process_limits() {
    if !in_capped_child("union_find_labels_check_memory_against_the_process_limits") {
        return;
    }
    use simlsh::join::{SharedUnionFind, UnionFind};
    let shared = SharedUnionFind::new(1 << 28).unwrap();
    out_of_memory(shared.labels(), "shared labels");
    drop(shared);
    out_of_memory(UnionFind::new(1 << 29), "union-find of 2^29 points");
    let mut seq = UnionFind::new(1 << 27).unwrap();
    out_of_memory(seq.labels(), "sequential labels");
    drop(seq);
    // What fits is labelled.
    let small = SharedUnionFind::new(1000).unwrap();
    small.union(3, 999);
    assert_eq!(small.labels().unwrap()[999], 3);
}
