//! `SignerSpec`: the string form, the table of kinds, building with typed errors, and the
//! parameters of signature files read back into the signer that wrote them.

mod signer_set;

use std::collections::BTreeMap;

use signer_set::{all_signers, all_specs};
use simlsh::rng::Rng;
use simlsh::signers::{
    AnySigner, Distribution, HashingTrick, HyperplaneSigner, SignerKind, SignerSpec, kinds,
};
use simlsh::{Error, Signer, SignerExt};

/// `n` random sparse rows of dimension `dim` with up to `nnz` nonzeros each (CSR, sorted).
fn sparse_rows(seed: u64, n: usize, dim: usize, nnz: usize) -> sprs::CsMat<f32> {
    let mut rng = Rng::new(seed);
    let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
    for _ in 0..n {
        let mut ids: Vec<usize> = (0..nnz).map(|_| rng.below(dim as u64) as usize).collect();
        ids.sort_unstable();
        ids.dedup();
        data.extend(ids.iter().map(|_| rng.gaussian() as f32));
        indices.extend(ids);
        indptr.push(indices.len());
    }
    sprs::CsMat::new((n, dim), indptr, indices, data)
}

/// Every kind, with default and with explicit parameters.
fn specs_with_params() -> Vec<SignerSpec> {
    let mut v = all_specs();
    v.extend(
        [
            "super-bit:depth=8",
            "very-sparse:density=0.125",
            "very-sparse:nnz=20",
            "pooled:pool=1000",
        ]
        .map(|s| s.parse::<SignerSpec>().unwrap()),
    );
    v
}

#[test]
fn string_form_round_trips_for_every_kind_and_parameter() {
    for spec in specs_with_params() {
        let s = spec.to_string();
        let back: SignerSpec = s.parse().unwrap();
        assert_eq!(back.kind, spec.kind, "{s}");
        assert_eq!(back.kind.to_string(), s);
    }
    let cases = [
        ("gaussian", SignerKind::Gaussian),
        ("super-bit", SignerKind::SuperBit { depth: None }),
        (
            "super-bit:depth=32",
            SignerKind::SuperBit { depth: Some(32) },
        ),
        (" pooled : pool = 5000 ", SignerKind::Pooled { pool: 5000 }),
        ("pooled", SignerKind::Pooled { pool: 10_000 }),
        (
            "very-sparse:density=0.015625",
            SignerKind::VerySparse {
                density: Some(0.015625),
                nnz: None,
            },
        ),
        ("hashing-trick", SignerKind::HashingTrick),
    ];
    for (s, kind) in cases {
        assert_eq!(s.parse::<SignerKind>().unwrap(), kind, "{s}");
    }
    // The default pool is left out of the compact form; any other is written.
    assert_eq!(SignerKind::Pooled { pool: 10_000 }.to_string(), "pooled");
    assert_eq!(SignerKind::Pooled { pool: 7 }.to_string(), "pooled:pool=7");
    // Densities print exactly (shortest round-trip form).
    let p = 1.0 / 3.0;
    let k = SignerKind::VerySparse {
        density: Some(p),
        nnz: None,
    };
    assert_eq!(k.to_string().parse::<SignerKind>().unwrap(), k);
    assert_eq!(SignerSpec::default().kind, SignerKind::HashingTrick);
    assert_eq!(
        (SignerSpec::default().bits, SignerSpec::default().seed),
        (64, 0)
    );
}

#[test]
fn bad_strings_give_typed_errors_naming_the_problem() {
    let err = |s: &str| s.parse::<SignerSpec>().unwrap_err();
    let e = err("gausian");
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "signer spec",
                ..
            }
        ) && e.to_string().contains("gaussian"),
        "{e}"
    );
    let e = err("gaussian:depth=3");
    assert!(e.to_string().contains("no parameter `depth`"), "{e}");
    let e = err("pooled:size=3");
    assert!(e.to_string().contains("expected pool"), "{e}");
    assert!(err("super-bit:depth=x").to_string().contains("`depth=x`"));
    assert!(
        err("very-sparse:density=a")
            .to_string()
            .contains("`density=a`")
    );
    // A density outside (0, 1] is refused when parsed (a record naming one too).
    for d in ["0", "-0.5", "1.5", "nan", "inf"] {
        let e = err(&format!("very-sparse:density={d}"));
        assert!(e.to_string().contains("is not in (0, 1]"), "{d}: {e}");
    }
    assert!("very-sparse:density=1".parse::<SignerSpec>().is_ok());
    assert!(err("pooled:pool").to_string().contains("key=value"));
    assert!(err("pooled:pool=1,pool=2").to_string().contains("twice"));
    // Values are validated by the builders, once, when built.
    let e = "super-bit:depth=0"
        .parse::<SignerSpec>()
        .unwrap()
        .build(Some(10))
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidParameter { name: "depth", .. }),
        "{e}"
    );
}

