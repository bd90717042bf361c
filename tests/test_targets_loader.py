"""Loading `module:callable` targets and the case object they are called with (docs/targets.md)."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from verdryx_core.cases import EvalCase
from verdryx_core.targets import Target, TargetCase, TargetLoadError, load_target

_names = itertools.count()


def write_module(folder: Path, source: str) -> str:
    """A uniquely named module in `folder` (sys.modules caches by name across tests)."""
    name = f"vx_target_{next(_names)}"
    (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return name


@pytest.fixture
def importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_function_an_async_function_and_a_method_load(importable: Path) -> None:
    name = write_module(
        importable,
        """
        def run(case):
            return "sync " + case.prompt

        async def arun(case):
            return "async " + case.prompt

        class Agent:
            @staticmethod
            def answer(case):
                return "static"

            async def __call__(self, case):
                return "instance"

        agent = Agent()
        """,
    )
    assert load_target(f"{name}:run")(SimpleNamespace(prompt="hi")) == "sync hi"
    assert not Target.load(f"{name}:run").is_async
    assert Target.load(f"{name}:arun").is_async
    assert Target.load(f"{name}:Agent.answer").function(None) == "static"
    assert not Target.load(f"{name}:Agent.answer").is_async
    # An instance whose __call__ is async def is awaited like an async function.
    assert Target.load(f"{name}:agent").is_async
    assert Target.load(f" {name}:run ").spec == f"{name}:run"


def test_the_rootdir_is_importable_without_touching_sys_path_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))  # restored after the test
    name = write_module(tmp_path, "def run(case):\n    return 'from rootdir'\n")
    with pytest.raises(TargetLoadError, match="no module named"):
        load_target(f"{name}:run")
    assert load_target(f"{name}:run", rootdir=tmp_path)(None) == "from rootdir"


@pytest.mark.parametrize("spec", ["agent", "agent:", ":run", "agent:run:x", "agent:1run", "a-b:c"])
def test_a_malformed_spec_says_the_expected_form(spec: str) -> None:
    with pytest.raises(TargetLoadError) as info:
        load_target(spec)
    message = str(info.value)
    assert f"target {spec!r} is not a target name" in message
    assert "module:callable" in message and "\n" not in message


def test_a_missing_module_names_the_spec(importable: Path) -> None:
    with pytest.raises(TargetLoadError) as info:
        load_target("vx_no_such_module_anywhere:run")
    assert str(info.value) == (
        "target 'vx_no_such_module_anywhere:run': no module named "
        "'vx_no_such_module_anywhere' on sys.path; put it under the rootdir or install it, "
        "and check the spelling"
    )


def test_a_missing_dependency_is_told_apart_from_a_missing_module(importable: Path) -> None:
    name = write_module(importable, "import vx_dependency_not_installed\n")
    with pytest.raises(TargetLoadError) as info:
        load_target(f"{name}:run")
    assert "it imports 'vx_dependency_not_installed', which is not installed" in str(info.value)
    assert str(info.value).startswith(f"target '{name}:run': importing '{name}' failed")


def test_a_module_that_raises_on_import_is_one_line(importable: Path) -> None:
    name = write_module(importable, "raise RuntimeError('no API key\\nconfigured')\n")
    with pytest.raises(TargetLoadError) as info:
        load_target(f"{name}:run")
    assert str(info.value) == (
        f"target '{name}:run': importing '{name}' raised RuntimeError: no API key configured"
    )


def test_a_missing_attribute_names_it_and_the_module_file(importable: Path) -> None:
    name = write_module(importable, "class Agent:\n    pass\n")
    with pytest.raises(TargetLoadError) as info:
        load_target(f"{name}:run")
    message = str(info.value)
    assert message.startswith(f"target '{name}:run': '{name}' has no attribute 'run'")
    assert str(importable / f"{name}.py") in message
    with pytest.raises(TargetLoadError, match=f"'{name}:Agent' has no attribute 'answer'"):
        load_target(f"{name}:Agent.answer")


def test_something_not_callable_is_refused(importable: Path) -> None:
    name = write_module(importable, "run = 42\n")
    with pytest.raises(TargetLoadError) as info:
        load_target(f"{name}:run")
    assert str(info.value) == (
        f"target '{name}:run' is a int, not callable; name a function, an async function or "
        "an object with __call__"
    )


def test_a_callable_handed_over_in_code_is_named_by_its_qualified_name() -> None:
    async def agent(case: TargetCase) -> str:
        return ""

    target = Target.of(agent)
    assert target.is_async
    assert target.spec.endswith(
        ":test_a_callable_handed_over_in_code_is_named_by_its_qualified_name.<locals>.agent"
    )
    assert Target.of(len, spec="custom").spec == "custom"


# -- the case object ----------------------------------------------------------------------


def test_a_case_from_an_eval_case_without_the_conversation_fields() -> None:
    tools = ({"name": "lookup_order", "input_schema": {"type": "object"}},)
    case = EvalCase(
        id="c1",
        prompt="Where is A-1?",
        grader="tool_trace",
        tools=tools,
        expected_tools=("lookup_order",),
    )
    built = TargetCase.from_eval_case(case, eval_set_id="orders", repeat=2)
    assert built == TargetCase(
        id="c1", eval_set_id="orders", prompt="Where is A-1?", tools=tools, repeat=2
    )
    assert built.messages is None and built.system is None and built.metadata is None
    assert built.conversation() == [{"role": "user", "content": "Where is A-1?"}]


def test_a_case_with_system_messages_and_metadata_gets_its_own_copies() -> None:
    metadata = {"customer": {"tier": "gold"}}
    messages = ({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"})
    source = SimpleNamespace(
        id="c2",
        prompt="refund A-2",
        system="Be brief.",
        messages=messages,
        metadata=metadata,
        tools=None,
    )
    built = TargetCase.from_eval_case(source, eval_set_id="orders")
    assert built.system == "Be brief." and built.messages == messages
    assert built.conversation() == [dict(m) for m in messages]
    # A target that mutates its input cannot change the next repeat's.
    assert built.metadata is not None
    built.metadata["customer"]["tier"] = "changed"  # type: ignore[index]
    assert metadata["customer"]["tier"] == "gold"
    assert TargetCase.from_dict(built.to_dict()) == built
