"""The in-memory runtime: a test double of a runtime whose boxes live in this process."""

from holm.adapters.memory.runtime import MemoryDesktop, MemoryRuntime, MemoryWorld

__all__ = ["MemoryDesktop", "MemoryRuntime", "MemoryWorld"]
