"""A bench's figures of the run before, kept in ~/.cache/holm-bench/NAME.json (out of the
repository: they are this machine's), to print beside the new ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CACHE = Path.home() / ".cache" / "holm-bench"


def previous(name: str) -> dict[str, Any]:
    """What the run before kept (nothing when none ran here, or its file is unreadable)."""
    try:
        kept: dict[str, Any] = json.loads((CACHE / f"{name}.json").read_text())
    except (OSError, ValueError):
        return {}
    return kept


def keep(name: str, figures: dict[str, Any]) -> None:
    """This run's figures, for the next run to print beside its own."""
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / f"{name}.json").write_text(json.dumps(figures))
