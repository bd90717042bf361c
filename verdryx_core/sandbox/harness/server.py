"""The graded code's side of the harness: a process in a sandbox of its own that imports the
graded code when the tests ask for a module, and answers what they ask of it
(docs/workspaces-and-execution.md, "The harness").

It accepts on a listening socket it was given (by file descriptor: it needs no path), and
serves each connection in a fresh fork, as a new process would start (one per Python
process on the tests' side). Nothing here is trusted by the tests: whatever this process
answers is checked on their side as data, and the graded code running here may change any
of it. It only makes answering easy for honest code.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any, Final

from verdryx_core.sandbox.harness.codec import (
    ARITHMETIC,
    CodecError,
    decode,
    encode,
    receive,
    send,
)

__all__ = ["serve"]

_TRACEBACK: Final = 4000
#: The special methods the tests' side may ask for by name, and nothing else.
OPERATIONS: Final = frozenset(
    f"__{name}__"
    for group in (
        ("len", "iter", "next", "getitem", "setitem", "delitem", "contains", "bool", "str"),
        ("repr", "hash", "int", "float", "index", "eq", "ne", "lt", "le", "gt", "ge"),
        ("enter", "exit"),
        ARITHMETIC,
    )
    for name in group
)
_BUILTIN_CALLS: Final[dict[str, Callable[..., Any]]] = {
    "__len__": len,
    "__iter__": iter,
    "__next__": next,
    "__bool__": bool,
    "__str__": str,
    "__repr__": repr,
    "__hash__": hash,
    "__int__": int,
    "__float__": float,
    "__abs__": abs,
}


def serve(listen_fd: int, root: str) -> None:
    """Accept connections on `listen_fd` forever (the sandbox ends this process); `root` is
    the work folder, where the graded code's modules are found."""
    listener = socket.socket(fileno=listen_fd)
    os.chdir(root)
    sys.path[:0] = [root]
    while True:
        connection, _ = listener.accept()
        child = os.fork()
        if child == 0:
            listener.close()
            try:
                _Session(connection, root).run()
            finally:
                os._exit(0)
        connection.close()
        _reap()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


