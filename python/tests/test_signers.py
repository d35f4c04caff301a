"""Signers: bit-identity with the command line on the bundled data, every input kind giving the
same bits for the same vectors, thread-count independence, pickling, and the estimates'
oracle (exact cosine within the binomial tolerance)."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

import simlsh
from simlsh import _simlsh
from conftest import DATA, run_cli

GLOVE = DATA / "glove-6B-50d-10k" / "vectors.fvecs"
TWEETS = DATA / "healthtweets-10k" / "healthtweets-10k.csv"
POEMS = DATA / "chinese-poetry-3k" / "poems.jsonl"


@pytest.mark.parametrize(
    "spec,bits,seed",
    [
        ("gaussian", 256, 7),
        ("super-bit", 128, 3),
        ("super-bit:depth=25", 100, 3),
        ("rademacher", 64, 11),
        ("very-sparse:density=0.3", 192, 5),
        ("very-sparse", 192, 5),
        ("pooled:pool=5000", 64, 2),
        ("hashing-trick", 130, 9),
    ],
)
def test_dense_vectors_match_the_command_line(tmp_path, cli, glove, spec, bits, seed):
    out = tmp_path / "codes.npy"
    run_cli(cli, "sign", GLOVE, out, "--signer", spec, "--bits", bits, "--seed", seed)
    expected = np.load(out)
    kind = spec.split(":")[0]
    dim = glove.shape[1] if kind not in ("pooled", "hashing-trick") else None
    s = simlsh.signer(spec, bits=bits, seed=seed, dim=dim)
    assert s.spec.split(":")[0] == kind
    got = s.sign(glove)
    # The spec a signer reports (defaults written out) rebuilds the same signer.
    np.testing.assert_array_equal(simlsh.signer(s.spec, bits=bits, seed=seed, dim=dim).sign(glove[:50]), got[:50])
    assert got.dtype == np.uint64 and got.shape == (len(glove), (bits + 63) // 64)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "path,tok",
    [
        (TWEETS, dict(mode="words", weighting="tf")),
        (TWEETS, dict(mode="words", ngram=2, weighting="binary", stop_words="english", top_k=20)),
        (POEMS, dict(mode="cjk", weighting="tf")),
        (POEMS, dict(mode="chars", ngram=2, weighting="tf", top_k=30)),
    ],
)
def test_texts_match_the_command_line(tmp_path, cli, tweets, poems, path, tok):
    docs = tweets if path == TWEETS else poems
    out = tmp_path / "codes.npy"
    flags = ["--mode", tok["mode"], "--weighting", tok["weighting"], "--ngram", tok.get("ngram", 1)]
    if "stop_words" in tok:
        flags += ["--stop-words", tok["stop_words"]]
    if "top_k" in tok:
        flags += ["--top-k", tok["top_k"]]
    run_cli(cli, "sign", path, out, "--signer", "hashing-trick", "--bits", 64, "--seed", 4, *flags)
    got = simlsh.HashingTrick(bits=64, seed=4).sign(docs, tokenizer=simlsh.Tokenizer(**tok))
    np.testing.assert_array_equal(got, np.load(out))


def test_tfidf_table_and_signatures_match_the_command_line(tmp_path, cli, tweets):
    out, idf_path = tmp_path / "codes.npy", tmp_path / "tweets.idf"
    run_cli(cli, "sign", TWEETS, out, "--signer", "pooled:pool=10000", "--bits", 128, "--seed", 1,
            "--mode", "auto", "--weighting", "tfidf", "--save-idf", idf_path)
    base = simlsh.Tokenizer(mode="auto")
    idf = simlsh.Idf.fit(tweets, tokenizer=base)
    assert idf == simlsh.Idf.load(idf_path)
    assert idf.docs == len(tweets) and idf.df("health") > 0
    codes = simlsh.PooledSigner(bits=128, seed=1).sign(tweets, tokenizer=base.with_params(idf=idf))
    np.testing.assert_array_equal(codes, np.load(out))


def test_sparse_matrix_matches_the_command_line(tmp_path, cli):
    rng = np.random.default_rng(0)
    X = sp.random(500, 3000, density=0.01, format="csr", dtype=np.float32, random_state=rng)
    X.data -= 0.5
    path = tmp_path / "x.npz"
    sp.save_npz(path, X)
    out = tmp_path / "codes.npy"
    for kind in ("hashing-trick", "rademacher"):
        run_cli(cli, "sign", path, out, "--signer", kind, "--bits", 96, "--seed", 13)
        dim = None if kind == "hashing-trick" else 3000
        got = simlsh.signer(kind, bits=96, seed=13, dim=dim).sign(X)
        np.testing.assert_array_equal(got, np.load(out))


def test_every_layout_and_dtype_gives_the_same_bits(glove):
    s = simlsh.HyperplaneSigner(dim=50, bits=200, seed=1, distribution="super-bit")
    ref = s.sign(glove)
    np.testing.assert_array_equal(s.sign(np.asfortranarray(glove)), ref)
    wide = np.zeros((len(glove), 100), dtype=np.float32)
    wide[:, ::2] = glove
    np.testing.assert_array_equal(s.sign(wide[:, ::2]), ref)  # strided columns
    np.testing.assert_array_equal(s.sign(glove[::-1])[::-1], ref)  # negative row stride
    np.testing.assert_array_equal(s.sign(glove.astype(np.float64)), ref)
    np.testing.assert_array_equal(s.sign(np.asfortranarray(glove.astype(np.float64))), ref)
    np.testing.assert_array_equal(s.sign(glove[:7].tolist()), ref[:7])
    # Dense and sparse input of the same vectors: the same bits (the library's canonical order).
    np.testing.assert_array_equal(s.sign(sp.csr_matrix(glove)), ref)


def test_sparse_formats_index_dtypes_and_unsorted_rows_give_the_same_bits():
    rng = np.random.default_rng(5)
    X = sp.random(300, 1000, density=0.02, format="csr", dtype=np.float64, random_state=rng)
    s = simlsh.HashingTrick(bits=128, seed=2)
    ref = s.sign(X)
    np.testing.assert_array_equal(s.sign(X.astype(np.float32)), ref)
    np.testing.assert_array_equal(s.sign(X.tocsc()), ref)
    np.testing.assert_array_equal(s.sign(X.tocoo()), ref)
    np.testing.assert_array_equal(s.sign(sp.csr_array(X)), ref)
    Y = X.copy()
    Y.indices = Y.indices.astype(np.int64)
    Y.indptr = Y.indptr.astype(np.int64)
    np.testing.assert_array_equal(s.sign(Y), ref)
    # Rows reversed (unsorted) and an entry split in two duplicates: SciPy's meaning (a sum).
    U = X.copy()
    for r in range(U.shape[0]):
        a, b = U.indptr[r], U.indptr[r + 1]
        U.indices[a:b] = U.indices[a:b][::-1].copy()
        U.data[a:b] = U.data[a:b][::-1].copy()
    U.has_sorted_indices = False
    np.testing.assert_array_equal(s.sign(U), ref)
    D = sp.csr_matrix((np.array([0.25, 0.75, 2.0]), np.array([3, 3, 9]), np.array([0, 3])), shape=(1, 10))
    C = sp.csr_matrix((np.array([1.0, 2.0]), np.array([3, 9]), np.array([0, 2])), shape=(1, 10))
    np.testing.assert_array_equal(s.sign(D), s.sign(C))
    # Columns are feature ids for the hashing trick: the same as token-free sparse ids.
    assert s.sign(sp.csr_matrix((1, 10), dtype=np.float32)).tolist() == [[0, 0]]


def test_tokens_texts_and_arrow_inputs_agree(tweets):
    tok = simlsh.Tokenizer(mode="words", ngram=2, weighting="tf")
    docs = tweets[:300]
    s = simlsh.HashingTrick(bits=64, seed=8)
    ref = s.sign(docs, tokenizer=tok)
    feats = [tok.features(d) for d in docs]
    np.testing.assert_array_equal(s.sign([f[0] for f in feats], weights=[f[1] for f in feats]), ref)
    np.testing.assert_array_equal(s.sign(np.array(docs, dtype=object), tokenizer=tok), ref)
    for t in (pa.string(), pa.large_string(), pa.string_view()):
        np.testing.assert_array_equal(s.sign(pa.array(docs, type=t), tokenizer=tok), ref)
    chunked = pa.chunked_array([pa.array(docs[:100]), pa.array(docs[100:])])
    np.testing.assert_array_equal(s.sign(chunked, tokenizer=tok), ref)
    np.testing.assert_array_equal(s.sign(pa.array(docs).slice(50), tokenizer=tok), ref[50:])
    unit = [f[0] for f in feats]
    np.testing.assert_array_equal(s.sign(pa.array(unit)), s.sign(unit))


def test_arrow_vectors_agree_with_numpy(glove):
    s = simlsh.HyperplaneSigner(dim=50, bits=64, seed=3)
    ref = s.sign(glove[:1000])
    flat = pa.array(glove[:1000].reshape(-1))
    fixed = pa.FixedSizeListArray.from_arrays(flat, 50)
    np.testing.assert_array_equal(s.sign(fixed), ref)
    np.testing.assert_array_equal(s.sign(fixed.slice(10)), ref[10:])
    lists = pa.array(glove[:1000].tolist(), type=pa.list_(pa.float32()))
    np.testing.assert_array_equal(s.sign(lists), ref)
    np.testing.assert_array_equal(s.sign(lists.cast(pa.large_list(pa.float64()))), s.sign(glove[:1000].astype(np.float64)))


def test_results_do_not_depend_on_the_thread_count(glove, tweets):
    for s, x in ((simlsh.HyperplaneSigner(dim=50, bits=256, seed=1), glove),
                 (simlsh.HashingTrick(bits=64, seed=1), tweets)):
        np.testing.assert_array_equal(s.sign(x, threads=1), s.sign(x, threads=2))


def test_signers_pickle_by_parameters_and_rebuild_the_same_bits(glove):
    for s in (simlsh.HyperplaneSigner(dim=50, bits=96, seed=4, distribution="very-sparse", density=0.5),
              simlsh.HyperplaneSigner(dim=50, bits=96, seed=4, distribution="super-bit", depth=16),
              simlsh.PooledSigner(bits=96, seed=4, pool_size=777), simlsh.HashingTrick(bits=96, seed=4)):
        blob = pickle.dumps(s)
        assert len(blob) < 500  # parameters only, not the matrix
        t = pickle.loads(blob)
        assert t == s and t.info() == s.info() and repr(t) == repr(s)
        np.testing.assert_array_equal(t.sign(glove[:200]), s.sign(glove[:200]))
    tok = simlsh.Tokenizer(mode="chars", ngram=3, stop_words=["a", "b"], top_k=5)
    assert pickle.loads(pickle.dumps(tok)).config == tok.config
    idf = simlsh.Idf.fit(["a b", "b c"], tokenizer=simlsh.Tokenizer())
    assert pickle.loads(pickle.dumps(idf)) == idf


def test_info_reports_memory_and_cost():
    g = simlsh.HyperplaneSigner(dim=384, bits=256, seed=7).info()
    assert (g["kind"], g["bits"], g["dim"], g["seed"], g["bytes"]) == ("gaussian", 256, 384, 7, 4 * 384 * 256)
    r = simlsh.HyperplaneSigner(dim=384, bits=256, distribution="rademacher").info()
    assert r["bytes"] == 384 * 256 // 8
    h = simlsh.HashingTrick(bits=64).info()
    assert h["bytes"] == 0 and h["dim"] is None and h["hash_words_per_nonzero"] == 2.0
    assert simlsh.PooledSigner(bits=64, pool_size=1000).info()["bytes"] == 4000


def test_estimated_cosine_tracks_the_exact_cosine_within_binomial_tolerance(glove):
    """The collision law on real vectors, over independent signers (one seed per trial): h is
    Binomial(f, theta/pi) for each pair, so a trial's mean of h/f - theta/pi over its pairs has
    standard deviation at most sqrt(1/(4 f)) however correlated its pairs are, and the mean
    over T independent trials at most sqrt(1/(4 f T))."""
    rng = np.random.default_rng(1)
    x = glove[rng.choice(len(glove), 80, replace=False)].astype(np.float64)
    a, b = x[0::2], x[1::2]
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    theta = np.arccos(np.clip(cos, -1, 1)) / np.pi
    f, trials = 256, 200
    means, outside = [], 0
    for seed in range(trials):
        codes = simlsh.HyperplaneSigner(dim=50, bits=f, seed=seed).sign(x.astype(np.float32))
        h = simlsh.hamming(codes[0::2], codes[1::2])
        means.append(np.mean(h / f - theta))
        e = simlsh.estimate(h, f, level=0.99)
        outside += int(np.sum((cos < e.cosine_lo - 1e-12) | (cos > e.cosine_hi + 1e-12)))
    assert abs(np.mean(means)) < 5 * np.sqrt(1 / (4 * f * trials))
    # Clopper-Pearson 99% intervals: at most 1% of pair-trials outside on average; 3% bounds
    # the count for any correlation pattern short of pathological (expected 80 of 8000).
    assert outside < 0.03 * trials * len(a)


@pytest.mark.parametrize("kind", [k["name"] for k in _simlsh.signer_kinds()])
def test_every_library_kind_is_a_signer(kind):
    """simlsh.signer maps every kind the library lists onto the signer the library builds from
    the same spec (same bits), and refuses a dim where the kind has no matrix."""
    needs_dim = next(k["needs_dim"] for k in _simlsh.signer_kinds() if k["name"] == kind)
    X = np.random.default_rng(0).standard_normal((20, 12)).astype(np.float32)
    s = simlsh.signer(kind, bits=70, seed=4, dim=12 if needs_dim else None)
    assert s.info()["kind"] == kind and s.bits == 70 and s.seed == 4
    core = _simlsh.Signer.from_spec(kind, 70, 4, 12)
    np.testing.assert_array_equal(s.sign(X), core.sign_dense_f32(X))
    with pytest.raises(ValueError, match="needs dim" if needs_dim else "takes no dim"):
        simlsh.signer(kind, bits=70, dim=None if needs_dim else 12)


def test_unknown_kinds_and_parameters_raise_the_library_error():
    with pytest.raises(ValueError) as lib:
        _simlsh.Signer.parse_spec("klingon")
    with pytest.raises(ValueError, match="unknown signer `klingon`") as got:
        simlsh.signer("klingon", bits=64)
    assert str(got.value) == str(lib.value)
    with pytest.raises(ValueError, match="`hashing-trick` has no parameter `depth`"):
        simlsh.signer("hashing-trick:depth=3", bits=64)
    # A keyword the kind's constructor does not take, as Python raises it.
    with pytest.raises(TypeError, match="depth"):
        simlsh.signer("hashing-trick", bits=64, depth=3)
    with pytest.raises(ValueError, match="given twice"):
        simlsh.signer("pooled:pool=100", bits=64, pool_size=200)
    assert simlsh.signer("pooled", bits=64, pool_size=200).params["pool_size"] == 200


def test_spec_parameters_and_keywords_merge_in_the_library():
    """simlsh.signer passes the spec and its keywords to the library, which merges them: a
    parameter in both only with the same value (as the library reads it), the text's own
    errors as the text form's, and every parameter written or given reaches the signer."""
    with pytest.raises(ValueError) as e:
        simlsh.signer(" pooled : pool = 100 ", bits=64, pool_size=200)
    assert str(e.value) == "invalid parameter `signer spec`: parameter `pool` given twice: 100 in `pooled : pool = 100` and 200"
    with pytest.raises(ValueError, match="parameter `density` given twice: 0.5 in"):
        simlsh.signer("very-sparse:density=0.5", bits=64, dim=30, density=0.25)
    # The same value twice is one parameter; None is a keyword left out.
    for s in (simlsh.signer("pooled:pool=100", bits=64, pool_size=100),
              simlsh.signer("pooled: pool=100 ,", bits=64, pool_size=None)):
        assert s == simlsh.PooledSigner(bits=64, pool_size=100)
    s = simlsh.signer("very-sparse:density=0.5", bits=64, dim=30, density=0.50)
    assert s.params["density"] == 0.5
    with pytest.raises(ValueError, match="`pool` given twice"):
        simlsh.signer("pooled:pool=1,pool=1", bits=64)
    with pytest.raises(ValueError, match="`pool=x`: expected a whole number"):
        simlsh.signer("pooled", bits=64, pool_size="x")
    with pytest.raises(TypeError, match="the `pooled` signer takes no parameter `foo`"):
        simlsh.signer("pooled", bits=64, foo=1)
    # Written parameters only: the default pool is not given, so not recorded.
    assert simlsh.signer("pooled:", bits=64).params == simlsh.PooledSigner(bits=64).params
    # Every parameter of the spec reaches the signer: the library's signer of the same spec.
    X = np.random.default_rng(0).standard_normal((40, 300)).astype(np.float32)
    for spec, kw in (("very-sparse:nnz=10", {}), ("very-sparse", {"nnz": 10}), ("super-bit:depth=8", {}),
                     ("fwht", {"buckets": 64}), ("pooled:pool=50", {})):
        dim = 300 if spec.split(":")[0] in ("very-sparse", "super-bit") else None
        s = simlsh.signer(spec, bits=64, seed=3, dim=dim, **kw)
        core = _simlsh.Signer.from_spec(s.spec, 64, 3, dim)
        full = spec + "".join(f":{k}={v}" for k, v in kw.items())
        assert s.spec == _simlsh.Signer.from_spec(full, 64, 3, dim).spec(), spec
        np.testing.assert_array_equal(s.sign(X), core.sign_dense_f32(X))
        assert pickle.loads(pickle.dumps(s)) == s


