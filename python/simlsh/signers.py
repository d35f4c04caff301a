"""Signers: vectors, sparse rows, tokens and texts in, ``f``-bit signatures out.

Every signer computes ``V = sum_i x_i * r_i`` and sets bit ``j`` to ``V[j] > 0``; they differ
in the columns ``r_i`` (see the Rust library's ``signers`` module):

=====================  ===========================================  ==================
signer                 projection                                   memory
=====================  ===========================================  ==================
HyperplaneSigner       explicit ``D x f`` matrix: ``gaussian``,       ``4 D f`` bytes
                       ``super-bit``, ``rademacher`` (bits),
                       ``very-sparse``
HashingTrick           each feature hashed to ``f`` bits (XXH3)     none
PooledSigner           hashed picks from a pool of Gaussians        ``4 m`` bytes
=====================  ===========================================  ==================

The same seed and parameters give the same signatures, bit for bit, as the Rust library and
the command line (``simlsh sign --signer ... --bits ... --seed ...``) on every platform and
thread count. Signatures are NumPy ``uint64`` arrays of shape ``(N, words)``,
``words = ceil(bits / 64)``; bit ``j`` is bit ``j % 64`` of word ``j // 64``.

>>> import numpy as np, simlsh
>>> s = simlsh.HyperplaneSigner(dim=3, bits=64, seed=1, distribution="super-bit")
>>> codes = s.sign(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]], dtype=np.float32))
>>> codes.shape, codes.dtype.name, int(codes[0, 0] == codes[1, 0])
((2, 1), 'uint64', 1)
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

import numpy as np

from . import _simlsh
from ._codes import shift_rows
from .text import Tokenizer, _texts

__all__ = ["Signer", "HyperplaneSigner", "HashingTrick", "HashedGaussian", "FwhtSigner", "PooledSigner", "signer", "hamming", "KINDS"]

#: Signer kinds by name, as the command line's ``--signer`` and ``Signer.info()["kind"]``: the
#: library's table (``signers::kinds()``).
KINDS = tuple(k["name"] for k in _simlsh.signer_kinds())
#: The kinds that hash their features (no matrix, any dimension, ids or tokens).
HASHED = tuple(k["name"] for k in _simlsh.signer_kinds() if not k["needs_dim"])
#: The kinds that hold an explicit ``dim x bits`` matrix (``HyperplaneSigner``'s distributions).
_MATRICES = tuple(k for k in KINDS if k not in HASHED)


#: The library's defaults (``seed``, ``distribution``, ...): Python states none of its own.
_DEFAULTS = _simlsh.defaults()


class Signer:
    """Base class of the signers: :meth:`sign`, :meth:`info`, pickling by parameters.

    Every signer takes ``seed`` (default the library's, 0); its parameters record the
    seed used.
    """

    __slots__ = ("_core", "_params")

    _core: _simlsh.Signer
    _params: dict[str, Any]

    @property
    def bits(self) -> int:
        """Signature width ``f``."""
        return self._core.bits

    @property
    def dim(self) -> int | None:
        """Input dimension ``D``, or None when any feature id is accepted (hashed features)."""
        return self._core.dim

    @property
    def seed(self) -> int:
        """The seed."""
        return self._params["seed"]

    @property
    def words(self) -> int:
        """``uint64`` words per signature, ``ceil(bits / 64)``."""
        return (self.bits + 63) // 64

    @property
    def params(self) -> dict[str, Any]:
        """The parameters, as given to the constructor (with the seed and distribution used
        when left out)."""
        return dict(self._params)

    @property
    def spec(self) -> str:
        """The signer's kind and parameters in the library's text form (``super-bit:depth=32``,
        ``pooled:pool=10000``; width and seed are separate), as ``simlsh.signer`` and the
        command line's ``--signer`` take it."""
        return self._core.spec()

    def info(self) -> dict[str, Any]:
        """What the signer is and costs: ``kind``, ``bits``, ``dim``, ``seed``, ``bytes`` (memory
        of its projection data), ``adds_per_nonzero``, ``hash_words_per_nonzero`` and
        ``params``."""
        return self._core.info()

    def sign(
        self,
        X,
        *,
        tokenizer: Tokenizer | None = None,
        weights: Sequence[Sequence[float]] | None = None,
        threads: int | None = None,
    ) -> np.ndarray:
        """Signs every row of ``X``; returns a ``uint64`` array of shape ``(N, words)``.

        ``X`` may be:

        - a NumPy 2-D ``float32`` or ``float64`` array, C or Fortran order or strided
          (``float32`` is read in place; ``float64`` is converted chunk by chunk);
        - a SciPy sparse matrix or array: CSR with ``int32``/``int64`` indices read in place
          (indices must be sorted without duplicates: ``X.sort_indices()``,
          ``X.sum_duplicates()``); CSC, COO and other formats are converted to CSR (a copy);
          columns are feature ids;
        - a list of ``str`` documents, tokenised by ``tokenizer`` (default ``Tokenizer()``);
        - a list of token lists (each a weighted bag of string features; ``weights`` a list of
          float lists of the same shapes, default weight 1);
        - a ``pyarrow`` array or chunked array: strings (documents), ``list<float>`` or
          ``fixed_size_list<float>`` (dense rows), ``list<string>`` (tokens);
        - a pandas DataFrame (its values, as ``DataFrame.to_numpy()``: float columns) or Series
          (of documents).

        Integer or other dtypes raise ``TypeError`` (convert with ``X.astype(np.float32)``);
        NaN, infinities, values beyond ``2**64`` in magnitude (whose projections could
        overflow ``float32``; scale such rows, the signature depends only on the direction),
        ``float64`` values ``float32`` cannot hold (beyond its range, or nonzero values it
        rounds to 0), wrong widths, ragged rows and bad sparse structure raise ``ValueError``
        naming the row and column. Runs without the GIL on ``threads`` threads (default, or
        ``-1``: all cores; ``-2`` all but one; more than the cores are clamped to them), in chunks between which
        Ctrl-C is honoured; the result does not depend on the thread count.
        """
        return _sign(self._core, X, tokenizer, weights, threads)

    def __reduce__(self):
        return (_signer_from_params, (type(self).__name__, self._params))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Signer):
            return NotImplemented
        return type(self) is type(other) and self._params == other._params

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self._params.items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"


