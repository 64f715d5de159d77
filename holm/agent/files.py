"""Files in the box: read, write, list, grep, glob. Blocking; the server runs them in threads.

OS errors map to holm errors here: a missing path is `NotFound`, a directory where a file
is wanted (or the reverse) is `BadRequest`, a permission refused is `Denied` (not
retryable), anything else is `Failed`.
"""

from __future__ import annotations

import fnmatch
import glob as globbing
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from holm.errors import BadRequest, Denied, Failed, NotFound
from holm.wire.results import FileInfo, GrepMatch

READ_CAP = 64 * 1024 * 1024
# grep skips files larger than this, and binary files (a NUL in their first block).
GREP_FILE_CAP = 16 * 1024 * 1024
GREP_LINE_CAP = 500
MAX_LIMIT = 10_000
# Pseudo filesystems whose files can block a reader or never end; searched only when asked
# for by name.
_SKIPPED_ROOTS = ("/proc", "/sys", "/dev")


@contextmanager
def os_errors(path: str) -> Iterator[None]:
    try:
        yield
    except FileNotFoundError:
        raise NotFound(f"no such file or directory: {path}") from None
    except IsADirectoryError:
        raise BadRequest(f"{path} is a directory") from None
    except NotADirectoryError:
        raise BadRequest(f"a part of {path} is not a directory") from None
    except PermissionError:
        raise Denied(f"permission denied: {path}", retryable=False) from None
    except OSError as exc:
        raise Failed(f"{path}: {exc.strerror or exc}") from None


def _absolute(path: str, home: str) -> str:
    if not path:
        raise BadRequest("path is empty")
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return os.path.normpath(os.path.join(home, path))


def read(path: str, home: str) -> bytes:
    full = _absolute(path, home)
    with os_errors(path), open(full, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > READ_CAP:
            raise BadRequest(f"{path} has {size} bytes, over the read limit of {READ_CAP}")
        data = f.read(READ_CAP + 1)
    if len(data) > READ_CAP:
        raise BadRequest(f"{path} is over the read limit of {READ_CAP} bytes")
    return data


def write(path: str, data: bytes, home: str) -> int:
    if len(data) > READ_CAP:
        raise BadRequest(f"at most {READ_CAP} bytes can be written at once")
    full = _absolute(path, home)
    with os_errors(path):
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
    return len(data)


def _info(entry_path: str, name: str) -> FileInfo:
    st = os.lstat(entry_path)
    kind: str
    if stat.S_ISLNK(st.st_mode):
        kind = "link"
    elif stat.S_ISDIR(st.st_mode):
        kind = "dir"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        kind = "other"
    return FileInfo(
        name=name,
        path=entry_path,
        type=kind,  # type: ignore[arg-type]
        size=st.st_size,
        mtime_ms=st.st_mtime_ns // 1_000_000,
    )


def list_dir(path: str, home: str) -> list[FileInfo]:
    full = _absolute(path, home)
    with os_errors(path):
        names = sorted(os.listdir(full))
        found = []
        for name in names:
            try:
                found.append(_info(os.path.join(full, name), name))
            except FileNotFoundError:
                continue
    return found


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be 1 to {MAX_LIMIT}")


def _files_under(root: str, include: str | None) -> Iterator[str]:
    if os.path.isfile(root):
        yield root
        return
    if not os.path.isdir(root):
        raise NotFound(f"no such file or directory: {root}")
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if os.path.join(directory, d) not in _SKIPPED_ROOTS)
        for name in sorted(files):
            if include is None or fnmatch.fnmatch(name, include):
                yield os.path.join(directory, name)


def _lines(path: str) -> Iterator[str] | None:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > GREP_FILE_CAP:
            return None
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return iter(data.decode("utf-8", errors="replace").splitlines())


def grep(
    pattern: str, path: str, include: str | None, ignore_case: bool, limit: int, home: str
) -> tuple[list[GrepMatch], bool]:
    """Lines that match `pattern` (a Python regex), file by file in name order; `cut` when
    there were more than `limit`. Unreadable, binary and very large files are skipped."""
    _check_limit(limit)
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise BadRequest(f"pattern is not a valid regular expression: {exc}") from None
    root = _absolute(path, home)
    matches: list[GrepMatch] = []
    with os_errors(path):
        for file in _files_under(root, include):
            lines = _lines(file)
            if lines is None:
                continue
            for number, line in enumerate(lines, start=1):
                if regex.search(line):
                    if len(matches) == limit:
                        return matches, True
                    matches.append(GrepMatch(path=file, line=number, text=line[:GREP_LINE_CAP]))
    return matches, False


def glob(pattern: str, path: str, limit: int, home: str) -> tuple[list[str], bool]:
    """Paths under `path` whose path relative to it matches `pattern` (`**` crosses
    directories), sorted; `cut` when there were more than `limit`."""
    _check_limit(limit)
    if not pattern:
        raise BadRequest("pattern is empty")
    root = _absolute(path, home)
    with os_errors(path):
        if not os.path.isdir(root):
            raise NotFound(f"no such directory: {path}")
        found: list[str] = []
        for relative in globbing.iglob(pattern, root_dir=root, recursive=True):
            if len(found) == limit:
                return sorted(found), True
            found.append(str(Path(root) / relative))
    return sorted(found), False
