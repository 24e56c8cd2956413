"""ToolServer against a real HTTP callback receiver (tests/helpers.py)."""

from __future__ import annotations

import importlib.util
import threading
import unittest
from typing import Any, Optional

from agentslice_tools import Call, Result, RetryPolicy, ToolServer, diff_segment, image_item, text_item, text_segment

from .helpers import WAIT, Receiver, invocation, request

HAVE_JSONSCHEMA = importlib.util.find_spec("jsonschema") is not None
FAST = RetryPolicy(attempts=4, base=0.001, max=0.002, total=WAIT)


class ServerCase(unittest.TestCase):
    def setUp(self) -> None:
        self.rcv = Receiver()
        self.addCleanup(self.rcv.close)
        self.server = ToolServer("demo", "Demo tools", retry=FAST)
        self.release = threading.Event()  # lets a blocking tool finish
        self.entered = threading.Event()  # a blocking tool started
        self.saw_cancel = threading.Event()
        s = self.server

        @s.tool(description="Echoes its text")
        def echo(text: str, times: int = 1) -> str:
            return text * times

        @s.tool(description="Fails")
        def boom() -> str:
            raise RuntimeError("boom")

        @s.tool(description="Returns nothing")
        def silent() -> None:
            return None

        @s.tool(description="Shows a diff")
        def edit(path: str) -> Result:
            return Result(text=f"edited {path}", display_as=[diff_segment(path, "@@ -1 +1 @@\n-a\n+b\n"), text_segment("edited")])

        @s.tool(description="An image the model sees")
        def picture() -> Result:
            return Result(content=[text_item("a dot"), image_item("iVBORw0KGgo=", "image/png")])

        @s.tool(description="Blocks until released or cancelled")
        def block(call: Call) -> str:
            self.entered.set()
            while not self.release.is_set():
                if call.cancelled.wait(0.01):
                    self.saw_cancel.set()
                    return "too late"
            return "released"

        @s.tool(description="Subscribes and sends events")
        def watch(call: Call) -> None:
            call.subscribe("watching")
            call.event("threaded one")
            call.event("inline one", associative=True)
            call.event("done", associative=True, final=True)

        @s.tool(description="Asks the user first")
        def confirm(call: Call) -> Optional[str]:
            n = call.ask("Proceed?", ["no", "yes"], default=0)
            return None if n is None else f"chose {n}"

        self.base = f"http://127.0.0.1:{s.start()}"
        self.addCleanup(s.stop)

    def invoke(self, op: str, args: Any = None, **kw: Any) -> tuple[int, Any]:
        return request("POST", self.base + "/invoke", invocation(self.rcv, op, args, **kw))

    def running_thread(self, group: str, id: str) -> threading.Thread:
        return self.server._running[(group, id)][1]


class TestDiscovery(ServerCase):
    def test_toolset_shape(self) -> None:
        status, ts = request("GET", self.base + "/.well-known/rap-toolset")
        self.assertEqual(status, 200)
        self.assertEqual(ts["name"], "demo")
        self.assertEqual(ts["description"], "Demo tools")
        self.assertEqual(ts["endpoint"], self.base + "/invoke")
        tools = {t["name"]: t for t in ts["tools"]}
        self.assertEqual(set(tools), {"echo", "boom", "silent", "edit", "picture", "block", "watch", "confirm"})
        echo = tools["echo"]
        self.assertEqual(echo["description"], "Echoes its text")
        self.assertEqual(echo["inputSchema"]["required"], ["text"])
        self.assertEqual(echo["inputSchema"]["properties"]["times"], {"type": "integer", "default": 1})
        self.assertNotIn("call", tools["block"]["inputSchema"]["properties"])

    def test_endpoint_follows_a_path_prefix(self) -> None:
        status, ts = request("GET", self.base + "/tools/demo/.well-known/rap-toolset")
        self.assertEqual(status, 200)
        self.assertEqual(ts["endpoint"], self.base + "/tools/demo/invoke")

    def test_public_url_wins(self) -> None:
        s = ToolServer("pub", public_url="https://tools.example.com/x/")
        s.add_tool(lambda: "x", name="x", description="x")
        self.assertEqual(s.toolset("http://ignored")["endpoint"], "http://ignored/invoke")
        port = s.start()
        self.addCleanup(s.stop)
        _, ts = request("GET", f"http://127.0.0.1:{port}/.well-known/rap-toolset")
        self.assertEqual(ts["endpoint"], "https://tools.example.com/x/invoke")

    def test_no_tools_is_503(self) -> None:
        s = ToolServer("empty")
        port = s.start()
        self.addCleanup(s.stop)
        status, body = request("GET", f"http://127.0.0.1:{port}/.well-known/rap-toolset")
        self.assertEqual(status, 503)
        self.assertIn("no tools", body["error"])


