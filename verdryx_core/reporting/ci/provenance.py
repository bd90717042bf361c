"""Where a run came from: commit, branch and CI run URL, and the run group its shards share.

Read from the CI's environment first (GitHub Actions, GitLab CI, then generic `CI_*`
variables), else from git in the working directory (short timeout, silent when git is
missing or it is not a repository). See docs/ci.md.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GIT_TIMEOUT_S", "Provenance", "ci_provenance", "default_run_group", "git_provenance"]

#: git answers these in milliseconds; a hung credential helper or network file system must
#: not hold a test session.
GIT_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    commit: str | None = None
    branch: str | None = None
    ci_url: str | None = None


def ci_provenance(
    env: Mapping[str, str] | None = None, *, cwd: str | Path | None = None
) -> Provenance:
    """Provenance from the CI environment; what it leaves out comes from git in `cwd`."""
    env = os.environ if env is None else env
    found = _from_env(env)
    if found.commit is not None and found.branch is not None:
        return found
    local = git_provenance(cwd)
    return Provenance(
        commit=found.commit or local.commit,
        branch=found.branch or local.branch,
        ci_url=found.ci_url,
    )


def default_run_group(env: Mapping[str, str] | None = None) -> str | None:
    """What the shards of one CI run share: GitHub's run id and attempt, GitLab's pipeline id."""
    env = os.environ if env is None else env
    run_id = _get(env, "GITHUB_RUN_ID")
    if run_id is not None:
        return f"github-{run_id}-{_get(env, 'GITHUB_RUN_ATTEMPT') or '1'}"
    pipeline = _get(env, "CI_PIPELINE_ID")
    if pipeline is not None:
        return f"gitlab-{pipeline}" if _get(env, "GITLAB_CI") else f"ci-{pipeline}"
    return None


def git_provenance(cwd: str | Path | None = None) -> Provenance:
    commit = _git(cwd, "rev-parse", "HEAD")
    if commit is None:  # not a repository, no git, or no commit yet
        return Provenance()
    # Empty on a detached HEAD (what CI checkouts often are): no branch rather than "HEAD".
    return Provenance(commit=commit, branch=_git(cwd, "branch", "--show-current"))


def _from_env(env: Mapping[str, str]) -> Provenance:
    if _get(env, "GITHUB_ACTIONS") == "true":
        server = _get(env, "GITHUB_SERVER_URL") or "https://github.com"
        repository, run_id = _get(env, "GITHUB_REPOSITORY"), _get(env, "GITHUB_RUN_ID")
        url = f"{server}/{repository}/actions/runs/{run_id}" if repository and run_id else None
        attempt = _get(env, "GITHUB_RUN_ATTEMPT")
        if url is not None and attempt not in (None, "1"):
            url += f"/attempts/{attempt}"
        return Provenance(
            commit=_get(env, "GITHUB_SHA"),
            # On a pull request GITHUB_REF_NAME is "42/merge"; the head branch is the name.
            branch=_get(env, "GITHUB_HEAD_REF") or _get(env, "GITHUB_REF_NAME"),
            ci_url=url,
        )
    # GitLab CI, and other CIs that borrow its names.
    return Provenance(
        commit=_get(env, "CI_COMMIT_SHA"),
        branch=(
            _get(env, "CI_COMMIT_REF_NAME")
            or _get(env, "CI_COMMIT_BRANCH")
            or _get(env, "CI_BRANCH")
        ),
        # The pipeline, like GitHub's run: the page that holds every job of this commit.
        ci_url=(
            _get(env, "CI_PIPELINE_URL") or _get(env, "CI_JOB_URL") or _get(env, "CI_BUILD_URL")
        ),
    )


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _git(cwd: str | Path | None, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            # Never prompt, never page: this runs inside someone's test session.
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None
