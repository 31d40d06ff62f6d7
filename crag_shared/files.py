"""Files crag reads, read safely: those a configuration names (a thresholds file, a combination, recorded
web results) and JSONL data files (records, questions and answers, results).

A setting can come from a pipeline YAML, a saved config or the command line. Pointed at `/dev/zero`, a
FIFO or a huge file, a plain `read_text()` exhausts memory or waits forever; here such a file fails at
once, with an error naming the setting and the path. Only regular files are read, and every read is
bounded by the bytes it takes, not by the size the file reports: a `/proc` file reports 0 bytes and may
hold gigabytes without a line break (`/proc/self/pagemap`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "MAX_DATA_BYTES", "MAX_LINE_BYTES", "MAX_RECORDED_BYTES", "MAX_SETTINGS_BYTES", "json_lines",
    "read_settings_text",
]

#: The most a settings file (thresholds, a combination) may hold.
MAX_SETTINGS_BYTES = 1 << 20
#: The most a recorded-web file (`replay:PATH`) may hold.
MAX_RECORDED_BYTES = 256 << 20
#: The most a JSONL data file read whole may hold (questions and answers, retrieved passages, labelled
#: pairs, a report's results).
MAX_DATA_BYTES = 512 << 20
#: The most one line of a JSONL file may hold, whatever the file's own bound (a record with its passages
#: and trace is a few megabytes at most).
MAX_LINE_BYTES = 64 << 20


def checked_file(path: str | os.PathLike[str], setting: str, max_bytes: int | None) -> Path:
    """`path` if it is a regular file of at most `max_bytes` (None: any size), else ValueError naming `setting`
    and the path."""
    where = Path(path).expanduser()
    try:
        found = os.stat(where)
    except OSError as error:
        raise ValueError(f"{setting} {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(found.st_mode):
        raise ValueError(f"{setting} {path}: not a regular file (a directory, pipe or device)")
    if max_bytes is not None and found.st_size > max_bytes:
        raise ValueError(f"{setting} {path}: {found.st_size:,} bytes, more than the {max_bytes:,} it may hold")
    return where


def read_settings_text(path: str | os.PathLike[str], setting: str, max_bytes: int = MAX_SETTINGS_BYTES) -> str:
    """The text of a settings file, checked as `checked_file` does and read within the bound (a file that
    grows after the check is cut off there and refused)."""
    where = checked_file(path, setting, max_bytes)
    with where.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{setting} {path}: more than the {max_bytes:,} bytes it may hold")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{setting} {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def json_lines(path: str | os.PathLike[str], kind: str, max_bytes: int | None = MAX_DATA_BYTES
               ) -> Iterator[tuple[int, object]]:
    """(line number, value) of each non-blank line of a JSONL file, a regular file of at most `max_bytes`
    (None: any size, for a data set read line by line) with no line over `MAX_LINE_BYTES`, `kind` naming it
    in errors; a line that is not JSON raises ValueError naming the file and line. The bounds hold for the
    bytes read, so a file that reports a smaller size than it holds is refused at the bound too."""
    with checked_file(path, kind, max_bytes).open("rb") as lines:
        for number, raw in enumerate(_bounded_lines(lines, path, kind, max_bytes), 1):
            if not raw.strip():
                continue
            try:
                yield number, json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
                raise ValueError(f"{path}:{number}: not a JSON line ({type(error).__name__}: {error})"[:300]) from None


def _bounded_lines(lines: BinaryIO, path: str | os.PathLike[str], kind: str, max_bytes: int | None
                   ) -> Iterator[bytes]:
    """Each line of `lines`, never reading past `max_bytes` in all or `MAX_LINE_BYTES` in one line."""
    read = 0
    while True:
        left = None if max_bytes is None else max_bytes - read
        cap = MAX_LINE_BYTES if left is None else min(MAX_LINE_BYTES, left)
        raw = lines.readline(cap + 1)
        if not raw:
            return
        read += len(raw)
        if len(raw) > cap:
            if left is not None and left <= MAX_LINE_BYTES:
                raise ValueError(f"{kind} {path}: more than the {max_bytes:,} bytes it may hold")
            raise ValueError(f"{kind} {path}: a line longer than {MAX_LINE_BYTES:,} bytes; is it a JSONL file?")
        yield raw
