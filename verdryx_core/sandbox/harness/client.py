"""The tests' side of the harness: an import hook that loads the graded code's modules in the
graded code's own process, and proxies that call into it (docs/workspaces-and-execution.md,
"The harness").

`install()` (run at interpreter start by the harness's `sitecustomize`) puts a finder on the
import path, ahead of the path finder, that resolves every top-level name: from the Python
runtime (the standard library, the site-packages, this harness) when it is there; from the
tests' own folders when it names a test module (`test_*`, `*_test`, `tests`, `conftest`),
whose copies hold only the eval set's code; and from the graded code otherwise. A module of
the graded code is a `RemoteModule`, its functions, classes and objects `RemoteObject`s:
calling one sends the arguments (data) and receives the result as data, checked by
`codec.decode`. So no code of the graded code's runs in this process, and what it answers
is only ever a value: it cannot patch the runner, write the results, or end this process.

An object of the graded code's equals only another of its objects (by its own `__eq__`),
never a value of the tests': comparing it with one would hand it the expected value.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import os
import socket
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any, Final

from verdryx_core.sandbox.harness.codec import (
    ARITHMETIC,
    CodecError,
    decode,
    encode,
    receive,
    send,
)

__all__ = [
    "ROOTS_ENV",
    "SOCKET_ENV",
    "GradedCodeError",
    "GradedCodeGone",
    "RemoteModule",
    "RemoteObject",
    "install",
]

SOCKET_ENV: Final = "VERDRYX_HARNESS_SOCKET"
#: The work folder, then the tests' own folder: where test modules may be loaded from.
ROOTS_ENV: Final = "VERDRYX_HARNESS_ROOTS"
_TEST_NAMES: Final = frozenset({"test", "tests", "conftest"})


class GradedCodeError(Exception):
    """What the graded code raised, when it is not an exception the tests can hold as theirs
    (a `SystemExit`, a `KeyboardInterrupt`), or what it answered that is not a value."""


class GradedCodeGone(GradedCodeError):
    """The graded code's process ended (it exited, crashed, or was killed): nothing more can
    be asked of it."""


# -- the channel ----------------------------------------------------------------------------


class _Channel:
    """One connection to the graded code's process, opened on first use (and again in a
    forked child, which must not share its parent's)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.sock: socket.socket | None = None
        self.pid = 0
        self.gone: str | None = None
        self.proxies: dict[int, object] = {}

    def ask(self, request: list[Any]) -> list[Any]:
        with self.lock:
            if self.gone is not None:
                raise GradedCodeGone(self.gone)
            if self.sock is None or self.pid != os.getpid():
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.pid = os.getpid()
                self.proxies = {}
                try:
                    self.sock.connect(self.path)
                except OSError as exc:
                    self.gone = f"the graded code cannot be reached: {exc}"
                    raise GradedCodeGone(self.gone) from None
            try:
                send(self.sock, request)
                answer = receive(self.sock)
            except (EOFError, OSError, CodecError) as exc:
                self.gone = (
                    "the graded code's process ended (it exited, crashed or was killed) while "
                    f"answering {request[0]!r}"
                    if isinstance(exc, EOFError | OSError)
                    else f"the graded code broke the protocol: {exc}"
                )
                raise GradedCodeGone(self.gone) from None
        if type(answer) is not list or not answer or answer[0] not in ("ok", "error"):
            raise GradedCodeError("the graded code answered something that is not an answer")
        if answer[0] == "error":
            raise _raised(answer[1:])
        return answer

    def value(self, data: Any) -> Any:
        try:
            return decode(data, self.resolve)
        except CodecError as exc:
            raise GradedCodeError(
                f"the graded code answered something that is not data: {exc}"
            ) from None

    def resolve(self, data: list[Any]) -> object:
        if len(data) != 5 or type(data[1]) is not int or not all(type(p) is str for p in data[2:4]):
            raise CodecError("a malformed reference")
        key, kind, name = data[1], data[2], data[3]
        if kind == "exception":
            return _exception_class(data[4])
        found = self.proxies.get(key)
        if found is None:
            if kind not in ("module", "class", "callable", "object"):
                raise CodecError(f"a reference of an unknown kind {kind[:20]!r}")
            found = self.proxies[key] = RemoteObject._made(self, key, kind, name[:200])
        return found


