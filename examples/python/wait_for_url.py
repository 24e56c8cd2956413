"""wait_for_url: a RAP tool server in Python (agentslice_tools).

The tool polls a URL until it answers HTTP 200, then reports. It answers the
call at once ("watching ...", a subscription), sends a progress event into
the thread after each failed poll, and a final event when the URL is up or
the time is spent. The runtime can cancel it at any time.

    PYTHONPATH=sdk/python python3 examples/python/wait_for_url.py 9100
    bin/agentslice serve -tool-server http://127.0.0.1:9100
"""

import sys
import time
import urllib.error
import urllib.request

from agentslice_tools import Call, ToolServer

server = ToolServer("waiter", "Waits for things to be ready")


def poll(url: str) -> str:
    """One GET: "200" or what went wrong."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return str(resp.status)
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return f"unreachable ({getattr(e, 'reason', e)})"


@server.tool(annotations={"readOnly": True, "longRunning": True})
def wait_for_url(call: Call, url: str, timeout_seconds: float = 60, interval_seconds: float = 2) -> None:
    """Waits until a URL answers HTTP 200 and reports then, with progress on the way."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"url must be http(s), got {url!r}")
    call.subscribe(f"watching {url}; progress follows")
    deadline = time.monotonic() + timeout_seconds
    attempt = 0
    while True:
        attempt += 1
        got = poll(url)
        if got == "200":
            call.event(f"{url} returned 200 after {attempt} attempts", associative=True, final=True)
            return
        if time.monotonic() + interval_seconds > deadline:
            call.event(f"gave up on {url} after {attempt} attempts (last: {got})", associative=True, final=True)
            return
        call.event(f"attempt {attempt}: {got}; trying again in {interval_seconds:g}s", associative=True)
        if call.sleep(interval_seconds):
            return  # cancelled: the runtime no longer wants the answer


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9100
    bound = server.start(port)
    print(f"LISTENING {bound}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
