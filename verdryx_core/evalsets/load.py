"""Finding (in the folders given), loading and validating eval set files: `*.evalset.json`,
`*.evalset.jsonl`, `*.evalset.csv`.

All three formats become the same document (`{"id", "defaults"?, "target"?, "cases"}`) and
are validated the same way, in two passes: the published JSON Schema (shape and types), then
the rules a schema cannot say (unique ids, fields that belong to one grader, patterns that
compile, tools offered). Every failure is one `EvalSetError` naming the file, the line (JSONL
and CSV), the case and the field. The set's `defaults` are applied before the rules run, so a
case is checked as it will be graded.
"""

from __future__ import annotations

import copy
import difflib
import os
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import fastjsonschema

from verdryx_core.cases import EvalCase
from verdryx_core.errors import EvalSetError, UsageError
from verdryx_core.evalsets.formats import EVALSET_SUFFIXES, read_document
from verdryx_core.evalsets.lines import case_lines
from verdryx_core.evalsets.rules import check_case, check_defaults, effective_case, id_problem
from verdryx_core.evalsets.schema import evalset_schema
from verdryx_core.untrusted.json_input import NonFiniteNumber, item_label, json_kind
from verdryx_core.untrusted.text import first_hidden_character, first_invalid_text, printable

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "EVALSET_SUFFIXES",
    "EvalSet",
    "check_unique_ids",
    "checked_evalset",
    "evalset_files",
    "evalset_schema",
    "file_name_problem",
    "load_evalset",
    "load_evalsets",
]


