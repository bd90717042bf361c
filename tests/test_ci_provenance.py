"""Run provenance from the CI environment, else from git (docs/ci.md): a real git repository
in a temp folder, environments given as mappings or through monkeypatch."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from verdryx_core.reporting.ci import Provenance, ci_provenance, default_run_group, git_provenance
from verdryx_core.reporting.ci import provenance as provenance_module

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q", "-b", "feature/ci")
    (tmp_path / "f.txt").write_text("x")
    _git(tmp_path, "add", "f.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SHA": "a" * 40,
    "GITHUB_REF_NAME": "main",
    "GITHUB_SERVER_URL": "https://github.example",
    "GITHUB_REPOSITORY": "acme/agent",
    "GITHUB_RUN_ID": "123",
    "GITHUB_RUN_ATTEMPT": "1",
}


def test_github_actions_push() -> None:
    assert ci_provenance(GITHUB) == Provenance(
        commit="a" * 40, branch="main", ci_url="https://github.example/acme/agent/actions/runs/123"
    )
    assert default_run_group(GITHUB) == "github-123-1"


def test_github_actions_pull_request_and_a_rerun() -> None:
    env = {**GITHUB, "GITHUB_REF_NAME": "7/merge", "GITHUB_HEAD_REF": "fix-x"}
    env["GITHUB_RUN_ATTEMPT"] = "2"
    found = ci_provenance(env)
    assert found.branch == "fix-x"  # the head branch, not the merge ref
    assert found.ci_url == "https://github.example/acme/agent/actions/runs/123/attempts/2"
    assert default_run_group(env) == "github-123-2"


def test_gitlab_ci() -> None:
    env = {
        "GITLAB_CI": "true",
        "CI_COMMIT_SHA": "b" * 40,
        "CI_COMMIT_REF_NAME": "release",
        "CI_PIPELINE_URL": "https://gitlab.example/acme/agent/-/pipelines/9",
        "CI_JOB_URL": "https://gitlab.example/acme/agent/-/jobs/99",
        "CI_PIPELINE_ID": "9",
    }
    assert ci_provenance(env) == Provenance(
        commit="b" * 40, branch="release", ci_url="https://gitlab.example/acme/agent/-/pipelines/9"
    )
    assert default_run_group(env) == "gitlab-9"
    del env["CI_PIPELINE_URL"]
    assert ci_provenance(env).ci_url == "https://gitlab.example/acme/agent/-/jobs/99"


def test_a_generic_ci_with_gitlab_style_names() -> None:
    env = {"CI_COMMIT_SHA": "c" * 40, "CI_COMMIT_BRANCH": "dev", "CI_PIPELINE_ID": "5"}
    assert ci_provenance(env) == Provenance(commit="c" * 40, branch="dev", ci_url=None)
    assert default_run_group(env) == "ci-5"
    assert default_run_group({}) is None


@needs_git
def test_from_git_outside_ci(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "CI_")) or name == "GITLAB_CI":
            monkeypatch.delenv(name)
    head = _git(repo, "rev-parse", "HEAD")
    assert ci_provenance(cwd=repo) == Provenance(commit=head, branch="feature/ci", ci_url=None)
    _git(repo, "checkout", "-q", "--detach")
    assert git_provenance(repo) == Provenance(commit=head, branch=None)


@needs_git
def test_ci_values_win_and_git_fills_the_gaps(repo: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD")
    # A CI that names the commit but not the branch.
    found = ci_provenance({"CI_COMMIT_SHA": "d" * 40}, cwd=repo)
    assert found == Provenance(commit="d" * 40, branch="feature/ci")
    assert ci_provenance({}, cwd=repo).commit == head


@needs_git
def test_not_a_repository_is_silent(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (tmp_path / ".git").write_text("gitdir: /nowhere\n")  # a broken parent does not leak either
    assert ci_provenance({}, cwd=plain) == Provenance()
    out, err = capfd.readouterr()
    assert out == err == ""


@needs_git
def test_a_repository_without_commits_has_no_provenance(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    assert git_provenance(tmp_path) == Provenance()


def test_a_hung_git_is_given_up_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nexec sleep 30\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(provenance_module, "GIT_TIMEOUT_S", 0.2)
    assert git_provenance(tmp_path) == Provenance()


def test_no_git_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert git_provenance(tmp_path) == Provenance()
