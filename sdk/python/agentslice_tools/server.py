"""ToolServer: a RAP tool server.

It serves the toolset at ``/.well-known/rap-toolset`` (the endpoint it
advertises is ``{base}/invoke``), acknowledges each well-formed invocation
with 200 at once and runs the handler in a thread of its own, then POSTs the
handler's result to the call's callback URL. ``/cancel_tool_call`` and
``/close_thread`` set the ``cancelled`` event of the calls they name;
``/tool_call_status`` answers ``{"alive": true}`` while a call's handler
runs (a subscription's handler keeps running while it sends events) and
false for any call it does not track. It behaves as the Go kit
(``rapkit/kit.go``) does, message for message."""

from __future__ import annotations

import collections
import inspect
import json
import logging
import re
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, urlencode, urlsplit

from ._post import RetryPolicy, post_json
from .call import Call, Result
from .schema import SchemaError, Validator, schema_from_hints

log = logging.getLogger("agentslice_tools")

TOOLSET_PATH = "/.well-known/rap-toolset"
INVOKE_PATH = "/invoke"
CHOICE_PATH = "/choice_response"
MAX_BODY = 4 << 20
MAX_ID_LEN = 256
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")

Authorize = Callable[[Any], Optional[str]]
"""Given the request's headers, returns None to allow it or the reason to refuse (401)."""


