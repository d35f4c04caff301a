"""scikit-learn: a transformer from feature matrices (or texts) to signatures.

:class:`SimHashTransformer` follows scikit-learn's conventions (``fit``/``transform``,
``get_params``/``set_params``, ``clone``, ``n_features_in_`` and ``feature_names_in_``,
``get_feature_names_out``, ``set_output``; it passes ``check_estimator``), drops into a
``Pipeline`` after ``TfidfVectorizer`` or ``CountVectorizer``, and outputs ``uint64`` codes
``(N, words)`` that the indexes and joins take directly, or with ``encode="bits"`` the bits
themselves, ``(N, bits)`` 0/1 features for a scikit-learn estimator.

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
>>> pipe.set_params(simhashtransformer__encode="bits").fit_transform(docs).shape
(3, 64)
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _simlsh
from .signers import HASHED, Signer, _is_sparse, signer
from .text import Tokenizer

__all__ = ["SimHashTransformer"]

#: The values of ``encode``.
ENCODINGS = ("packed", "bits")


class SimHashTransformer(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random-hyperplane signatures as a scikit-learn transformer.

    Parameters
    ----------
    bits : int or None, default None
        Signature width ``f``; None is the library's default width
        (``simlsh._simlsh.defaults()["bits"]``, as ``simlsh sign``).
    signer : str or None, default None
        The signer's specification, as the command line's ``--signer``: ``hashed-gaussian``,
        ``hashing-trick`` or ``pooled`` (features hashed: any number of columns, columns are
        feature ids) or ``gaussian``, ``super-bit``, ``rademacher``, ``very-sparse`` (an
        explicit matrix of ``n_features_in_`` rows, drawn at ``fit``), optionally with
        parameters (``super-bit:depth=16``). None is the library's default kind for the input
        (dense, sparse or text) and width (``simlsh._simlsh.default_signer``), as the command
        line's.
    seed : int or None, default None
        The seed (None: the library's default seed): the same seed and parameters give the
        same signatures as :mod:`simlsh` and the command line.
    density, depth, pool_size : default None
        Parameters of the very-sparse, super-bit and pooled signers (None: theirs).
    tokenizer : simlsh.Tokenizer or None
        For text input (a list, 1-D array or Series of documents): how documents become
        features (None: ``Tokenizer()``, the command line's); a TF-IDF tokenizer without a
        table is fitted on the documents given to ``fit``, and ``transform`` uses that table.
    encode : {"packed", "bits"}, default "packed"
        ``"packed"``: ``uint64`` codes ``(N, words)``, ``words = ceil(bits / 64)``, bit ``j`` in
        bit ``j % 64`` of word ``j // 64`` (what the indexes and joins take). ``"bits"``: the
        same bits unpacked, a ``uint8`` 0/1 matrix ``(N, bits)`` whose column ``j`` is bit
        ``j``, to feed a scikit-learn estimator.
    threads : int or None, default None
        Threads for signing, read as scikit-learn's ``n_jobs``: None or ``-1`` all cores,
        ``-2`` all but one. The signatures do not depend on it.

    Attributes
    ----------
    signer_ : simlsh.Signer
        The signer built by ``fit``.
    n_features_in_ : int
        Columns seen by ``fit`` (matrix input only; text input has none).
    tokenizer_ : simlsh.Tokenizer or None
        The tokenizer of text input, its TF-IDF table fitted by ``fit`` on the documents when
        it had none (None for matrices and token lists).
    feature_names_in_ : ndarray of str
        Column names seen by ``fit``, when ``X`` was a DataFrame with string column names.

    Matrices (NumPy arrays, SciPy sparse matrices, pandas DataFrames, anything
    ``sklearn.utils.check_array`` takes) are validated as scikit-learn does: finite values,
    at least one row and one column to fit, ``float32`` or ``float64`` (``float32`` and
    ``float64`` data are read in place, other numbers converted to ``float32``). Lists or 1-D
    arrays of documents, lists of token lists and ``pyarrow`` arrays are signed as
    :meth:`simlsh.Signer.sign` signs them.
    """

    def __init__(
        self,
        bits: int | None = None,
        signer: str | None = None,
        seed: int | None = None,
        density: float | None = None,
        depth: int | None = None,
        pool_size: int | None = None,
        tokenizer: Tokenizer | None = None,
        encode: str = "packed",
        threads: int | None = None,
    ):
        self.bits = bits
        self.signer = signer
        self.seed = seed
        self.density = density
        self.depth = depth
        self.pool_size = pool_size
        self.tokenizer = tokenizer
        self.encode = encode
        self.threads = threads

    def fit(self, X, y=None):
        """Validates the parameters and ``X``, and builds the signer (for the matrix signers,
        of ``X``'s number of columns). ``y`` is ignored."""
        self._check_params()
        kind = _input_kind(X)
        if kind == "text":
            if len(X) == 0:
                raise ValueError("0 documents (at least one is required to fit)")
            for a in ("n_features_in_", "feature_names_in_"):
                if hasattr(self, a):
                    delattr(self, a)
        else:
            X = validate_data(self, X, accept_sparse="csr", dtype=(np.float32, np.float64))
            kind = "sparse" if _is_sparse(X) else "dense"
        d = _simlsh.defaults()
        bits = d["bits"] if self.bits is None else self.bits
        spec = self.signer if self.signer is not None else _simlsh.default_signer(kind, bits)
        hashed = _simlsh.Signer.parse_spec(spec)[0] in HASHED
        if kind == "text" and not hashed:
            raise ValueError(
                f"the {spec} signer holds a matrix of the input's columns and needs a matrix "
                "input, not documents (use a hashed signer: " + ", ".join(HASHED) + ")"
            )
        self.signer_: Signer = signer(
            spec,
            bits=bits,
            seed=d["seed"] if self.seed is None else self.seed,
            dim=None if hashed else self.n_features_in_,
            **self._signer_params(),
        )
        self.tokenizer_: Tokenizer | None = self._fit_tokenizer(X) if kind == "text" else None
        self._n_features_out = self.signer_.bits if self.encode == "bits" else self.signer_.words
        return self

    def transform(self, X) -> np.ndarray:
        """The signatures of ``X``'s rows: ``uint64`` codes ``(N, words)``, or with
        ``encode="bits"`` a ``uint8`` 0/1 matrix ``(N, bits)``."""
        check_is_fitted(self, "signer_")
        text = _input_kind(X) == "text"
        if text == hasattr(self, "n_features_in_"):
            fitted = f"a matrix of {self.n_features_in_} columns, not documents" if text else "documents, not a matrix"
            raise ValueError(f"{type(self).__name__} was fitted on {fitted}")
        if not text:
            X = validate_data(
                self, X, accept_sparse="csr", dtype=(np.float32, np.float64), reset=False, ensure_min_samples=0
            )
        elif type(X).__module__.startswith("pandas"):
            X = X.to_numpy()  # a Series of documents
        codes = self.signer_.sign(X, tokenizer=self.tokenizer_, threads=self.threads)
        if self.encode == "bits":
            return unpack_bits(codes, self.signer_.bits)
        return codes

    def _check_params(self) -> None:
        """scikit-learn validates parameters in ``fit``, not in ``__init__``: the ones the
        signer does not check itself."""
        if self.signer is not None and not isinstance(self.signer, str):
            raise TypeError(f"signer must be a str (a signer's specification) or None, got {type(self.signer).__name__}")
        if self.encode not in ENCODINGS:
            raise ValueError(f"invalid parameter `encode`: {self.encode!r} (one of {', '.join(ENCODINGS)})")
        if self.tokenizer is not None and not isinstance(self.tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a simlsh.Tokenizer or None, got {type(self.tokenizer).__name__}")
        t = self.threads
        if t is not None and (isinstance(t, bool) or not isinstance(t, numbers.Integral)):
            raise TypeError(f"threads must be an integer or None, got {type(t).__name__}")
        if t == 0:
            raise ValueError("invalid parameter `threads`: 0 (at least 1, or -1 or None for all cores)")

    def _fit_tokenizer(self, X) -> Tokenizer | None:
        """The tokenizer of documents ``X`` (``tokenizer``, default ``Tokenizer()``), its TF-IDF
        table fitted on them when it has none (as the command line fits on its input); None for
        token lists, which need none."""
        tok = self.tokenizer if self.tokenizer is not None else Tokenizer()
        if type(X).__module__.startswith("pyarrow"):
            from .arrow import _fitted

            return _fitted(tok, X)
        if type(X).__module__.startswith("pandas"):
            X = X.to_numpy()
        if not isinstance(X[0], str):
            if self.tokenizer is not None:
                raise ValueError("a tokenizer applies to documents, not to token lists")
            return None
        return tok if tok.is_fitted else tok.fit(X, threads=self.threads)

    def _signer_params(self) -> dict:
        p = {}
        if self.density is not None:
            p["density"] = self.density
        if self.depth is not None:
            p["depth"] = self.depth
        if self.pool_size is not None:
            p["pool_size"] = self.pool_size
        return p

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags


def unpack_bits(codes: np.ndarray, bits: int) -> np.ndarray:
    """The bits of ``uint64`` codes ``(N, words)`` as a ``uint8`` 0/1 matrix ``(N, bits)``:
    column ``j`` is bit ``j % 64`` of word ``j // 64``.

    >>> unpack_bits(np.array([[0b1011]], dtype=np.uint64), 4).tolist()
    [[1, 1, 0, 1]]
    """
    codes = np.ascontiguousarray(codes, dtype="<u8")
    return np.unpackbits(codes.view(np.uint8), axis=1, count=bits, bitorder="little")


def _input_kind(X) -> str:
    """``"text"`` for what :meth:`simlsh.Signer.sign` reads as documents or tokens (lists of
    str or of token lists, 1-D arrays or Series of str, pyarrow arrays); ``"matrix"`` for
    everything else, which scikit-learn's ``check_array`` validates."""
    if isinstance(X, (list, tuple)):
        first = next((r for r in X if not (isinstance(r, (list, tuple)) and len(r) == 0)), None)
        if first is None or isinstance(first, str):  # no rows, or token lists without tokens
            return "text"
        if isinstance(first, (list, tuple)) and isinstance(first[0], str):
            return "text"
        return "matrix"
    mod = type(X).__module__
    if mod.startswith("pyarrow"):
        return "text"
    if isinstance(X, np.ndarray) or mod.startswith("pandas"):
        dtype = getattr(X, "dtype", None)  # a DataFrame has dtypes, a Series a dtype
        if X.ndim == 1 and dtype is not None and dtype.kind in "USO":  # pandas' strings are "O"
            return "text"
    return "matrix"