#[test]
fn parameters_given_apart_merge_with_the_text_once() {
    let with = SignerKind::parse_with;
    let err = |s: &str, p: &[(&str, &str)]| with(s, p).unwrap_err().to_string();
    // The keys given, in the order of the kind's table, whether written or apart; a default
    // is given only when written.
    let (kind, given) = with(" very-sparse : nnz = 40 ", &[("density", "0.5")]).unwrap();
    assert_eq!(
        kind,
        SignerKind::VerySparse {
            density: Some(0.5),
            nnz: Some(40)
        }
    );
    assert_eq!(given, ["density", "nnz"]);
    assert_eq!(
        with("pooled", &[]).unwrap(),
        (SignerKind::Pooled { pool: 10_000 }, vec![])
    );
    assert_eq!(with("pooled:pool=10000", &[]).unwrap().1, ["pool"]);
    for empty in ["pooled:", "pooled: , ,", " pooled "] {
        assert_eq!(with(empty, &[]).unwrap().1, Vec::<&str>::new(), "{empty}");
    }
    assert_eq!(
        with("pooled", &[("pool", "7")]).unwrap(),
        (SignerKind::Pooled { pool: 7 }, vec!["pool"])
    );
    // The same value twice, as the kind reads it, is one parameter.
    for (text, apart) in [("100", "100"), ("0.5", "0.50"), ("0.5", "5e-1")] {
        let key = if text == "100" { "nnz" } else { "density" };
        let spec = format!("very-sparse:{key}={text}");
        assert_eq!(with(&spec, &[(key, apart)]).unwrap().1, [key], "{spec}");
    }
    // Another value is an error naming the key, both values and the text.
    let e = err("pooled: pool = 100", &[("pool", "200")]);
    assert!(
        e.contains("signer spec")
            && e.contains("parameter `pool` given twice: 100 in `pooled: pool = 100` and 200"),
        "{e}"
    );
    let e = err("pooled", &[("pool", "100"), ("pool", "200")]);
    assert!(e.contains("parameter `pool` given twice"), "{e}");
    // Errors of the text come first, then those of the pairs, as the text form's.
    assert!(err("pooled:pool=1,pool=2", &[]).contains("`pool` given twice"));
    let e = err("pooled:pool=x", &[("pool", "3")]);
    assert!(e.contains("`pool=x`: expected a whole number"), "{e}");
    let e = err("pooled:pool=3", &[("pool", "x")]);
    assert!(e.contains("`pool=x`: expected a whole number"), "{e}");
    let e = err("hashing-trick", &[("depth", "3")]);
    assert!(
        e.contains("`hashing-trick` has no parameter `depth`: it takes none"),
        "{e}"
    );
    let e = err("hashing-trick:depth=3", &[]);
    assert!(e.contains("no parameter `depth`"), "{e}");
    assert!(err("klingon", &[("depth", "3")]).contains("unknown signer `klingon`"));
    let e = err("very-sparse", &[("density", "2")]);
    assert!(e.contains("`density=2` is not in (0, 1]"), "{e}");
}

#[test]
fn kinds_lists_every_kind_once_and_says_which_need_the_dimension() {
    let names: Vec<&str> = kinds().iter().map(|k| k.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
    for spec in all_specs() {
        assert!(names.contains(&spec.kind.name()));
    }
    for k in kinds() {
        assert!(!k.summary.is_empty());
        let spec: SignerSpec = k.name.parse().unwrap();
        for p in k.params {
            assert!(!p.summary.is_empty() && !p.default.is_empty());
        }
        let spec = spec.bits(32).seed(1);
        match spec.build(None) {
            Ok(s) => {
                assert!(!spec.kind.needs_dim(), "{}", k.name);
                assert_eq!((s.info().kind, s.dim()), (k.name, None));
            }
            Err(e) => {
                assert!(spec.kind.needs_dim(), "{}: {e}", k.name);
                assert!(matches!(e, Error::InvalidParameter { name: "dim", .. }));
                assert!(e.to_string().contains("needs the input dimension"), "{e}");
                let s = spec.build(Some(40)).unwrap();
                assert_eq!((s.info().kind, s.dim()), (k.name, Some(40)));
            }
        }
    }
    // A spec that fixes the dimension rejects another.
    let e = SignerSpec::new(SignerKind::Gaussian)
        .dim(10)
        .build(Some(11))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                expected: 10,
                got: 11
            }
        ),
        "{e}"
    );
}