def test_defaults_are_the_librarys(glove):
    """The signers state no default of their own: leaving ``seed`` (and ``distribution``) out
    gives the signer, parameters and bits of the library's defaults (``_simlsh.defaults()``)
    passed explicitly, and the docstrings quote those values."""
    d = _simlsh.defaults()
    seed, dist = d["seed"], d["distribution"]
    assert (seed, dist) == (0, "gaussian")
    X = glove[:100]
    pairs = [
        (simlsh.HyperplaneSigner(dim=50, bits=96), simlsh.HyperplaneSigner(dim=50, bits=96, seed=seed, distribution=dist)),
        (simlsh.HyperplaneSigner(dim=50, bits=96, distribution="super-bit"),
         simlsh.HyperplaneSigner(dim=50, bits=96, seed=seed, distribution="super-bit")),
        (simlsh.signer("rademacher", bits=96, dim=50), simlsh.signer("rademacher", bits=96, seed=seed, dim=50)),
    ] + [(cls(bits=96), cls(bits=96, seed=seed))
         for cls in (simlsh.HashingTrick, simlsh.HashedGaussian, simlsh.FwhtSigner, simlsh.PooledSigner)] + [
        (simlsh.signer(k, bits=96), simlsh.signer(k, bits=96, seed=seed)) for k in ("hashed-gaussian", "pooled:pool=500")
    ]
    for omitted, explicit in pairs:
        assert omitted == explicit and repr(omitted) == repr(explicit) and omitted.info() == explicit.info()
        assert omitted.seed == seed and pickle.loads(pickle.dumps(omitted)) == explicit
        np.testing.assert_array_equal(omitted.sign(X), explicit.sign(X))
        assert not np.array_equal(omitted.sign(X), type(explicit)(**{**explicit.params, "seed": seed + 1}).sign(X))
    assert simlsh.HyperplaneSigner(dim=50, bits=96).distribution == dist
    # The docstrings quote the library's values.
    for fn in (simlsh.Signer, simlsh.signer):
        assert f"default the library's, {seed})" in " ".join(fn.__doc__.split()) or \
            f"defaults to the library's, {seed}." in " ".join(fn.__doc__.split()), fn
    assert f"``\"{dist}\"`` (default the library's, {dist}:" in " ".join(simlsh.HyperplaneSigner.__doc__.split())
