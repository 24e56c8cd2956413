"""Input schemas: derived from a handler's type hints, and checked with the
``jsonschema`` package when it is installed.

The runtime (agentslice, and any RAP runtime that follows the spec's SHOULD)
validates arguments against ``inputSchema`` before it dispatches a call, so
the server-side check is a second line of defence. Without ``jsonschema``
this module does not pretend to validate: it only checks that the arguments
are a JSON object and logs once that full validation is off."""

from __future__ import annotations

import inspect
import logging
import types
import typing
from typing import Any, Callable, Optional

log = logging.getLogger("agentslice_tools")

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class SchemaError(ValueError):
    """A handler's hints cannot be turned into a schema; names the parameter."""


def schema_from_hints(fn: Callable[..., Any], skip: set[str]) -> dict[str, Any]:
    """A JSON Schema object for fn's parameters (those not in ``skip``).

    Supported hints: str, int, float, bool, list[X], dict, Optional[X] and
    ``X | None``. A parameter with a default is optional; one without a hint
    accepts any JSON value. Anything else raises SchemaError naming the
    parameter: pass ``input_schema`` explicitly then."""
    hints = typing.get_type_hints(fn)
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, p in inspect.signature(fn).parameters.items():
        if name in skip:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise SchemaError(f"parameter {name!r}: *args and **kwargs have no schema; pass input_schema")
        hint = hints.get(name, inspect.Parameter.empty)
        try:
            props[name] = {} if hint is inspect.Parameter.empty else _type_schema(hint)
        except SchemaError as e:
            raise SchemaError(f"parameter {name!r}: {e}; pass input_schema") from None
        if p.default is not inspect.Parameter.empty:
            if p.default is not None and isinstance(p.default, (str, int, float, bool)):
                props[name]["default"] = p.default
        else:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _type_schema(hint: Any) -> dict[str, Any]:
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, getattr(types, "UnionType", None)):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):
            inner = _type_schema(rest[0])
            t = inner.get("type")
            return {**inner, "type": [t, "null"]} if isinstance(t, str) else inner
        raise SchemaError(f"unsupported union {hint!r}")
    if hint is list or origin is list:
        return {"type": "array", "items": _type_schema(args[0])} if args else {"type": "array"}
    if hint is dict or origin is dict:
        return {"type": "object"}
    raise SchemaError(f"unsupported type hint {hint!r}")


class Validator:
    """Checks arguments against one tool's schema."""

    _warned = False

    def __init__(self, schema: dict[str, Any]):
        self._check: Optional[Callable[[Any], Optional[str]]] = None
        try:
            import jsonschema  # type: ignore[import-not-found]
        except ImportError:
            if not Validator._warned:
                Validator._warned = True
                log.warning("agentslice_tools: jsonschema is not installed; arguments are checked only "
                            "to be an object (the runtime validates them against inputSchema before dispatch)")
            return
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as e:
            raise SchemaError(f"inputSchema is not a valid JSON Schema: {e.message}") from None
        validator = cls(schema)

        def check(args: Any) -> Optional[str]:
            err = jsonschema.exceptions.best_match(validator.iter_errors(args))
            if err is None:
                return None
            where = "/".join(str(p) for p in err.absolute_path)
            return f"{'field ' + repr(where) + ': ' if where else ''}{err.message}"

        self._check = check

    def validate(self, args: Any) -> Optional[str]:
        """None when args are acceptable, else the reason."""
        if not isinstance(args, dict):
            return "arguments must be a JSON object"
        return self._check(args) if self._check else None
