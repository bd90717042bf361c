"""What crosses between the tests and the graded code, and how: data by value, anything
else as a reference to the side that holds it (docs/workspaces-and-execution.md, "The
harness").

Data is None, bool, int, float, complex, str, bytes, bytearray, and lists, tuples (named
ones too), dicts, sets, frozensets and ranges of data. It is written as JSON, each value
tagged with its type, and read back by `json.loads` and a strict walk: never `pickle` or
`marshal`, so whatever the graded code sends is only ever a value of one of these types
(an int is an int, so no object of its own can pass for the test's expected value). A
message is 4 bytes of length, then UTF-8 JSON, at most `MAX_MESSAGE` bytes.
"""

from __future__ import annotations

import base64
import collections
import json
import socket
import struct
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "ARITHMETIC",
    "MAX_DEPTH",
    "MAX_MESSAGE",
    "CodecError",
    "decode",
    "encode",
    "receive",
    "send",
]

MAX_MESSAGE: Final = 64 << 20
#: Nesting deeper than this is refused (and so is a value that contains itself).
MAX_DEPTH: Final = 200
#: The arithmetic the tests may do with the graded code's objects.
ARITHMETIC: Final = (
    "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
    "rfloordiv", "mod", "rmod", "pow", "rpow", "neg", "pos", "abs", "and", "rand", "or", "ror",
    "xor", "rxor", "lshift", "rshift", "invert", "matmul",
)  # fmt: skip
_HEADER: Final = struct.Struct(">I")
_NAMED_TUPLES: dict[tuple[str, tuple[str, ...]], type] = {}


class CodecError(ValueError):
    """A value that cannot cross, or a message that is not one."""


#: How a value that is not data is sent instead: a reference (a JSON list starting "ref").
Refer = Callable[[object], list[Any]]
#: How a reference received becomes an object again.
Resolve = Callable[[list[Any]], object]


def encode(
    value: object, refer: Refer, depth: int = 0, plain: Callable[[object], object] | None = None
) -> Any:
    """`value` as JSON-ready builtins: data tagged by type, anything else `refer(value)`.
    `plain` may first turn a value that is not data into data (a subclass of a data type
    into its base's value)."""
    if depth > MAX_DEPTH:
        raise CodecError(f"a value nested deeper than {MAX_DEPTH} (or one that holds itself)")
    down = depth + 1
    if value is None or value is True or value is False:
        return value
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return ["i", hex(value)]  # type: ignore[arg-type]
    if kind is float:
        return ["f", repr(value)]
    if kind is complex:
        return ["c", repr(value.real), repr(value.imag)]  # type: ignore[attr-defined]
    if kind is list:
        return ["l", [encode(item, refer, down, plain) for item in value]]  # type: ignore[attr-defined]
    if kind is tuple:
        return ["t", [encode(item, refer, down, plain) for item in value]]  # type: ignore[attr-defined]
    if kind is dict:
        pairs = value.items()  # type: ignore[attr-defined]
        return [
            "d",
            [[encode(k, refer, down, plain), encode(v, refer, down, plain)] for k, v in pairs],
        ]
    if kind is set or kind is frozenset:
        tag = "s" if kind is set else "S"
        return [tag, [encode(item, refer, down, plain) for item in value]]  # type: ignore[attr-defined]
    if kind is bytes or kind is bytearray:
        tag = "b" if kind is bytes else "B"
        return [tag, base64.b64encode(value).decode("ascii")]  # type: ignore[arg-type]
    if kind is range:
        r: range = value  # type: ignore[assignment]
        return ["r", hex(r.start), hex(r.stop), hex(r.step)]
    if value is Ellipsis:
        return ["e"]
    if isinstance(value, tuple) and hasattr(kind, "_fields"):
        fields = [str(name) for name in kind._fields]
        return ["n", kind.__name__, fields, [encode(item, refer, down, plain) for item in value]]
    if plain is not None:
        converted = plain(value)
        if converted is not value:
            return encode(converted, refer, down, plain)
    return refer(value)


def decode(data: Any, resolve: Resolve) -> object:
    """A value `encode` wrote, read back strictly: anything else is a CodecError."""
    try:
        return _decode(data, resolve, 0)
    except CodecError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise CodecError(f"a malformed value: {str(exc)[:80]}") from None


