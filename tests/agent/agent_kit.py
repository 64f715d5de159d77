"""What the tests of tests/agent share to run holm's code the way a box does."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"


def agent_env(home: Path) -> dict[str, str]:
    """The environment of holm's code run by Debian's Python, as in a box: the venv's
    packages on PYTHONPATH."""
    site = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
    return {
        "HOME": str(home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": f"{REPO}:{site}",
        "LANG": "C.UTF-8",
    }


def alive(pid: int) -> bool:
    """Whether pid runs and is not a zombie; it may be reaped between any two looks."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
