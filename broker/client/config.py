"""How to reach a cluster: bootstrap servers, ZooKeeper and the security settings, with secrets kept apart."""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.errors import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLUSTER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
HOST_PORT = re.compile(r"^[^\s:,]+:\d{1,5}$")
ZOOKEEPER_SCHEME = re.compile(r"^[a-z][a-z0-9]*$")


@dataclass(frozen=True)
class ClusterConfig:
    """One cluster the console can show. ``repr`` never shows the SASL password, the key password or the
    ZooKeeper credentials."""

    name: str
    bootstrap_servers: tuple[str, ...]
    zookeeper_connect: str | None = None
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    # Password of an encrypted client key (ssl_keyfile).
    ssl_password: str | None = field(default=None, repr=False)
    ssl_check_hostname: bool = True
    read_only: bool = False
    # Seconds any one Kafka call may take before the cluster counts as unavailable.
    timeout: float = 2.5
    # Seconds an answer about the cluster (topic list, a topic, the groups) is shared by the pages and
    # live views asking the same; 0 asks the cluster every time (see broker/shared_reads.py).
    max_age: float = 1.0
    # Folders on the console's machine under which the brokers' log dirs can be read (the embedded
    # cluster's, or a mounted volume): the segment pages open files there and nowhere else.
    log_dir_roots: tuple[str, ...] = ()
    # Whether admins may create, change and delete znodes through the console (off: ZooKeeper is read-only).
    zookeeper_writes: bool = False
    # Credentials the console's ZooKeeper session presents, as ``scheme:credential`` (``digest:user:password``):
    # kazoo's auth_data. A secret.
    zookeeper_auth: str | None = field(default=None, repr=False)
    # The ACL of the znodes the console creates (ZOOKEEPER_ACL): "open" (anyone may do anything, ZooKeeper's
    # default), "kafka" (the console's identity may do anything, anyone may read, as Kafka's brokers do
    # with zookeeper.set.acl=true) or "creator" (only the console's identity). The last two need
    # zookeeper_auth: the identity is the one it presents.
    zookeeper_acl: str = "open"

    def __post_init__(self) -> None:
        check_cluster_config(self)

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python clients (admin, consumer, producer)."""
        opts: dict[str, Any] = {
            "bootstrap_servers": list(self.bootstrap_servers),
            "security_protocol": self.security_protocol,
            "request_timeout_ms": int(self.timeout * 1000),
        }
        if self.security_protocol in ("SSL", "SASL_SSL"):
            opts.update(
                ssl_cafile=self.ssl_cafile,
                ssl_certfile=self.ssl_certfile,
                ssl_keyfile=self.ssl_keyfile,
                ssl_check_hostname=self.ssl_check_hostname,
            )
            if self.ssl_password is not None:
                opts["ssl_password"] = self.ssl_password
        if self.security_protocol.startswith("SASL_"):
            opts.update(
                sasl_mechanism=self.sasl_mechanism,
                sasl_plain_username=self.sasl_username,
                sasl_plain_password=self.sasl_password,
            )
        return opts

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret values of this config (to keep out of logs)."""
        found = [self.sasl_password, self.ssl_password, self.zookeeper_auth]
        if self.zookeeper_auth:
            scheme, _, credential = self.zookeeper_auth.partition(":")
            found.append(credential)  # the credential alone, as a request carries it
            if scheme in ("digest", "sasl"):
                found.append(credential.partition(":")[2])  # and the password alone
        return tuple(s for s in found if s)

    def zookeeper_auth_data(self) -> list[tuple[str, str]]:
        """kazoo's ``auth_data``: [(scheme, credential)], empty without zookeeper_auth or with SASL (which
        authenticates the session itself, see zookeeper_sasl_options)."""
        if not self.zookeeper_auth:
            return []
        scheme, _, credential = self.zookeeper_auth.partition(":")
        return [] if scheme == "sasl" else [(scheme, credential)]

    def zookeeper_sasl_options(self) -> dict[str, str] | None:
        """kazoo's ``sasl_options`` for ``sasl:user:password`` (DIGEST-MD5, the mechanism ZooKeeper's
        DigestLoginModule serves); None otherwise."""
        if not self.zookeeper_auth:
            return None
        scheme, _, credential = self.zookeeper_auth.partition(":")
        if scheme != "sasl":
            return None
        username, _, password = credential.partition(":")
        return {"mechanism": "DIGEST-MD5", "username": username, "password": password}


