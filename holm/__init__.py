"""holm: isolated Linux desktops that agents drive, with a trace that can be forked.

`from holm import Box, AsyncBox, Computer`: a box of holmd as an object (holm/box.py), and
a box of this process without a server (holm/computer.py). They are imported when first
asked for: the in-box agent imports `holm` too, and must not load a client or a runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from holm.box import AsyncBox, Box
    from holm.computer import Computer

__version__ = "0.1.0"
__all__ = ["AsyncBox", "Box", "Computer", "__version__"]

_LAZY = {"Box": "holm.box", "AsyncBox": "holm.box", "Computer": "holm.computer"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'holm' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
