"""SCRAM users: list them (mechanisms and iterations, never a password), create, change a password, delete.

DescribeUserScramCredentials and AlterUserScramCredentials go through kafka-python's protocol layer, so
Kafka's own messages reach the user. As Kafka's ``kafka-configs --alter --add-config SCRAM-SHA-512=...``
does, the password never leaves the console: a random salt is drawn and the salted password (PBKDF2 with the
mechanism's hash over the given iterations) is computed here and sent with the salt. Kafka keeps the
credentials in ZooKeeper or, on KRaft, in the metadata log; the same requests work for both.

A KRaft controller refuses two changes to one user in the same request, so each mechanism gets a request
of its own.

Changes go to the controller, as Kafka's admin client sends them: in ZooKeeper mode only the controller takes
AlterUserScramCredentials (any other broker answers NOT_CONTROLLER); on KRaft the broker that metadata names
as controller forwards it to the quorum. The controller is asked of metadata before each change, and a change
answered NOT_CONTROLLER (the controller moved meanwhile) is sent once more to the new one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from kafka.protocol.metadata import MetadataRequest

from broker.client.connection import ClusterConnection, keep_out_of_logs, send_request
from broker.errors import AlreadyExists, InvalidInput, KafkaRefused, NotFound

MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
_BY_CODE = {code: name for name, (code, _) in MECHANISMS.items()}
MIN_ITERATIONS, MAX_ITERATIONS, DEFAULT_ITERATIONS = 4096, 16384, 8192
MIN_PASSWORD = 8
_RESOURCE_NOT_FOUND = 91
_NOT_CONTROLLER = 41


@dataclass(frozen=True)
class ScramUser:
    """A user with SCRAM credentials: (mechanism, iterations) of each."""

    name: str
    credentials: tuple[tuple[str, int], ...]

    @property
    def mechanisms(self) -> list[str]:
        return [m for m, _ in self.credentials]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "principal": f"User:{self.name}",
            "credentials": [{"mechanism": m, "iterations": i} for m, i in self.credentials],
        }


# ---------------------------------------------------------------- checks (pure)


def check_name(raw: Any) -> str:
    """A SCRAM user name: not empty, no ``User:`` prefix (that is the principal), no ``,`` or ``=`` (SCRAM's
    own separators would need escaping that clients get wrong). Raises InvalidInput."""
    name = str(raw or "").strip()
    if not name:
        raise InvalidInput("Give the user's name.")
    if ":" in name and name.split(":", 1)[0].lower() == "user":
        raise InvalidInput(f"Give the user's name without its principal type: {name.split(':', 1)[1]!r}.")
    if any(c in name for c in ",=") or any(c.isspace() for c in name):
        raise InvalidInput(f"A SCRAM user name cannot hold spaces, ',' or '=': {name!r}.")
    if len(name) > 200:
        raise InvalidInput("The user name is too long.")
    return name


def check_password(raw: Any) -> str:
    password = str(raw or "")
    if len(password) < MIN_PASSWORD:
        raise InvalidInput(f"The password must be at least {MIN_PASSWORD} characters long.")
    return password


def check_mechanisms(raw: Any) -> list[str]:
    """SCRAM-SHA-256 and/or SCRAM-SHA-512 (both when none is given). Raises InvalidInput."""
    items = raw if isinstance(raw, list | tuple) else [m for m in str(raw or "").split(",") if m.strip()]
    found = [str(m).strip().upper().replace("_", "-") for m in items] or list(MECHANISMS)
    for m in found:
        if m not in MECHANISMS:
            raise InvalidInput(f"Unknown SCRAM mechanism {m!r}: use {', '.join(MECHANISMS)}.")
    return list(dict.fromkeys(found))


def check_iterations(raw: Any) -> int:
    if raw in (None, ""):
        return DEFAULT_ITERATIONS
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidInput(f"The iterations must be a whole number, not {raw!r}.") from None
    if not MIN_ITERATIONS <= value <= MAX_ITERATIONS:
        raise InvalidInput(f"Kafka takes {MIN_ITERATIONS} to {MAX_ITERATIONS} iterations, not {value}.")
    return value


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SCRAM's SaltedPassword (RFC 5802): PBKDF2 with the mechanism's hash."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][1], password.encode("utf-8"), salt, iterations)


def build_users(results: Iterable[Any]) -> list[ScramUser]:
    """ScramUser from DescribeUserScramCredentials' results (pure), by name; users without credentials left out."""
    found = []
    for r in results or ():
        if r.error_code:
            continue
        creds = tuple(
            sorted((_BY_CODE.get(c.mechanism, f"mechanism {c.mechanism}"), c.iterations) for c in r.credential_infos)
        )
        if creds:
            found.append(ScramUser(r.user, creds))
    return sorted(found, key=lambda u: u.name)


# ---------------------------------------------------------------- requests


_UNSUPPORTED = "This cluster's brokers do not manage SCRAM users through the API (Kafka 2.7 and later)."


def _send(admin: KafkaAdminClient, request: Any) -> Any:
    return send_request(admin, request, _UNSUPPORTED)


