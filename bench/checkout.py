"""The code of another revision, for benches that print its figures beside this checkout's."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def base_checkout(rev: str, into: Path) -> None:
    """The `holm` package of REV, written out of git without touching any worktree."""
    tar = subprocess.run(
        ["git", "archive", rev, "holm"], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)


def merge_base() -> str:
    """Where this branch left main."""
    return short(
        subprocess.run(
            ["git", "merge-base", "HEAD", "main"],
            cwd=REPO,
            capture_output=True,
            check=True,
            text=True,
        ).stdout.strip()
    )


def short(rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=REPO, capture_output=True, check=True, text=True
    ).stdout.strip()
