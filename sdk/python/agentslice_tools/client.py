"""A small client for agentslice serve's HTTP API (docs/serve.md): send a
message, read a thread, follow its events, answer a user_choice."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterator, Optional


class APIError(Exception):
    """serve answered with a non-2xx status; ``body`` is its JSON (or text)."""

    def __init__(self, method: str, path: str, status: int, body: Any):
        super().__init__(f"{method} {path}: HTTP {status}: {body}")
        self.status, self.body = status, body


@dataclass
class Event:
    """One server-sent event: its kind (``event:``), replay cursor (``id:``,
    None for live-only events) and decoded ``data``."""

    kind: str
    id: Optional[str]
    data: Any


class ServeClient:
    """Talks to ``agentslice serve`` at ``base_url`` (for example
    ``http://127.0.0.1:8080``); ``token`` is sent as a bearer token when set
    (serve needs one off loopback)."""

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = 30.0):
        self.base_url, self.token, self.timeout = base_url.rstrip("/"), token, timeout

    def _request(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None,
                 accept: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        req.add_header("Accept", accept)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            return urllib.request.urlopen(req, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as e:
            raw = e.read().decode("utf-8", "replace")
            try:
                detail: Any = json.loads(raw)
            except ValueError:
                detail = raw.strip()
            raise APIError(method, path, e.code, detail) from None

    def _json(self, method: str, path: str, body: Any = None) -> Any:
        with self._request(method, path, body) as resp:
            raw = resp.read()
        return json.loads(raw) if raw.strip() else None

    def send(self, thread_id: str, text: str, *, id: Optional[str] = None, agent: Optional[str] = None,
             user_id: Optional[str] = None) -> dict[str, Any]:
        """POST /threads/{id}/messages; returns {"id", "thread_id"}. Sending
        the same ``id`` and text again is an idempotent retry."""
        body: dict[str, Any] = {"text": text}
        for k, v in (("id", id), ("agent", agent), ("user_id", user_id)):
            if v is not None:
                body[k] = v
        return self._json("POST", f"/threads/{_q(thread_id)}/messages", body)

    def thread(self, thread_id: str) -> dict[str, Any]:
        """GET /threads/{id}: status, state and history items."""
        return self._json("GET", f"/threads/{_q(thread_id)}")

    def answer_choice(self, thread_id: str, call_id: str, selected: int) -> Any:
        """POST /threads/{id}/choices/{call}: answers a tool's user_choice."""
        return self._json("POST", f"/threads/{_q(thread_id)}/choices/{_q(call_id)}", {"selected": selected})

    def stop(self, thread_id: str, reason: str = "") -> Any:
        """POST /threads/{id}/stop."""
        return self._json("POST", f"/threads/{_q(thread_id)}/stop", {"reason": reason} if reason else {})

    def close(self, thread_id: str, reason: str = "") -> Any:
        """POST /threads/{id}/close."""
        return self._json("POST", f"/threads/{_q(thread_id)}/close", {"reason": reason} if reason else {})

    def events(self, thread_id: str, *, after: Optional[int] = None, kinds: Optional[list[str]] = None,
               timeout: Optional[float] = None) -> Iterator[Event]:
        """Follows GET /threads/{id}/events (history replayed from ``after``,
        then live) until the server ends the stream or ``timeout`` seconds
        pass without data (socket.timeout is raised then)."""
        q: dict[str, str] = {}
        if after is not None:
            q["after"] = str(after)
        if kinds:
            q["kinds"] = ",".join(kinds)
        path = f"/threads/{_q(thread_id)}/events" + ("?" + urllib.parse.urlencode(q) if q else "")
        with self._request("GET", path, timeout=timeout, accept="text/event-stream") as resp:
            yield from parse_sse(resp)


def parse_sse(lines: Any) -> Iterator[Event]:
    """Parses a text/event-stream given as an iterable of byte lines."""
    kind, eid, data = "message", None, []  # type: ignore[var-annotated]
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                text = "\n".join(data)
                try:
                    value: Any = json.loads(text)
                except ValueError:
                    value = text
                yield Event(kind=kind, id=eid, data=value)
            kind, eid, data = "message", None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            kind = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            eid = value


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")
