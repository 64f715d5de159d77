"""The command side of holm: operations on boxes that call the runtimes and append what
happened to the log. `Engine` is used by the HTTP routes and the replay interpreter."""

from .engine import Engine, new_box_id

__all__ = ["Engine", "new_box_id"]