@cache
def _validator() -> jsonschema.Draft202012Validator:
    # Only for a file the fast path refused (the message): a valid file, and every process
    # that loads only valid ones (the xdist controller among them), never imports it.
    import jsonschema

    return jsonschema.Draft202012Validator(evalset_schema())


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalSet:
    id: str
    cases: tuple[EvalCase, ...]
    path: Path | None = None
    #: `module:callable` of the agent under test for this set (cases inherit it).
    target: str | None = None
    #: The 1-based line each case starts on (JSONL and CSV files), in case order.
    lines: tuple[int, ...] | None = None
    #: The cases as the load rules passed them: `cases` itself when this set was loaded (or
    #: checked); a set built in Python, or given other cases, is checked before it is graded.
    _checked: tuple[EvalCase, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @classmethod
    def load(cls, path: str | Path) -> EvalSet:
        return load_evalset(path)

    def case_lines(self) -> tuple[int, ...] | None:
        """The line each case starts on: kept for JSONL and CSV, found in the file for JSON
        (None when the set has no file, or the file changed since it was loaded)."""
        if self.lines is not None:
            return self.lines
        if self.path is None:
            return None
        try:
            text = self.path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            return None
        lines = case_lines(text)
        return lines if len(lines) == len(self.cases) else None


def load_evalset(path: str | Path) -> EvalSet:
    """Read, validate and build an eval set; raises `EvalSetError` on any problem."""
    path = Path(path)
    problem = file_name_problem(path)
    if problem is not None:
        raise EvalSetError(path, problem)
    try:
        document = read_document(path)
    except NonFiniteNumber as exc:
        raise EvalSetError(
            path,
            f"not valid JSON: {exc.name} is not a JSON number (JSON has no NaN or "
            "Infinity); use a finite number",
            line=exc.line,
        ) from None
    return evalset_from_data(
        document.data, path, lines=document.case_lines, header_line=document.header_line
    )


def file_name_problem(path: str | os.PathLike[str]) -> str | None:
    """Why `path` cannot name an eval set file, or None. A file name is content a pull
    request controls, and it is printed as the ids are (pytest's node ids, the collection
    errors, CI logs): a line break in it would put the rest of the name, a workflow command
    such as `::error::`, on a line of its own. So it follows the ids' rule (`id_problem`): a
    control or format character (Unicode Cc, Cf, Zl, Zp) is refused, never escaped; and so
    is what the text rule would escape in it (`printable`): `:` where a line starts (a node
    id of the rootdir begins pytest's `-v` lines) and `##[`, `##vso[` anywhere."""
    name = os.fspath(path)
    hidden = first_hidden_character(name)
    if hidden is not None:
        return (
            f"the file name holds the control or format character '{hidden}', which would act "
            "on a terminal or start a line of its own in pytest's output and CI logs; rename "
            "the file"
        )
    if printable(name, keep_newlines=False) != name:
        return (
            "the file name would be read as a CI log command where pytest and CI logs print "
            "it ('::' where a line starts, '##[' or '##vso[' anywhere); rename the file"
        )
    return None


def evalset_from_data(
    data: object,
    path: str | Path,
    *,
    lines: Sequence[int] | None = None,
    header_line: int | None = None,
    custom: bool = False,
) -> EvalSet:
    """An eval set from a document already read; `custom` cases are a test's own
    (`verdryx_core.evalsets.custom`, whose rules `check_case` says)."""
    if not isinstance(data, dict):
        raise EvalSetError(
            path, f"top level must be a JSON object with 'id' and 'cases', got {json_kind(data)}"
        )
    _check_text(data, path)
    _check_schema(data, path, lines, header_line)
    problem = id_problem(data["id"])
    if problem is not None:
        raise EvalSetError(path, problem, field="id", line=header_line)
    defaults: Mapping[str, Any] = data.get("defaults") or {}
    target = data.get("target")
    check_defaults(defaults, path, header_line)
    cases_data: list[dict[str, Any]] = data["cases"]
    seen: dict[str, int] = {}
    # By NFC form: "café" written with a precomposed é and with e + U+0301 are two ids that
    # look the same in every listing; refused, as a duplicate is (docs/evalset-reference.md).
    normal_forms: dict[str, int] = {}
    cases: list[EvalCase] = []
    for index, case_data in enumerate(cases_data):
        line = lines[index] if lines is not None else None
        case_id = case_data["id"]
        if case_id in seen:
            raise EvalSetError(
                path,
                f"duplicate id: case #{seen[case_id] + 1} already uses it "
                "(ids must be unique in a set so runs can be compared case by case)",
                case=item_label(case_data, index),
                field="id",
                line=line,
            )
        seen[case_id] = index
        normal = unicodedata.normalize("NFC", case_id)
        other = normal_forms.setdefault(normal, index)
        if other != index:
            raise EvalSetError(
                path,
                f"the id of case #{other + 1}, {cases_data[other]['id']!r}, is the same text in "
                "another Unicode normalization form (NFC/NFD): the two look identical in every "
                "listing; write both ids the same way (NFC) or give this case another id",
                case=item_label(case_data, index),
                field="id",
                line=line,
            )
        merged = effective_case(case_data, defaults, target)
        cases.append(EvalCase.from_dict(check_case(merged, index, path, line, custom=custom)))
    return _passed(
        EvalSet(
            id=data["id"],
            cases=tuple(cases),
            path=Path(path),
            target=target,
            lines=tuple(lines) if lines is not None else None,
        )
    )


def _passed(evalset: EvalSet) -> EvalSet:
    object.__setattr__(evalset, "_checked", evalset.cases)
    return evalset


def checked_evalset(evalset: EvalSet) -> EvalSet:
    """`evalset` held to the rules its file would be (docs/python-api.md, "Eval sets built in
    Python"): a set built in Python, or given other cases with `dataclasses.replace`, is
    written out as a file's document and loaded back, so an unknown grader, a field of
    another grader or a duplicate id is the same `EvalSetError` naming the case and field,
    never a case left unmeasured. A set as it was loaded is returned as it is.

    A workspace folder is relative to the set's file, else to the current folder."""
    if evalset._checked is evalset.cases:
        return evalset
    where = (
        str(evalset.path)
        if evalset.path is not None
        else f"eval set {evalset.id!r} (built in Python)"
    )
    # Workspace folders are resolved beside this (never read) file, as a file's are.
    beside = evalset.path if evalset.path is not None else Path.cwd() / "built-in-python"
    document: dict[str, Any] = {
        "id": evalset.id,
        "cases": [_as_written(case, beside.parent) for case in evalset.cases],
    }
    if evalset.target is not None:
        document["target"] = evalset.target
    try:
        loaded = evalset_from_data(document, beside)
    except EvalSetError as exc:
        raise EvalSetError(
            where, exc.detail, case=exc.case, field=exc.field, line=exc.line
        ) from None
    return _passed(
        EvalSet(
            id=loaded.id,
            cases=loaded.cases,
            path=evalset.path,
            target=loaded.target,
            lines=evalset.lines,
        )
    )


def _as_written(case: EvalCase, folder: Path) -> Any:
    """`case` as a file would write it (what `EvalCase.from_dict` reads back). A workspace
    already loaded (`{"folder": absolute path, "sha256"}`) is written as its path relative to
    `folder`, where the load rules look for it again."""
    if not isinstance(case, EvalCase):
        return case  # the schema names what it is instead
    data = case.to_dict()
    if case.checks is not None:
        data.pop("grader", None)  # a file gives `checks` alone
    workspace = case.workspace
    if isinstance(workspace, Mapping):
        if "files" in workspace:
            data["workspace"] = {"files": dict(workspace["files"])}
        elif isinstance(workspace.get("folder"), str):
            data["workspace"] = os.path.relpath(workspace["folder"], folder)
    return data


def _check_text(data: Mapping[str, Any], path: str | Path) -> None:
    # The text rule (untrusted/text.py): a file with a lone surrogate is refused here, so no
    # id, prompt or expected value that cannot be stored or printed ever reaches a run.
    found = first_invalid_text(data)
    if found is None:
        return
    location, shown = found
    case: str | None = None
    parts: list[Any] = list(location)
    if len(parts) >= 2 and parts[0] == "cases" and isinstance(parts[1], int):
        case = item_label(data["cases"][parts[1]], parts[1])
        parts = parts[2:]
    field = "".join(str(p) if i == 0 else f"[{p}]" for i, p in enumerate(parts)) or None
    raise EvalSetError(
        path,
        f"'{shown}' is not valid Unicode (a lone surrogate such as \\ud800); "
        "write the character itself or remove the escape",
        case=case,
        field=field,
    )


@cache
def _fast_validator() -> Callable[[Any], Any]:
    # fastjsonschema rewrites the `$ref`s of the schema it compiles in place: compile a copy,
    # or the cached schema that jsonschema's messages and the docs test read is changed.
    return fastjsonschema.compile(copy.deepcopy(evalset_schema()))


def _check_schema(
    data: Mapping[str, Any],
    path: str | Path,
    lines: Sequence[int] | None,
    header_line: int | None,
) -> None:
    # The compiled validator is ~20x faster on a valid file (thousands of cases in CI); on a
    # failure, jsonschema finds every error so the message can name the first case.
    try:
        _fast_validator()(data)
        return
    except fastjsonschema.JsonSchemaException:
        pass
    errors = list(_validator().iter_errors(data))
    if not errors:
        return
    # Report the first case in file order, so the message points where a reader looks first;
    # at one place, an unknown key before a missing one (`{"folder": ...}` for `{"files":
    # ...}`: the key written is what the reader needs to fix).
    error = min(
        errors,
        key=lambda e: (_sort_key(e), -len(e.absolute_path), e.validator != "additionalProperties"),
    )
    location = list(error.absolute_path)
    case: str | None = None
    line = header_line
    parts: list[Any] = location
    if len(location) >= 2 and location[0] == "cases" and isinstance(location[1], int):
        index = location[1]
        case = item_label(data["cases"][index], index)
        line = lines[index] if lines is not None else None
        parts = location[2:]
    # `required` and `additionalProperties` are reported on the object that holds the field;
    # the field a reader must fix is the missing or the unknown one.
    named = _named_field(error)
    if named is not None:
        parts = [*parts, named]
    field = _field_text(parts)
    raise EvalSetError(path, _describe(error, field), case=case, field=field, line=line)


def _field_text(parts: Sequence[Any]) -> str | None:
    if not parts:
        return None
    text = str(parts[0])
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _named_field(error: jsonschema.ValidationError) -> str | None:
    instance = error.instance
    if not isinstance(instance, Mapping):
        return None
    if error.validator == "required":
        # A `required` error: its validator value is the list of required names.
        missing = [name for name in cast(list[Any], error.validator_value) if name not in instance]
        return missing[0] if missing else None
    if error.validator == "additionalProperties":
        known = _schema(error).get("properties", {})
        unknown = [name for name in instance if name not in known]
        return unknown[0] if unknown else None
    return None


def _schema(error: jsonschema.ValidationError) -> Mapping[str, Any]:
    """The (sub)schema that failed: always an object in verdryx's eval set schema."""
    return cast(Mapping[str, Any], error.schema)


def _sort_key(error: jsonschema.ValidationError) -> tuple[int, int]:
    location = list(error.absolute_path)
    if len(location) >= 2 and location[0] == "cases" and isinstance(location[1], int):
        return (1, location[1])
    return (0, 0)


def _describe(error: jsonschema.ValidationError, field: str | None) -> str:
    validator = error.validator
    if validator == "required":
        return "required but missing; add it"
    if validator == "additionalProperties":
        known = sorted(_schema(error).get("properties", {}))
        close = difflib.get_close_matches((field or "").rsplit(".", 1)[-1], known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return f"not a known field; {hint}remove it or use one of {', '.join(known)}"
    if validator == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {expected_text}, got {json_kind(error.instance)}"
    if validator == "minItems" and list(error.absolute_path) == ["cases"]:
        return "the eval set has no cases; add at least one"
    if validator == "pattern" and field == "id" and isinstance(error.instance, str):
        problem = id_problem(error.instance)
        if problem is not None:
            return problem
    if validator == "pattern" and field == "id":
        return (
            f"{error.instance!r} is not a usable case id: no whitespace, ':' or brackets "
            "(it becomes part of the pytest node id)"
        )
    if validator == "pattern" and field is not None and field.endswith("target"):
        return f"{error.instance!r} is not a target; write it as module:callable"
    if validator == "pattern" and field is not None and "name" in field:
        return (
            f"{error.instance!r} is not a usable tool name: 1 to 64 letters, digits, '_', '-' "
            "or '.'"
        )
    if validator == "exclusiveMinimum" and field is not None and field.endswith("min_score"):
        return (
            f"a pass bar of {error.instance!r} passes every output, so the case could never "
            "fail and a drop could never show in its pass rate; give a bar above 0, or leave "
            "min_score out for the grader's own"
        )
    if validator == "enum":
        values: Any = error.validator_value
        allowed = ", ".join(map(str, values))
        return f"{error.instance!r} is not allowed here; expected one of {allowed}"
    return error.message


#: Folders a search for eval sets never enters, as pytest's `norecursedirs` does not: hidden
#: ones (`.git`, `.venv`, `.verdryx`), virtual environments, builds and dependencies.
_SKIPPED_FOLDERS: Final = frozenset({"node_modules", "venv", "build", "dist", "__pycache__"})


def evalset_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The eval set files `paths` name: a folder stands for each file below it named like an
    eval set (`*.evalset.json`, `.jsonl`, `.csv`), in path order, hidden folders and
    environments left out (docs/python-api.md); anything else is taken as a file, for its
    loader to read or refuse. Raises `UsageError` for a folder holding no eval set."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if not _is_folder(path):
            files.append(path)
            continue
        found = sorted(_evalsets_below(path))
        if not found:
            raise UsageError(
                f"{str(path)!r} holds no eval set file (named *{', *'.join(EVALSET_SUFFIXES)})"
            )
        files.extend(found)
    return files


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long to look up is no folder: its loader says what it is
        return False


def _evalsets_below(folder: Path) -> Iterator[Path]:
    # os.walk does not follow links to folders: a link cannot make a search loop or leave
    # the tree it was given.
    for root, folders, names in os.walk(folder):
        folders[:] = [
            name for name in folders if not name.startswith(".") and name not in _SKIPPED_FOLDERS
        ]
        for name in names:
            candidate = Path(root, name)
            if name.endswith(EVALSET_SUFFIXES) and candidate.is_file():
                yield candidate


def load_evalsets(paths: Iterable[str | os.PathLike[str]]) -> list[EvalSet]:
    """Every eval set under `paths` (`evalset_files`), loaded. Raises `EvalSetError` for the
    first file that does not load, `UsageError` for a missing path or an empty folder."""
    sets: list[EvalSet] = []
    for path in evalset_files(paths):
        if not path.exists():
            raise UsageError(f"no eval set file or folder at {str(path)!r}")
        sets.append(load_evalset(path))
    return sets


def check_unique_ids(sets: Sequence[EvalSet]) -> None:
    """Each eval set id once: cases are compared by eval set id and case id, so two sets under
    one id would score the same cases twice. Raises UsageError."""
    ids = [evalset.id for evalset in sets]
    duplicated = sorted({set_id for set_id in ids if ids.count(set_id) > 1})
    if duplicated:
        raise UsageError(
            f"eval set id {', '.join(map(repr, duplicated))} given more than once; each set "
            "is graded once per run (cases are compared by eval set id and case id)"
        )