class _Answer(threading.Event):
    """A user_choice waiting for its answer; ``selected`` is None until then."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n
        self.selected: Optional[int] = None


class _Tool:
    def __init__(self, name: str, description: str, schema: dict[str, Any], annotations: Optional[dict[str, Any]],
                 fn: Callable[..., Any]):
        self.name, self.description, self.schema, self.annotations, self.fn = name, description, schema, annotations, fn
        self.validator = Validator(schema)
        sig = inspect.signature(fn)
        self.call_param = next((n for n, p in sig.parameters.items() if p.annotation in (Call, "Call") or n == "call"), None)
        self.var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
        self.params = {n for n, p in sig.parameters.items() if n != self.call_param
                       and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    def define(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.schema}
        if self.annotations:
            d["annotations"] = self.annotations
        return d

    def run(self, call: Call) -> Any:
        kw = {k: v for k, v in call.arguments.items() if self.var_kw or k in self.params}
        if self.call_param:
            kw[self.call_param] = call
        return self.fn(**kw)


class ToolServer:
    """A RAP tool server; tools are added with the ``tool`` decorator.

    ``public_url`` is the base URL the runtime reaches the server at; when
    None it is derived from each toolset request's Host header. ``authorize``
    is asked about every POST (invocations, cancel, close, status): return a
    reason to answer 401. Without it the server accepts any well-formed
    request, so run it where only the runtime reaches it."""

    def __init__(self, name: str, description: str = "", *, public_url: Optional[str] = None,
                 retry: RetryPolicy = RetryPolicy(), max_running: int = 64,
                 authorize: Optional[Authorize] = None):
        if not isinstance(name, str) or not 1 <= len(name) <= 128:
            raise ValueError("ToolServer: name must be 1 to 128 characters")
        self.name, self.description = name, description
        self.public_url = public_url.rstrip("/") if public_url else None
        self.retry, self.max_running, self.authorize = retry, max(1, max_running), authorize
        self._tools: dict[str, _Tool] = {}
        self._lock = threading.Lock()
        self._running: dict[tuple[str, str], tuple[Call, threading.Thread]] = {}
        self._choices: dict[tuple[str, str], _Answer] = {}
        self._base: Optional[str] = None  # the base of the latest toolset request
        self._done: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()
        self._stopping = threading.Event()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._serve_thread: Optional[threading.Thread] = None

    # ---- defining tools -------------------------------------------------

    def tool(self, name: Optional[str] = None, *, description: Optional[str] = None,
             input_schema: Optional[dict[str, Any]] = None,
             annotations: Optional[dict[str, Any]] = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers the decorated function as a tool.

        The name defaults to the function's, the description to its
        docstring, the schema to one derived from its type hints. A
        parameter named ``call`` (or annotated ``Call``) receives the Call.
        The handler returns a str (the text result), a Result, None after it
        sent its result itself (call.result, call.subscribe), or raises: the
        model then gets ``error: <the exception's text>``."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tool(fn, name=name, description=description, input_schema=input_schema, annotations=annotations)
            return fn

        return register

    def add_tool(self, fn: Callable[..., Any], *, name: Optional[str] = None, description: Optional[str] = None,
                 input_schema: Optional[dict[str, Any]] = None, annotations: Optional[dict[str, Any]] = None) -> None:
        """Registers fn as a tool (see ``tool``)."""
        tname = name or fn.__name__
        if not _NAME.match(tname):
            raise ValueError(f"tool {tname!r}: name must be 1 to 128 of A-Z a-z 0-9 _ -")
        if tname in self._tools:
            raise ValueError(f"tool {tname!r}: defined twice")
        desc = description if description is not None else inspect.cleandoc(fn.__doc__ or "")
        if not desc.strip():
            raise ValueError(f"tool {tname!r}: needs a description (the description argument or a docstring)")
        if input_schema is None:
            skip = {n for n, p in inspect.signature(fn).parameters.items() if p.annotation in (Call, "Call") or n == "call"}
            try:
                input_schema = schema_from_hints(fn, skip)
            except SchemaError as e:
                raise ValueError(f"tool {tname!r}: {e}") from None
        if not isinstance(input_schema, dict):
            raise ValueError(f"tool {tname!r}: input_schema must be a JSON Schema object")
        if annotations is not None and not isinstance(annotations, dict):
            raise ValueError(f"tool {tname!r}: annotations must be a dict")
        try:
            self._tools[tname] = _Tool(tname, desc, input_schema, annotations, fn)
        except SchemaError as e:
            raise ValueError(f"tool {tname!r}: {e}") from None

    def toolset(self, base: str) -> dict[str, Any]:
        """The document served for a server reachable at ``base``."""
        d: dict[str, Any] = {"name": self.name, "endpoint": base.rstrip("/") + INVOKE_PATH,
                             "tools": [t.define() for t in self._tools.values()]}
        if self.description:
            d["description"] = self.description
        return d

    # ---- running --------------------------------------------------------

    def start(self, port: int = 0, host: str = "127.0.0.1") -> int:
        """Serves in a background thread; returns the port it listens on."""
        if self._httpd is not None:
            raise RuntimeError("ToolServer: already started")
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._serve_thread = threading.Thread(target=self._httpd.serve_forever, args=(0.1,), name=f"rap-{self.name}", daemon=True)
        self._serve_thread.start()
        return int(self._httpd.server_address[1])

    def run(self, port: int = 8000, host: str = "127.0.0.1") -> None:
        """Serves until interrupted (Ctrl-C), then stops."""
        bound = self.start(port, host)
        log.info("agentslice_tools: %s listening on http://%s:%d", self.name, host, bound)
        try:
            assert self._serve_thread is not None
            while self._serve_thread.is_alive():
                self._serve_thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def stop(self, wait: float = 10.0) -> None:
        """Refuses new calls, cancels running ones, waits up to ``wait``
        seconds for their handlers and stops serving. Safe to call twice."""
        self._stopping.set()
        with self._lock:
            running = list(self._running.values())
        self._cancel(lambda _: True)
        for _, th in running:
            th.join(wait)
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def running(self) -> int:
        """The number of calls in progress."""
        with self._lock:
            return len(self._running)

    def _post(self, url: str, body: dict[str, Any]) -> None:
        post_json(url, body, self.retry, stop=self._stopping)

    # ---- protocol -------------------------------------------------------

    def _invoke(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict):
            return 400, {"error": "the document must be a JSON object"}
        bad = _check_invocation(body)
        if bad:
            return 400, {"error": bad}
        args = body.get("arguments")
        if args is None:
            args = {}
        call = Call(operation=body["operation"], arguments=args if isinstance(args, dict) else {}, id=body["id"], call_id=body.get("call_id"),
                    callback_url=body["callback_url"], group_id=body["group_id"],
                    thread_ancestors=list(body.get("thread_ancestors") or []), user_id=body.get("user_id"), _server=self)
        tool = self._tools.get(call.operation)
        failure: Optional[str] = None
        if tool is None:
            names = ", ".join(self._tools) or "no tools"
            failure = f"unknown operation {json.dumps(call.operation[:140])} (this server offers {names})"
        else:
            reason = tool.validator.validate(args)
            if reason:
                failure = f"invalid arguments for {call.operation}: {reason}"
        key = (call.group_id, call.id)
        with self._lock:
            if self._stopping.is_set():
                return 503, {"error": "server is not running"}
            if key in self._running or key in self._done:
                return 200, {"status": "accepted"}  # a redelivered dispatch
            if len(self._running) >= self.max_running:
                return 503, {"error": "too many calls in progress; retry later"}
            th = threading.Thread(target=self._run, args=(key, tool, call, failure), daemon=True,
                                  name=f"rap-call-{call.id}")
            self._running[key] = (call, th)
        th.start()
        return 200, {"status": "accepted"}

    def _run(self, key: tuple[str, str], tool: Optional[_Tool], call: Call, failure: Optional[str]) -> None:
        try:
            if failure is not None:
                res = Result(text="error: " + failure)
            else:
                assert tool is not None
                try:
                    out = tool.run(call)
                except Exception as e:  # the model reads the error
                    log.debug("agentslice_tools: %s failed: %s", call.operation, traceback.format_exc())
                    res = Result(text="error: " + (str(e) or type(e).__name__))
                else:
                    if call.resulted:
                        if out is not None:
                            log.warning("agentslice_tools: %s returned a value after sending its result; dropped", call.operation)
                        return
                    if isinstance(out, Result):
                        res = out
                    elif out is None:
                        res = Result(text=f"error: {call.operation} finished without a result")
                    elif isinstance(out, str):
                        res = Result(text=out)
                    else:
                        res = Result(text=json.dumps(out, ensure_ascii=False))
            if call.cancelled.is_set():
                return  # nothing is sent for a cancelled call
            call.send_result(res)
        except Exception as e:
            log.warning("agentslice_tools: could not deliver the result of %s call %s: %s", call.operation, call.id, e)
        finally:
            call.cancelled.set()
            with self._lock:
                self._running.pop(key, None)
                self._done[key] = None
                while len(self._done) > 10000:
                    self._done.popitem(last=False)

    def _cancel(self, match: Callable[[tuple[str, str]], bool]) -> None:
        with self._lock:
            for key, (call, _) in self._running.items():
                if match(key):
                    call.cancelled.set()
                    if key in self._choices:
                        self._choices[key].set()  # Call.ask stops waiting; selected stays None

    def _await_choice(self, call: Call, n: int) -> tuple[str, _Answer]:
        base = self.public_url or self._base
        if base is None:
            raise RuntimeError("ask: the server's URL is unknown (set public_url, or let the runtime fetch the toolset first)")
        answer = _Answer(n)
        with self._lock:
            self._choices[(call.group_id, call.id)] = answer
        q = urlencode({"thread": call.group_id, "call": call.id})
        return f"{base}{CHOICE_PATH}?{q}", answer

    def _forget_choice(self, call: Call) -> None:
        with self._lock:
            self._choices.pop((call.group_id, call.id), None)

    def _choice_response(self, query: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        q = parse_qs(query)
        key = ((q.get("thread") or [""])[0], (q.get("call") or [""])[0])
        with self._lock:
            answer = self._choices.get(key)
        if answer is None or answer.is_set():
            return 404, {"error": "no choice of this call is waiting"}
        sel = body.get("selected")
        if not isinstance(sel, int) or isinstance(sel, bool) or not 0 <= sel < answer.n:
            return 400, {"error": f'field "selected": must be an index below {answer.n}'}
        answer.selected = sel
        answer.set()
        return 200, {"status": "accepted"}

    def _handle_post(self, path: str, body: Any, query: str = "") -> tuple[int, dict[str, Any]]:
        if path.endswith(INVOKE_PATH):
            return self._invoke(body)
        if not isinstance(body, dict):
            return 400, {"error": "the document must be a JSON object"}
        if path.endswith(CHOICE_PATH):
            return self._choice_response(query, body)
        if path.endswith("/cancel_tool_call"):
            thread, call = body.get("thread_id"), body.get("tool_call_id")
            self._cancel(lambda k: k == (thread, call))
            return 200, {"status": "accepted"}
        if path.endswith("/close_thread"):
            thread = body.get("thread_id")
            self._cancel(lambda k: k[0] == thread)
            return 200, {"status": "accepted"}
        if path.endswith("/tool_call_status"):
            for f in ("thread_id", "tool_call_id"):
                bad = _check_id(f, body.get(f))
                if bad:
                    return 400, {"error": bad}
            with self._lock:
                alive = (body["thread_id"], body["tool_call_id"]) in self._running
            return 200, {"alive": alive}
        if path.endswith("/migrate"):
            return 501, {"error": "this server does not migrate sessions"}
        return 404, {"error": "not found"}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:
                log.debug("agentslice_tools: " + fmt, *args)

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = (json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                if not path.endswith(TOOLSET_PATH):
                    self._answer(404, {"error": "not found"})
                    return
                if not server._tools:
                    self._answer(503, {"error": "this server offers no tools yet"})
                    return
                base = server.public_url
                if base is None:
                    proto = self.headers.get("X-Forwarded-Proto")
                    scheme = proto if proto in ("http", "https") else "http"
                    host = self.headers.get("Host") or "%s:%d" % self.server.server_address[:2]
                    base = f"{scheme}://{host}{path[: -len(TOOLSET_PATH)]}"
                    server._base = base
                self._answer(200, server.toolset(base))

            do_HEAD = do_GET

            def do_POST(self) -> None:
                url = urlsplit(self.path)
                path = url.path
                if server.authorize is not None:
                    reason = server.authorize(self.headers)
                    if reason:
                        self._discard()
                        self._answer(401, {"error": reason})
                        return
                raw = self._read_body()
                if raw is None:
                    self.close_connection = True
                    self._answer(413, {"error": "body too large or unreadable"})
                    return
                try:
                    body = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    self._answer(400, {"error": "body is not valid UTF-8"})
                    return
                except json.JSONDecodeError as e:
                    self._answer(400, {"error": f"malformed JSON: {e}"})
                    return
                status, answer = server._handle_post(path, body, url.query)
                self._answer(status, answer)

            def _read_body(self) -> Optional[bytes]:
                """The request body (Content-Length or chunked), None when it
                is larger than MAX_BODY or malformed."""
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    out = bytearray()
                    while True:
                        line = self.rfile.readline(1024)
                        try:
                            size = int(line.split(b";")[0].strip(), 16)
                        except ValueError:
                            return None
                        if size < 0 or len(out) + size > MAX_BODY:
                            return None
                        if size == 0:
                            while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline(1024)  # the CRLF after the chunk
                try:
                    n = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    return None
                if n < 0:
                    return None
                if n > MAX_BODY:
                    if n <= 2 * MAX_BODY:  # drain it, so the client reads the 413 rather than a reset
                        while n > 0:
                            got = len(self.rfile.read(min(n, 1 << 16)))
                            if got == 0:
                                break
                            n -= got
                    return None
                return self.rfile.read(n)

            def _discard(self) -> None:
                try:
                    n = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    n = 0
                if 0 < n <= MAX_BODY:
                    self.rfile.read(n)
                else:
                    self.close_connection = True

            def do_PUT(self) -> None:
                self._answer(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "POST or GET"})

            do_DELETE = do_PATCH = do_PUT

        return Handler


def _check_id(field: str, v: Any) -> Optional[str]:
    if not isinstance(v, str) or v == "":
        return f'field "{field}": missing' if v in (None, "") else f'field "{field}": must be a string'
    if len(v.encode("utf-8")) > MAX_ID_LEN:
        return f'field "{field}": {len(v.encode("utf-8"))} bytes long, more than {MAX_ID_LEN}'
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in v):
        return f'field "{field}": contains a control or space character'
    return None


def _check_invocation(b: dict[str, Any]) -> Optional[str]:
    op = b.get("operation")
    if not isinstance(op, str) or op == "":
        return 'field "operation": missing' if op in (None, "") else 'field "operation": must be a string'
    for f in ("id", "group_id"):
        bad = _check_id(f, b.get(f))
        if bad:
            return bad
    url = b.get("callback_url")
    if not isinstance(url, str) or url == "":
        return 'field "callback_url": missing'
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return 'field "callback_url": must be an absolute http(s) URL'
    cid = b.get("call_id")
    if cid is not None and not isinstance(cid, str):
        return 'field "call_id": must be a string or null'
    anc = b.get("thread_ancestors")
    if anc is not None and not (isinstance(anc, list) and all(isinstance(a, str) for a in anc)):
        return 'field "thread_ancestors": must be an array of strings'
    return None