class HyperplaneSigner(Signer):
    """An explicit random-hyperplane signer: a seeded ``dim x bits`` matrix.

    distribution : ``"gaussian"`` (default the library's, gaussian: N(0, 1) entries,
        Charikar 2002), ``"super-bit"``
        (Gaussian orthonormalised in batches of ``depth``, default ``min(dim, bits)``: lower
        estimation error), ``"rademacher"`` (``+-1`` stored as bits, 32x smaller),
        ``"very-sparse"`` (``+-1`` with probability ``density``, default ``1/sqrt(dim)``, or
        with ``nnz``, the expected nonzeros of an input row, high enough that under 1% of such
        a row's projections are 0).

    >>> HyperplaneSigner(dim=384, bits=256, seed=7).info()["bytes"]
    393216
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        dim: int,
        bits: int,
        seed: int | None = None,
        distribution: str | None = None,
        density: float | None = None,
        depth: int | None = None,
        nnz: int | None = None,
    ):
        if distribution is None:
            distribution = _DEFAULTS["distribution"]
        self._params = dict(dim=dim, bits=bits, seed=seed, distribution=distribution)
        given = {k: v for k, v in (("density", density), ("depth", depth), ("nnz", nnz)) if v is not None}
        self._params.update(given)
        if distribution not in _MATRICES:
            raise ValueError(
                f"invalid parameter `distribution`: unknown distribution `{distribution}` ({', '.join(_MATRICES)})"
            )
        spec = distribution + (":" + ",".join(f"{k}={v!r}" for k, v in given.items()) if given else "")
        self._core = _simlsh.Signer.from_spec(spec, _count(bits, "bits"), _seed(seed), _count(dim, "dim"))
        self._params["seed"] = self._core.info()["seed"]

    @property
    def distribution(self) -> str:
        """The matrix's distribution."""
        return self._params["distribution"]


class _Hashed(Signer):
    """A signer of hashed features (no matrix, any dimension): its kind and ``bits``, ``seed``."""

    __slots__ = ()
    _KIND: str

    def __init__(self, *, bits: int, seed: int | None = None):
        self._core = _simlsh.Signer.from_spec(self._KIND, _count(bits, "bits"), _seed(seed))
        self._params = dict(bits=bits, seed=self._core.info()["seed"])


