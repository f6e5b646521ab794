"""The embedded cluster's secure listener: its SASL users (generated once, kept in ``secrets.json``), what a
client needs to reach it, and the SCRAM credentials stored in the cluster (in ZooKeeper or, on KRaft, in
the metadata log; the same AlterUserScramCredentials request either way)."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.client.config import ClusterConfig
from broker.local.layout import ClusterLayout, LauncherError

# The secure listener's users: one for PLAIN, one with SCRAM-SHA-256 and SCRAM-SHA-512 credentials.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PLAIN_USER = "kazami-plain"
SCRAM_USER = "kazami-scram"
DEFAULT_SASL_SSL_OFFSET = 100


@dataclass(frozen=True)
class SaslUser:
    """A user of the secure listener; ``repr`` never shows the password."""

    name: str
    password: str = field(repr=False)
    mechanisms: tuple[str, ...]


@dataclass(frozen=True)
class SecureListener:
    """What a client needs to reach a local cluster's SASL_SSL listener."""

    bootstrap_servers: tuple[str, ...]
    ca: Path
    client_cert: Path
    client_key: Path
    secrets: Path
    users: tuple[SaslUser, ...]

    def user_for(self, mechanism: str) -> SaslUser:
        for user in self.users:
            if mechanism in user.mechanisms:
                return user
        raise LauncherError(f"No user of the secure listener has {mechanism} credentials.")

    def client_config(self, mechanism: str, name: str = "local-secure", **overrides: Any) -> ClusterConfig:
        """A ClusterConfig for this listener with ``mechanism``'s user, the CA, the client certificate and
        hostname check on; ``overrides`` replace any field (e.g. a wrong ``sasl_password`` in a test)."""
        user = self.user_for(mechanism)
        fields: dict[str, Any] = {
            "name": name,
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": mechanism,
            "sasl_username": user.name,
            "sasl_password": user.password,
            "ssl_cafile": str(self.ca),
            "ssl_certfile": str(self.client_cert),
            "ssl_keyfile": str(self.client_key),
            "ssl_check_hostname": True,
        }
        fields.update(overrides)
        return ClusterConfig(**fields)


def ensure_sasl_users(layout: ClusterLayout) -> list[SaslUser]:
    """The secure listener's users from ``secrets.json``, generated (random passwords, file mode 0600)
    the first time."""
    path = layout.secrets_path
    if path.exists():
        raw = json.loads(path.read_text())
        return [SaslUser(u["name"], u["password"], tuple(u["mechanisms"])) for u in raw["users"]]
    users = [
        SaslUser(PLAIN_USER, secrets.token_urlsafe(18), ("PLAIN",)),
        SaslUser(SCRAM_USER, secrets.token_urlsafe(18), ("SCRAM-SHA-256", "SCRAM-SHA-512")),
    ]
    body = {"users": [{"name": u.name, "password": u.password, "mechanisms": list(u.mechanisms)} for u in users]}
    write_private(path, json.dumps(body, indent=2) + "\n")
    return users


def secure_listener(layout: ClusterLayout) -> SecureListener:
    """How to reach ``layout``'s SASL_SSL listener; raises LauncherError when it has none (or was never
    started, so no users exist yet)."""
    if not layout.secure:
        raise LauncherError(f"The cluster in {layout.data} has no SASL_SSL listener (start it with --sasl-ssl).")
    if not layout.secrets_path.exists():
        raise LauncherError(f"The cluster in {layout.data} was never started: no users in {layout.secrets_path}.")
    from broker.client.connection import keep_out_of_logs

    certs = layout.certs
    users = tuple(ensure_sasl_users(layout))
    keep_out_of_logs(*(u.password for u in users))
    return SecureListener(
        bootstrap_servers=tuple(layout.sasl_ssl_bootstrap_servers.split(",")),
        ca=certs.ca,
        client_cert=certs.client_cert,
        client_key=certs.client_key,
        secrets=layout.secrets_path,
        users=users,
    )


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, readable and writable by the owner only from the first byte."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    tmp.replace(path)