def _given(value: object) -> Any:
    """An argument of the tests, as it crosses: data, or one of the graded code's objects."""

    def refer(item: object) -> list[Any]:
        if isinstance(item, RemoteObject):
            return ["ref", item._verdryx_key]
        if isinstance(item, RemoteModule):
            return ["ref", item._verdryx_key]
        raise CodecError(
            f"a {type(item).__name__} cannot be given to the graded code: only data (and its "
            "own objects) cross"
        )

    try:
        return encode(value, refer)
    except CodecError as exc:
        raise TypeError(str(exc)) from None


# -- what the graded code raised --------------------------------------------------------------

_CLASSES: dict[tuple[str, str], type[BaseException]] = {}


def _exception_class(lineage: Any) -> type[BaseException]:
    """A class of the tests' for an exception class of the graded code's, the same one each
    time (so `pytest.raises(TheirError)` catches what they raise): a built-in one as itself,
    one of theirs as a class of that name derived from the built-in it derives from."""
    if type(lineage) is not list or not lineage:
        raise CodecError("a malformed exception class")
    steps = []
    for step in lineage[:50]:
        if type(step) is not list or len(step) != 2 or not all(type(p) is str for p in step):
            raise CodecError("a malformed exception class")
        steps.append((step[0][:200], step[1][:200]))
    module, name = steps[-1]
    found = getattr(builtins, name, None) if module == "builtins" else None
    base: type[BaseException] = GradedCodeError
    if isinstance(found, type) and issubclass(found, Exception):
        base = found
    for step in reversed(steps[:-1] if module == "builtins" else steps):
        cls = _CLASSES.get(step)
        if cls is None:
            short = step[1].rpartition(".")[2] or "GradedCodeError"
            cls = type(short if short.isidentifier() else "GradedCodeError", (base,), {})
            cls.__module__, cls.__qualname__ = step
            _CLASSES[step] = cls
        base = cls
    return base


def _raised(rest: list[Any]) -> BaseException:
    if len(rest) != 3 or not all(type(p) is str for p in rest[1:]):
        return GradedCodeError("the graded code answered a malformed error")
    try:
        cls = _exception_class(rest[0])
    except CodecError:
        cls = GradedCodeError
    message, trace = rest[1], rest[2]
    if cls is GradedCodeError:
        line = rest[0][0] if type(rest[0]) is list and rest[0] else ["", "?"]
        message = f"the graded code raised {line[-1]}: {message}"
    try:
        exc = cls(message)
    except Exception:
        exc = GradedCodeError(message)
    exc.add_note(f"raised in the graded code's process:\n{trace.rstrip()}")
    return exc


# -- proxies ----------------------------------------------------------------------------------


class RemoteModule(types.ModuleType):
    """A module of the graded code: its attributes are asked of the graded code's process.
    What the tests set on it stays theirs."""

    _verdryx_key: int
    _verdryx_channel: _Channel

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        answer = self._verdryx_channel.ask(["getattr", self._verdryx_key, name])
        return self._verdryx_channel.value(answer[1])

    def __dir__(self) -> list[str]:
        answer = self._verdryx_channel.ask(["dir", self._verdryx_key])
        names = self._verdryx_channel.value(answer[1])
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


