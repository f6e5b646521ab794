"""Folders for the files a Connect test hands the worker. The embedded worker runs as an unprivileged user
when the tests run as root (broker/local/connect.py), and pytest's own tmp_path sits under a folder only its
owner may enter (0700): the Connect tests' ``tmp_path`` is one of these instead, under the run's var/ folder,
open to the worker for reading and writing (sink files, folders made during a test)."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.conftest import TEST_VAR


def worker_folder() -> Path:
    """A fresh folder the worker can read and write, whatever user it runs as."""
    folder = TEST_VAR / "connect-files" / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True)
    for path in (folder.parent, folder):
        path.chmod(0o777)
    return folder