def create_scram_credentials(layout: ClusterLayout, users: list[SaslUser]) -> None:
    """Store the SCRAM users' credentials in the cluster (AlterUserScramCredentials over the PLAINTEXT
    listener; kept in ZooKeeper or the KRaft metadata log). Doing it again replaces them with the same password."""
    from kafka import KafkaAdminClient
    from kafka.admin import UserScramCredentialUpsertion

    mechanisms = sorted({m for u in users for m in u.mechanisms if m.startswith("SCRAM-")})
    admin = KafkaAdminClient(
        bootstrap_servers=layout.bootstrap_servers.split(","), bootstrap_timeout_ms=10_000, request_timeout_ms=10_000
    )
    failed: dict[str, object] = {}
    try:
        # One request per mechanism: a KRaft controller refuses two changes to one user in the same request
        # ("A user credential cannot be altered twice in the same request"); ZooKeeper mode took them together.
        for mechanism in mechanisms:
            upserts = [
                UserScramCredentialUpsertion(u.name, mechanism, u.password) for u in users if mechanism in u.mechanisms
            ]
            answer = admin.alter_user_scram_credentials(upserts)
            failed.update({f"{user} ({mechanism})": error for user, error in answer.items() if error})
    finally:
        admin.close()
    if failed:
        raise LauncherError(f"Kafka refused the SCRAM credentials: {failed}.")


# What the generated users may do through the authorizer: everything, granted by ACLs rather than as super
# users, so a user created in the console next to them starts with nothing.
GRANTED_RESOURCES = (("CLUSTER", "kafka-cluster"), ("TOPIC", "*"), ("GROUP", "*"), ("TRANSACTIONAL_ID", "*"))


def grant_secure_users(layout: ClusterLayout, users: list[SaslUser]) -> None:
    """Allow every operation on every resource to ``users`` with literal ACLs (CreateAcls over the PLAINTEXT
    listener, whose principal is a super user). Creating an ACL that exists is a no-op, so this runs at every
    ``up``. Raises LauncherError when Kafka refuses one."""
    from kafka import KafkaAdminClient
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ResourcePattern, ResourceType

    bindings = [
        ACL(f"User:{u.name}", "*", ACLOperation.ALL, ACLPermissionType.ALLOW, ResourcePattern(ResourceType[t], name))
        for u in users
        for t, name in GRANTED_RESOURCES
    ]
    admin = KafkaAdminClient(
        bootstrap_servers=layout.bootstrap_servers.split(","), bootstrap_timeout_ms=10_000, request_timeout_ms=10_000
    )
    try:
        answer = admin.create_acls(bindings)
    finally:
        admin.close()
    if answer["failed"]:
        raise LauncherError(f"Kafka refused the secure users' ACLs: {answer['failed']}.")


def secure_listener_accepts(layout: ClusterLayout, listener: SecureListener) -> bool:
    """True when every broker's SASL_SSL listener accepts the SCRAM user and lets it describe ACLs
    (credentials and ACLs reach each broker through a ZooKeeper notification or the metadata log, a moment
    after they are stored)."""
    from kafka import KafkaAdminClient
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter, ResourceType
    from kafka.admin import ACLResourcePatternType as Pattern

    everything = ACLFilter(
        None, None, ACLOperation.ANY, ACLPermissionType.ANY, ResourcePatternFilter(ResourceType.ANY, None, Pattern.ANY)
    )
    for b in layout.broker_ids:
        config = listener.client_config("SCRAM-SHA-512", bootstrap_servers=(f"127.0.0.1:{layout.sasl_ssl_port(b)}",))
        try:
            admin = KafkaAdminClient(bootstrap_timeout_ms=3000, **config.client_options())
        except Exception:  # noqa: BLE001 - not ready yet; asked again
            return False
        try:
            admin.describe_acls(everything)  # refused until this broker has the user's ACLs
        except Exception:  # noqa: BLE001 - not ready yet; asked again
            return False
        finally:
            admin.close()
    return True