class RemoteObject:
    """A function, class or object of the graded code's, living in its process."""

    __slots__ = ("_verdryx_channel", "_verdryx_key", "_verdryx_kind", "_verdryx_name")
    _verdryx_channel: _Channel
    _verdryx_key: int
    _verdryx_kind: str
    _verdryx_name: str

    @classmethod
    def _made(cls, channel: _Channel, key: int, kind: str, name: str) -> RemoteObject:
        made = object.__new__(cls)
        for field, value in zip(cls.__slots__, (channel, key, kind, name), strict=True):
            object.__setattr__(made, field, value)
        return made

    def _op(self, name: str, *args: object) -> Any:
        channel = self._verdryx_channel
        answer = channel.ask(["op", self._verdryx_key, name, [_given(arg) for arg in args]])
        return channel.value(answer[1])

    def __getattr__(self, name: str) -> Any:
        if name in ("__name__", "__qualname__"):
            return self._verdryx_name
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        channel = self._verdryx_channel
        return channel.value(channel.ask(["getattr", self._verdryx_key, name])[1])

    def __setattr__(self, name: str, value: object) -> None:
        self._verdryx_channel.ask(["setattr", self._verdryx_key, name, _given(value)])

    def __dir__(self) -> list[str]:
        channel = self._verdryx_channel
        names = channel.value(channel.ask(["dir", self._verdryx_key])[1])
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def __call__(self, *args: object, **kwargs: object) -> Any:
        channel = self._verdryx_channel
        request = [
            "call",
            self._verdryx_key,
            [_given(arg) for arg in args],
            [[key, _given(value)] for key, value in kwargs.items()],
        ]
        answer = channel.ask(request)
        if len(answer) != 4 or type(answer[2]) is not list or type(answer[3]) is not list:
            raise GradedCodeError("the graded code answered a malformed call")
        # What the call did to the containers it was given, done to the tests' own.
        for given, back in zip(args, answer[2], strict=False):
            if back is not None:
                _update(given, channel.value(back))
        for pair in answer[3]:
            if type(pair) is list and len(pair) == 2 and pair[0] in kwargs:
                _update(kwargs[pair[0]], channel.value(pair[1]))
        return channel.value(answer[1])

    def __instancecheck__(self, instance: object) -> bool:
        if not isinstance(instance, RemoteObject):
            return False
        channel = self._verdryx_channel
        answer = channel.ask(["isinstance", instance._verdryx_key, self._verdryx_key])
        return answer[1] is True

    def __repr__(self) -> str:
        if self._verdryx_kind != "object":
            return f"<the graded code's {self._verdryx_kind} {self._verdryx_name}>"
        return _typed(self._op("__repr__"), str, "__repr__")

    def __str__(self) -> str:
        if self._verdryx_kind != "object":
            return repr(self)
        return _typed(self._op("__str__"), str, "__str__")

    def __bool__(self) -> bool:
        return bool(_typed(self._op("__bool__"), bool, "__bool__"))

    def __len__(self) -> int:
        return _typed(self._op("__len__"), int, "__len__")

    def __hash__(self) -> int:
        return _typed(self._op("__hash__"), int, "__hash__")

    def __int__(self) -> int:
        return _typed(self._op("__int__"), int, "__int__")

    def __index__(self) -> int:
        return _typed(self._op("__index__"), int, "__index__")

    def __float__(self) -> float:
        return _typed(self._op("__float__"), float, "__float__")

    def __iter__(self) -> Any:
        return self._op("__iter__")

    def __next__(self) -> Any:
        return self._op("__next__")

    def __getitem__(self, key: object) -> Any:
        return self._op("__getitem__", key)

    def __setitem__(self, key: object, value: object) -> None:
        self._op("__setitem__", key, value)

    def __delitem__(self, key: object) -> None:
        self._op("__delitem__", key)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, RemoteObject):
            return bool(self._op("__contains__", item))
        # A value of the tests' is looked for here, item by item: the graded code never
        # sees it.
        return any(item is found or item == found for found in iter(self))

    def __enter__(self) -> Any:
        return self._op("__enter__")

    def __exit__(self, *exc_info: object) -> Any:
        return self._op("__exit__", None, None, None)

    def __eq__(self, other: object) -> Any:
        return self._op("__eq__", other) if isinstance(other, RemoteObject) else NotImplemented

    def __ne__(self, other: object) -> Any:
        return self._op("__ne__", other) if isinstance(other, RemoteObject) else NotImplemented

    def __lt__(self, other: object) -> Any:
        return self._op("__lt__", other) if isinstance(other, RemoteObject) else NotImplemented

    def __le__(self, other: object) -> Any:
        return self._op("__le__", other) if isinstance(other, RemoteObject) else NotImplemented

    def __gt__(self, other: object) -> Any:
        return self._op("__gt__", other) if isinstance(other, RemoteObject) else NotImplemented

    def __ge__(self, other: object) -> Any:
        return self._op("__ge__", other) if isinstance(other, RemoteObject) else NotImplemented


