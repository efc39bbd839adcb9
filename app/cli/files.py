"""The files and streams the `neardup` commands read and write."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


@contextlib.contextmanager
def replacing(path: str) -> Iterator[BinaryIO]:
    """A regular file (or a new one) written beside it and put in its place only when
    the writing ends well, with the mode it had: a command that fails (a service away, a
    refused request) leaves an earlier file whole. Anything else (a device, a pipe) is
    written as it is, and a symlink's target is the file replaced."""
    try:
        mode = os.stat(path).st_mode  # through symlinks: /dev/stdout is the pipe
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        mode = stat.S_IFREG | (0o666 & ~umask)  # as open() would make it
    if not stat.S_ISREG(mode):
        with open(path, "wb") as sink:
            yield sink
        return
    target = os.path.realpath(path)
    try:
        fd, part = tempfile.mkstemp(prefix=".neardup-", dir=os.path.dirname(target))
    except OSError as exc:  # named by the path given, not by the temporary file's
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        os.fchmod(fd, stat.S_IMODE(mode))
        with os.fdopen(fd, "wb") as sink:
            yield sink
        os.replace(part, target)
    except BaseException:
        os.unlink(part)
        raise


def unreadable(path: str) -> str | None:
    """Why a named input file cannot be read, said the same by every tool; None if it can.
    A device or a FIFO is refused: it would be read without end."""
    if os.path.isfile(path):
        return None
    if os.path.isdir(path):
        return f"{path}: a directory, not a file (name the files in it)"
    if os.path.exists(path):
        return f"{path}: not a regular file"
    return f"no such file: {path}"


def stdin_text() -> str | None:
    """The text on stdin, strictly UTF-8; None, having said where it is not."""
    raw = sys.stdin.buffer.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        print(
            f"neardup: <stdin>: not valid UTF-8 ({exc.reason} at byte {exc.start}): send "
            "UTF-8 text",
            file=sys.stderr,
        )
        return None
