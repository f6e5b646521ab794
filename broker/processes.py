"""Whether a process the project started still runs: the embedded cluster's JVMs, analytics jobs, the
live query."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def running(pid: int | None, marker: bytes | None = None) -> bool:
    """True when process ``pid`` runs: it exists, is no zombie (an exited child of this process is
    reaped), and, with ``marker``, its command line holds ``marker``, so a pid the system gave to
    another process since does not count."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child: someone else reaps it
    proc = Path(f"/proc/{pid}")
    with contextlib.suppress(OSError):
        if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    if marker is None:
        return True
    try:
        cmdline = (proc / "cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    # Empty while a launcher re-executes itself at start: still the one started.
    return not cmdline or marker in cmdline