class TestInvocation(ServerCase):
    def test_result_echoes_ids(self) -> None:
        status, body = self.invoke("echo", {"text": "ab", "times": 2})
        self.assertEqual((status, body), (200, {"status": "accepted"}))
        got = self.rcv.next()
        self.assertEqual(got, {"type": "tool_result", "group_id": "thr_1", "id": "call_1", "call_id": "cid_1", "text": "abab"})

    def test_null_call_id_is_echoed_as_null(self) -> None:
        self.invoke("echo", {"text": "x"}, call_id=None)
        self.assertIsNone(self.rcv.next()["call_id"])

    def test_errors_are_results(self) -> None:
        for op, args, want in [
            ("boom", {}, "error: boom"),
            ("silent", {}, "error: silent finished without a result"),
            ("nope", {}, 'error: unknown operation "nope" (this server offers echo, boom, silent, edit, picture, block, watch, confirm)'),
            ("echo", [1], "error: invalid arguments for echo: arguments must be a JSON object"),
        ]:
            with self.subTest(op=op):
                status, _ = self.invoke(op, args, id="c_" + op + str(type(args).__name__))
                self.assertEqual(status, 200)
                self.assertEqual(self.rcv.next()["text"], want)

    @unittest.skipUnless(HAVE_JSONSCHEMA, "jsonschema is not installed: the server checks only that arguments are an object")
    def test_schema_refusal_is_a_result(self) -> None:
        self.invoke("echo", {"times": 2})
        text = self.rcv.next()["text"]
        self.assertTrue(text.startswith("error: invalid arguments for echo: "), text)
        self.assertIn("'text' is a required property", text)

    def test_display_as_segments_are_nested(self) -> None:
        self.invoke("edit", {"path": "a.txt"})
        got = self.rcv.next()
        self.assertEqual(got["text"], "edited a.txt")
        self.assertEqual(got["display_as"], [
            {"type": "diff", "content": {"path": "a.txt", "patch": "@@ -1 +1 @@\n-a\n+b\n"}},
            {"type": "text", "content": "edited"}])

    def test_content_items(self) -> None:
        self.invoke("picture")
        got = self.rcv.next()
        self.assertNotIn("text", got)
        self.assertEqual(got["content"][1], {"type": "image", "data": "iVBORw0KGgo=", "mediaType": "image/png"})

    def test_bad_invocations_name_the_field(self) -> None:
        good = invocation(self.rcv, "echo", {"text": "x"})
        for field, value, want in [
            ("id", None, 'field "id": missing'),
            ("group_id", "a b", 'field "group_id": contains a control or space character'),
            ("callback_url", "ftp://x/y", 'field "callback_url": must be an absolute http(s) URL'),
            ("operation", "", 'field "operation": missing'),
            ("call_id", 7, 'field "call_id": must be a string or null'),
        ]:
            with self.subTest(field=field):
                body = dict(good)
                if value is None:
                    del body[field]
                else:
                    body[field] = value
                status, answer = request("POST", self.base + "/invoke", body)
                self.assertEqual((status, answer["error"]), (400, want))
        status, answer = request("POST", self.base + "/invoke", b"{not json")
        self.assertEqual(status, 400)
        self.assertIn("malformed JSON", answer["error"])
        self.assertEqual(self.rcv.attempts, 0)

    def test_chunked_and_oversized_bodies(self) -> None:
        import http.client
        import json as _json

        host, port = self.base.removeprefix("http://").split(":")
        body = _json.dumps(invocation(self.rcv, "echo", {"text": "chunked"})).encode()
        conn = http.client.HTTPConnection(host, int(port), timeout=WAIT)
        self.addCleanup(conn.close)
        conn.request("POST", "/invoke", body=iter([body[:10], body[10:]]), headers={"Content-Type": "application/json"},
                     encode_chunked=True)
        resp = conn.getresponse()
        self.assertEqual((resp.status, _json.loads(resp.read())), (200, {"status": "accepted"}))
        self.assertEqual(self.rcv.next()["text"], "chunked")
        status, answer = request("POST", self.base + "/invoke", b" " * ((4 << 20) + 1))
        self.assertEqual((status, answer["error"]), (413, "body too large or unreadable"))

    def test_redelivered_invocation_runs_once(self) -> None:
        self.invoke("echo", {"text": "once"})
        self.assertEqual(self.rcv.next()["text"], "once")
        status, _ = self.invoke("echo", {"text": "once"})
        self.assertEqual(status, 200)
        self.invoke("echo", {"text": "other"}, id="call_2")  # a later call is still answered...
        self.assertEqual(self.rcv.next()["text"], "other")
        self.assertTrue(self.rcv.bodies.empty())  # ...and the redelivery was not


