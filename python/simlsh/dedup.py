"""Near-duplicates in one call, as ``simlsh dedup`` finds them.

:func:`dedup` takes documents, vectors or signature codes and returns the pairs, the clusters
and the rows without features, with the command line's defaults and plan: the tokenizer
(TF-IDF fitted on the documents), the width planned for the rows at a cosine threshold, the
default signer and seed, the candidate scheme, the exact cosine of the vectors deciding; every
choice is the Rust library's, so the answer is the command line's on the same rows.

>>> import simlsh
>>> docs = ["the quick brown fox jumps", "the quick brown fox jumps!", "a lazy dog", "!!!", ""]
>>> r = simlsh.dedup(docs, threshold=0.9)
>>> list(zip(r.i.tolist(), r.j.tolist())), r.labels.tolist(), r.empty.tolist()
([(0, 1)], [0, 0, 2, 3, 4], [3, 4])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _simlsh
from ._codes import as_codes
from .join import Scheme, _scheme, clusters, plan_join, self_join, verified_join
from .signers import Signer, signer as make_signer
from .text import Tokenizer, _texts

__all__ = ["dedup", "DedupResult"]


@dataclass(frozen=True)
class DedupResult:
    """What :func:`dedup` found: the pairs ``(i[k], j[k])`` (``i < j`` row numbers) with the
    Hamming distance of their signatures and their cosine (exact when verified, else estimated
    from the distance), sorted by ``(i, j)``; ``labels`` (each row's cluster, the smallest row
    of its connected component); ``empty`` (rows without features: empty documents, zero
    vectors, all-zero codes; never paired); and how they were found: ``bits``, ``scheme`` (the text form, or a
    radius), ``signer`` (its spec), ``candidates`` (pairs whose exact cosine was computed)."""

    i: np.ndarray
    j: np.ndarray
    distance: np.ndarray
    cosine: np.ndarray
    labels: np.ndarray
    empty: np.ndarray
    bits: int
    scheme: str
    signer: str | None
    candidates: int | None

    @property
    def kept(self) -> np.ndarray:
        """The rows ``simlsh dedup --output`` keeps: the first row of each cluster."""
        return np.flatnonzero(self.labels == np.arange(len(self.labels)))


def dedup(
    data,
    *,
    threshold: float | None = None,
    radius: int | None = None,
    signer: Signer | None = None,
    tokenizer: Tokenizer | None = None,
    bits: int | None = None,
    seed: int | None = None,
    recall: float | None = None,
    scheme: Scheme | str | None = None,
    verify: bool = True,
    threads: int | None = None,
) -> DedupResult:
    """The near-duplicate pairs and clusters of ``data``, as ``simlsh dedup`` finds them.

    ``data`` is a list of ``str`` documents, a 2-D ``float32``/``float64`` array of dense
    vectors, a SciPy sparse matrix, or signature codes (``uint64``/``int64`` words, or FAISS's
    ``uint8`` bytes). With ``threshold`` (a cosine), the pairs whose **exact** cosine reaches
    it: candidates from the signatures at the width and scheme the library plans for the rows
    (``recall`` at the threshold, the library's default when None), unless ``bits``,
    ``signer`` or ``scheme`` is given; codes have no vectors, so their pairs are those whose
    estimated cosine ``cos(pi * h / f)`` reaches the threshold (as ``verify=False``, at 256
    bits unless ``bits`` or ``signer`` is given). With ``radius`` instead, the pairs whose
    signatures are within that Hamming distance (the command line's default is radius 3).
    Documents are tokenised by ``tokenizer`` (default :class:`Tokenizer()`, the command
    line's; an unfitted TF-IDF tokenizer is fitted on ``data``); ``signer`` defaults to the
    library's default kind for the input at the planned width and ``seed`` (the library's
    default seed when None).
    """
    if (threshold is None) == (radius is None):
        raise ValueError("give threshold (a cosine) or radius (a Hamming radius)")
    d = _simlsh.defaults()
    seed = d["seed"] if seed is None else seed
    kind, X, tok, n, empty = _input(data, tokenizer, threads)
    planned = None
    if kind == "codes":
        codes, f = as_codes(X, bits)
        if signer is not None:
            raise ValueError("codes are signed already: give no signer")
        # All-zero codes are rows without features, as the command line and the joins take them.
        empty = np.flatnonzero(~codes.any(axis=1)).astype(np.int64)
        verify = False
    else:
        if signer is not None and bits is not None and bits != signer.bits:
            raise ValueError(f"bits={bits} but the signer makes {signer.bits}-bit codes")
        f = signer.bits if signer is not None else bits
        if threshold is not None and verify and scheme is None:
            if f is not None:
                planned = plan_join(threshold, rows=max(n, 2), bits=f, recall=recall)
            else:
                feats = _mean_features(kind, X, tok)
                planned = plan_join(threshold, rows=max(n, 2), features=feats, recall=recall)
            f = planned["bits"]
        if f is None:
            f = d["cosine_bits"] if threshold is not None else d["bits"]
        if signer is None:
            signer = make_signer(_simlsh.default_signer(kind, f), bits=f, seed=seed)
        codes = signer.sign(X if kind != "text" else data, tokenizer=tok, threads=threads)
    if threshold is not None and verify:
        sch = _scheme(scheme) if scheme is not None else planned["scheme"]
        V = X if kind != "text" else tok.transform(data, threads=threads)[0]
        if kind != "text":
            V = _float32(V)
        i, j, dist, cos, rep = verified_join(codes, V, threshold, scheme=sch, bits=f, return_report=True, threads=threads)
        how, candidates = str(sch), int(rep["candidates"])
    else:
        r = radius if radius is not None else int(
            _simlsh.max_hamming_for_cosine(np.array([float(threshold)]), np.array([f], np.uint64))[0]
        )
        i, j, dist = self_join(codes, r, bits=f, featureless=empty, threads=threads)
        cos = np.cos(np.pi * dist / f)
        how, candidates = str(Scheme.radius(r)), None
    labels = clusters(n, i, j)
    return DedupResult(
        i=i, j=j, distance=dist, cosine=cos, labels=labels, empty=empty, bits=f, scheme=how,
        signer=signer.spec if signer is not None else None, candidates=candidates,
    )


def _input(data, tokenizer, threads) -> tuple[str, Any, Tokenizer | None, int, np.ndarray]:
    """What ``data`` is: ``(kind, X, fitted tokenizer, rows, rows without features)``."""
    if isinstance(data, (list, tuple)) and (not data or isinstance(data[0], str)):
        docs = _texts(data)
        tok = tokenizer if tokenizer is not None else Tokenizer()
        if not isinstance(tok, Tokenizer):
            raise TypeError(f"tokenizer must be a simlsh.Tokenizer, got {type(tok).__name__}")
        if not tok.is_fitted:
            tok = tok.fit(docs, threads=threads)
        empty = np.array([k for k, doc in enumerate(docs) if not tok.features(doc)[0]], dtype=np.int64)
        return "text", docs, tok, len(docs), empty
    if tokenizer is not None:
        raise ValueError("a tokenizer applies to documents, not to vectors or codes")
    if type(data).__module__.startswith("scipy.sparse"):
        X = _canonical(data)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        nonzero = np.bincount(rows[X.data != 0], minlength=X.shape[0]) > 0
        return "sparse", X, None, X.shape[0], np.flatnonzero(~nonzero).astype(np.int64)
    a = np.asarray(data)
    if a.dtype.kind == "f":
        if a.ndim != 2:
            raise ValueError(f"vectors must be 2-D (N, D), got shape {a.shape}")
        zero = ~np.any(a != 0, axis=1)
        return "dense", a, None, a.shape[0], np.flatnonzero(zero).astype(np.int64)
    if a.dtype in (np.uint64, np.int64, np.uint8):
        n = a.shape[0] if a.ndim else 1
        return "codes", a, None, n, np.zeros(0, np.int64)
    raise TypeError(
        f"data must be documents (a list of str), vectors (a float array or a SciPy sparse "
        f"matrix) or codes (uint64, int64 or uint8), got {type(data).__name__} of {a.dtype}"
    )


def _mean_features(kind: str, X, tok: Tokenizer | None) -> float:
    """The mean feature count the library plans the width with (the command line's)."""
    if kind == "text":
        step = _simlsh.feature_sample_step(len(X))
        return _simlsh.mean_features(tok._core, X[::step])
    if kind == "sparse":
        return X.nnz / max(X.shape[0], 1)
    return float(X.shape[1])


def _canonical(M):
    """A SciPy sparse matrix as the library reads one: CSR, ``float32``, each row's indices
    sorted and duplicates summed by the library's rule (in ``float64``, rounded once)."""
    import scipy.sparse as sp

    M = M.tocsr()
    p, i, d = _simlsh.canonical_csr(
        M.indptr.astype(np.int64), M.indices.astype(np.int64), np.ascontiguousarray(M.data, dtype=np.float32)
    )
    X = sp.csr_matrix((d, i, p), shape=M.shape)
    X.has_sorted_indices = True
    return X


def _float32(X):
    if type(X).__module__.startswith("scipy.sparse"):
        return X
    return np.ascontiguousarray(X, dtype=np.float32)