#[test]
fn spec_builds_the_same_signer_as_its_builder() {
    let rows = sparse_rows(3, 50, 300, 20);
    let pairs: Vec<(SignerSpec, AnySigner)> = vec![
        (
            "super-bit:depth=8"
                .parse::<SignerSpec>()
                .unwrap()
                .bits(100)
                .seed(4),
            HyperplaneSigner::builder()
                .dim(300)
                .bits(100)
                .seed(4)
                .distribution(Distribution::SuperBit { depth: Some(8) })
                .build()
                .unwrap()
                .into(),
        ),
        (
            "hashing-trick"
                .parse::<SignerSpec>()
                .unwrap()
                .bits(100)
                .seed(4),
            HashingTrick::builder()
                .bits(100)
                .seed(4)
                .build()
                .unwrap()
                .into(),
        ),
    ];
    for (spec, want) in pairs {
        let got = spec.build(Some(300)).unwrap();
        assert_eq!(got.info(), want.info());
        assert_eq!(
            got.sign_csr(rows.view()).unwrap(),
            want.sign_csr(rows.view()).unwrap()
        );
    }
}

/// The kind of each distribution builds the matrix the builder draws from that distribution,
/// and the default distribution's kind is the builder's default matrix.
#[test]
fn each_distribution_is_the_kind_that_builds_it() {
    let rows = sparse_rows(5, 40, 64, 12);
    let dists = [
        Distribution::default(),
        Distribution::Rademacher,
        Distribution::VerySparse {
            density: Some(0.25),
        },
        Distribution::SuperBit { depth: Some(8) },
    ];
    for d in dists {
        let kind = SignerKind::from(d);
        let got = SignerSpec::new(kind.clone())
            .bits(96)
            .seed(2)
            .build(Some(64))
            .unwrap();
        let want: AnySigner = HyperplaneSigner::builder()
            .dim(64)
            .bits(96)
            .seed(2)
            .distribution(d)
            .build()
            .unwrap()
            .into();
        assert_eq!((got.info(), got.info().kind), (want.info(), kind.name()));
        assert_eq!(
            got.sign_csr(rows.view()).unwrap(),
            want.sign_csr(rows.view()).unwrap()
        );
    }
    let default: AnySigner = HyperplaneSigner::builder()
        .dim(64)
        .bits(96)
        .build()
        .unwrap()
        .into();
    assert_eq!(
        default.info().kind,
        SignerKind::from(Distribution::default()).name()
    );
    assert_eq!(
        SignerKind::from(Distribution::default()),
        SignerKind::Gaussian
    );
}

