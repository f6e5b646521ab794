"""An OpenID Connect provider for the sign-in tests: NAV's mock-oauth2-server (tests/identity/pom.xml), run as a
process of the test's own on a loopback port. Its issuer is ``<url>/<ISSUER_ID>``; its interactive login page
asks a user name and the claims to put in the tokens, as a person at the provider's login form would answer.

`python -m tests.oidc_provider fetch-jars` (run by `make install`) copies its jars from Maven Central once."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from broker.local.maven import copy_dependencies, jars_complete
from console.devserver import free_port
from tests.shared_services import server_process

HERE = Path(__file__).resolve().parent / "identity"
JARS = HERE / "jars"
MAIN = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt"
ISSUER_ID = "kazami"


def fetch_jars() -> None:
    copy_dependencies(HERE / "pom.xml", JARS, "the test identity provider's jars (mock-oauth2-server)")


@contextlib.contextmanager
def provider() -> Iterator[str]:
    """The provider, started and stopped; yields its issuer URL."""
    if not jars_complete(JARS):
        raise RuntimeError("The test identity provider is not installed: run `make install`.")
    port = free_port()
    home = Path(tempfile.mkdtemp(prefix="kazami-oidc-"))
    config = {"interactiveLogin": True, "httpServer": "NettyWrapper"}
    env = {"SERVER_PORT": str(port), "SERVER_HOSTNAME": "127.0.0.1", "JSON_CONFIG": json.dumps(config)}
    classpath = ":".join(str(p) for p in sorted(JARS.glob("*.jar")))
    issuer = f"http://127.0.0.1:{port}/{ISSUER_ID}"
    command = ["java", "-Xmx256m", "-cp", classpath, MAIN]
    with server_process(command, home, "identity provider", lambda: _answers(issuer), env={**_path_env(), **env}):
        yield issuer


def _answers(issuer: str) -> bool:
    try:
        with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=2):  # noqa: S310
            return True
    except OSError:
        return False


def _path_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "JAVA_HOME", "HOME", "LANG")}


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch-jars"]:
        raise SystemExit("usage: python -m tests.oidc_provider fetch-jars")
    fetch_jars()
