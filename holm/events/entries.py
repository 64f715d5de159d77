"""The trace entries now live in `holm.wire.entries` (they are the served trace format);
this name stays for code that imports them from here."""

from holm.wire.entries import *  # noqa: F403
from holm.wire.entries import __all__ as __all__