class TestLifecycle(ServerCase):
    def status(self, thread: str, call: str) -> tuple[int, Any]:
        return request("POST", self.base + "/tool_call_status", {"thread_id": thread, "tool_call_id": call})

    def test_status_alive_while_running(self) -> None:
        self.invoke("block")
        self.assertTrue(self.entered.wait(WAIT))
        self.assertEqual(self.status("thr_1", "call_1"), (200, {"alive": True}))
        self.assertEqual(self.status("thr_1", "other"), (200, {"alive": False}))
        th = self.running_thread("thr_1", "call_1")
        self.release.set()
        self.assertEqual(self.rcv.next()["text"], "released")
        th.join(WAIT)
        self.assertEqual(self.status("thr_1", "call_1"), (200, {"alive": False}))
        status, body = request("POST", self.base + "/tool_call_status", {"tool_call_id": "x"})
        self.assertEqual((status, body["error"]), (400, 'field "thread_id": missing'))

    def test_cancel_sets_the_flag_and_sends_nothing(self) -> None:
        self.invoke("block")
        self.assertTrue(self.entered.wait(WAIT))
        th = self.running_thread("thr_1", "call_1")
        status, body = request("POST", self.base + "/cancel_tool_call", {"thread_id": "thr_1", "tool_call_id": "call_1"})
        self.assertEqual((status, body), (200, {"status": "accepted"}))
        self.assertTrue(self.saw_cancel.wait(WAIT))
        th.join(WAIT)
        self.assertFalse(th.is_alive())
        self.assertEqual(self.rcv.attempts, 0)  # the handler's "too late" was not sent

    def test_cancel_of_an_unknown_call_is_200(self) -> None:
        status, _ = request("POST", self.base + "/cancel_tool_call", {"thread_id": "t", "tool_call_id": "c"})
        self.assertEqual(status, 200)

    def test_close_thread_cancels_that_thread_only(self) -> None:
        self.invoke("block", group="thr_a")
        self.assertTrue(self.entered.wait(WAIT))
        self.entered.clear()
        self.invoke("block", group="thr_b")
        self.assertTrue(self.entered.wait(WAIT))
        a, b = self.running_thread("thr_a", "call_1"), self.running_thread("thr_b", "call_1")
        self.assertEqual(request("POST", self.base + "/close_thread", {"thread_id": "thr_a"})[0], 200)
        a.join(WAIT)
        self.assertFalse(a.is_alive())
        self.assertTrue(b.is_alive())
        self.release.set()
        got = self.rcv.next()
        self.assertEqual((got["group_id"], got["text"]), ("thr_b", "released"))

    def test_subscription_events(self) -> None:
        self.invoke("watch")
        got = [self.rcv.next() for _ in range(4)]
        self.assertEqual(got[0], {"type": "tool_result", "group_id": "thr_1", "id": "call_1", "call_id": "cid_1",
                                  "text": "watching", "subscription": True})
        self.assertEqual(got[1], {"type": "subscription_event", "group_id": "thr_1", "tool_call_id": "call_1",
                                  "text": "threaded one", "event_id": "call_1.1"})
        self.assertEqual((got[2].get("associative"), got[2].get("final")), (True, None))
        self.assertEqual((got[3].get("associative"), got[3].get("final"), got[3]["event_id"]), (True, True, "call_1.3"))

    def test_user_choice_answered_at_the_response_url(self) -> None:
        request("GET", self.base + "/.well-known/rap-toolset")  # the runtime fetches it before any call
        self.invoke("confirm")
        choice = self.rcv.next()
        url = choice.pop("response_url")
        self.assertEqual(choice, {"type": "user_choice", "group_id": "thr_1", "id": "call_1", "call_id": "cid_1",
                                  "prompt": "Proceed?", "choices": ["no", "yes"], "default": 0})
        self.assertTrue(url.startswith(self.base + "/choice_response?"), url)
        status, body = request("POST", url, {"id": "call_1", "selected": 2})
        self.assertEqual((status, body["error"]), (400, 'field "selected": must be an index below 2'))
        self.assertEqual(request("POST", url, {"id": "call_1", "selected": 1})[0], 200)
        self.assertEqual(self.rcv.next()["text"], "chose 1")
        self.assertEqual(request("POST", url, {"id": "call_1", "selected": 1})[0], 404)  # answered already

    def test_cancel_ends_a_wait_for_a_choice(self) -> None:
        request("GET", self.base + "/.well-known/rap-toolset")
        self.invoke("confirm")
        url = self.rcv.next()["response_url"]
        th = self.running_thread("thr_1", "call_1")
        request("POST", self.base + "/cancel_tool_call", {"thread_id": "thr_1", "tool_call_id": "call_1"})
        th.join(WAIT)
        self.assertFalse(th.is_alive())
        self.assertEqual(self.rcv.attempts, 1)  # the choice only; nothing after the cancellation
        self.assertEqual(request("POST", url, {"id": "call_1", "selected": 1})[0], 404)

    def test_stop_refuses_new_calls(self) -> None:
        self.server.stop()
        s = ToolServer("again")
        s.add_tool(lambda: "x", name="x", description="x")
        port = s.start()
        s._stopping.set()
        self.addCleanup(s.stop)
        status, body = request("POST", f"http://127.0.0.1:{port}/invoke", invocation(self.rcv, "x"))
        self.assertEqual((status, body["error"]), (503, "server is not running"))


