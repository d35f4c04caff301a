"""The scikit-learn transformer: scikit-learn's conventions (check_estimator, get/set_params,
clone, Pipeline, DataFrames, feature names, set_output) and equality with the signers it wraps."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils.estimator_checks import check_estimator

import simlsh
from simlsh import _simlsh
from simlsh.sklearn import SimHashTransformer

CONFIGS = [
    {},
    {"signer": "super-bit", "bits": 130, "encode": "bits"},
    {"signer": "pooled", "bits": 200, "seed": 5, "threads": -1},
    {"signer": "very-sparse:density=0.5", "bits": 64, "threads": 1},
]


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults")
def test_check_estimator_passes_every_check(params):
    # The array API check runs only when SciPy's array API mode was on before SciPy was imported
    # (conftest.py sets it); otherwise it would be skipped, not passed.
    assert os.environ.get("SCIPY_ARRAY_API") == "1"
    results = check_estimator(SimHashTransformer(**params), on_skip=None, on_fail=None)
    bad = [(r["check_name"], r["status"], repr(r["exception"])[:300]) for r in results if r["status"] != "passed"]
    assert bad == []
    assert len(results) >= 46


def test_pipeline_after_tfidf_equals_signing_the_tfidf_matrix(tweets):
    docs = tweets[:2000]
    pipe = Pipeline([("tfidf", TfidfVectorizer()), ("simhash", SimHashTransformer(bits=128, seed=3))])
    codes = pipe.fit_transform(docs)
    X = TfidfVectorizer().fit_transform(docs)
    # The default signer is the command line's: the hashed Gaussian.
    np.testing.assert_array_equal(codes, simlsh.HashedGaussian(bits=128, seed=3).sign(X))
    np.testing.assert_array_equal(pipe.transform(docs[:10]), codes[:10])
    # The output goes straight into the indexes and joins.
    idx = simlsh.MultiIndex(bits=128)
    idx.add(codes)
    D, I = idx.search(codes[:5], 1)
    assert D[:, 0].tolist() == [0] * 5
    i, j, d = simlsh.self_join(codes, 10)
    assert np.all(d <= 10)


def test_matrix_signers_learn_the_width_and_check_it(tweets):
    X = CountVectorizer(max_features=300).fit_transform(tweets[:500])  # int64 counts
    t = SimHashTransformer(signer="super-bit", bits=64, seed=1).fit(X)
    assert t.n_features_in_ == 300 and t.signer_.dim == 300
    np.testing.assert_array_equal(
        t.transform(X), simlsh.HyperplaneSigner(dim=300, bits=64, seed=1, distribution="super-bit").sign(X.astype(np.float32))
    )
    with pytest.raises(ValueError, match="X has 10 features, but SimHashTransformer is expecting 300 features"):
        t.transform(X[:, :10])
    with pytest.raises(ValueError, match="unknown signer"):
        SimHashTransformer(signer="minhash").fit(X)


def test_defaults_are_the_librarys():
    t = SimHashTransformer()
    # __init__ stores the parameters as given (scikit-learn's rule); fit resolves them.
    assert t.get_params()["bits"] is None and t.get_params()["signer"] is None and t.get_params()["seed"] is None
    X = np.random.default_rng(0).standard_normal((50, 12)).astype(np.float32)
    t.fit(X)
    d = _simlsh.defaults()
    kind = _simlsh.default_signer("dense", d["bits"])
    assert t.signer_ == simlsh.signer(kind, bits=d["bits"], seed=d["seed"])
    np.testing.assert_array_equal(t.transform(X), simlsh.signer(kind, bits=d["bits"], seed=d["seed"]).sign(X))


def test_fit_validates_parameters():
    X = np.ones((3, 2))
    cases = [
        ({"encode": "words"}, ValueError, "encode"),
        ({"threads": 0}, ValueError, "threads"),
        ({"threads": 2.0}, TypeError, "threads"),
        ({"bits": 0}, ValueError, "bits"),
        ({"bits": "64"}, TypeError, "bits"),
        ({"seed": -1}, ValueError, "seed"),
        ({"signer": 3}, TypeError, "signer"),
        ({"signer": "pooled", "depth": 4}, TypeError, "depth"),
        ({"tokenizer": "words"}, TypeError, "tokenizer"),
    ]
    for params, cls, msg in cases:
        t = SimHashTransformer(**params)  # __init__ validates nothing
        with pytest.raises(cls, match=msg):
            t.fit(X)
        assert not hasattr(t, "signer_")
    with pytest.raises(ValueError, match="needs a matrix input"):
        SimHashTransformer(signer="gaussian").fit(["a text"])


def test_dataframe_input_gives_the_arrays_codes_and_feature_names():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((300, 6))
    df = pd.DataFrame(A, columns=list("abcdef"))
    for params in ({"bits": 192, "seed": 2}, {"signer": "gaussian", "bits": 64, "seed": 2}):
        t = SimHashTransformer(**params).fit(df)
        assert t.n_features_in_ == 6 and t.feature_names_in_.tolist() == list("abcdef")
        np.testing.assert_array_equal(t.transform(df), SimHashTransformer(**params).fit(A).transform(A))
    # The signers read DataFrames too (their values), not as an Arrow struct column.
    s = simlsh.HashedGaussian(bits=64, seed=1)
    np.testing.assert_array_equal(s.sign(df), s.sign(A))
    # Columns renamed or reordered are refused as scikit-learn refuses them.
    with pytest.raises(ValueError, match="feature names"):
        t.transform(df[list("fedcba")])
    # A Series of documents is text.
    docs = pd.Series(["the quick brown fox", "the lazy dog", "a quick brown dog"])
    t = SimHashTransformer(bits=64).fit(docs)
    codes = simlsh.HashedGaussian(bits=64, seed=0).sign(docs.tolist())
    np.testing.assert_array_equal(t.transform(docs), codes)
    import pyarrow as pa

    for same in (docs.astype("string"), docs.to_numpy(dtype=str), pa.array(docs.tolist())):
        np.testing.assert_array_equal(SimHashTransformer(bits=64).fit_transform(same), codes)


def test_feature_names_out_and_set_output_pandas():
    A = np.random.default_rng(5).standard_normal((40, 5)).astype(np.float32)
    df = pd.DataFrame(A, columns=[f"x{i}" for i in range(5)], index=np.arange(100, 140))
    t = SimHashTransformer(bits=130, seed=1).fit(df)
    assert t.get_feature_names_out().tolist() == ["simhashtransformer0", "simhashtransformer1", "simhashtransformer2"]
    with pytest.raises(ValueError, match="input_features"):
        t.get_feature_names_out(["y0", "y1", "y2", "y3", "y4"])
    out = t.set_output(transform="pandas").transform(df)
    assert isinstance(out, pd.DataFrame)
    assert out.columns.tolist() == t.get_feature_names_out().tolist() and out.index.tolist() == list(range(100, 140))
    np.testing.assert_array_equal(out.to_numpy(), SimHashTransformer(bits=130, seed=1).fit(A).transform(A))
    b = SimHashTransformer(bits=130, seed=1, encode="bits").set_output(transform="pandas")
    out = b.fit_transform(df)
    assert out.shape == (40, 130) and out.columns[-1] == "simhashtransformer129"
    with pytest.raises(Exception, match="not fitted"):
        SimHashTransformer().get_feature_names_out()


def _bits_by_shifts(codes: np.ndarray, bits: int) -> np.ndarray:
    j = np.arange(bits)
    words = codes[:, j // 64]
    return ((words >> (j % 64).astype(np.uint64)) & np.uint64(1)).astype(np.uint8)


def test_bits_output_unpacks_the_packed_words(tweets):
    X = TfidfVectorizer().fit_transform(tweets[:500])
    for bits in (1, 64, 100, 256):
        packed = SimHashTransformer(bits=bits, seed=7).fit_transform(X)
        unpacked = SimHashTransformer(bits=bits, seed=7, encode="bits").fit_transform(X)
        assert unpacked.shape == (500, bits) and unpacked.dtype == np.uint8
        np.testing.assert_array_equal(unpacked, _bits_by_shifts(packed, bits))
        # The same as NumPy's bit order on the little-endian bytes of each word.
        ref = np.unpackbits(packed.astype("<u8").view(np.uint8), axis=1, bitorder="little")[:, :bits]
        np.testing.assert_array_equal(unpacked, ref)
        # Hamming distances are L1 distances of the bits.
        np.testing.assert_array_equal(
            simlsh.hamming(packed[:50], packed[50:100]),
            np.abs(unpacked[:50].astype(np.int64) - unpacked[50:100]).sum(axis=1),
        )


def test_bits_feed_a_scikit_learn_estimator():
    # Two classes of directions around two centres: the signature bits separate them.
    rng = np.random.default_rng(0)
    c = rng.standard_normal((2, 30))
    y = rng.integers(0, 2, 400)
    X = c[y] + 0.3 * rng.standard_normal((400, 30))
    pipe = make_pipeline(SimHashTransformer(bits=128, seed=3, encode="bits"), LogisticRegression(max_iter=1000))
    pipe.fit(X[:300], y[:300])
    assert pipe.score(X[300:], y[300:]) >= 0.95


def test_threads_all_cores_gives_the_codes_of_one_thread(tweets):
    X = TfidfVectorizer().fit_transform(tweets[:3000])
    one = SimHashTransformer(bits=256, seed=1, threads=1).fit_transform(X)
    for threads in (-1, -2, None, 2):
        np.testing.assert_array_equal(SimHashTransformer(bits=256, seed=1, threads=threads).fit_transform(X), one)
    docs = tweets[:3000]
    one = SimHashTransformer(bits=128, threads=1).fit_transform(docs)
    np.testing.assert_array_equal(SimHashTransformer(bits=128, threads=-1).fit_transform(docs), one)
    # The binding reads threads as scikit-learn's n_jobs everywhere.
    i1, j1, d1 = simlsh.self_join(one, 20, threads=1)
    i2, j2, d2 = simlsh.self_join(one, 20, threads=-1)
    assert len(i1) > 0
    for a, b in ((i1, i2), (j1, j2), (d1, d2)):
        np.testing.assert_array_equal(a, b)


def test_text_fit_learns_the_idf_and_transform_applies_it(tweets):
    docs = tweets[:1000]
    t = SimHashTransformer(bits=128, seed=2).fit(docs)
    assert t.tokenizer_ is not None and t.tokenizer_.is_fitted and t.tokenizer is None
    codes = t.transform(docs)
    # TF-IDF fitted on the corpus, as the command line and Signer.sign do on the same documents.
    np.testing.assert_array_equal(codes, simlsh.HashedGaussian(bits=128, seed=2).sign(docs))
    # A later batch is signed with the corpus's table, not one fitted on the batch.
    np.testing.assert_array_equal(t.transform(docs[:10]), codes[:10])
    assert not np.array_equal(simlsh.HashedGaussian(bits=128, seed=2).sign(docs[:10]), codes[:10])
    with pytest.raises(ValueError, match="fitted on documents"):
        t.transform(sp.csr_matrix(np.ones((2, 3), np.float32)))
    assert t.transform([]).shape == (0, 2)


def test_params_clone_and_pickle():
    t = SimHashTransformer(bits=256, signer="pooled", seed=9, pool_size=500, threads=1)
    assert t.get_params()["pool_size"] == 500
    t.set_params(bits=64)
    c = clone(t)
    assert c.get_params() == t.get_params() and not hasattr(c, "signer_")
    docs = ["a b c", "a b d", "x y z"]
    tok = simlsh.Tokenizer(ngram=1)
    t.set_params(tokenizer=tok)
    out = t.fit_transform(docs)
    np.testing.assert_array_equal(out, simlsh.PooledSigner(bits=64, seed=9, pool_size=500).sign(docs, tokenizer=tok))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(t)).transform(docs), out)
    with pytest.raises(Exception, match="not fitted"):
        SimHashTransformer().transform(docs)
    # Fitting on a matrix after documents forgets nothing it should not, and keeps nothing stale.
    t.fit(np.ones((2, 3)))
    assert t.n_features_in_ == 3 and t.tokenizer_ is None
    t.fit(docs)
    assert not hasattr(t, "n_features_in_")