#[test]
fn signature_files_rebuild_the_signer_that_made_them() {
    let dir = std::env::temp_dir().join(format!("simlsh-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = sparse_rows(9, 40, 500, 30);
    for (k, spec) in specs_with_params().into_iter().enumerate() {
        let spec = spec.bits(130).seed(11 + k as u64);
        let signer = spec.build(Some(500)).unwrap();
        let sigs = signer.sign_csr(rows.view()).unwrap();
        let path = dir.join(format!("{k}.sig"));
        simlsh::persist::save_signatures(&path, &sigs, Some(&signer.info())).unwrap();
        let file = simlsh::persist::load_signatures(&path).unwrap();
        let back = SignerSpec::from_params(&file.params).unwrap();
        // The file's spec is the resolved one (default depths and densities made explicit)
        // and knows the dimension: no input is needed to rebuild it.
        let rebuilt = back.build(None).unwrap();
        assert_eq!(rebuilt.info(), signer.info(), "{spec}");
        assert_eq!(
            rebuilt.sign_csr(rows.view()).unwrap().as_slice(),
            file.matrix.as_slice(),
            "{spec}"
        );
        // The spec's own parameters read back as the same spec.
        assert_eq!(SignerSpec::from_params(&spec.to_params()).unwrap(), spec);
        assert_eq!(signer.spec().unwrap(), back);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn old_very_sparse_files_with_the_measured_density_are_recognised_or_refused() {
    // Files written before the density was recorded exactly hold `signer.density` =
    // nonzeros / (D·f) with six decimals, and no `signer.density_param`.
    let old_params = |density: Option<f64>| -> BTreeMap<String, String> {
        let s = HyperplaneSigner::builder()
            .dim(400)
            .bits(64)
            .seed(5)
            .distribution(Distribution::VerySparse { density })
            .build()
            .unwrap();
        let nnz = (0..400)
            .map(|i| s.column(i).unwrap().iter().filter(|&&v| v != 0.0).count())
            .sum::<usize>();
        let mut m = s.info().to_params();
        m.remove("signer.density_param");
        assert_eq!(
            m["signer.density"],
            format!("{:.6}", nnz as f64 / (400.0 * 64.0))
        );
        m
    };
    let spec = SignerSpec::from_params(&old_params(None)).unwrap();
    assert_eq!(
        spec.kind,
        SignerKind::VerySparse {
            density: None,
            nnz: None,
        }
    );
    let want = HyperplaneSigner::builder()
        .dim(400)
        .bits(64)
        .seed(5)
        .distribution(Distribution::VerySparse { density: None })
        .build()
        .unwrap();
    let got = spec.build(None).unwrap();
    assert_eq!(
        got.sign_sparse(&[1, 50, 399], &[1.0, -2.0, 0.5]).unwrap(),
        want.sign_sparse(&[1, 50, 399], &[1.0, -2.0, 0.5]).unwrap()
    );
    // An old record of a dimension whose draws would take long to count is refused at once
    // (D = 2^27 × 64 bits: 8.6 · 10^9 draws), asking for the file to be rebuilt.
    let mut huge = old_params(None);
    huge.insert("signer.dim".into(), (1u64 << 27).to_string());
    let t = std::time::Instant::now();
    let e = SignerSpec::from_params(&huge).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "signer.dim",
                ..
            }
        ) && e.to_string().contains("rebuild"),
        "{e}"
    );
    assert!(t.elapsed().as_secs() < 2, "{:?}", t.elapsed());
    let e = SignerSpec::from_params(&old_params(Some(0.2))).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "signer.density",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn parameters_that_cannot_rebuild_a_signer_are_refused_by_name() {
    let ht = HashingTrick::builder().bits(64).build().unwrap();
    let mut p = ht.info().to_params();
    p.insert("signer.hash".into(), "murmur3".into());
    let e = SignerSpec::from_params(&p).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "signer.hash",
                ..
            }
        ),
        "{e}"
    );
    let custom = ht.explicit_matrix(20).unwrap();
    let e = SignerSpec::from_params(&custom.info().to_params()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "signer.kind",
                ..
            }
        ),
        "{e}"
    );
    let mut p = ht.info().to_params();
    p.remove("signer.seed");
    let e = SignerSpec::from_params(&p).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "signer.seed",
                ..
            }
        ),
        "{e}"
    );
    let mut p = ht.info().to_params();
    p.insert("signer.bits".into(), "many".into());
    let e = SignerSpec::from_params(&p).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "signer.bits",
                ..
            }
        ),
        "{e}"
    );
    let mut p = ht.info().to_params();
    p.insert("signer.window".into(), "3".into());
    let e = SignerSpec::from_params(&p).unwrap_err();
    assert!(e.to_string().contains("no parameter `window`"), "{e}");
}

#[test]
fn trait_objects_do_everything_a_concrete_signer_does() {
    let rows = sparse_rows(2, 30, 200, 25);
    let rows_u64 = {
        let (indptr, indices, data) = rows.clone().into_raw_storage();
        sprs::CsMatI::<f32, u64, u32>::new(
            (30, 200),
            indptr.iter().map(|&p| p as u32).collect(),
            indices.iter().map(|&i| i as u64).collect(),
            data,
        )
    };
    for (spec, concrete) in all_specs().into_iter().zip(all_signers(200, 96, 3)) {
        let boxed: Box<dyn Signer> = Box::new(concrete.clone());
        let by_ref: &dyn Signer = &concrete;
        let want = concrete.sign_csr(rows.view()).unwrap();
        assert_eq!(boxed.sign_csr(rows.view()).unwrap(), want, "{spec}");
        assert_eq!(by_ref.sign_csr(rows_u64.view()).unwrap(), want, "{spec}");
        assert_eq!(boxed.sign_dense(&rows.to_dense()).unwrap(), want, "{spec}");
        for r in 0..rows.rows() {
            let v = rows.outer_view(r).unwrap();
            let ids: Vec<u64> = v.indices().iter().map(|&i| i as u64).collect();
            let mut acc = by_ref.accumulator();
            acc.add_chunk(&ids, v.data()).unwrap();
            assert_eq!(acc.signature(), want.get(r), "{spec} row {r}");
            let mut buf = boxed.new_acc();
            boxed.accumulate_indices(v.indices(), v.data(), &mut buf);
            assert_eq!(&buf[..acc.values().len()], acc.values());
        }
        let tokens = boxed.sign_tokens(&["a", "b"], &[1.0, 2.0]);
        assert_eq!(tokens.is_ok(), !spec.kind.needs_dim(), "{spec}");
    }
}
