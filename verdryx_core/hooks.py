"""The hooks an add-on implements, and the manager that finds add-ons (docs/add-ons.md).

An add-on is a module named by an entry point of the `verdryx.addons` group; its functions
marked `@hookimpl` answer the hooks below. The faces call the hooks and never import an
add-on: the options an add-on brings appear in both faces (`--verdryx-NAME` and ini key
`verdryx_NAME` in pytest, `--NAME` in `verdryx eval`), its commands in `verdryx`, and it
sees each run once it is concluded. Graders plug in through their own group
(`verdryx.graders`, docs/graders.md).

The module an entry point names is imported in every session that lists add-ons (pytest's
options are defined before anything else): it imports nothing heavy itself, and leaves its
add-on's imports to the hooks' bodies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import pluggy

# Only what defining the hooks needs: this module is imported in every pytest session (the
# add-ons' options), so the error family is imported where an error is raised.
if TYPE_CHECKING:
    from pathlib import Path

    from verdryx_core.conclusion import Conclusion
    from verdryx_core.store import Store
    from verdryx_core.store.merge import AddonRows

__all__ = [
    "ENTRY_POINT_GROUP",
    "AddonCommand",
    "AddonOption",
    "AddonSession",
    "AgentHistory",
    "addon_commands",
    "addon_options",
    "agent_history",
    "grader_options",
    "hookimpl",
    "hookspec",
    "plugin_manager",
    "reset_plugin_manager",
    "store_tables",
    "trace_costs",
]

PROJECT: Final = "verdryx"
ENTRY_POINT_GROUP: Final = "verdryx.addons"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Face = Literal["pytest", "cli"]


@dataclass(frozen=True, slots=True)
class AddonOption:
    """A setting an add-on brings: a string (or unset), named once for both faces.

    `name` is lowercase words joined by `_`: pytest gets `--verdryx-NAME` (dashes) and the
    ini key `verdryx_NAME`, `verdryx eval` gets `--NAME`. `env` is read when neither sets it.
    """

    name: str
    help: str
    default: str | None = None
    metavar: str | None = None
    env: str | None = None
    faces: tuple[Face, ...] = ("pytest", "cli")


@dataclass(frozen=True, slots=True)
class AddonCommand:
    """A `verdryx` subcommand an add-on brings. `module` (a dotted name) is imported only
    when the command is run or the whole command line is built (`--help`); it has the shape
    of a built-in command's module: `NAME`, `HELP`, `add_arguments(parser)`, `run(args)`,
    optionally `USAGE_EXIT`."""

    name: str
    module: str


@dataclass(slots=True)
class AddonSession:
    """What the add-ons see of one run, from its start to its end.

    `options`: every add-on option's value by name (None when unset). `exporting`: this
    process sends what the run ends with (under xdist only the controller does). `environ`:
    the environment as read when the run started. `state`: what an add-on keeps from
    `verdryx_configure` to `verdryx_run_concluded`, under a key of its own. `face`: which
    face runs it (`pytest`, or `cli` for `verdryx eval`)."""

    options: Mapping[str, Any]
    agent_id: str | None = None
    exporting: bool = True
    environ: Mapping[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    face: Face = "pytest"


@dataclass(frozen=True, slots=True)
class AgentHistory:
    """What an add-on keeps about one agent, for `verdryx runs --agent`: its rows under
    `key` in `--json`, and `lines` after the runs in the text form."""

    key: str
    rows: list[dict[str, Any]]
    lines: tuple[str, ...]


class _Spec:
    """The hook specifications (pluggy reads the marked methods' names and arguments)."""

    @hookspec
    def verdryx_addoption(self) -> Sequence[AddonOption]:
        """The options this add-on brings (docs/add-ons.md, "Options")."""
        raise NotImplementedError

    @hookspec
    def verdryx_cli_commands(self) -> Sequence[AddonCommand]:
        """The `verdryx` subcommands this add-on brings."""
        raise NotImplementedError

    @hookspec
    def verdryx_grader_options(
        self, options: Mapping[str, Any]
    ) -> Mapping[str, Mapping[str, Any]] | None:
        """Options for plugged-in graders, by grader name (`EvalSettings.grader_options`),
        from the add-on options' values; None or {} for none."""
        raise NotImplementedError

    @hookspec
    def verdryx_configure(self, session: AddonSession) -> None:
        """The run is about to start (the pytest plugin: at configure time; `verdryx eval`:
        before the store is opened): check this add-on's settings (raise a VerdryxError
        to refuse the run before anything is called or paid for) and keep what it needs at
        the end in `session.state`."""
        raise NotImplementedError

    @hookspec
    def verdryx_run_concluded(
        self, conclusion: Conclusion, session: AddonSession
    ) -> Sequence[str] | None:
        """The run is concluded (stored, gated, a baseline saved or not): send it where the
        add-on sends runs. Returns summary lines. Never fails the run: an exception raised
        here becomes a summary line naming the add-on."""
        raise NotImplementedError

    @hookspec
    def verdryx_store_tables(self) -> Sequence[AddonRows]:
        """The tables this add-on keeps in the verdryx store, for `verdryx merge`
        (docs/store.md, "Merging stores")."""
        raise NotImplementedError

    @hookspec
    def verdryx_agent_history(self, store: Store, agent_id: str) -> AgentHistory | None:
        """What this add-on stored about the agent, for `verdryx runs --agent`."""
        raise NotImplementedError

    @hookspec(firstresult=True)
    def verdryx_trace_costs(self, traces: Path) -> tuple[Any, str | None] | None:
        """The cost per outcome of the traces at `traces` for the HTML report, and why it
        is missing (None, reason); None when this add-on does not read traces."""
        raise NotImplementedError


_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None


def plugin_manager() -> pluggy.PluginManager:
    """The add-ons installed (entry points of `verdryx.addons`), loaded once a process.
    Raises UsageError naming the entry point and its package when one cannot be loaded or
    two share a name."""
    global _manager
    with _lock:
        if _manager is None:
            _manager = _load()
        return _manager


def reset_plugin_manager(manager: pluggy.PluginManager | None = None) -> None:
    """Forget the loaded add-ons (they are listed again on the next use), or use `manager`
    instead: for a test, or after installing a package in the same process."""
    global _manager
    with _lock:
        _manager = manager


def new_plugin_manager() -> pluggy.PluginManager:
    """A manager with verdryx's hook specifications and no add-on registered."""
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(_Spec)
    return manager


def _load() -> pluggy.PluginManager:
    manager = new_plugin_manager()
    seen: dict[str, metadata.EntryPoint] = {}
    for point in _entry_points():
        other = seen.get(point.name)
        if other is not None:
            from verdryx_core.errors import UsageError

            if other.value == point.value:
                continue  # the same package seen twice on the path
            raise UsageError(
                f"add-on {point.name!r} is declared twice: by entry point {other.value!r}"
                f"{_from(other)} and by {point.value!r}{_from(point)}; uninstall one, or "
                "rename its entry point"
            )
        seen[point.name] = point
        try:
            plugin = point.load()
            manager.register(plugin, name=point.name)
        except Exception as exc:
            from verdryx_core.errors import UsageError

            raise UsageError(
                f"add-on {point.name!r}: loading entry point {point.value!r}{_from(point)} "
                f"failed: {type(exc).__name__}: {exc}"
            ) from exc
    return manager


def _entry_points() -> list[metadata.EntryPoint]:
    """The group's entry points. Listing them is part of every pytest session, so only a
    package whose `entry_points.txt` names the group is parsed: a third of the time and a
    tenth of the memory of `metadata.entry_points(group=...)`, which parses every package's."""
    header = f"[{ENTRY_POINT_GROUP}]"
    found: list[metadata.EntryPoint] = []
    for dist in metadata.distributions():
        text = dist.read_text("entry_points.txt")
        if text and header in text:
            found.extend(dist.entry_points.select(group=ENTRY_POINT_GROUP))
    return found


def _from(point: metadata.EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return "" if dist is None else f" (package {dist.name} {dist.version})"


def addon_options(
    face: Face, taken: Callable[[str], bool] = lambda name: False
) -> tuple[AddonOption, ...]:
    """Every add-on's options offered in `face`, in the order the add-ons were loaded.
    `taken(name)`: whether the face already has a setting of that name; an add-on option
    taking it, or one another add-on took, is refused (UsageError naming the add-on)."""
    manager = plugin_manager()
    found: dict[str, tuple[str, AddonOption]] = {}
    for plugin, options in _results(manager, "verdryx_addoption"):
        for option in options or ():
            owner = _name(manager, plugin)
            if option.name in found or taken(option.name):
                from verdryx_core.errors import UsageError

                first = found[option.name][0] if option.name in found else "verdryx itself"
                raise UsageError(
                    f"add-on {owner!r}: option {option.name!r} is already {first}'s; "
                    "rename it in the add-on"
                )
            found[option.name] = (owner, option)
    return tuple(option for _, option in found.values() if face in option.faces)


def addon_commands(taken: Callable[[str], bool] = lambda name: False) -> tuple[AddonCommand, ...]:
    """Every add-on's commands; one that takes a built-in command's name (`taken`) or
    another add-on's is refused (UsageError naming the add-on)."""
    manager = plugin_manager()
    found: dict[str, tuple[str, AddonCommand]] = {}
    for plugin, commands in _results(manager, "verdryx_cli_commands"):
        owner = _name(manager, plugin)
        for command in commands or ():
            if command.name in found or taken(command.name):
                from verdryx_core.errors import UsageError

                first = found[command.name][0] if command.name in found else "verdryx itself"
                raise UsageError(
                    f"add-on {owner!r}: command {command.name!r} is already {first}'s; "
                    "rename it in the add-on"
                )
            found[command.name] = (owner, command)
    return tuple(command for _, command in found.values())


def grader_options(options: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """`EvalSettings.grader_options` from the add-on options' values."""
    merged: dict[str, Mapping[str, Any]] = {}
    for found in plugin_manager().hook.verdryx_grader_options(options=options):
        merged.update(found or {})
    return merged


def configure(session: AddonSession) -> None:
    """Every add-on's `verdryx_configure`: a VerdryxError refuses the run."""
    plugin_manager().hook.verdryx_configure(session=session)


def run_concluded(conclusion: Conclusion, session: AddonSession) -> list[str]:
    """Every add-on's `verdryx_run_concluded`, in the order the add-ons were loaded; their
    summary lines. An add-on that raises gets a line naming it, and the others still run."""
    manager = plugin_manager()
    lines: list[str] = []
    for implementation in manager.hook.verdryx_run_concluded.get_hookimpls():
        try:
            found = cast(
                "Sequence[str] | None",
                implementation.function(conclusion=conclusion, session=session),
            )
        except Exception as exc:  # an add-on never fails the run it is told of
            lines.append(f"add-on {implementation.plugin_name}: {type(exc).__name__}: {exc}")
            continue
        lines.extend(found or ())
    return lines


def store_tables() -> list[AddonRows]:
    """The add-ons' tables in the store, for `verdryx merge`."""
    return [
        rows
        for _, found in _results(plugin_manager(), "verdryx_store_tables")
        for rows in found or ()
    ]


def agent_history(store: Store, agent_id: str) -> list[AgentHistory]:
    """What the add-ons stored about one agent, in the order they were loaded."""
    found = plugin_manager().hook.verdryx_agent_history(store=store, agent_id=agent_id)
    return [history for history in reversed(found) if history is not None]


def trace_costs(traces: Path) -> tuple[Any, str | None]:
    """The report's cost per outcome of `traces`, or None and why not."""
    found = plugin_manager().hook.verdryx_trace_costs(traces=traces)
    if found is None:
        return None, "cost per outcome skipped: no add-on reads traces (the traces add-on)"
    return found


def _results(manager: pluggy.PluginManager, hook: str) -> list[tuple[object, Any]]:
    """Each plugin's answer to an argument-less hook, in the order the plugins were loaded
    (`get_hookimpls` lists them so; pluggy calls the last registered first)."""
    caller = getattr(manager.hook, hook)
    return [
        (implementation.plugin, implementation.function())
        for implementation in caller.get_hookimpls()
    ]


def _name(manager: pluggy.PluginManager, plugin: object) -> str:
    return manager.get_name(plugin) or repr(plugin)
