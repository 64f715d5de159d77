"""What a prune by age keeps of a trace, and where each kept seq then is.

`HOLM_KEEP_ENTRIES_SECS` drops a trace's entries one by one from its start: the *old
prefix* is the longest run of kept entries, from the first, all older than the cutoff. Of
it a prune keeps only the seqs a `KeepEntries` policy names (the engine's keeps what a
box's state is folded from), and drops the rest. A trace whose entries are all old goes
whole. Seqs never change, so a pruned trace's kept entries are a *head* of scattered seqs
(a `box_created` among them), then every seq from `first_seq` on: its `Layout`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable

import msgspec

from holm.wire.entries import Entry

# (trace, its old prefix oldest first, with at least one entry after it) -> the seqs of the
# prefix to keep.
KeepEntries = Callable[[str, Iterable[Entry]], Collection[int]]


def keep_none(trace: str, old: Iterable[Entry]) -> Collection[int]:
    return ()


class Layout(msgspec.Struct):
    """The seqs a trace keeps, line by line: `head`, then `first_seq` to `next_seq - 1`.
    The head never ends at `first_seq - 1` (that seq starts the run instead), so one set
    of seqs has one layout."""

    head: list[int]
    first_seq: int = 0
    next_seq: int = 0

    @classmethod
    def of(cls, head: list[int], first_seq: int, next_seq: int) -> Layout:
        head = list(head)
        while head and head[-1] == first_seq - 1:
            first_seq = head.pop()
        return cls(head, first_seq, next_seq)

    @property
    def lines(self) -> int:
        return len(self.head) + self.next_seq - self.first_seq

    def line_of(self, seq: int) -> int:
        """The first line whose seq is `seq` or more (`lines` when none is)."""
        if seq >= self.first_seq:
            return len(self.head) + min(seq, self.next_seq) - self.first_seq
        return bisect_left(self.head, seq)

    def seq_at(self, line: int) -> int:
        return self.head[line] if line < len(self.head) else self.first_seq + line - len(self.head)

    def pruned(self, dropped: int, kept: Iterable[int]) -> Layout:
        """The layout once the first `dropped` lines are gone but for the seqs `kept`."""
        rest = [self.seq_at(line) for line in range(dropped, min(len(self.head), self.lines))]
        start = max(dropped, len(self.head))
        first_seq = self.first_seq + start - len(self.head)
        return Layout.of(sorted(kept) + rest, first_seq, self.next_seq)


def layout_by_search(lines: int, seq_at: Callable[[int], int]) -> Layout:
    """The layout of `lines` lines whose seqs `seq_at(line)` gives, reading few of them:
    `seq - line` grows along a trace and is the same all along its last run of seqs."""
    if lines == 0:
        return Layout([])
    last = seq_at(lines - 1)
    low, high = 0, lines - 1
    while low < high:
        middle = (low + high) // 2
        if seq_at(middle) - middle == last - (lines - 1):
            high = middle
        else:
            low = middle + 1
    return Layout([seq_at(line) for line in range(low)], last - (lines - 1 - low), last + 1)


def old_count(at_ms: Iterable[int], cutoff_ms: int) -> int:
    """How many of a trace's kept entries, given their `at_ms` from the first, make its old
    prefix: those before the first that is not older than `cutoff_ms`."""
    count = 0
    for at in at_ms:
        if at >= cutoff_ms:
            break
        count += 1
    return count


__all__ = ["KeepEntries", "Layout", "keep_none", "layout_by_search", "old_count"]