# How each TLS setting is named in messages, unless the caller names them its own way (the console
# names its environment variables or the TOML keys).
FIELD_LABELS = {
    "ssl_cafile": "ssl_cafile",
    "ssl_certfile": "ssl_certfile",
    "ssl_keyfile": "ssl_keyfile",
    "ssl_password": "ssl_password",
}


def ssl_context(config: ClusterConfig, labels: Mapping[str, str] | None = None) -> ssl.SSLContext | None:
    """The TLS context of ``config``'s clients (None without TLS): its CA file (else the system's CAs),
    its client certificate and key, the hostname check, TLS 1.2 or newer.

    Never prompts for a key password (an encrypted key without one fails). Raises ConfigError naming
    the setting at fault by ``labels`` (field name to the name the user knows) and the file's path,
    never the file's content.
    """
    if not config.uses_tls:
        return None
    names = {**FIELD_LABELS, **(labels or {})}
    check_tls_files(config, names)
    where = f"cluster {config.name!r}"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = config.ssl_check_hostname
    if config.ssl_cafile:
        try:
            context.load_verify_locations(cafile=config.ssl_cafile)
        except (ssl.SSLError, ValueError):
            raise ConfigError(
                f"{where}: {names['ssl_cafile']} ({_shown(config.ssl_cafile)}) holds no PEM certificate."
            ) from None
    else:
        context.load_default_certs()
    if config.ssl_certfile:
        password = (config.ssl_password or "").encode()
        try:
            context.load_cert_chain(config.ssl_certfile, config.ssl_keyfile or None, password=lambda: password)
        except ssl.SSLError:
            raise ConfigError(f"{where}: {_key_problem(config, names)}") from None
    return context


