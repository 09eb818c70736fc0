"""Engine data as plain JSON for responses, copied without recursion (traces and trees can be deep)."""

from __future__ import annotations

from typing import Any

from parsers.errors import InputError
from parsers.tree import SCHEMA_VERSION, flat_from_nested

_PLAIN = (str, int, float, bool, type(None))


def _flattened(value: dict[str, Any]) -> dict[str, Any]:
    """Return a nested (schema 1) discourse tree dict in today's flat form; any other dict unchanged.

    Sessions stored before trees were flat hold them nested, hundreds of levels deep for a long
    message: rewritten on the way out, they stay readable.
    """
    if "root" not in value or "edus" not in value or "nodes" in value or not isinstance(value["root"], dict):
        return value
    try:
        nodes = flat_from_nested(value["root"])
    except InputError:
        return value
    out = {k: v for k, v in value.items() if k != "root"}
    out.update(schema=SCHEMA_VERSION, nodes=nodes)
    return out


def jsonable(value: Any) -> Any:
    """Return ``value`` as JSON data: dict keys as strings, tuples and sets as lists, objects through their
    ``to_dict``, anything else as its ``str``; nested (schema 1) trees come out flat. Built with a loop."""
    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while stack:
        item, container, key = stack.pop()
        if isinstance(item, _PLAIN):
            container[key] = item
        elif isinstance(item, dict):
            item = _flattened(item)
            out: dict[str, Any] = {str(k): None for k in item}  # keys first: the order is kept
            container[key] = out
            stack.extend((v, out, str(k)) for k, v in item.items())
        elif isinstance(item, (list, tuple, set, frozenset)):
            seq: list[Any] = [None] * len(item)
            container[key] = seq
            stack.extend((v, seq, i) for i, v in enumerate(item))
        elif hasattr(item, "to_dict"):
            stack.append((item.to_dict(), container, key))
        else:
            container[key] = str(item)
    return holder[0]