class _Session:
    def __init__(self, connection: socket.socket, root: str) -> None:
        self.connection = connection
        self.root = root
        self.objects: dict[int, object] = {}

    def run(self) -> None:
        while True:
            try:
                request = receive(self.connection)
            except (EOFError, OSError, CodecError):
                return
            try:
                answer = self.answer(request)
            except CodecError as exc:
                answer = self.failure(TypeError(str(exc)))
            except BaseException as exc:
                answer = self.failure(exc)
            try:
                send(self.connection, answer)
            except CodecError as exc:
                send(self.connection, self.failure(TypeError(str(exc))))

    # -- requests ---------------------------------------------------------------------------

    def answer(self, request: Any) -> list[Any]:
        if type(request) is not list or not request or type(request[0]) is not str:
            raise CodecError("a request that is not one")
        op, rest = request[0], request[1:]
        if op == "import" and len(rest) == 2:
            return self.imported(rest[0], rest[1])
        if op == "getattr" and len(rest) == 2 and type(rest[1]) is str:
            return ["ok", self.out(getattr(self.find(rest[0]), rest[1]))]
        if op == "setattr" and len(rest) == 3 and type(rest[1]) is str:
            setattr(self.find(rest[0]), rest[1], self.into(rest[2]))
            return ["ok", None]
        if op == "dir" and len(rest) == 1:
            return ["ok", self.out(sorted(str(name) for name in dir(self.find(rest[0]))))]
        if op == "call" and len(rest) == 3:
            return self.called(self.find(rest[0]), rest[1], rest[2])
        if op == "op" and len(rest) == 3 and rest[1] in OPERATIONS:
            return ["ok", self.out(self.operated(self.find(rest[0]), rest[1], rest[2]))]
        if op == "isinstance" and len(rest) == 2:
            cls: Any = self.find(rest[1])
            return ["ok", isinstance(self.find(rest[0]), cls)]
        raise CodecError(f"an unknown request {op[:20]!r}")

    def imported(self, name: Any, entries: Any) -> list[Any]:
        if type(name) is not str or type(entries) is not list:
            raise CodecError("a malformed import")
        for entry in entries:
            # Folders the tests' side has on its path, relative to the work folder.
            if type(entry) is str and not os.path.isabs(entry) and ".." not in entry.split("/"):
                folder = os.path.normpath(os.path.join(self.root, entry))
                if folder not in sys.path:
                    sys.path.insert(1, folder)
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None)
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            names = [n for n in vars(module) if not n.startswith("_")]
        info = {"package": hasattr(module, "__path__"), "all": [str(n) for n in names]}
        return ["ok", self.out(module), self.out(info)]

    def called(self, function: Any, args: Any, kwargs: Any) -> list[Any]:
        if type(args) is not list or type(kwargs) is not list:
            raise CodecError("a malformed call")
        values = [self.into(arg) for arg in args]
        named = {}
        for pair in kwargs:
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                raise CodecError("a malformed keyword argument")
            named[pair[0]] = self.into(pair[1])
        result = function(*values, **named)
        # What the call did to the lists, dicts and sets it was given goes back too: the
        # tests' side holds its own copies of them.
        changed = [self.out(v) if isinstance(v, list | dict | set | bytearray) else None
                   for v in values]  # fmt: skip
        changed_named = [[k, self.out(v)] for k, v in named.items()
                         if isinstance(v, list | dict | set | bytearray)]  # fmt: skip
        return ["ok", self.out(result), changed, changed_named]

    def operated(self, target: Any, name: str, args: Any) -> object:
        if type(args) is not list:
            raise CodecError("malformed operands")
        values = [self.into(arg) for arg in args]
        builtin = _BUILTIN_CALLS.get(name)
        if builtin is not None and not values:
            return builtin(target)
        if name == "__contains__" and len(values) == 1:
            return values[0] in target
        method = getattr(type(target), name, None)
        if method is None:
            raise TypeError(f"{type(target).__name__!r} object has no {name}")
        return method(target, *values)

    # -- values -----------------------------------------------------------------------------

    def find(self, ref: Any) -> object:
        if type(ref) is not int or ref not in self.objects:
            raise CodecError("a reference to nothing")
        return self.objects[ref]

    def out(self, value: object) -> Any:
        return encode(value, self.refer, plain=_plain)

    def into(self, data: Any) -> object:
        return decode(data, self.resolve)

    def refer(self, value: object) -> list[Any]:
        key = id(value)
        self.objects[key] = value
        name = str(getattr(value, "__qualname__", None) or getattr(value, "__name__", "") or "")
        if isinstance(value, type) and issubclass(value, BaseException):
            return ["ref", key, "exception", name, _lineage(value)]
        if isinstance(value, type):
            return ["ref", key, "class", name, type(value).__name__]
        if type(value).__name__ == "module":
            return ["ref", key, "module", str(getattr(value, "__name__", "")), ""]
        kind = "callable" if callable(value) else "object"
        return ["ref", key, kind, name or type(value).__qualname__, type(value).__qualname__]

    def resolve(self, data: list[Any]) -> object:
        if len(data) < 2:
            raise CodecError("a malformed reference")
        return self.find(data[1])

    def failure(self, exc: BaseException) -> list[Any]:
        text = "".join(traceback.format_exception(exc))[-_TRACEBACK:]
        try:
            message = str(exc)
        except Exception:
            message = type(exc).__name__
        return ["error", _lineage(type(exc)), message, text]


def _plain(value: object) -> object:
    """A subclass of a data type as the data it holds (an IntEnum as its int, a defaultdict
    as a dict), so the tests compare values; anything else as it is."""
    kind = type(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, tuple) and not hasattr(kind, "_fields"):
        return tuple(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, frozenset):
        return frozenset(value)
    if isinstance(value, set):
        return set(value)
    return value


def _lineage(cls: type) -> list[list[str]]:
    """An exception class's line of descent, `[module, qualname]` from itself up to the
    first built-in one (included)."""
    line = []
    for step in cls.__mro__:
        module = str(getattr(step, "__module__", ""))
        line.append([module, str(step.__qualname__)])
        if module == "builtins":
            break
    return line
