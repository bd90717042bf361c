"""`verdryx judge-agreement` and `verdryx review` (docs/cli.md, docs/calibrating-the-judge.md):
the agreement document, and the review page labelled by clicks in headless Chromium."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.calibration_support import judged_run, label_of
from verdryx_core.cli import main
from verdryx_core.judge.calibration import append_label, judged_samples
from verdryx_core.judge.review import ReviewServer
from verdryx_core.store import Store

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = '<script>alert(1)</script>\x1b[31m</pre><img src=x onerror="alert(2)">'


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _store(tmp_path: Path) -> Path:
    run = judged_run(
        [(0.9, "Sure, happy to help."), (0.2, HOSTILE), (0.8, "No."), (0.7, "Fine.")],
        run_id="0123456789abcdef",
    )
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        store.save_run(run)
    return db


def test_judge_agreement_prints_the_documented_keys_and_saves_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path)
    with Store.open(db) as store:
        run = store.find_run("0123")
    assert run is not None
    labels = tmp_path / "team.labels.jsonl"
    for index, verdict in enumerate(["pass", "pass", "fail"]):
        append_label(labels, label_of(run, index, verdict))
    code, out, _ = _cli(
        capsys, "judge-agreement", "--db", str(db), "--labels", str(labels), "--json", "--save"
    )
    assert code == 0
    document = json.loads(out)
    for key in (
        "n",
        "agreement",
        "kappa",
        "kappa_ci",
        "tpr",
        "tnr",
        "confusion",
        "disagreements",
        "judges",
    ):
        assert key in document
    assert document["n"] == 3
    assert document["confusion"] == {"tp": 1, "fn": 1, "fp": 1, "tn": 0}
    assert [d["case_id"] for d in document["disagreements"]] == ["c1", "c2"]
    assert document["judges"][0]["fingerprint"]["model"] == "claude-judge-1"
    code, out, _ = _cli(
        capsys, "judge-agreement", "--run", "0123", "--db", str(db), "--labels", str(labels)
    )
    assert code == 0 and "judge vs labels: n 3" in out
    assert "\x1b" not in out  # the hostile reason and ids reach the terminal escaped
    code, _, err = _cli(capsys, "review", "--run", "nope", "--db", str(db), "--labels", str(labels))
    assert code == 2 and "no such eval run: 'nope'" in err
    code, _, err = _cli(
        capsys,
        "review",
        "--run",
        "0123",
        "--db",
        str(db),
        "--labels",
        str(labels),
        "--port",
        "70000",
    )
    assert code == 2 and "--port 70000" in err
    broken = tmp_path / "broken.labels.jsonl"
    broken.write_text('{"eval_set_id": "support"}\n')
    code, _, err = _cli(capsys, "judge-agreement", "--db", str(db), "--labels", str(broken))
    assert code == 2 and f"{broken}:1: field 'case_id': missing" in err


def test_the_review_server_refuses_writes_without_its_token(tmp_path: Path) -> None:
    db = _store(tmp_path)
    with Store.open(db) as store:
        run = store.find_run("0123")
    assert run is not None
    labels = tmp_path / "r.labels.jsonl"
    with ReviewServer(judged_samples(run), labels) as server:
        assert server.url.startswith("http://127.0.0.1:")
        body = json.dumps({"eval_set_id": "support", "case_id": "c0", "label": "pass"}).encode()
        request = urllib.request.Request(server.url + "label", data=body, method="POST")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 403
        page = urllib.request.urlopen(server.url, timeout=10).read().decode()
    assert not labels.exists()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)" in page and "\x1b" not in page and "\\x1b" in page


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_label_three_cases_in_chromium_reload_and_the_agreement_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    db = _store(tmp_path)
    with Store.open(db) as store:
        run = store.find_run("0123")
    assert run is not None
    labels = tmp_path / "r.labels.jsonl"
    with (
        ReviewServer(judged_samples(run), labels, labeler="ann") as server,
        playwright.sync_playwright() as driver,
    ):
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page()
        outside: list[str] = []
        page.on(
            "request", lambda r: outside.append(r.url) if not r.url.startswith(server.url) else None
        )
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(server.url)
        # By click: c0 pass with a note; by keyboard: the selected case, f then s.
        first = page.locator('section[data-case-id="c0"]')
        first.locator(".note").fill("polite and right")
        first.locator('button[data-label="pass"]').click()
        playwright.expect(page.locator("#labelled")).to_have_text("1")
        page.locator('section[data-case-id="c1"] h2').click()
        page.keyboard.press("s")
        playwright.expect(page.locator("#labelled")).to_have_text("2")
        page.locator('section[data-case-id="c2"] h2').click()
        page.keyboard.press("f")
        playwright.expect(page.locator("#labelled")).to_have_text("3")
        page.reload()
        shown = [
            page.locator(f'section[data-case-id="c{i}"]').get_attribute("data-label")
            for i in range(4)
        ]
        order = page.locator("section.case").evaluate_all("s => s.map(x => x.dataset.caseId)")
        browser.close()
    assert shown == ["pass", "skip", "fail", ""]
    # The judge passed c2 (0.8) and the human failed it: the disagreement comes first, then
    # the cases not decided (c1 skipped, c3 unlabelled), then the agreement (c0).
    assert order == ["c2", "c1", "c3", "c0"]
    assert outside == [] and dialogs == []
    lines = labels.read_text().splitlines()
    assert len(lines) == 3
    assert (
        json.loads(lines[0])["note"] == "polite and right"
        and json.loads(lines[0])["labeler"] == "ann"
    )
    code, out, _ = _cli(
        capsys, "judge-agreement", "--db", str(db), "--labels", str(labels), "--json"
    )
    assert code == 0
    document = json.loads(out)
    assert document["n"] == 2 and document["confusion"] == {"tp": 1, "fn": 0, "fp": 1, "tn": 0}
    assert document["skipped"] == 1 and document["unlabelled"] == 1