class TestLimits(unittest.TestCase):
    def test_authorize_guards_every_post(self) -> None:
        rcv = Receiver()
        self.addCleanup(rcv.close)

        def authorize(headers: Any) -> Optional[str]:
            return None if headers.get("Authorization") == "Bearer s3cret" else "bad or missing token"

        s = ToolServer("guarded", authorize=authorize)
        s.add_tool(lambda: "ok", name="ok", description="ok")
        base = f"http://127.0.0.1:{s.start()}"
        self.addCleanup(s.stop)
        for path, body in [("/invoke", invocation(rcv, "ok")), ("/tool_call_status", {"thread_id": "t", "tool_call_id": "c"}),
                           ("/cancel_tool_call", {"thread_id": "t", "tool_call_id": "c"}), ("/close_thread", {"thread_id": "t"})]:
            with self.subTest(path=path):
                status, answer = request("POST", base + path, body)
                self.assertEqual((status, answer["error"]), (401, "bad or missing token"))
        status, _ = request("POST", base + "/invoke", invocation(rcv, "ok"), {"Authorization": "Bearer s3cret"})
        self.assertEqual(status, 200)
        self.assertEqual(rcv.next()["text"], "ok")
        self.assertEqual(request("GET", base + "/.well-known/rap-toolset")[0], 200)  # discovery is public

    def test_max_running_answers_503(self) -> None:
        rcv = Receiver()
        self.addCleanup(rcv.close)
        release, entered = threading.Event(), threading.Event()
        s = ToolServer("one", max_running=1)

        def hold(call: Call) -> str:
            entered.set()
            release.wait(WAIT)
            return "held"

        s.add_tool(hold, name="hold", description="holds")
        base = f"http://127.0.0.1:{s.start()}"
        self.addCleanup(s.stop)
        self.addCleanup(release.set)
        self.assertEqual(request("POST", base + "/invoke", invocation(rcv, "hold"))[0], 200)
        self.assertTrue(entered.wait(WAIT))
        status, body = request("POST", base + "/invoke", invocation(rcv, "hold", id="call_2"))
        self.assertEqual((status, body["error"]), (503, "too many calls in progress; retry later"))

    def test_bad_tool_definitions_name_the_tool(self) -> None:
        s = ToolServer("defs")
        with self.assertRaisesRegex(ValueError, "tool 'has space': name must be"):
            s.add_tool(lambda: "", name="has space", description="x")
        with self.assertRaisesRegex(ValueError, "tool 'nodoc': needs a description"):
            s.add_tool(lambda: "", name="nodoc")
        with self.assertRaisesRegex(ValueError, "tool 'dup': defined twice"):
            s.add_tool(lambda: "", name="dup", description="x")
            s.add_tool(lambda: "", name="dup", description="x")

        def weird(x: complex) -> str:
            return ""

        with self.assertRaisesRegex(ValueError, "tool 'weird': parameter 'x': unsupported type hint"):
            s.add_tool(weird, description="x")


if __name__ == "__main__":
    unittest.main()
