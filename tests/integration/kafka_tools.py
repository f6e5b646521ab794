"""Kafka's own command-line tools (from the Kafka 4 jars `make install` fetched), as independent clients
and as the reference the console is compared with: console consumers of the KIP-848 and share group
protocols, and `kafka-consumer-groups` / `kafka-share-groups --describe`."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from broker.local import launcher
from tests.conftest import BOOTSTRAP, TEST_VAR

JARS = launcher.classpath(launcher.DEFAULT_KAFKA4_VERSION)
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def _log_config() -> Path:
    path = TEST_VAR / "tools-log4j2.properties"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "rootLogger.level = WARN\n"
            "rootLogger.appenderRef.stderr.ref = STDERR\n"
            "appender.stderr.type = Console\n"
            "appender.stderr.name = STDERR\n"
            "appender.stderr.target = SYSTEM_ERR\n"
            "appender.stderr.layout.type = PatternLayout\n"
            "appender.stderr.layout.pattern = %p %m%n\n"
        )
    return path


def _command(main: str, *args: str) -> list[str]:
    return [
        "java",
        "-Xmx256m",
        f"-Dlog4j2.configurationFile={_log_config()}",
        "-cp",
        JARS,
        main,
        "--bootstrap-server",
        BOOTSTRAP.split(",")[0],
        *args,
    ]


def run_tool(main: str, *args: str, timeout: float = 60) -> str:
    """Run one of Kafka's tools to the end; its standard output."""
    done = subprocess.run(_command(main, *args), capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{main} {' '.join(args)} failed: {done.stderr[-2000:]}"
    return done.stdout


@contextmanager
def running(main: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """One of Kafka's console consumers, running until the block ends."""
    log = TEST_VAR / "tools" / f"{main.rsplit('.', 1)[-1]}-{time.time_ns()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    # Its output goes to a file: a pipe nobody reads fills up, and the tool then stops at its next line.
    with log.open("w") as sink:
        process = subprocess.Popen(_command(main, *args), stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def table(output: str, first: str) -> list[dict[str, str]]:
    """The rows of a tool's table whose header starts with ``first`` (e.g. "GROUP"), as dicts."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    headers = [i for i, cells in enumerate(lines) if cells and cells[0] == first]
    if not headers:
        return []
    header = lines[headers[-1]]
    return [dict(zip(header, cells, strict=False)) for cells in lines[headers[-1] + 1 :] if len(cells) >= len(header)]
