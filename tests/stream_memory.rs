//! The two-pass join's memory against its budget ([`MemoryBudget`]): a counting allocator
//! measures the peak heap [`VerifiedJoin::candidate_pairs`] holds beyond what existed before
//! it, which stays within the budget's shares for the rows' state, the band entries and the
//! held candidates; bands sorted by small chunks give the candidates of the unbounded join.
//! The IDF fit ([`DfCounter::memory`]) likewise holds its pending keys within its share.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use simlsh::SignatureMatrix;
use simlsh::join::{Banding, Scheme, band_chunk, band_chunk_bytes};
use simlsh::text::{DfCounter, Idf, PENDING_KEY_BYTES, Tokenizer};
use simlsh::verify::{JOIN_ROW_BYTES, MemoryBudget, VerifiedJoin};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to the system allocator with the caller's arguments; the
// counters only observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (the system's) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by this allocator with `layout`, as the caller ensures.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // The old and the new block may both exist while the bytes are copied.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests measure one at a time (the counters are the process's).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `n` random 256-bit signatures, every tenth row followed by a near-copy (4 bits flipped).
fn planted(n: usize, seed: u64) -> SignatureMatrix {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut data: Vec<u64> = Vec::with_capacity(4 * n);
    while data.len() < 4 * n {
        let row: [u64; 4] = std::array::from_fn(|_| rng.random());
        data.extend_from_slice(&row);
        if data.len() / 4 % 10 == 1 && data.len() < 4 * n {
            let mut copy = row;
            for _ in 0..4 {
                let b = rng.random_range(0..256usize);
                copy[b / 64] ^= 1 << (b % 64);
            }
            data.extend_from_slice(&copy);
        }
    }
    SignatureMatrix::from_parts(256, data).unwrap()
}

/// The peak heap `candidate_pairs` holds under a budget whose band share takes two bands of
/// the 30,000 rows: within the rows' state, the band share and the candidate share (the
/// signatures exist before); and the candidates are those of the unbounded join.
#[test]
fn the_join_holds_no_more_than_its_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n = 30_000;
    let sigs = planted(n, 7);
    let join = VerifiedJoin::builder()
        .threshold(0.8)
        .candidates(Scheme::Bands(
            Banding::builder()
                .bits(256)
                .bands(16)
                .width(16)
                .max_distance(60)
                .build()
                .unwrap(),
        ))
        .build()
        .unwrap();
    let dir = std::env::temp_dir();
    let unbounded = join
        .candidate_pairs(&sigs, &[], &MemoryBudget::new(1 << 30, n, 0).unwrap(), &dir)
        .unwrap();
    assert!(unbounded.len() > 2000, "{} candidates", unbounded.len());
    assert_eq!(unbounded.spilled_bytes(), 0);
    let threads = rayon::current_num_threads();
    let sig_bytes = (n * 32) as u64;
    // The least budget whose band share holds two bands of the chunk, candidates spilled.
    let mut total = 1 << 20;
    let budget = loop {
        let b = MemoryBudget {
            candidates: 12_000,
            ..MemoryBudget::new(total, n, 0).unwrap()
        };
        if b.bands(n, 256)
            .is_ok_and(|bytes| band_chunk(n, bytes, 16) >= 2)
        {
            break b;
        }
        total += 64 << 10;
    };
    let bands = budget.bands(n, 256).unwrap();
    assert!(band_chunk_bytes(n, band_chunk(n, bands, 16), threads, 16) <= bands);
    assert!(band_chunk(n, bands, 16) < 16, "the bands are not chunked");
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let bounded = join.candidate_pairs(&sigs, &[], &budget, &dir).unwrap();
    let held = PEAK.load(Relaxed) - before;
    assert_eq!(bounded.len(), unbounded.len());
    assert!(
        bounded.spilled_bytes() > 0,
        "the candidates are not spilled"
    );
    // The candidates a chunk of bands finds wait in the workers' lists before they are held
    // or spilled: 12 bytes each, twice while a list grows.
    let slack = 24 * unbounded.len();
    let allowed = budget.rows + bands + budget.candidates + slack as u64;
    assert_eq!(budget.rows, JOIN_ROW_BYTES * n as u64);
    eprintln!(
        "held {held} bands {bands} chunk {} k {} cand {} rows {} slack {slack}",
        band_chunk_bytes(n, band_chunk(n, bands, 16), threads, 16),
        band_chunk(n, bands, 16),
        budget.candidates,
        JOIN_ROW_BYTES * n as u64
    );
    assert!(
        held as u64 <= allowed,
        "held {held} bytes, allowed {allowed} (budget {total}, signatures {sig_bytes})"
    );
    // With the signatures, the whole budget.
    assert!(held as u64 + sig_bytes <= budget.total + slack as u64);
}

/// The IDF fit under a budget: its pending keys within the budget's share
/// ([`MemoryBudget::idf_fit`]), beside its table (twice while merged) and a batch's keys;
/// the table that of the unbounded fit. Without a bound, the same documents hold many times
/// more.
#[test]
fn the_idf_fit_holds_its_keys_within_its_share() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 20,000 documents of 30 words from a vocabulary of 5,000: 600,000 keys (4.8 MB).
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let docs: Vec<String> = (0..20_000)
        .map(|_| {
            (0..30)
                .map(|_| format!("w{}", rng.random_range(0..5_000u32)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let tok = Tokenizer::builder().build().unwrap();
    let fit = |memory: Option<u64>| {
        let before = LIVE.load(Relaxed);
        PEAK.store(before, Relaxed);
        let mut c = DfCounter::new(&tok);
        if let Some(m) = memory {
            c = c.memory(m);
        }
        for batch in docs.chunks(500) {
            c.add_batch(batch);
        }
        let idf = c.finish();
        (idf, PEAK.load(Relaxed) - before)
    };
    let total = 4 << 20;
    let share = MemoryBudget::idf_fit(total);
    assert_eq!(share, 512 << 10);
    let (bounded, held) = fit(Some(share));
    let (unbounded, unbounded_held) = fit(None);
    assert_eq!(bounded.entries(), unbounded.entries());
    assert_eq!(bounded.entries(), Idf::fit(&tok, docs.iter()).entries());
    // The table (16 bytes an entry: the table, its merged copy, and the copy shrunk to fit at
    // the end), a batch's keys (500 documents of at most 30 keys, twice while their lists
    // grow), the tokenizer's copy and its buffers.
    let table = 16 * bounded.entries().len() as u64;
    let batch = 2 * 8 * 500 * 30;
    let fixed = 256 << 10;
    let allowed = share + 3 * table + batch + fixed;
    eprintln!("held {held} (unbounded {unbounded_held}), allowed {allowed}");
    assert!(
        share / PENDING_KEY_BYTES < 600_000,
        "the share holds every key"
    );
    assert!(held as u64 <= allowed, "held {held}, allowed {allowed}");
    assert!(
        unbounded_held as u64 > 4 * allowed,
        "unbounded {unbounded_held}"
    );
}