def check_tls_files(config: ClusterConfig, labels: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError when a TLS file ``config`` names is missing or unreadable, or a key comes without
    a certificate; the message names the setting by ``labels`` and shows the path, never the content."""
    if not config.uses_tls:
        return
    names = {**FIELD_LABELS, **(labels or {})}
    where = f"cluster {config.name!r}"
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        value = getattr(config, name)
        if not value:
            continue
        path = Path(value)
        if not path.is_file():
            raise ConfigError(f"{where}: {names[name]} names {_shown(value)}, which is not a file.")
        try:
            with path.open("rb") as f:
                f.read(1)
        except OSError as exc:
            raise ConfigError(f"{where}: {names[name]} ({_shown(value)}) cannot be read: {exc.strerror}.") from None
    if config.ssl_keyfile and not config.ssl_certfile:
        raise ConfigError(f"{where}: {names['ssl_keyfile']} is set but {names['ssl_certfile']} is not.")


def _key_problem(config: ClusterConfig, names: Mapping[str, str]) -> str:
    """Why the client certificate and key did not load, from what the key file says of itself."""
    key_file = config.ssl_keyfile or config.ssl_certfile or ""
    try:
        head = Path(key_file).read_text(errors="replace")
    except OSError:
        head = ""
    encrypted = "ENCRYPTED" in head
    key_name = names["ssl_keyfile"] if config.ssl_keyfile else names["ssl_certfile"]
    if encrypted and not config.ssl_password:
        return f"the key in {key_name} ({_shown(key_file)}) is encrypted; give its password ({names['ssl_password']})."
    if encrypted:
        return f"the password {names['ssl_password']} does not open the key in {key_name} ({_shown(key_file)})."
    return (
        f"{names['ssl_certfile']} ({_shown(config.ssl_certfile or '')}) and {key_name} ({_shown(key_file)}) are not "
        "a PEM certificate with its matching private key."
    )


def _shown(value: str) -> str:
    """A path as it can be shown; a value that is plainly not a path (a pasted key?) is not echoed."""
    if "\n" in value or "-----" in value or len(value) > 400:
        return "a value that is not a file path"
    return value


def check_cluster_config(config: ClusterConfig) -> None:
    """Raise ConfigError naming the first bad field of ``config``."""
    where = f"cluster {config.name!r}"
    if not CLUSTER_NAME.match(config.name):
        raise ConfigError(f"{where}: a cluster name is lower-case letters, digits, '-' or '_' (at most 63).")
    if not config.bootstrap_servers:
        raise ConfigError(f"{where}: bootstrap servers are empty; give host:port[,host:port...].")
    for server in config.bootstrap_servers:
        if not HOST_PORT.match(server):
            raise ConfigError(f"{where}: bootstrap server {server!r} is not host:port.")
    if config.security_protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(
            f"{where}: security protocol {config.security_protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}."
        )
    if config.security_protocol.startswith("SASL_"):
        if config.sasl_mechanism not in SASL_MECHANISMS:
            raise ConfigError(
                f"{where}: SASL mechanism {config.sasl_mechanism!r} is not one of {', '.join(SASL_MECHANISMS)}."
            )
        if not config.sasl_username or config.sasl_password is None:
            raise ConfigError(f"{where}: SASL needs a username and a password.")
    if config.timeout <= 0:
        raise ConfigError(f"{where}: the time-out must be positive.")
    if config.max_age < 0:
        raise ConfigError(f"{where}: max_age must not be negative.")
    if config.zookeeper_auth is not None:
        scheme, colon, credential = config.zookeeper_auth.partition(":")
        if (
            not ZOOKEEPER_SCHEME.match(scheme)
            or not colon
            or not credential
            or (scheme in ("digest", "sasl") and not all(credential.partition(":")[::2]))
        ):
            # The value is a secret: the message says what is expected, never what was given.
            raise ConfigError(
                f"{where}: the ZooKeeper credentials (ZOOKEEPER_AUTH, or the variable zookeeper_auth_env names) "
                "are not scheme:credential, such as digest:user:password or sasl:user:password."
            )
    if config.zookeeper_acl not in ZOOKEEPER_ACLS:
        raise ConfigError(f"{where}: the ZooKeeper ACL (ZOOKEEPER_ACL) is one of {', '.join(ZOOKEEPER_ACLS)}.")
    if config.zookeeper_acl != "open" and not config.zookeeper_auth:
        raise ConfigError(
            f"{where}: ZOOKEEPER_ACL={config.zookeeper_acl} gives the znodes the console creates to the identity its "
            "ZooKeeper session presents: set ZOOKEEPER_AUTH (digest:user:password or sasl:user:password) too."
        )


ZOOKEEPER_ACLS = ("open", "kafka", "creator")


def split_servers(value: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in value.split(",") if s.strip())


CONNECT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass(frozen=True)
class ConnectConfig:
    """One Kafka Connect cluster (its workers' REST API) beside a Kafka cluster. ``repr`` never shows the
    password."""

    name: str
    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    # A CA file (PEM) to check an https worker's certificate against; without it, the system's CAs.
    ssl_cafile: str | None = None
    # False: an https worker's certificate is not checked (a test setup; never for production).
    ssl_verify: bool = True
    # Seconds any one request to the worker may take before it counts as not answering.
    timeout: float = 5.0

    def __post_init__(self) -> None:
        check_connect_config(self)

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.password,) if self.password else ()


def check_connect_config(config: ConnectConfig) -> None:
    """Raise ConfigError naming the first bad field of ``config`` (never the password)."""
    where = f"Connect cluster {config.name!r}"
    if not CONNECT_NAME.match(config.name):
        raise ConfigError(f"{where}: a Connect cluster name is letters, digits, '.', '-' or '_' (at most 63).")
    if not re.match(r"^https?://[^\s/@]+(:\d{1,5})?(/[^\s]*)?$", config.url):
        shown = "" if "@" in config.url else f" {_shown(config.url)}"  # user:password@ is not echoed
        raise ConfigError(
            f"{where}: the URL{shown} is not http(s)://host:port[/path] (basic auth goes in username and password)."
        )
    if (config.username is None) != (config.password is None):
        raise ConfigError(f"{where}: basic auth needs both a username and a password.")
    if config.ssl_cafile and not Path(config.ssl_cafile).is_file():
        raise ConfigError(f"{where}: its CA file {_shown(config.ssl_cafile)} is not a file.")
    if config.timeout <= 0:
        raise ConfigError(f"{where}: the time-out must be positive.")
