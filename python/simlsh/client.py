"""A client of ``simlsh serve`` with the calls of the embedded :class:`~simlsh.Store`
(standard library only: ``http.client`` over one keep-alive connection).

>>> client = simlsh.Client()             # the server's default address  # doctest: +SKIP
>>> client.check_insert([1], codes=[[0b1011]], radius=3)      # doctest: +SKIP
[CheckResult(inserted=True, matches=[])]

Errors: a bad request raises ``ValueError``, a refused token ``PermissionError``, a busy or
draining server ``RuntimeError`` (after ``retries`` attempts honouring ``Retry-After``), a
server out of disk ``OSError``; each message is the server's.
"""

from __future__ import annotations

import errno
import http.client
import json
import time
import urllib.parse
from typing import Any

import numpy as np

from . import _simlsh
from .store import CheckResult, Match, _ids, _reach

__all__ = ["Client"]


def _codes_json(codes) -> list[list[int]]:
    a = np.asarray(codes)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.dtype == np.int64:
        a = a.view(np.uint64)
    return [[int(w) for w in row] for row in a.astype(np.uint64, copy=False)]


def _items_json(codes, vectors, texts) -> list[dict[str, Any]]:
    if sum(x is not None for x in (codes, vectors, texts)) != 1:
        raise ValueError("give exactly one of `codes`, `vectors` and `texts`")
    if codes is not None:
        return [{"code": c} for c in _codes_json(codes)]
    if vectors is not None:
        v = np.asarray(vectors, dtype=np.float32)
        if v.ndim == 1:
            v = v.reshape(1, -1)
        return [{"vector": [float(x) for x in row]} for row in v]
    if isinstance(texts, str):
        texts = [texts]
    return [{"text": str(t)} for t in texts]


def _within(radius, cosine, k) -> dict[str, Any]:
    return {key: v for key, v in _reach(radius, cosine, k).items() if v is not None}


def _matches(ms) -> list[Match]:
    return [Match(m["id"], m["distance"], m.get("cosine")) for m in ms]


def _default_url() -> str:
    """The URL of ``simlsh serve`` listening at its default address (the library's)."""
    return f"http://{_simlsh.defaults()['listen']}"


class Client:
    """A connection to ``simlsh serve`` at ``url`` (``http://host:port``; default the
    library's, http://127.0.0.1:7700, where ``simlsh serve`` listens unless told otherwise),
    with an optional access ``token`` (``Authorization: Bearer``)."""

    def __init__(self, url: str | None = None, *, token: str | None = None, timeout: float = 30.0, retries: int = 3):
        if url is None:
            url = _default_url()
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"expected a URL like {_default_url()}, not {url!r}")
        self._host, self._port = u.hostname, u.port or 80
        self._token, self._timeout, self._retries = token, timeout, retries
        self._conn: http.client.HTTPConnection | None = None

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json"}
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"
        attempt = 0
        while True:
            attempt += 1
            try:
                if self._conn is None:
                    self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
                self._conn.request(method, path, body=data, headers=headers)
                resp = self._conn.getresponse()
                raw = resp.read()
                if resp.getheader("connection", "").lower() == "close":
                    self.close()
            except (ConnectionError, http.client.RemoteDisconnected, http.client.CannotSendRequest, http.client.BadStatusLine):
                # A keep-alive connection the server closed (idle): reconnect once.
                self.close()
                if attempt > 1:
                    raise
                continue
            status = resp.status
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = raw.decode(errors="replace")
            if status == 503 and attempt <= self._retries:
                time.sleep(min(float(resp.getheader("retry-after", "1") or 1), 10.0))
                continue
            return status, payload

    def _ok(self, status: int, payload: Any) -> Any:
        if status == 200:
            return payload
        msg = payload["error"]["message"] if isinstance(payload, dict) and "error" in payload else str(payload)
        if status in (400, 404, 405, 408, 413):
            raise ValueError(msg)
        if status in (401, 403):
            raise PermissionError(msg)
        if status == 507:
            raise OSError(errno.ENOSPC, msg)
        raise RuntimeError(f"{status}: {msg}")

    def insert(self, ids, *, codes=None, vectors=None, texts=None) -> list[bool]:
        """As :meth:`simlsh.Store.insert`."""
        items = _items_json(codes, vectors, texts)
        ids = _ids(ids)
        if len(ids) != len(items):
            raise ValueError(f"{len(ids)} ids for {len(items)} items: give one id per item")
        changes = [{"insert": dict(item, id=int(i))} for i, item in zip(ids, items)]
        r = self._ok(*self._request("POST", "/v1/update", {"changes": changes}))
        return [x["replaced"] for x in r["results"]]

    def remove(self, ids) -> list[bool]:
        """As :meth:`simlsh.Store.remove`."""
        changes = [{"remove": {"id": int(i)}} for i in _ids(ids)]
        r = self._ok(*self._request("POST", "/v1/update", {"changes": changes}))
        return [x["removed"] for x in r["results"]]

    def check_insert(self, ids, *, codes=None, vectors=None, texts=None, radius=None, cosine=None, k=None) -> list[CheckResult]:
        """As :meth:`simlsh.Store.check_insert`."""
        items = _items_json(codes, vectors, texts)
        ids = _ids(ids)
        if len(ids) != len(items):
            raise ValueError(f"{len(ids)} ids for {len(items)} items: give one id per item")
        body = {"items": [dict(item, id=int(i)) for i, item in zip(ids, items)], **_within(radius, cosine, k)}
        r = self._ok(*self._request("POST", "/v1/check_insert", body))
        return [CheckResult(x["inserted"], _matches(x["matches"])) for x in r["results"]]

    def query(self, *, codes=None, vectors=None, texts=None, radius=None, cosine=None, k=None) -> list[list[Match]]:
        """As :meth:`simlsh.Store.query`."""
        body = {"queries": _items_json(codes, vectors, texts), **_within(radius, cosine, k)}
        r = self._ok(*self._request("POST", "/v1/query", body))
        return [_matches(x["matches"]) for x in r["results"]]

    def get(self, id: int) -> dict | None:
        """As :meth:`simlsh.Store.get`."""
        status, payload = self._request("GET", f"/v1/items/{int(id)}")
        if status == 404:
            return None
        r = self._ok(status, payload)
        r.pop("code_hex", None)
        return r

    def stats(self) -> dict:
        """The server's figures of its store."""
        return self._ok(*self._request("GET", "/v1/stats"))

    def health(self) -> bool:
        """True when the server answers."""
        return self._request("GET", "/health")[0] == 200

    def ready(self) -> bool:
        """True when the server takes requests (not starting or draining)."""
        return self._request("GET", "/ready")[0] == 200

    def close(self) -> None:
        """Closes the connection (the next call opens a new one)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return int(self.stats()["items"])

    def __repr__(self) -> str:
        return f"Client('http://{self._host}:{self._port}')"