def _reason(code: int, message: str | None) -> str:
    name = str(getattr(kafka.errors.kafka_errors.get(code), "message", "") or f"error {code}")
    return name.replace("_", " ").lower() + (f": {message}" if message else "")


def _describe(admin: KafkaAdminClient, names: Sequence[str] | None) -> list[ScramUser]:
    users = None if names is None else [DescribeUserScramCredentialsRequest.UserName(name=n) for n in names]
    answer = _send(admin, DescribeUserScramCredentialsRequest(users=users))
    if answer.error_code:
        raise KafkaRefused("Kafka did not list the SCRAM users: " + _reason(answer.error_code, answer.error_message))
    for r in answer.results:
        if r.error_code and r.error_code != _RESOURCE_NOT_FOUND:
            raise KafkaRefused(f"Kafka did not describe user {r.user!r}: {_reason(r.error_code, r.error_message)}")
    return build_users(answer.results)


def list_users(conn: ClusterConnection) -> list[ScramUser]:
    """Every user with SCRAM credentials, with each credential's mechanism and iterations."""
    return conn.call(lambda admin: _describe(admin, None), "SCRAM users", retry=True)


def get_user(conn: ClusterConnection, name: str) -> ScramUser | None:
    found = conn.call(lambda admin: _describe(admin, [name]), "SCRAM user", retry=True)
    return found[0] if found else None


def _controller(admin: KafkaAdminClient) -> int | None:
    """The controller's id as metadata names it (None when no broker knows one yet)."""
    answer = send_request(admin, MetadataRequest(topics=[], allow_auto_topic_creation=False))
    controller = getattr(answer, "controller_id", -1)
    return controller if isinstance(controller, int) and controller >= 0 else None


def _alter(admin: KafkaAdminClient, request: Any, name: str, what: str) -> None:
    """Send an AlterUserScramCredentials request to the controller; once more to the new controller when the
    one asked is no longer it (NOT_CONTROLLER)."""
    answer = None
    for _ in range(2):
        answer = send_request(admin, request, _UNSUPPORTED, node=_controller(admin))
        if not any(r.error_code == _NOT_CONTROLLER for r in answer.results):
            break
    assert answer is not None
    for r in answer.results:
        if r.error_code:
            raise KafkaRefused(f"Kafka did not {what} {name!r}: {_reason(r.error_code, r.error_message)}")


def do_set_password(
    conn: ClusterConnection,
    name: str,
    password: str,
    mechanisms: Sequence[str],
    iterations: int,
    create: bool,
) -> ScramUser:
    """Create user ``name`` (``create``: refused with AlreadyExists when it has credentials) or change its
    password (refused with NotFound when it has none), for each of ``mechanisms``; returns what it has now
    (as asked, not read back). Input is checked by the caller (check_name, check_password, ...)."""
    keep_out_of_logs(password)
    upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion

    def change(admin: KafkaAdminClient) -> ScramUser:
        existing = _describe(admin, [name])
        if create and existing:
            raise AlreadyExists(f"User {name!r} already has SCRAM credentials: change its password instead.")
        if not create and not existing:
            raise NotFound(f"User {name!r} has no SCRAM credentials.")
        for mechanism in mechanisms:
            salt = os.urandom(32)
            salted = salted_password(mechanism, password, salt, iterations)
            # The salted password authenticates as well as the password does (SCRAM derives the client key from
            # it): kafka-python's request log shows it as a bytes literal, masked like the password.
            keep_out_of_logs(repr(salted)[2:-1])
            credential = upsert(
                name=name,
                mechanism=MECHANISMS[mechanism][0],
                iterations=iterations,
                salt=salt,
                salted_password=salted,
            )
            request = AlterUserScramCredentialsRequest(deletions=[], upsertions=[credential])
            _alter(admin, request, name, "store the credentials of")
        kept = dict(existing[0].credentials) if existing else {}
        kept.update({m: iterations for m in mechanisms})
        return ScramUser(name, tuple(sorted(kept.items())))

    return conn.call(change, "SCRAM credential change", requests=1 + len(mechanisms))


def do_delete_user(conn: ClusterConnection, name: str) -> list[str]:
    """Delete every SCRAM credential of ``name``; returns the mechanisms removed. Raises NotFound when it has
    none. Its ACLs stay (they name a principal, which may authenticate another way)."""

    def delete(admin: KafkaAdminClient) -> list[str]:
        existing = _describe(admin, [name])
        if not existing:
            raise NotFound(f"User {name!r} has no SCRAM credentials.")
        removed = []
        for mechanism in existing[0].mechanisms:
            if mechanism not in MECHANISMS:
                continue
            gone = AlterUserScramCredentialsRequest.ScramCredentialDeletion(
                name=name, mechanism=MECHANISMS[mechanism][0]
            )
            _alter(admin, AlterUserScramCredentialsRequest(deletions=[gone], upsertions=[]), name, "delete")
            removed.append(mechanism)
        return removed

    return conn.call(delete, "SCRAM user deletion", requests=3)
