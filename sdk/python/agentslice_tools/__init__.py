"""agentslice_tools: RAP tool servers and an agentslice serve client, with
the Python standard library only.

    from agentslice_tools import ToolServer

    server = ToolServer("clock")

    @server.tool(description="The current UTC time")
    def get_time() -> str:
        ...

    server.run(9000)
"""

from ._post import RetryPolicy, StatusError, UnavailableError
from .call import Call, Result, diff_segment, image_item, image_segment, text_item, text_segment
from .client import APIError, Event, ServeClient, parse_sse
from .schema import SchemaError, schema_from_hints
from .server import INVOKE_PATH, TOOLSET_PATH, ToolServer

__all__ = [
    "APIError", "Call", "Event", "INVOKE_PATH", "Result", "RetryPolicy", "SchemaError", "ServeClient",
    "StatusError", "TOOLSET_PATH", "ToolServer", "UnavailableError", "diff_segment", "image_item",
    "image_segment", "parse_sse", "schema_from_hints", "text_item", "text_segment",
]
