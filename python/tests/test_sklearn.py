"""The scikit-learn transformer: conventions (get/set_params, clone, Pipeline) and equality with
the signers it wraps."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.pipeline import Pipeline

import simlsh
from simlsh.sklearn import SimHashTransformer


def test_pipeline_after_tfidf_equals_signing_the_tfidf_matrix(tweets):
    docs = tweets[:2000]
    pipe = Pipeline([("tfidf", TfidfVectorizer()), ("simhash", SimHashTransformer(bits=128, seed=3))])
    codes = pipe.fit_transform(docs)
    X = TfidfVectorizer().fit_transform(docs)
    np.testing.assert_array_equal(codes, simlsh.HashingTrick(bits=128, seed=3).sign(X))
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
    with pytest.raises(ValueError, match="fitted with 300"):
        t.transform(X[:, :10])
    with pytest.raises(ValueError, match="unknown signer"):
        SimHashTransformer(signer="minhash").fit(X)


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
