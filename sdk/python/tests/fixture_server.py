"""A second tool server for internal/server TestServePythonSDK: a tool that
asks the user (Call.ask) and answers with display_as segments.

    python3 -m tests.fixture_server 0     # prints LISTENING <port>
"""

from __future__ import annotations

import sys
import threading

from agentslice_tools import Call, Result, ToolServer, diff_segment, text_segment

server = ToolServer("pyfixture")


@server.tool()
def confirm_deploy(call: Call, target: str) -> str | Result:
    """Asks the user whether to deploy to a target, then reports."""
    n = call.ask(f"Deploy to {target}?", ["cancel", "deploy"], default=0)
    if n != 1:
        return f"not deployed to {target}"
    return Result(text=f"deployed to {target}",
                  display_as=[diff_segment("deploy.txt", f"@@ -0,0 +1 @@\n+{target}\n"), text_segment("deployed")])


if __name__ == "__main__":
    print(f"LISTENING {server.start(int(sys.argv[1]) if len(sys.argv) > 1 else 0)}", flush=True)
    threading.Event().wait()
