"""Schemas from type hints, and the SSE parser of the serve client."""

from __future__ import annotations

import importlib.util
import unittest
from typing import Optional

from agentslice_tools import SchemaError, parse_sse, schema_from_hints


class TestSchemaFromHints(unittest.TestCase):
    def test_simple_types(self) -> None:
        def f(call: object, name: str, n: int, ratio: float, on: bool, tags: list[str], meta: dict,
              note: Optional[str] = None, limit: int = 10, anything=None) -> str:  # type: ignore[no-untyped-def]
            return ""

        s = schema_from_hints(f, {"call"})
        self.assertEqual(s["required"], ["name", "n", "ratio", "on", "tags", "meta"])
        self.assertFalse(s["additionalProperties"])
        p = s["properties"]
        self.assertEqual(p["name"], {"type": "string"})
        self.assertEqual(p["ratio"], {"type": "number"})
        self.assertEqual(p["on"], {"type": "boolean"})
        self.assertEqual(p["tags"], {"type": "array", "items": {"type": "string"}})
        self.assertEqual(p["meta"], {"type": "object"})
        self.assertEqual(p["note"], {"type": ["string", "null"]})
        self.assertEqual(p["limit"], {"type": "integer", "default": 10})
        self.assertEqual(p["anything"], {})
        self.assertNotIn("call", p)

    def test_pipe_union(self) -> None:
        def f(x: int | None = None) -> str:
            return ""

        self.assertEqual(schema_from_hints(f, set())["properties"]["x"], {"type": ["integer", "null"]})

    def test_unsupported_hints_name_the_parameter(self) -> None:
        def f(a: str, b: int | str) -> str:
            return ""

        with self.assertRaisesRegex(SchemaError, "parameter 'b': unsupported union"):
            schema_from_hints(f, set())

        def g(*rest: str) -> str:
            return ""

        with self.assertRaisesRegex(SchemaError, "parameter 'rest'"):
            schema_from_hints(g, set())


class TestParseSSE(unittest.TestCase):
    def test_events(self) -> None:
        raw = (b": keep-alive\n\n"
               b"id: 3\nevent: turn\ndata: {\"text\": \"hi\"}\n\n"
               b"event: reply\r\ndata: {\"text\":\r\ndata:  \"two lines\"}\r\n\r\n"
               b"event: odd\ndata: not json\n\n")
        evs = list(parse_sse(raw.splitlines(keepends=True)))
        self.assertEqual([(e.kind, e.id) for e in evs], [("turn", "3"), ("reply", None), ("odd", None)])
        self.assertEqual(evs[0].data, {"text": "hi"})
        self.assertEqual(evs[1].data, {"text": "two lines"})
        self.assertEqual(evs[2].data, "not json")


if __name__ == "__main__":
    unittest.main()


class TestValidator(unittest.TestCase):
    def test_without_jsonschema_only_objects_are_checked(self) -> None:
        import sys
        from unittest import mock

        from agentslice_tools.schema import Validator

        Validator._warned = False
        with mock.patch.dict(sys.modules, {"jsonschema": None}), self.assertLogs("agentslice_tools", "WARNING") as logs:
            v = Validator({"type": "object", "required": ["x"]})
        self.assertIn("jsonschema is not installed", logs.output[0])
        self.assertIsNone(v.validate({}))  # the runtime checks "required" before dispatch
        self.assertEqual(v.validate([1]), "arguments must be a JSON object")

    @unittest.skipUnless(importlib.util.find_spec("jsonschema"), "jsonschema is not installed")
    def test_with_jsonschema(self) -> None:
        from agentslice_tools import ToolServer
        from agentslice_tools.schema import Validator

        v = Validator({"type": "object", "properties": {"n": {"type": "integer"}}})
        self.assertIsNone(v.validate({"n": 1}))
        self.assertEqual(v.validate({"n": "one"}), "field 'n': 'one' is not of type 'integer'")
        with self.assertRaisesRegex(ValueError, "tool 'bad': inputSchema is not a valid JSON Schema"):
            ToolServer("s").add_tool(lambda: "", name="bad", description="x", input_schema={"type": 7})