def _arithmetic(name: str) -> Any:
    def operate(self: RemoteObject, *args: object) -> Any:
        return self._op(name, *args)

    operate.__name__ = name
    return operate


for _name in ARITHMETIC:
    setattr(RemoteObject, f"__{_name}__", _arithmetic(f"__{_name}__"))


def _typed(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind and not (kind is float and type(value) is int):
        raise GradedCodeError(f"the graded code's {what} gave a {type(value).__name__}")
    return value


def _update(given: Any, back: Any) -> None:
    """`given` (a list, dict, set or bytearray of the tests') made to hold what the graded
    code's copy of it holds after the call."""
    if type(given) is not type(back):
        return
    if isinstance(given, list | bytearray):
        given[:] = back
    elif isinstance(given, dict | set):
        given.clear()
        given.update(back)


# -- the import hook ---------------------------------------------------------------------------


class _Loader(importlib.abc.Loader):
    def __init__(self, finder: _Finder) -> None:
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        channel = self.finder.channel
        answer = channel.ask(["import", spec.name, self.finder.entries()])
        if len(answer) != 3:
            raise GradedCodeError("the graded code answered a malformed import")
        ref = answer[1]
        info = channel.value(answer[2])
        if type(ref) is not list or len(ref) < 2 or type(ref[1]) is not int:
            raise GradedCodeError("the graded code answered a malformed import")
        module = RemoteModule(spec.name)
        module._verdryx_key = ref[1]
        module._verdryx_channel = channel
        names = info.get("all") if isinstance(info, dict) else None
        public = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
        module.__dict__["__all__"] = public
        if isinstance(info, dict) and info.get("package") is True:
            spec.submodule_search_locations = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing runs here: the graded code ran in its own process."""


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, channel: _Channel, trusted: Sequence[str], roots: Sequence[str]) -> None:
        self.channel = channel
        self.trusted = list(trusted)
        self.roots = [os.path.realpath(root) for root in roots if root]
        self.loader = _Loader(self)

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if "." in name:
            parent = sys.modules.get(name.rpartition(".")[0])
            if isinstance(parent, RemoteModule):
                return importlib.machinery.ModuleSpec(name, self.loader, origin="graded code")
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, self.trusted)
        if spec is not None:
            return spec
        if name in _TEST_NAMES or name.startswith("test_") or name.endswith("_test"):
            folders = [entry for entry in sys.path if self._inside(entry)]
            found = importlib.machinery.PathFinder.find_spec(name, folders)
            if found is not None and found.origin and self._inside(found.origin):
                return found
        return importlib.machinery.ModuleSpec(name, self.loader, origin="graded code")

    def entries(self) -> list[str]:
        """The folders of the work folder on this side's path, relative to it: the graded
        code's side puts them on its path too (pytest's rootdir insertion, say)."""
        if not self.roots:
            return []
        root = self.roots[0]
        found = []
        for entry in sys.path:
            real = os.path.realpath(entry) if entry else ""
            if real == root or real.startswith(root + os.sep):
                found.append(os.path.relpath(real, root))
        return found

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path) if path else ""
        return any(real == root or real.startswith(root + os.sep) for root in self.roots)


def install() -> None:
    """Put the hook on the import path when this process is on the tests' side of a harness
    (`SOCKET_ENV` set); else do nothing."""
    path = os.environ.get(SOCKET_ENV)
    if not path:
        return
    roots = os.environ.get(ROOTS_ENV, "").split(os.pathsep)
    trusted = [entry for entry in sys.path if entry]
    finder = _Finder(_Channel(path), trusted, roots)
    at = next(
        (i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder),
        len(sys.meta_path),
    )
    sys.meta_path.insert(at, finder)
