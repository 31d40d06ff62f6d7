"""Files a configuration names (a thresholds file, a combination, recorded web results), read safely.

A setting can come from a pipeline YAML, a saved config or the command line. Pointed at `/dev/zero`, a
FIFO or a huge file, a plain `read_text()` exhausts memory or waits forever; here such a file fails at
once, with an error naming the setting and the path. Only regular files of bounded size are read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: The most a settings file (thresholds, a combination) may hold.
MAX_SETTINGS_BYTES = 1 << 20
#: The most a recorded-web file (`replay:PATH`) may hold.
MAX_RECORDED_BYTES = 256 << 20


def checked_file(path: str | os.PathLike[str], setting: str, max_bytes: int) -> Path:
    """`path` if it is a regular file of at most `max_bytes`, else ValueError naming `setting` and the path."""
    where = Path(path).expanduser()
    try:
        found = os.stat(where)
    except OSError as error:
        raise ValueError(f"{setting} {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(found.st_mode):
        raise ValueError(f"{setting} {path}: not a regular file (a directory, pipe or device)")
    if found.st_size > max_bytes:
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
