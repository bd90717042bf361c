"""The typed grader and the typryx client against a loopback typryx-like service."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes.typryx_server import DEFAULT_KEY, FakeTypryx, Reply, Template

from verdryx_core.addons.errors import TypedGradeError
from verdryx_core.addons.typed import typed_options
from verdryx_core.addons.typed.client import TypryxClient, read_key_file, resolve_key_file
from verdryx_core.addons.typed.grader import LABEL_SOURCE, TypedGrader
from verdryx_core.cases import EvalCase
from verdryx_core.errors import ModelCallError, UsageError, VerdryxError
from verdryx_core.evaluation import EvalSettings, Evaluation
from verdryx_core.graders.base import GradeContext

CONTEXT = GradeContext(eval_set_id="support", run_id="run-42")


def case(expected: str | None = None, case_id: str = "c1") -> EvalCase:
    return EvalCase(id=case_id, prompt="Refund order 1234", grader="typed", expected=expected)


@pytest.fixture
def service() -> Any:
    with FakeTypryx(cost_usd=0.0012) as fake:
        yield fake


def grader_for(service: FakeTypryx, template: str = "eval.outcome_met", **kw: Any) -> TypedGrader:
    return TypedGrader(TypryxClient(service.url + "/", DEFAULT_KEY, template=template, **kw))


# -- scoring -----------------------------------------------------------------------------------


def test_yes_no_scores_p_true_and_sends_the_documented_request(service: FakeTypryx) -> None:
    grade = grader_for(service).grade(case(), "Refunded.", CONTEXT)
    assert grade.value == pytest.approx(0.8)
    assert grade.unmeasured is None
    assert grade.cost_usd == pytest.approx(0.0012)  # grading spend, from the response
    assert grade.tokens == 0
    assert "p(true) = 0.8" in (grade.reason or "")
    (ask,) = service.asks()
    assert ask.method == "POST"
    assert ask.body == {
        "template": "eval.outcome_met",
        "state": {"task": "Refund order 1234", "final_answer": "Refunded."},
        "run_id": "run-42",
    }
    assert ask.headers["x-typryx-key"] == "ok"
    assert ask.headers["content-type"] == "application/json"
    assert service.outcomes == {}  # no label, nothing posted


def test_no_run_id_is_sent_when_the_context_has_none(service: FakeTypryx) -> None:
    grader_for(service).grade(case(), "x", GradeContext(eval_set_id="s"))
    assert "run_id" not in service.asks()[0].body


@pytest.mark.parametrize(
    ("levels", "value"),
    [
        ((0.1, 0.2, 0.3, 0.4), 2 / 3),
        ((0.0, 0.0, 0.0, 1.0), 1.0),
        ((1.0, 0.0, 0.0, 0.0), 0.0),
        ((0.5, 0.5), 0.5),
    ],
)
def test_score_is_the_weighted_mean_level_in_0_1(levels: tuple[float, ...], value: float) -> None:
    templates = {"eval.answer_quality": Template(type="score", levels=levels)}
    with FakeTypryx(templates=templates) as service:
        grade = grader_for(service, "eval.answer_quality").grade(case(), "x", CONTEXT)
    assert grade.value == pytest.approx(value)
    assert grade.cost_usd == 0.0  # cost_usd omitted by the service when it is 0


def test_a_choice_template_is_refused_and_the_next_case_spends_nothing(
    service: FakeTypryx,
) -> None:
    grader = grader_for(service, "support.route")
    with pytest.raises(TypedGradeError, match="no order") as caught:
        grader.grade(case(), "x", CONTEXT)
    assert isinstance(caught.value, VerdryxError)
    assert "eval.outcome_met" in str(caught.value)  # says how to fix it
    with pytest.raises(TypedGradeError, match="no order"):
        grader.grade(case(case_id="c2"), "x", CONTEXT)
    assert len(service.asks()) == 1


def test_an_unanswered_verdict_about_the_output_scores_0_and_posts_nothing(
    service: FakeTypryx,
) -> None:
    # Not the service's own failing: the output is what it could not answer about, so the
    # output scores 0 (docs/outcomes.md, "What counts as unmeasured"), never unmeasured.
    service.script(service.unanswered("label_mass_too_low", cost_usd=0.0004))
    grade = grader_for(service).grade(case(expected="true"), "x", CONTEXT)
    assert grade.value == 0.0 and grade.unmeasured is None
    assert grade.failed_by_output is not None and "label_mass_too_low" in grade.failed_by_output
    assert "answer_id" in grade.failed_by_output
    assert grade.cost_usd == pytest.approx(0.0004)
    assert service.outcomes == {}
    assert [r.path for r in service.requests] == ["/v1/ask"]


def test_an_unanswered_verdict_for_the_services_own_fault_is_unmeasured(
    service: FakeTypryx,
) -> None:
    service.script(service.unanswered("backend_error", cost_usd=0.0))
    grade = grader_for(service).grade(case(expected="true"), "x", CONTEXT)
    assert grade.value is None and grade.failed_by_output is None
    assert grade.unmeasured is not None and "backend_error" in grade.unmeasured
    assert service.outcomes == {}


# -- refusals and an unreachable service: infrastructure errors --------------------------------


def test_a_wrong_key_is_a_401_infrastructure_error_without_the_key() -> None:
    with FakeTypryx(key="the-right-key") as service:
        grader = TypedGrader(TypryxClient(service.url, "a-wrong-key-123"))
        with pytest.raises(ModelCallError) as caught:
            grader.grade(case(), "x", CONTEXT)
    assert caught.value.status == 401
    message = str(caught.value)
    assert "status=401" in message and "'unauthorized'" in message
    assert "VERDRYX_TYPRYX_KEY_FILE" in message  # what to do about it
    assert "a-wrong-key-123" not in message


def test_a_key_echoed_back_by_the_service_is_redacted() -> None:
    with FakeTypryx(key="the-right-key", echo_key_in_errors=True) as service:
        client = TypryxClient(service.url, "a-wrong-key-123")
        with pytest.raises(ModelCallError) as caught:
            client.ask({"task": "t", "final_answer": "a"}, None)
    assert "a-wrong-key-123" not in str(caught.value)
    assert "<redacted>" in str(caught.value)
    assert caught.value.status == 401
    assert "VERDRYX_TYPRYX_KEY_FILE" in str(caught.value)  # a 401 names the fix whatever the code


def test_the_hourly_cap_is_a_429_infrastructure_error(service: FakeTypryx) -> None:
    service.script(Reply(status=429, body={"error": "over_hourly_cap"}))
    with pytest.raises(ModelCallError, match="over_hourly_cap") as caught:
        grader_for(service).grade(case(), "x", CONTEXT)
    assert caught.value.status == 429
    assert "later" in str(caught.value)


def test_an_unknown_template_is_a_404_refusal(service: FakeTypryx) -> None:
    with pytest.raises(ModelCallError, match="unknown_template") as caught:
        grader_for(service, "no.such.template").grade(case(), "x", CONTEXT)
    assert caught.value.status == 404
    assert "check --typed-template" in str(caught.value)
    assert "check --verdryx-typed-template" in caught.value.worded(
        {"typed_template": "--verdryx-typed-template"}
    )


def test_an_unreachable_service_is_an_infrastructure_error() -> None:
    with FakeTypryx() as service:
        url = service.url
    # stopped: nothing listens on that port now
    with pytest.raises(ModelCallError, match="could not reach typryx") as caught:
        TypedGrader(TypryxClient(url, DEFAULT_KEY)).grade(case(), "x", CONTEXT)
    assert caught.value.status is None


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply(raw=b"<html>proxy</html>"), "not JSON"),
        (Reply(body=[1, 2]), "not an object"),
        (Reply(body={"answer_id": "a" * 32, "type": "noul", "probabilities": {}}), "true"),
        (
            Reply(body={"answer_id": "a" * 32, "type": "noul", "probabilities": {"true": 1.5}}),
            "outside",
        ),
        (Reply(body={"answer_id": "a" * 32, "type": "score", "probabilities": {"1": 1}}), "0..0"),
        (Reply(body={"answer_id": "a" * 32, "type": "ranking"}), "unrecognized answer type"),
    ],
    ids=["html", "array", "no-true", "p>1", "levels", "type"],
)
def test_a_malformed_answer_is_an_infrastructure_error(
    service: FakeTypryx, reply: Reply, words: str
) -> None:
    service.script(reply)
    with pytest.raises(ModelCallError, match=words):
        grader_for(service).grade(case(), "x", CONTEXT)


# -- labels ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("label", "truth"), [("true", True), (" False\n", False), ("YES", True)])
def test_a_yes_no_label_is_posted_as_the_outcome(
    service: FakeTypryx, label: str, truth: bool
) -> None:
    grade = grader_for(service).grade(case(expected=label), "x", CONTEXT)
    _ask, post = service.requests
    assert post.path == "/v1/outcome"
    answer_id = post.body["answer_id"]
    assert post.body == {"answer_id": answer_id, "truth": truth, "source": LABEL_SOURCE}
    assert post.headers["x-typryx-key"] == "ok"
    assert service.outcomes[answer_id] == {"truth": truth, "source": "verdryx:evalset"}
    assert answer_id in (grade.reason or "")


def test_a_score_label_is_posted_as_an_integer_level(service: FakeTypryx) -> None:
    grader_for(service, "eval.answer_quality").grade(case(expected=" 3 "), "x", CONTEXT)
    ((_answer_id, outcome),) = service.outcomes.items()
    assert outcome["truth"] == 3 and type(outcome["truth"]) is int


@pytest.mark.parametrize(
    ("template", "label", "words"),
    [
        ("eval.outcome_met", "maybe", "not a yes or a no"),
        ("eval.outcome_met", "1", "not a yes or a no"),
        ("eval.answer_quality", "high", "not a level"),
        ("eval.answer_quality", "4", "from 0 to 3"),
        ("eval.answer_quality", "-1", "not a level"),
        ("eval.answer_quality", "²", "not a level"),
    ],
)
def test_a_label_that_does_not_fit_the_template_is_refused_before_posting(
    service: FakeTypryx, template: str, label: str, words: str
) -> None:
    grader = grader_for(service, template)
    with pytest.raises(TypedGradeError, match=words) as caught:
        grader.grade(case(expected=label), "x", CONTEXT)
    assert "case 'c1'" in str(caught.value)
    assert [r.path for r in service.requests] == ["/v1/ask"]
    assert service.outcomes == {}
    # The template's type is known now: the next misfit label is refused before any spend.
    with pytest.raises(TypedGradeError, match=words):
        grader.grade(case(expected=label, case_id="c2"), "x", CONTEXT)
    assert len(service.asks()) == 1


def test_a_refused_outcome_post_is_an_infrastructure_error(service: FakeTypryx) -> None:
    answered = {
        "answer_id": "f" * 32,
        "template": "eval.outcome_met",
        "type": "noul",
        "probabilities": {"true": 0.6, "false": 0.4},
    }
    service.script(Reply(body=answered), Reply(body=answered))  # the same answer twice
    grader = grader_for(service)
    assert grader.grade(case(expected="true"), "x", CONTEXT).value == pytest.approx(0.6)
    with pytest.raises(ModelCallError, match="outcome_exists") as caught:
        grader.grade(case(expected="true"), "x", CONTEXT)
    assert caught.value.status == 409


# -- the key -----------------------------------------------------------------------------------


def test_the_key_is_never_in_str_or_repr(service: FakeTypryx) -> None:
    client = TypryxClient(service.url, DEFAULT_KEY)
    for text in (str(client), repr(client), repr(TypedGrader(client))):
        assert DEFAULT_KEY not in text
        assert "<redacted>" in text
    with pytest.raises(TypeError, match="credential"):
        pickle.dumps(client)
    assert DEFAULT_KEY not in repr(vars(client) if hasattr(client, "__dict__") else client)


def test_read_key_file(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(f"  {DEFAULT_KEY}\n", encoding="utf-8")
    assert read_key_file(path) == DEFAULT_KEY


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "is empty"),
        (b"  \n", "is empty"),
        (b"\xff\xfesecret-1", "not UTF-8"),
        (b"secret-1\nsecret-2\n", "whitespace or control"),
    ],
)
def test_an_unusable_key_file_names_the_path_never_the_content(
    tmp_path: Path, content: bytes, words: str
) -> None:
    path = tmp_path / "key"
    path.write_bytes(content)
    with pytest.raises(VerdryxError, match=words) as caught:
        read_key_file(path)
    assert str(path) in str(caught.value)
    assert "secret" not in str(caught.value)


def test_a_missing_key_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(VerdryxError, match="cannot read the typryx key file") as caught:
        read_key_file(tmp_path / "missing")
    assert "missing" in str(caught.value)


def test_resolve_key_file() -> None:
    env = {"VERDRYX_TYPRYX_KEY_FILE": "/env/key"}
    assert resolve_key_file("/flag/key", env) == Path("/flag/key")
    assert resolve_key_file(None, env) == Path("/env/key")
    assert resolve_key_file(None, {}) is None


KEY_SCRIPT = textwrap.dedent(
    """
    import sys
    from verdryx_core.errors import VerdryxError
    from verdryx_core.graders.base import GradeContext
    from verdryx_core.addons.typed.grader import TypedGrader
    from verdryx_core.cases import EvalCase
    from verdryx_core.addons.typed.client import TypryxClient, read_key_file

    url, key_file = sys.argv[1], sys.argv[2]
    client = TypryxClient(url, read_key_file(key_file))
    print(client)
    grader = TypedGrader(client)
    for expected in ("true", "maybe"):
        try:
            grade = grader.grade(
                EvalCase(id="c", prompt="p", grader="typed", expected=expected), "out",
                GradeContext(eval_set_id="s", run_id="r"),
            )
            print("graded", grade)
        except VerdryxError as exc:
            print("error:", exc, file=sys.stderr)
    """
)


@pytest.mark.parametrize("server_key", [DEFAULT_KEY, "another-key"], ids=["accepted", "refused"])
def test_the_key_is_never_in_argv_or_output(tmp_path: Path, server_key: str) -> None:
    secret = DEFAULT_KEY
    key_file = tmp_path / "typryx.key"
    key_file.write_text(secret + "\n", encoding="utf-8")
    with FakeTypryx(key=server_key, echo_key_in_errors=True) as service:
        argv = [sys.executable, "-c", KEY_SCRIPT, service.url, str(key_file)]
        done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30)
        sent = [request.key for request in service.requests]
    assert not any(secret in part for part in argv)
    assert secret not in done.stdout and secret not in done.stderr
    assert "<redacted>" in done.stdout
    assert sent and all(key == secret for key in sent)  # it was sent, as the header only
    if server_key == secret:
        assert "graded" in done.stdout and "not a yes or a no" in done.stderr
    else:
        assert "status=401" in done.stderr


# -- construction and wiring -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key", "words"),
    [("ftp://h", "k", "not an http"), ("http://h", "", "no typryx key"), ("h:80", "k", "http")],
)
def test_client_construction_errors(url: str, key: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        TypryxClient(url, key)


def test_the_typed_grader_plugs_in_from_the_run_settings(
    service: FakeTypryx, tmp_path: Path
) -> None:
    """Its options reach it through `grader_options`; without them its cases are unmeasured
    with the reason naming the flag, and nothing is called."""
    key_file = tmp_path / "key"
    key_file.write_text(DEFAULT_KEY)
    settings = EvalSettings(grader_options=typed_options(service.url, str(key_file), None))
    graders = Evaluation(settings).scorer([]).graders
    typed = graders["typed"]
    assert isinstance(typed.grader, TypedGrader)  # type: ignore[attr-defined]
    assert typed.grader.client.template == "eval.outcome_met"  # type: ignore[attr-defined]
    plain = Evaluation().scorer([]).graders
    assert plain.find("typed") is None  # nothing paid by default
    assert "EvalSettings.grader_options['typed']['url']" in plain.missing_reason("typed")
    with pytest.raises(UsageError, match="no key"):
        Evaluation(
            EvalSettings(grader_options=typed_options(service.url, None, None))
        ).check_graders()


def test_a_recorded_non_text_output_is_sent_as_json_text(service: FakeTypryx) -> None:
    grader_for(service).grade(case(), ["lookup", "refund"], CONTEXT)
    assert json.loads(service.asks()[0].body["state"]["final_answer"]) == ["lookup", "refund"]