class HashingTrick(_Hashed):
    """The hashing trick (Manku, Jain & Das Sarma 2007): each feature (an integer id, i.e. a
    sparse column, or a string token) hashed to ``bits`` bits by seeded XXH3, ``V[j] += w`` or
    ``-= w``. No matrix, any dimension; the fastest signer per nonzero.

    >>> s = HashingTrick(bits=64, seed=1)
    >>> a, b = s.sign([["the", "quick", "brown", "fox"], ["the", "quick", "brown", "dog"]])
    >>> int(hamming(a, b)) < 32
    True
    """

    __slots__ = ()
    _KIND = "hashing-trick"


class HashedGaussian(_Hashed):
    """The hashed Gaussian signer: no matrix, each feature (an integer id or a string token)
    hashed to a column of quantised Gaussian values, so that a few heavy features shared by two
    rows do not decide their bits the way the hashing trick's ``±1`` columns let them. Its
    collision law is that of Gaussian hyperplanes (``1 - θ/π``) within a few thousandths, where
    the hashing trick over-collides by up to 0.18 on rows sharing a dominant coordinate; it
    costs about 1.4× the hashing trick per nonzero. The command line's default signer.

    >>> s = HashedGaussian(bits=128, seed=1)
    >>> a, b = s.sign([["near", "duplicate", "documents"], ["near", "duplicate", "documents"]])
    >>> int(hamming(a, b))
    0
    """

    __slots__ = ()
    _KIND = "hashed-gaussian"


class FwhtSigner(Signer):
    """Wide signatures at ``nnz + f·log d`` per row: features (integer ids or string tokens)
    hashed into ``buckets`` signed buckets, then fast Walsh–Hadamard rotations with random signs
    (``H·D3·H·D2·H·D1``, as FJLT and FALCONN). About 4× faster than :class:`HashedGaussian` at
    4,096 bits on rows of ~120 features; ``buckets`` (a power of two) defaults to the library's.

    >>> s = FwhtSigner(bits=1024, seed=1)
    >>> a, b = s.sign([["the", "quick", "brown", "fox"], ["the", "quick", "brown", "dog"]])
    >>> int(hamming(a, b)) < 512
    True
    """

    __slots__ = ()
    _KIND = "fwht"

    def __init__(self, *, bits: int, seed: int | None = None, buckets: int | None = None):
        # The number of buckets defaults to the library's (its `fwht` spec).
        spec = "fwht" if buckets is None else f"fwht:buckets={_count(buckets, 'buckets')}"
        self._core = _simlsh.Signer.from_spec(spec, _count(bits, "bits"), _seed(seed))
        seed = self._core.info()["seed"]
        self._params = dict(bits=bits, seed=seed) if buckets is None else dict(bits=bits, seed=seed, buckets=buckets)


class PooledSigner(Signer):
    """Pooled random values (Van Durme & Lall 2010): the entry for (feature, bit) is a hashed
    pick from a pool of ``pool_size`` seeded Gaussians; features are ids or tokens, memory is
    ``4 * pool_size`` bytes whatever the dimension."""

    __slots__ = ()
    _KIND = "pooled"

    def __init__(self, *, bits: int, seed: int | None = None, pool_size: int | None = None):
        # The pool's size defaults to the library's (its `pooled` spec).
        spec = "pooled" if pool_size is None else f"pooled:pool={_count(pool_size, 'pool_size')}"
        self._core = _simlsh.Signer.from_spec(spec, _count(bits, "bits"), _seed(seed))
        self._params = dict(bits=bits, seed=self._core.info()["seed"], pool_size=int(self._core.info()["params"]["pool"]))


