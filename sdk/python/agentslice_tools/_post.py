"""POST JSON with the RAP retry rule: retry 5xx and transport errors with
backoff (full jitter, doubling), never a 4xx or any other final status."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds the retries of one POST. Waits grow from ``base`` seconds,
    doubling up to ``max``, with full jitter; the exchange stops after
    ``attempts`` tries or once ``total`` seconds have passed. The defaults
    are the Go kit's: 8 attempts within 60 s."""

    attempts: int = 8
    base: float = 0.1
    max: float = 2.0
    total: float = 60.0
    attempt_timeout: float = 10.0

    def delay(self, attempt: int) -> float:
        """The wait before try number ``attempt`` (1 is the first retry)."""
        cap = min(self.max, self.base * (2 ** (attempt - 1)))
        return random.uniform(0, cap)


class StatusError(Exception):
    """A final non-2xx answer that is not retried (a 4xx, a 3xx)."""

    def __init__(self, url: str, status: int, body: str):
        super().__init__(f"POST {url}: HTTP {status}" + (f": {body}" if body else ""))
        self.url, self.status, self.body = url, status, body


class UnavailableError(Exception):
    """Every attempt failed with a 5xx or a transport error."""

    def __init__(self, url: str, attempts: int, last: BaseException):
        super().__init__(f"POST {url}: unavailable after {attempts} attempts: {last}")
        self.url, self.attempts, self.last = url, attempts, last


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # a 3xx is final
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def encode(body: Any) -> bytes:
    """JSON without ASCII escaping (markup and non-Latin text stay small)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def post_json(
    url: str,
    body: Any,
    policy: RetryPolicy = RetryPolicy(),
    headers: Optional[dict[str, str]] = None,
    stop: Optional[threading.Event] = None,
) -> bytes:
    """POSTs ``body`` as JSON to ``url`` and returns the 2xx answer's body.

    Raises StatusError for a final non-retryable status, UnavailableError
    when the retry budget ran out. ``stop``, when set, ends the waits early
    (the server is shutting down)."""
    data = encode(body)
    deadline = time.monotonic() + policy.total
    last: BaseException = RuntimeError("retry budget spent")
    attempt = 0
    while attempt < policy.attempts:
        if attempt > 0:
            wait = min(policy.delay(attempt), max(0.0, deadline - time.monotonic()))
            if stop is not None and stop.wait(wait):
                break
            if stop is None:
                time.sleep(wait)
            if time.monotonic() >= deadline:
                break
        attempt += 1
        req = urllib.request.Request(url, data=data, method="POST")
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        timeout = max(0.001, min(policy.attempt_timeout, deadline - time.monotonic()))
        try:
            with _opener.open(req, timeout=timeout) as resp:
                return resp.read(4 << 20)
        except urllib.error.HTTPError as e:
            snippet = _snippet(e)
            if e.code >= 500:
                last = RuntimeError(f"HTTP {e.code}: {snippet}")
                continue
            raise StatusError(url, e.code, snippet) from None
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            last = e
            continue
    raise UnavailableError(url, attempt, last)


def _snippet(e: urllib.error.HTTPError) -> str:
    try:
        raw = e.read(512)
    except Exception:  # the body is only for the message
        raw = b""
    text = raw.decode("utf-8", "replace")
    return " ".join(text.split())[:300]
