"""The serve client against a real ``agentslice serve``.

Not collected by ``unittest discover`` (its name does not start with
test_): the Go test internal/server TestServePythonSDK starts serve with the
Python example tool server (examples/python/wait_for_url.py) and a scripted
model that calls wait_for_url, then runs this module with
AGENTSLICE_SERVE_URL and AGENTSLICE_THREAD set."""

from __future__ import annotations

import os
import time
import unittest

from agentslice_tools import APIError, ServeClient

from .helpers import WAIT


class TestAgainstServe(unittest.TestCase):
    def setUp(self) -> None:
        url, self.thread = os.environ.get("AGENTSLICE_SERVE_URL"), os.environ.get("AGENTSLICE_THREAD")
        if not url or not self.thread:
            self.skipTest("AGENTSLICE_SERVE_URL and AGENTSLICE_THREAD are not set (the Go test sets them)")
        self.client = ServeClient(url)

    def test_send_follow_and_read(self) -> None:
        sent = self.client.send(self.thread, "Wait for the service to come up.", id="m_py_1")
        self.assertEqual(sent, {"id": "m_py_1", "thread_id": self.thread})
        self.assertEqual(self.client.send(self.thread, "Wait for the service to come up.", id="m_py_1")["id"], "m_py_1")

        # Follow the thread from its start until the final event is in and
        # the model has answered it.
        progress, final = [], None
        deadline = time.monotonic() + 4 * WAIT
        for ev in self.client.events(self.thread, after=0, timeout=4 * WAIT):
            if ev.kind == "subscription_event":
                text = ev.data["text"]
                if "returned 200" in text:
                    final = text
                else:
                    progress.append(text)
            if final and ev.kind == "turn":
                break
            self.assertLess(time.monotonic(), deadline, f"no final event in time; progress so far {progress}")
        self.assertEqual(final is not None and final.endswith("returned 200 after 3 attempts"), True, final)
        self.assertEqual(len(progress), 2, progress)
        self.assertTrue(all("HTTP 503" in p for p in progress), progress)

        th = self.client.thread(self.thread)
        results = [it for it in th["items"] if it["kind"] == "tool_result" and it.get("name") == "wait_for_url"]
        self.assertEqual(len(results), 1, th["items"])
        self.assertTrue(results[0]["text"].startswith("watching http://"), results[0])

        with self.assertRaises(APIError) as cm:
            self.client.thread("thr_nobody_wrote_to")
        self.assertEqual(cm.exception.status, 404)


class TestChoiceAgainstServe(unittest.TestCase):
    def setUp(self) -> None:
        url, self.thread = os.environ.get("AGENTSLICE_SERVE_URL"), os.environ.get("AGENTSLICE_CHOICE_THREAD")
        if not url or not self.thread:
            self.skipTest("AGENTSLICE_SERVE_URL and AGENTSLICE_CHOICE_THREAD are not set (the Go test sets them)")
        self.client = ServeClient(url)

    def test_answer_a_choice(self) -> None:
        self.client.send(self.thread, "Deploy to staging.")
        deadline = time.monotonic() + 4 * WAIT
        result = None
        for ev in self.client.events(self.thread, after=0, timeout=4 * WAIT):
            if ev.kind == "user_choice":
                self.assertEqual(ev.data["choice"]["choices"], ["cancel", "deploy"])
                self.assertEqual(ev.data["choice"]["prompt"], "Deploy to staging?")
                with self.assertRaises(APIError) as cm:
                    self.client.answer_choice(self.thread, ev.data["call_id"], 5)
                self.assertEqual(cm.exception.status, 400)
                self.client.answer_choice(self.thread, ev.data["call_id"], 1)
            if ev.kind == "tool_result" and ev.data.get("tool") == "confirm_deploy":
                result = ev.data
            if result and ev.kind == "turn":
                break
            self.assertLess(time.monotonic(), deadline, "no result in time")
        assert result is not None
        self.assertEqual(result["text"], "deployed to staging")
        self.assertEqual(result["display"][0]["type"], "diff", result)


if __name__ == "__main__":
    unittest.main()