def signer(spec: str, *, bits: int, seed: int | None = None, dim: int | None = None, **params: Any) -> Signer:
    """A signer from its specification, the text form shared with the command line
    (``--signer``) and the Rust library's ``SignerSpec``: a kind, ``gaussian``, ``super-bit``,
    ``rademacher``, ``very-sparse`` (these need ``dim``), ``hashing-trick``,
    ``hashed-gaussian``, ``fwht`` or ``pooled``,
    optionally with parameters (``super-bit:depth=32``, ``very-sparse:density=0.01``,
    ``pooled:pool=10000``); parameters may also be given by keyword (``depth``, ``density``,
    ``nnz``, ``pool_size``, ``buckets``), a parameter in both only with the same value.
    ``seed`` defaults to the library's, 0.

    >>> signer("hashing-trick", bits=128, seed=3)
    HashingTrick(bits=128, seed=3)
    >>> signer("super-bit:depth=16", bits=64, dim=300).params["depth"]
    16
    """
    # The library merges the keywords with the spec's parameters (one value each).
    kind, given = _simlsh.Signer.parse_spec(spec, params)
    if kind in _MATRICES:
        if dim is None:
            raise ValueError(f"the {kind} signer holds a dim x bits matrix and needs dim, the input dimension")
        return HyperplaneSigner(dim=dim, bits=bits, seed=seed, distribution=kind, **given)
    if dim is not None:
        raise ValueError(f"the {kind} signer hashes its features and takes no dim")
    return _HASHED_CLASSES[kind](bits=bits, seed=seed, **given)


#: The class of each hashed kind, by the kind it declares.
_HASHED_CLASSES: dict[str, Any] = {c._KIND: c for c in (HashingTrick, HashedGaussian, FwhtSigner, PooledSigner)}


def _signer_from_params(cls_name: str, params: dict[str, Any]) -> Signer:
    cls = {"HyperplaneSigner": HyperplaneSigner, "HashingTrick": HashingTrick,
           "HashedGaussian": HashedGaussian, "FwhtSigner": FwhtSigner, "PooledSigner": PooledSigner}[cls_name]
    return cls(**params)


def _count(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if v < 1:
        raise ValueError(f"invalid parameter `{name}`: must be at least 1, got {v}")
    return int(v)


def _seed(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(v).__name__}")
    if not 0 <= v < 2**64:
        raise ValueError(f"invalid parameter `seed`: must be in 0..2^64, got {v}")
    return int(v)


def _is_sparse(X) -> bool:
    mod = type(X).__module__
    if not mod.startswith("scipy.sparse"):
        return False
    import scipy.sparse as sp

    return sp.issparse(X)


def _sign(core: _simlsh.Signer, X, tokenizer, weights, threads) -> np.ndarray:
    if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a simlsh.Tokenizer, got {type(tokenizer).__name__}")
    if isinstance(X, np.ndarray):
        if X.dtype.kind in "US" or X.dtype == object:
            return _sign_list(core, X.tolist(), tokenizer, weights, threads)
        return _sign_dense(core, X, threads)
    if _is_sparse(X):
        return _sign_sparse(core, X, threads)
    mod = type(X).__module__
    # pandas before Arrow: a DataFrame exports an Arrow stream too, of one struct column.
    if mod.startswith("pandas"):
        return _sign(core, X.to_numpy(), tokenizer, weights, threads)
    if mod.startswith("pyarrow") or hasattr(X, "__arrow_c_array__") or hasattr(X, "__arrow_c_stream__"):
        from .arrow import sign_arrow

        return sign_arrow(core, X, tokenizer=tokenizer, threads=threads)
    if isinstance(X, str):
        raise TypeError("expected a sequence of documents, got a single str (wrap it in a list)")
    if isinstance(X, (list, tuple)):
        return _sign_list(core, X, tokenizer, weights, threads)
    raise TypeError(
        f"cannot sign a {type(X).__name__}: expected a NumPy array, a SciPy sparse matrix, a "
        "list of documents or token lists, or a pyarrow array"
    )


def _sign_dense(core, X: np.ndarray, threads) -> np.ndarray:
    if X.ndim != 2:
        raise ValueError(
            f"dense input must be 2-D (N, D), got shape {X.shape}"
            + (" (one vector: X[None, :])" if X.ndim == 1 else "")
        )
    if X.dtype == np.float32:
        return core.sign_dense_f32(X, threads=threads)
    if X.dtype == np.float64:
        return core.sign_dense_f64(X, threads=threads)
    raise TypeError(
        f"dense input must be float32 or float64, got {X.dtype} (convert with X.astype(np.float32))"
    )


def _sign_sparse(core, X, threads) -> np.ndarray:
    if X.ndim != 2:
        raise ValueError(f"sparse input must be 2-D, got shape {X.shape}")
    if X.format != "csr":
        X = X.tocsr()
    if X.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"sparse data must be float32 or float64, got {X.dtype} (convert with X.astype(np.float32))"
        )
    indptr, indices = X.indptr, X.indices
    if indptr.dtype not in (np.int32, np.int64):
        indptr = indptr.astype(np.int64)
    if indices.dtype not in (np.int32, np.int64):
        indices = indices.astype(np.int64)
    return core.sign_csr(indptr, indices, X.data, X.shape[1], threads=threads)


