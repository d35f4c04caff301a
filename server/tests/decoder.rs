//! The request decoder on arbitrary and mutated bodies: it never panics, and everything it
//! accepts is well formed for the store (checked widths, one reach, the batch limit).

use proptest::prelude::*;
use simlsh::store::{Op, Store, Within};
use simlsh_server::api::{self, Limits};

fn store() -> &'static Store {
    static S: std::sync::OnceLock<Store> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("simlsh-test-decoder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Store::builder().bits(60).create(&dir).unwrap()
    })
}

const LIMITS: Limits = Limits {
    max_batch: 8,
    max_k: 100,
};

/// Valid request bodies of every kind, to mutate.
fn seeds() -> Vec<&'static str> {
    vec![
        r#"{"queries":[{"code":[1]},{"code":"00000000000000ff"}],"radius":3}"#,
        r#"{"queries":[{"code":[5]}],"k":4}"#,
        r#"{"changes":[{"insert":{"id":1,"code":[3]}},{"remove":{"id":9}}]}"#,
        r#"{"items":[{"id":18446744073709551615,"code":[7]}],"radius":2}"#,
    ]
}

fn check_accepted(body: &[u8]) {
    let s = store();
    if let Ok((qs, within)) = api::decode_query(s, body, &LIMITS) {
        assert!(qs.len() <= LIMITS.max_batch);
        assert!(qs.iter().all(|q| q.code.len() == 1 && q.code[0] >> 60 == 0));
        assert!(!matches!(within, Within::Nearest(k) if k > LIMITS.max_k));
    }
    for ops in [
        api::decode_update(s, body, &LIMITS),
        api::decode_check(s, body, &LIMITS),
    ]
    .into_iter()
    .flatten()
    {
        assert!(ops.len() <= LIMITS.max_batch);
        for op in ops {
            if let Op::Insert { item, .. } | Op::InsertIfNew { item, .. } = op {
                assert!(item.code.len() == 1 && item.code[0] >> 60 == 0);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_accepted(&body);
    }

    #[test]
    fn mutated_requests_never_panic(
        seed in 0usize..4,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let mut b = seeds()[seed].as_bytes().to_vec();
        for (at, byte, kind) in edits {
            if b.is_empty() { break; }
            let i = at % b.len();
            match kind {
                0 => b[i] = byte,
                1 => { b.remove(i); }
                _ => b.insert(i, byte),
            }
        }
        check_accepted(&b);
    }
}

/// Errors carry a status and a JSON body; valid seeds are accepted.
#[test]
fn valid_requests_decode_and_errors_are_json() {
    let s = store();
    assert_eq!(
        api::decode_query(s, seeds()[0].as_bytes(), &LIMITS)
            .unwrap()
            .0
            .len(),
        2
    );
    assert_eq!(
        api::decode_update(s, seeds()[2].as_bytes(), &LIMITS)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        api::decode_check(s, seeds()[3].as_bytes(), &LIMITS)
            .unwrap()
            .len(),
        1
    );
    let e = api::decode_query(
        s,
        br#"{"queries":[{"code":[1152921504606846976]}],"radius":3}"#,
        &LIMITS,
    )
    .unwrap_err();
    assert_eq!(e.status, 400);
    let v: serde_json::Value = serde_json::from_slice(&e.body()).unwrap();
    assert_eq!(v["error"]["status"], 400);
    let many = format!(
        "{{\"queries\":[{}],\"radius\":1}}",
        [r#"{"code":[1]}"#; 9].join(",")
    );
    assert_eq!(
        api::decode_query(s, many.as_bytes(), &LIMITS)
            .unwrap_err()
            .status,
        413
    );
}