def _decode(data: Any, resolve: Resolve, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise CodecError(f"a value nested deeper than {MAX_DEPTH}")
    if data is None or data is True or data is False or type(data) is str:
        return data
    if type(data) is not list or not data or type(data[0]) is not str:
        raise CodecError(f"not a tagged value: {type(data).__name__}")
    tag, rest = data[0], data[1:]
    down = depth + 1
    if tag == "i":
        return _int(rest)
    if tag == "f":
        return float(_text(rest, 1)[0])
    if tag == "c":
        real, imag = _text(rest, 2)
        return complex(float(real), float(imag))
    if tag in ("l", "t", "s", "S"):
        items = [_decode(item, resolve, down) for item in _items(rest)]
        if tag == "l":
            return items
        if tag == "t":
            return tuple(items)
        try:
            return set(items) if tag == "s" else frozenset(items)
        except TypeError as exc:
            raise CodecError(f"a set of unhashable values: {exc}") from None
    if tag == "d":
        result = {}
        for pair in _items(rest):
            if type(pair) is not list or len(pair) != 2:
                raise CodecError("a dict item that is not a pair")
            key = _decode(pair[0], resolve, down)
            try:
                result[key] = _decode(pair[1], resolve, down)
            except TypeError as exc:
                raise CodecError(f"an unhashable dict key: {exc}") from None
        return result
    if tag in ("b", "B"):
        raw = base64.b64decode(_text(rest, 1)[0].encode("ascii"), validate=True)
        return raw if tag == "b" else bytearray(raw)
    if tag == "r":
        return range(*(_int([part]) for part in _text(rest, 3)))
    if tag == "e" and not rest:
        return Ellipsis
    if tag == "n" and len(rest) == 3:
        return _named_tuple(rest, resolve, down)
    if tag == "ref":
        return resolve(data)
    raise CodecError(f"unknown tag {tag[:20]!r}")


def _int(rest: list[Any]) -> int:
    (text,) = _text(rest, 1)
    try:
        return int(text, 16)  # hex: no limit on digits (a decimal string has one)
    except ValueError:
        raise CodecError(f"not an int: {text[:40]!r}") from None


def _text(rest: list[Any], count: int) -> list[str]:
    if len(rest) != count or not all(type(part) is str for part in rest):
        raise CodecError("a malformed value")
    return rest


def _items(rest: list[Any]) -> list[Any]:
    if len(rest) != 1 or type(rest[0]) is not list:
        raise CodecError("a malformed container")
    return rest[0]


def _named_tuple(rest: list[Any], resolve: Resolve, depth: int) -> tuple[Any, ...]:
    name, fields, items = rest
    if type(name) is not str or type(fields) is not list or type(items) is not list:
        raise CodecError("a malformed named tuple")
    if not name.isidentifier() or not all(type(f) is str and f.isidentifier() for f in fields):
        raise CodecError("a named tuple with names that are not identifiers")
    key = (name, tuple(fields))
    cls = _NAMED_TUPLES.get(key)
    if cls is None:
        try:
            cls = _NAMED_TUPLES[key] = collections.namedtuple(name, fields)
        except ValueError as exc:
            raise CodecError(f"a named tuple that cannot be made: {exc}") from None
    values = [_decode(item, resolve, depth) for item in items]
    if len(values) != len(fields):
        raise CodecError("a named tuple whose values do not match its fields")
    named: tuple[Any, ...] = cls(*values)
    return named


def send(sock: socket.socket, message: Any) -> None:
    """One message: its length, then its JSON."""
    body = json.dumps(message, ensure_ascii=True, allow_nan=False).encode("ascii")
    if len(body) > MAX_MESSAGE:
        raise CodecError(f"a message of {len(body)} bytes, above {MAX_MESSAGE}")
    sock.sendall(_HEADER.pack(len(body)) + body)


def receive(sock: socket.socket) -> Any:
    """The next message, or EOFError when the other side is gone."""
    (length,) = _HEADER.unpack(_exactly(sock, _HEADER.size))
    if length > MAX_MESSAGE:
        raise CodecError(f"a message of {length} bytes, above {MAX_MESSAGE}")
    body = _exactly(sock, length)
    try:
        return json.loads(body.decode("ascii"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CodecError(f"a message that is not JSON: {str(exc)[:80]}") from None


def _no_constant(name: str) -> object:
    raise CodecError(f"a bare {name} in a message")


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