def _sign_list(core, X, tokenizer, weights, threads) -> np.ndarray:
    if len(X) == 0:
        return np.zeros((0, (core.bits + 63) // 64), dtype=np.uint64)
    first = X[0]
    if isinstance(first, str):
        if weights is not None:
            raise ValueError("weights apply to token lists, not to documents (use a tokenizer)")
        tok = tokenizer if tokenizer is not None else Tokenizer()
        docs = _texts(X)
        return _by_chunks(core, len(docs), lambda a, b: core.sign_texts(docs[a:b], tok._core, threads=threads))
    if isinstance(first, (list, tuple)) and (len(first) == 0 or isinstance(first[0], str)) and not (
        len(first) == 0 and any(len(r) and not isinstance(r[0], str) for r in X)
    ):
        if tokenizer is not None:
            raise ValueError("a tokenizer applies to documents, not to token lists")
        docs = []
        for i, row in enumerate(X):
            if not isinstance(row, (list, tuple)) or not all(isinstance(t, str) for t in row):
                raise TypeError(f"row {i}: expected a list of str tokens")
            docs.append(list(row))
        w = None
        if weights is not None:
            if len(weights) != len(docs):
                raise ValueError(f"{len(docs)} token lists but {len(weights)} weight lists")
            w = [[float(v) for v in row] for row in weights]
        return _by_chunks(
            core, len(docs), lambda a, b: core.sign_tokens(docs[a:b], None if w is None else w[a:b], threads=threads)
        )
    # Rows of numbers: a dense matrix (ragged rows are an error naming the row).
    n0 = len(first) if hasattr(first, "__len__") else None
    if n0 is None:
        raise TypeError(f"row 0: expected a sequence, got {type(first).__name__}")
    for i, row in enumerate(X):
        if not hasattr(row, "__len__") or len(row) != n0:
            raise ValueError(f"ragged rows: row {i} has {len(row) if hasattr(row, '__len__') else 'no'} values, row 0 has {n0}")
    A = np.asarray(X)
    if A.dtype.kind not in "f":
        raise TypeError(f"rows must hold floats, got {A.dtype} (convert with np.asarray(X, dtype=np.float32))")
    return _sign_dense(core, A, threads)


#: Documents handed to the native code per call: Python strings are copied (as UTF-8) one
#: chunk at a time, never the whole corpus at once.
_CHUNK = 8192


def _by_chunks(core, n: int, sign) -> np.ndarray:
    """``sign(a, b)`` (rows ``a..b``) over ``0..n`` in chunks, into one array; error messages
    name rows of the whole input."""
    out = np.empty((n, (core.bits + 63) // 64), dtype=np.uint64)
    for a in range(0, n, _CHUNK):
        b = min(n, a + _CHUNK)
        try:
            out[a:b] = sign(a, b)
        except (ValueError, TypeError) as e:
            raise shift_rows(e, a) from None
    return out


def hamming(a, b) -> np.ndarray:
    """Hamming distances between signatures ``a`` and ``b`` (``uint64`` arrays whose last axis
    is the words of one signature, the same number in both; the other axes broadcast against
    each other). Signatures of different widths raise ``ValueError``.

    >>> int(hamming(np.array([0b1011], dtype=np.uint64), np.array([0b0001], dtype=np.uint64)))
    2
    """
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-1]:
        # Broadcasting the words of one signature against another's would compare words of
        # signatures of different widths.
        raise ValueError(
            f"signatures of {a.shape[-1] if a.ndim else 0} and {b.shape[-1] if b.ndim else 0} words: "
            "both need the same number of words on their last axis"
        )
    x = np.bitwise_xor(a, b)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).sum(axis=-1, dtype=np.int64)
    x = np.ascontiguousarray(x)  # NumPy < 2.0: count the unpacked bits
    return np.unpackbits(x.view(np.uint8), axis=-1).sum(axis=-1, dtype=np.int64)
