"""The text front-end: documents to weighted features (the classic text simhash).

A :class:`Tokenizer` segments a document into units (jieba for runs of Han characters and
UAX #29 words for the rest by default; jieba words; grapheme clusters), optionally joins
``ngram`` units into shingles, weights the distinct features (TF-IDF by default, the table
fitted on the corpus; term frequency; binary; jieba's keyword weights) and optionally keeps the
``top_k`` heaviest. Its options and defaults are the command line's (the Rust library's
``TokenizerSpec``), so the same options give the same signatures as ``simlsh sign``/``simlsh
dedup`` and the Rust library.

>>> import simlsh
>>> tok = simlsh.Tokenizer(mode="words", ngram=1)
>>> tok.tokens("The quick, brown fox!")
['the', 'quick', 'brown', 'fox']
>>> docs = ["the quick brown fox", "the quick brown fox!", "a slow green turtle"]
>>> fitted = tok.fit(docs)                      # the TF-IDF table of the corpus
>>> codes = simlsh.HashingTrick(bits=64, seed=1).sign(docs, tokenizer=fitted)
>>> int(simlsh.hamming(codes[0], codes[1]))
0
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Sequence

import numpy as np

from . import _simlsh

__all__ = ["Tokenizer", "Idf"]


class Idf:
    """Document frequencies of features, for TF-IDF weights: ``idf(t) = ln((1 + N) / (1 +
    df(t))) + 1``. Features are counted by a fixed 64-bit hash, so no vocabulary is held.

    Fit with :meth:`fit`; save and load with :meth:`save` / :meth:`load` (the command line's
    ``--save-idf`` / ``--idf`` format); picklable.
    """

    __slots__ = ("_core",)

    def __init__(self, _core: _simlsh.Idf):
        self._core = _core

    @classmethod
    def fit(
        cls, docs: Iterable[str], tokenizer: Tokenizer | None = None, *, threads: int | None = None
    ) -> Idf:
        """Counts the document frequencies of ``docs`` tokenised by ``tokenizer`` (default
        :class:`Tokenizer()`); the weighting and ``top_k`` of the tokenizer play no part."""
        tok = tokenizer if tokenizer is not None else Tokenizer()
        docs = _texts(docs)
        return cls(_simlsh.Idf.fit(tok._core, docs, threads=threads))

    @classmethod
    def merge(cls, tables: Iterable[Idf]) -> Idf:
        """The table of a corpus from the tables of its parts (fitted with the same tokenizer
        options): document counts and frequencies added, as fitting the whole would give; the
        distributed fit of :mod:`simlsh.spark`."""
        tables = list(tables)
        for t in tables:
            if not isinstance(t, Idf):
                raise TypeError(f"expected simlsh.Idf tables, got {type(t).__name__}")
        return _merge_idf(tables)

    @classmethod
    def load(cls, path) -> Idf:
        """Loads a table saved by :meth:`save` (or by ``simlsh sign --save-idf``)."""
        return cls(_simlsh.Idf.load(str(path)))

    def save(self, path) -> None:
        """Saves the table (a text file), atomically."""
        self._core.save(str(path))

    @property
    def docs(self) -> int:
        """Number of documents counted."""
        return self._core.docs

    @property
    def config(self) -> str:
        """The configuration of the tokenizer it was fitted with."""
        return self._core.config

    def __len__(self) -> int:
        return len(self._core)

    def df(self, token: str) -> int:
        """Document frequency of ``token`` (0 if unseen)."""
        return self._core.df(token)

    def idf(self, token: str) -> float:
        """The IDF weight of ``token``."""
        return self._core.idf(token)

    def __reduce__(self):
        return (_idf_from_parts, self._core.parts())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Idf):
            return NotImplemented
        a, b = self._core.parts(), other._core.parts()
        return a[0] == b[0] and a[3] == b[3] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])

    def __repr__(self) -> str:
        return f"Idf(docs={self.docs}, features={len(self)})"


def _idf_from_parts(docs, keys, dfs, config) -> Idf:
    return Idf(_simlsh.Idf.from_parts(docs, np.ascontiguousarray(keys, dtype=np.uint64),
                                      np.ascontiguousarray(dfs, dtype=np.uint32), config))


class Tokenizer:
    """Documents to weighted features, with the command line's options and defaults (the Rust
    library's ``TokenizerSpec``: ``simlsh dedup`` on text uses the same).

    Every parameter left at ``None`` takes the library's default:

    mode : ``"auto"`` (jieba for runs of Han characters, UAX #29 words for the rest; the
        default), ``"words"``, ``"cjk"`` (jieba words; the default with ``weighting="jieba"``),
        ``"chars"`` (grapheme clusters, for character shingles with ``ngram``).
    ngram : shingles of ``ngram`` consecutive units (default 1).
    lowercase : lower-case first (default True).
    keep_punctuation : keep tokens without a letter or digit (default False).
    stop_words : ``"english"`` (the built-in list), ``"none"`` or a list of words (default none).
    hmm : jieba's HMM for unknown words (default True).
    weighting : ``"tfidf"`` (the default: the IDF table is fitted on the documents, see below),
        ``"tf"``, ``"binary"``, or ``"jieba"`` (jieba's own keyword weights, as
        ``jieba.analyse.extract_tags``).
    idf : an :class:`Idf` table for TF-IDF weights (otherwise fitted).
    top_k : keep the ``top_k`` heaviest features of each document (default all).

    **TF-IDF needs a table.** A TF-IDF tokenizer without ``idf`` is *unfitted*: :meth:`fit`
    returns it with the table fitted on a corpus, and :meth:`simlsh.Signer.sign` fits it on
    the documents it signs, as the command line fits on its input. Sign later documents (queries)
    with the fitted tokenizer, so that they share the corpus's weights.

    >>> Tokenizer(mode="chars", ngram=2).tokens("ab cd")
    ['ab', 'b ', ' c', 'cd']
    >>> tok = Tokenizer(mode="words").fit(["the fox", "the dog"])
    >>> tok.spec, tok.is_fitted
    ('words', True)
    """

    __slots__ = ("_core", "_params")

    def __init__(
        self,
        mode: str | None = None,
        ngram: int | None = None,
        lowercase: bool | None = None,
        keep_punctuation: bool | None = None,
        stop_words: str | Sequence[str] | None = None,
        hmm: bool | None = None,
        weighting: str | None = None,
        idf: Idf | None = None,
        top_k: int | None = None,
        *,
        _core: _simlsh.Tokenizer | None = None,
    ):
        if idf is not None and not isinstance(idf, Idf):
            raise TypeError(f"idf must be a simlsh.Idf, got {type(idf).__name__}")
        if isinstance(stop_words, (list, tuple)):
            stop_words = [str(w) for w in stop_words]
        self._params = dict(
            mode=mode, ngram=ngram, lowercase=lowercase, keep_punctuation=keep_punctuation,
            stop_words=stop_words, hmm=hmm, weighting=weighting, idf=idf, top_k=top_k,
        )
        self._core = _core if _core is not None else _simlsh.Tokenizer(
            mode=mode, ngram=ngram, lowercase=lowercase, keep_punctuation=keep_punctuation,
            stop_words=stop_words, hmm=hmm, weighting=weighting,
            idf=idf._core if idf is not None else None, top_k=top_k,
        )

    @property
    def params(self) -> dict[str, Any]:
        """The parameters, as given to the constructor (``None``: the library's default)."""
        return dict(self._params)

    @property
    def spec(self) -> str:
        """The options in the library's text form (``auto``, ``words:ngram=2,weighting=tf``):
        what ``simlsh`` records and the command line's ``--mode/--ngram/--weighting`` give."""
        return self._core.spec

    @property
    def is_fitted(self) -> bool:
        """True when the weights are known: a TF-IDF table fitted or given, or a weighting
        that needs none."""
        return self._core.is_fitted

    @property
    def idf(self) -> Idf | None:
        """The TF-IDF table, once fitted or given."""
        core = self._core.idf
        return Idf(core) if core is not None else None

    def fit(self, docs: Iterable[str], *, threads: int | None = None) -> Tokenizer:
        """This tokenizer with its TF-IDF table fitted on ``docs`` (the same tokenizer for
        other weightings)."""
        p = self.params
        core = self._core.fit(_texts(docs), threads=threads)
        out = Tokenizer.__new__(Tokenizer)
        out._core = core
        p["idf"] = Idf(core.idf) if core.idf is not None else p["idf"]
        out._params = p
        return out

    @classmethod
    def _from_core(cls, core: _simlsh.Tokenizer) -> Tokenizer:
        """A tokenizer around a native one (e.g. an index's recorded tokenizer), its
        parameters read from it."""
        out = cls.__new__(cls)
        out._core = core
        p = dict(core.options)
        p["idf"] = Idf(core.idf) if core.idf is not None else None
        out._params = p
        return out

    def with_params(self, **changes: Any) -> Tokenizer:
        """A tokenizer with these parameters changed."""
        p = self.params
        p.update(changes)
        return Tokenizer(**p)

    def tokens(self, text: str) -> list[str]:
        """The features of ``text`` before weighting, in order, repeats included."""
        return self._core.tokens(text)

    def features(self, text: str) -> tuple[list[str], list[float]]:
        """The weighted distinct features of ``text``: ``(tokens, weights)``, in order of first
        occurrence. A TF-IDF tokenizer must be fitted first."""
        return self._core.features(text)

    def transform(self, docs: Iterable[str], *, threads: int | None = None):
        """The weighted features of ``docs`` as a SciPy CSR matrix (``float32``, one row per
        document, sorted indices), for exact cosines (:func:`simlsh.verified_join`): column
        ``c`` is the feature whose 64-bit key is ``keys[c]``, returned beside it. A TF-IDF
        tokenizer must be fitted first. Returns ``(X, keys)``."""
        import scipy.sparse as sp

        docs = _texts(docs)
        indptr, indices, data, keys = self._core.transform(docs, threads=threads)
        X = sp.csr_matrix((data, indices, indptr), shape=(len(docs), len(keys)))
        X.has_sorted_indices = True
        return X, keys

    @property
    def config(self) -> str:
        """The settings that determine the features, as recorded in IDF tables."""
        return self._core.config()

    def __reduce__(self):
        return (_tokenizer_from_params, (self._params,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.spec == other.spec and self._params["stop_words"] == other._params["stop_words"] and (
            self.idf == other.idf
        )

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items() if v is not None)
        return f"Tokenizer({args})"


def _tokenizer_from_params(params) -> Tokenizer:
    return Tokenizer(**params)


def _merge_idf(tables) -> Idf:
    """One table of several fitted on parts of a corpus (the same tokenizer options)."""
    return Idf(_simlsh.Idf.merge([t._core for t in tables]))


def _texts(docs) -> list[str]:
    """``docs`` as a list of ``str``, naming the first row that is not one."""
    if isinstance(docs, str):
        raise TypeError("expected a sequence of documents, got a single str (wrap it in a list)")
    docs = docs if isinstance(docs, list) else list(docs)
    for i, d in enumerate(docs):
        if not isinstance(d, str):
            raise TypeError(f"row {i}: expected a str document, got {type(d).__name__}")
    return docs
