"""Callback POSTs: retried on 5xx and transport errors, never on 4xx."""

from __future__ import annotations

import socket
import threading
import unittest
from typing import Optional

from agentslice_tools import Call, RetryPolicy, StatusError, ToolServer, UnavailableError
from agentslice_tools._post import post_json

from .helpers import WAIT, Receiver, invocation, request

FAST = RetryPolicy(attempts=4, base=0.001, max=0.002, total=WAIT)


class TestRetry(unittest.TestCase):
    def setUp(self) -> None:
        self.rcv = Receiver()
        self.addCleanup(self.rcv.close)

    def test_5xx_is_retried_until_delivered(self) -> None:
        self.rcv.script = [503, 502]
        post_json(self.rcv.url, {"type": "x"}, FAST)
        self.assertEqual(self.rcv.attempts, 3)
        self.assertEqual(self.rcv.next(), {"type": "x"})

    def test_4xx_is_not_retried(self) -> None:
        self.rcv.script = [404, 200]
        with self.assertRaises(StatusError) as cm:
            post_json(self.rcv.url, {"type": "x"}, FAST)
        self.assertEqual(cm.exception.status, 404)
        self.assertIn("scripted", str(cm.exception))
        self.assertEqual(self.rcv.attempts, 1)

    def test_budget_of_5xx_runs_out(self) -> None:
        self.rcv.script = [500] * 10
        with self.assertRaises(UnavailableError) as cm:
            post_json(self.rcv.url, {"type": "x"}, FAST)
        self.assertEqual((cm.exception.attempts, self.rcv.attempts), (4, 4))

    def test_transport_errors_are_retried(self) -> None:
        # A port nobody listens on: every attempt is refused, each one retried.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with self.assertRaises(UnavailableError) as cm:
            post_json(f"http://127.0.0.1:{port}/cb", {"type": "x"}, FAST)
        self.assertEqual(cm.exception.attempts, 4)

    def test_a_tool_result_survives_a_flaky_runtime(self) -> None:
        self.rcv.script = [503, 503]
        s = ToolServer("flaky", retry=FAST)
        s.add_tool(lambda: "made it", name="t", description="t")
        base = f"http://127.0.0.1:{s.start()}"
        self.addCleanup(s.stop)
        self.assertEqual(request("POST", base + "/invoke", invocation(self.rcv, "t"))[0], 200)
        self.assertEqual(self.rcv.next()["text"], "made it")
        self.assertEqual(self.rcv.attempts, 3)

    def test_a_refused_result_is_not_sent_twice(self) -> None:
        # The runtime answers 409 to the handler's own result: the kit must not
        # follow up with an error result of its own.
        self.rcv.script = [409]
        done = threading.Event()
        failure: list[Optional[BaseException]] = [None]
        runner: list[threading.Thread] = []
        s = ToolServer("refused", retry=FAST)

        def t(call: Call) -> None:
            runner.append(threading.current_thread())
            try:
                call.result("first")
            except StatusError as e:
                failure[0] = e
            done.set()

        s.add_tool(t, name="t", description="t")
        base = f"http://127.0.0.1:{s.start()}"
        self.addCleanup(s.stop)
        request("POST", base + "/invoke", invocation(self.rcv, "t"))
        self.assertTrue(done.wait(WAIT))
        runner[0].join(WAIT)  # the kit's own follow-up, if any, is sent by now
        self.assertFalse(runner[0].is_alive())
        self.assertIsInstance(failure[0], StatusError)
        self.assertEqual(self.rcv.attempts, 1)


if __name__ == "__main__":
    unittest.main()
