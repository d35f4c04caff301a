"""scikit-learn: a transformer from feature matrices (or texts) to signatures.

:class:`SimHashTransformer` follows scikit-learn's conventions (``fit``/``transform``,
``get_params``/``set_params``, ``clone``), drops into a ``Pipeline`` after
``TfidfVectorizer`` or ``CountVectorizer``, and outputs ``uint64`` codes ``(N, words)`` that
the indexes and joins take directly.

>>> from sklearn.feature_extraction.text import TfidfVectorizer
>>> from sklearn.pipeline import make_pipeline
>>> import simlsh
>>> from simlsh.sklearn import SimHashTransformer
>>> docs = ["the quick brown fox", "the quick brown fox jumps", "lorem ipsum dolor sit"]
>>> pipe = make_pipeline(TfidfVectorizer(), SimHashTransformer(bits=64, seed=1))
>>> codes = pipe.fit_transform(docs)
>>> i, j, d = simlsh.self_join(codes, radius=20)
>>> (0, 1) in zip(i.tolist(), j.tolist())
True
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .signers import KINDS, Signer, signer
from .text import Tokenizer

__all__ = ["SimHashTransformer"]


class SimHashTransformer(TransformerMixin, BaseEstimator):
    """Random-hyperplane signatures as a scikit-learn transformer.

    Parameters
    ----------
    bits : int, default 64
        Signature width ``f``.
    signer : str, default ``"hashing-trick"``
        ``hashing-trick`` or ``pooled`` (features hashed: any number of columns, columns are
        feature ids) or ``gaussian``, ``super-bit``, ``rademacher``, ``very-sparse`` (an
        explicit matrix of ``n_features_in_`` rows, drawn at ``fit``).
    seed : int, default 0
        The seed: the same seed and parameters give the same signatures as
        :mod:`simlsh` and the command line.
    density, depth, pool_size :
        Parameters of the very-sparse, super-bit and pooled signers (default theirs).
    tokenizer : simlsh.Tokenizer or None
        For text input (a list of documents): how documents become features.
    threads : int or None
        Threads for signing (default all cores).

    Attributes
    ----------
    signer_ : simlsh.Signer
        The signer built by ``fit``.
    n_features_in_ : int
        Columns seen by ``fit`` (matrix input only).

    Integer sparse matrices (``CountVectorizer``'s counts) are converted to ``float32``
    (a copy of their data); float matrices are read in place.
    """

    def __init__(
        self,
        bits: int = 64,
        signer: str = "hashing-trick",
        seed: int = 0,
        density: float | None = None,
        depth: int | None = None,
        pool_size: int | None = None,
        tokenizer: Tokenizer | None = None,
        threads: int | None = None,
    ):
        self.bits = bits
        self.signer = signer
        self.seed = seed
        self.density = density
        self.depth = depth
        self.pool_size = pool_size
        self.tokenizer = tokenizer
        self.threads = threads

    def _params(self) -> dict:
        p = {}
        if self.density is not None:
            p["density"] = self.density
        if self.depth is not None:
            p["depth"] = self.depth
        if self.pool_size is not None:
            p["pool_size"] = self.pool_size
        return p

    def fit(self, X, y=None):
        """Builds the signer (for the matrix signers, of ``X``'s number of columns)."""
        if self.signer not in KINDS:
            raise ValueError(f"unknown signer `{self.signer}` ({', '.join(KINDS)})")
        dim = None
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2:
            self.n_features_in_ = int(shape[1])
            if self.signer not in ("hashing-trick", "pooled"):
                dim = self.n_features_in_
        elif self.signer not in ("hashing-trick", "pooled"):
            raise ValueError(f"the {self.signer} signer needs a matrix input (its number of columns)")
        self.signer_: Signer = signer(self.signer, bits=self.bits, seed=self.seed, dim=dim, **self._params())
        return self

    def transform(self, X) -> np.ndarray:
        """The signatures of ``X``'s rows: ``(N, words)`` ``uint64``."""
        check_is_fitted(self, "signer_")
        X = _floats(X)
        if hasattr(self, "n_features_in_") and getattr(X, "ndim", None) == 2 and X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} was fitted with {self.n_features_in_}"
            )
        return self.signer_.sign(X, tokenizer=self.tokenizer, threads=self.threads)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags


def _floats(X):
    """Integer and boolean matrices (counts, indicator features) as ``float32``; everything
    else as it is."""
    if isinstance(X, np.ndarray) and X.dtype.kind in "iub":
        return X.astype(np.float32)
    if type(X).__module__.startswith("scipy.sparse") and X.dtype.kind in "iub":
        return X.astype(np.float32)
    return X
