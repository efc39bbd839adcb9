"""Child processes that do not outlive the process that started them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None, sig: int = signal.SIGTERM) -> None:
    """Ask Linux to send this process sig when its parent exits, even by kill -9.

    parent: the pid that started this process; if it is already gone (it died before the
    request was made, and this process was handed to init), sig is sent now. Elsewhere
    than Linux this does nothing.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)
