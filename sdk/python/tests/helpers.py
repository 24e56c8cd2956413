"""Test helpers: a real HTTP callback receiver that records what tools POST
and answers with the statuses a test scripts, and a tiny JSON client."""

from __future__ import annotations

import json
import queue
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

WAIT = 10.0  # seconds a test waits for a signal before it fails


class Receiver:
    """Records callback bodies; answers each POST with the next scripted
    status (200 once the script is spent)."""

    def __init__(self) -> None:
        self.bodies: "queue.Queue[dict[str, Any]]" = queue.Queue()
        self.attempts = 0
        self.script: list[int] = []
        self._lock = threading.Lock()
        rcv = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n))
                with rcv._lock:
                    rcv.attempts += 1
                    status = rcv.script.pop(0) if rcv.script else 200
                if status == 200:
                    rcv.bodies.put(body)
                data = b'{"ok":true}' if status == 200 else b'{"error":"scripted"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/rap/callback?sig=abc"

    def next(self) -> dict[str, Any]:
        """The next delivered body; fails the test after WAIT seconds."""
        try:
            return self.bodies.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError("no callback arrived") from None

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def request(method: str, url: str, body: Any = None, headers: Optional[dict[str, str]] = None) -> tuple[int, Any]:
    """One HTTP exchange; returns (status, decoded JSON body)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def invocation(rcv: Receiver, op: str, args: Any = None, *, id: str = "call_1", group: str = "thr_1",
               call_id: Optional[str] = "cid_1") -> dict[str, Any]:
    return {"operation": op, "arguments": {} if args is None else args, "id": id, "call_id": call_id,
            "callback_url": rcv.url, "group_id": group}
