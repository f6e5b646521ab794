"""Jars from Maven Central, fetched once: the embedded cluster's (broker/local/pom.xml) and the
analytics jobs' (analytics/pom.xml). Nothing is built; Maven copies a pom's runtime dependencies
into a git-ignored folder and a ``.complete`` marker says the copy finished."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from broker.errors import KazamiError


class MavenError(KazamiError):
    """Maven is missing, or could not fetch what a pom names."""


def jars_complete(folder: Path) -> bool:
    return (folder / ".complete").exists()


def copy_dependencies(
    pom: Path,
    folder: Path,
    what: str,
    echo: Callable[[str], None] = print,
    properties: dict[str, str] | None = None,
) -> None:
    """Copy the runtime dependencies of ``pom`` into ``folder`` once (later calls do nothing).

    ``what`` names them in messages ("the Kafka jars"); ``properties`` override the pom's (``-Dname=value``,
    e.g. the Kafka version). Raises MavenError when Maven is not installed or fails, with the last lines it
    printed."""
    if jars_complete(folder):
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MavenError(f"Maven is needed once to fetch {what}: install it (e.g. `apt-get install maven`).")
    echo(f"Fetching {what} from Maven Central (once)...")
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={folder}",
            "-DincludeScope=runtime",
            *(f"-D{name}={value}" for name, value in (properties or {}).items()),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise MavenError(f"Maven could not fetch {what}: " + " | ".join(tail))
    (folder / ".complete").write_text("ok\n")
