"""What a connector config may hold when someone less than an admin sends it (the console's Connect policy).

A Connect worker runs connectors with its own rights: on its machine, as its user, on its network. A config
is therefore a request to the worker to read or write files and open connections. The console checks every
config an operator (or a viewer's validation) sends, before anything reaches the worker; admins are not
checked. The checks, in order, the first failure refusing the whole config:

1. ``connector.class`` (a full class name or one of the worker's aliases, resolved against the worker's
   plugins) must be allowed. ``allowed_classes`` None: every class but Kafka's FileStream source and sink;
   otherwise only the classes named (full names, or a simple name or alias without dots matching the
   resolved class); ``*`` names every class.
2. No value may hold a config-provider placeholder ``${provider:...}``: the worker would resolve it with its
   own access (``${file:/...}``, ``${env:...}``).
3. No ``*kinit.cmd`` key (a command the worker would run). No value may be a ``file:`` URL, and a key
   naming a file or folder (``file``, ``*.file``, or a last part that is, or holds as a ``_``/``-``
   separated word, ``file``, ``filename``, ``path``, ``dir``, ``directory``, ``folder`` or ``location``)
   may hold nothing but a URL of another scheme: a path there is a path on the worker's machine.
4. Every host named in a key holding addresses (``*servers``, ``*url``/``*urls``/``*uri``, ``*host``/
   ``*hosts``/``*hostname``, ``*address``/``*addresses``, ``*endpoint``, ``connect.to``...) or in a
   URL anywhere in a value must not be, nor resolve to, a loopback, private, link-local, carrier-grade
   NAT, unspecified or unique-local address (127/8, ::1, 10/8, 172.16/12, 192.168/16, 169.254/16,
   100.64/10, 0/8, ::, fe80::/10, fc00::/7, and IPv4 written inside IPv6), nor ``localhost``. A name is
   resolved with a time-out; one that does not resolve in time is refused, since it could not be checked.
   The exception: a ``host:port`` equal to one of the Kafka cluster's own bootstrap servers (compared
   case-blind, port included), which MirrorMaker and connectors writing to Kafka name legitimately.
5. A connector may not read a topic of the cluster that is masked for the sender's role (the console
   says which, ``masked``): a sink's ``topics`` and ``topics.regex``, and MirrorMaker's source connector's
   ``topics`` (regular expressions, default ``.*``) when its source cluster is the cluster itself. It would
   copy the records, unmasked, wherever it writes. A regular expression is checked against the topics that
   exist when the config is sent (``existing``).

A refusal raises ConnectPolicyRefused naming the key and why. Everything here is pure but the name
resolution, which ``resolve`` can replace.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from broker.errors import KazamiError

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
# Refused to non-admins when no allow-list is configured.
DENIED_BY_DEFAULT = (FILE_SOURCE, FILE_SINK)
ANY_CLASS = "*"
RESOLVE_TIMEOUT = 2.0

# The last part of a key (after its last dot) that names a file or a folder on the worker's machine.
_FILE_PART = re.compile(
    r"(^|[_-])(files?|file_?names?|file_?paths?|paths?|dirs?|directory|directories|folders?|location)($|[_-])",
    re.IGNORECASE,
)
# Keys whose value the worker runs as a command.
_COMMAND_KEY = re.compile(r"(^|\.)kinit\.cmd$", re.IGNORECASE)
# Keys whose values are addresses: host[:port] lists or URLs.
_ADDRESS_KEY = re.compile(
    r"(servers?|urls?|uris?|hosts?|hostnames?|host\.name|address(es)?|endpoints?|connect\.to|brokers?|nodes?)$",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"\$\{[^}:]*:[^}]*\}")
# The authority of a URL (``scheme://user@host:port,host:port/...``).
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#\s;\"'<>]*)")
_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "::/128",
        "::1/128",
        "fe80::/10",
        "fc00::/7",
    )
)


class ConnectPolicyRefused(KazamiError):
    """The console's Connect policy refuses a config; ``key`` is the setting at fault."""

    def __init__(self, key: str, why: str) -> None:
        super().__init__(f"Refused by the console's Connect policy: {key}: {why}. Only an admin may do this.")
        self.key = key
        self.why = why


@dataclass(frozen=True)
class ConnectPolicy:
    """The rules for one Connect cluster: the classes allowed (None: all but FileStream), the Kafka cluster's
    own bootstrap servers (``host:port``), and how long a name may take to resolve."""

    allowed_classes: tuple[str, ...] | None = None
    own_servers: tuple[str, ...] = ()
    resolve_timeout: float = RESOLVE_TIMEOUT


Resolver = Callable[[str, float], Sequence[str]]


# ---------------------------------------------------------------- classes


def _simple(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def aliases(full: str) -> set[str]:
    """The names the worker accepts for a plugin class: its full name, simple name, and simple name without
    the ``Connector`` suffix (Kafka's aliases)."""
    simple = _simple(full)
    found = {full, simple}
    if simple.endswith("Connector") and len(simple) > len("Connector"):
        found.add(simple[: -len("Connector")])
    return found


def resolve_class(given: str, plugins: Iterable[str] = ()) -> str:
    """The plugin class ``given`` names: itself when it is one of ``plugins`` (full names), else the one
    plugin it is an alias of; unchanged when none (or several) match."""
    given = given.strip()
    known = list(plugins)
    if given in known:
        return given
    matches = [p for p in known if given in aliases(p)]
    return matches[0] if len(matches) == 1 else given


def class_allowed(given: str, allowed: Sequence[str] | None, plugins: Iterable[str] = ()) -> bool:
    """May a non-admin run ``given`` (a class name or alias)? See the module's rule 1."""
    resolved = resolve_class(given, plugins)
    if allowed is None:
        names = aliases(resolved) | {given.strip()}
        return not any(names & aliases(denied) for denied in DENIED_BY_DEFAULT)
    for entry in (e.strip() for e in allowed):
        if entry in (ANY_CLASS, resolved):
            return True
        if entry and "." not in entry and entry in aliases(resolved):
            return True
    return False


def check_class(config: Mapping[str, str], policy: ConnectPolicy, plugins: Iterable[str] = ()) -> None:
    given = str(config.get("connector.class") or "").strip()
    if not class_allowed(given, policy.allowed_classes, plugins):
        which = (
            "Kafka's FileStream connectors read and write files on the worker's machine"
            if policy.allowed_classes is None
            else f"the classes allowed here are {', '.join(policy.allowed_classes) or 'none'}"
        )
        raise ConnectPolicyRefused("connector.class", f"{given!r} is not allowed ({which})")


# ---------------------------------------------------------------- files


def names_a_file(key: str) -> bool:
    """A key whose value is a file or folder: ``file``, ``*.file``, or a last part naming a file, path,
    folder or location."""
    last = key.rsplit(".", 1)[-1]
    return key == "file" or key.endswith(".file") or bool(_FILE_PART.search(last))


def check_files(key: str, value: str) -> None:
    text = value.strip()
    if re.match(r"(?i)file:", text) or re.search(r"(?i)\bfile:/", text):
        raise ConnectPolicyRefused(key, "a file: URL names a file on the worker's machine")
    if names_a_file(key) and text:
        parts = [p.strip() for p in re.split(r"[,;]", text) if p.strip()]
        for part in parts:
            scheme = urllib.parse.urlsplit(part).scheme
            if not scheme or len(scheme) == 1 or scheme.lower() == "file":  # a path, or C:\...
                raise ConnectPolicyRefused(key, f"{part!r} would be a file or folder on the worker's machine")


# ---------------------------------------------------------------- hosts


def forbidden_address(address: str) -> bool:
    """Loopback, private, link-local, carrier-grade NAT, unspecified or unique-local (IPv4 inside IPv6
    judged as IPv4)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True  # not an address we can judge
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None:
            ip = mapped
    return any(ip in net for net in _NETWORKS if net.version == ip.version)


def system_resolve(host: str, timeout: float) -> Sequence[str]:
    """The addresses ``host`` resolves to, within ``timeout``; raises TimeoutError or OSError."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        future = pool.submit(socket.getaddrinfo, host, None)
        try:
            infos = future.result(timeout=timeout)
        except FutureTimeout:
            raise TimeoutError(f"no answer within {timeout:g} s") from None
    finally:
        pool.shutdown(wait=False)
    return sorted({str(info[4][0]) for info in infos})


def endpoints(value: str, addresses: bool = True) -> list[tuple[str, int | None]]:
    """The (host, port) pairs a value names: the authority of every ``scheme://`` URL in it
    (``jdbc:postgresql://h:5432/db``, ``mongodb://h1:1,h2:2/db``), and with ``addresses`` (a key holding
    addresses) every other comma, semicolon or space separated ``host[:port]`` item (``[v6]:port`` too)."""
    found: list[tuple[str, int | None]] = []
    for m in _URL.finditer(value):
        for item in m.group(1).rsplit("@", 1)[-1].split(","):
            found.append(_host_port(item))
    if addresses:
        for item in re.split(r"[,;\s]+", value.strip()):
            if item and "://" not in item:
                found.append(_host_port(item))
    unique: list[tuple[str, int | None]] = []
    for f in found:
        if f[0] and f not in unique:
            unique.append(f)
    return unique


def _host_port(item: str) -> tuple[str, int | None]:
    item = item.strip().rsplit("@", 1)[-1].split("/", 1)[0]
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif item.count(":") == 1:
        host, port = item.split(":")
    else:
        host, port = item, ""  # a bare IPv6 address or a name
    return host.strip().lower().rstrip("."), (int(port) if port.isdigit() else None)


def _own(own_servers: Iterable[str]) -> set[tuple[str, int | None]]:
    return {_host_port(s) for s in own_servers}


def check_hosts(key: str, value: str, policy: ConnectPolicy, resolve: Resolver = system_resolve) -> None:
    """Rule 4 for one setting: an address key, or any value holding a URL."""
    is_address = bool(_ADDRESS_KEY.search(key))
    if not (is_address or _URL.search(value)):
        return
    own = _own(policy.own_servers)
    for host, port in endpoints(value, is_address):
        if (host, port) in own:
            continue
        where = f"{host}:{port}" if port is not None else host
        try:
            addresses: Sequence[str] = [str(ipaddress.ip_address(host.split("%", 1)[0]))]
        except ValueError:
            if host == "localhost" or host.endswith(".localhost"):
                raise ConnectPolicyRefused(key, f"{where} is this machine (loopback)") from None
            try:
                addresses = resolve(host, policy.resolve_timeout)
            except (OSError, TimeoutError) as exc:
                raise ConnectPolicyRefused(key, f"{where} could not be resolved to check it ({exc})") from None
        bad = [a for a in addresses if forbidden_address(a)]
        if bad or not addresses:
            shown = ", ".join(bad) if bad else "no address"
            raise ConnectPolicyRefused(
                key, f"{where} is a loopback, private or link-local address ({shown}), not the cluster's own"
            )


# ---------------------------------------------------------------- masked topics


def _items(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def topics_read(
    config: Mapping[str, str], policy: ConnectPolicy, plugin_types: Mapping[str, str]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The cluster's topics the connector reads: ([(key, topic)], [(key, regular expression)]). A sink reads
    ``topics`` and ``topics.regex``; MirrorMaker's source connector reads ``topics`` (default ``.*``) of its
    source cluster when every server of ``source.cluster.bootstrap.servers`` is one of the cluster's own."""
    cls = resolve_class(str(config.get("connector.class") or ""), plugin_types)
    names: list[tuple[str, str]] = []
    patterns: list[tuple[str, str]] = []
    if plugin_types.get(cls) == "sink":
        names = [("topics", t) for t in _items(str(config.get("topics") or ""))]
        if regex := str(config.get("topics.regex") or "").strip():
            patterns.append(("topics.regex", regex))
    elif cls == MIRROR_SOURCE:
        source = endpoints(str(config.get("source.cluster.bootstrap.servers") or ""))
        if source and all(s in _own(policy.own_servers) for s in source):
            patterns = [("topics", t) for t in _items(str(config.get("topics") or ".*"))]
    return names, patterns


def check_masked_topics(
    config: Mapping[str, str],
    policy: ConnectPolicy,
    plugin_types: Mapping[str, str],
    masked: Callable[[str], bool],
    existing: Callable[[], Iterable[str]],
) -> None:
    """Rule 5; ``existing`` is asked only when the connector reads by regular expression."""
    names, patterns = topics_read(config, policy, plugin_types)
    why = "is masked for your role, and the connector would copy its records unmasked"
    for key, topic in names:
        if masked(topic):
            raise ConnectPolicyRefused(key, f"topic {topic!r} {why}")
    if not patterns:
        return
    topics = list(existing())
    for key, regex in patterns:
        try:
            compiled = re.compile(regex)
        except re.error:
            raise ConnectPolicyRefused(key, f"{regex!r} is not a regular expression the console can check") from None
        for topic in topics:
            if compiled.fullmatch(topic) and masked(topic):
                raise ConnectPolicyRefused(key, f"{regex!r} matches topic {topic!r}, which {why.removeprefix('is ')}")


# ---------------------------------------------------------------- all of it


def check_connector_config(
    config: Mapping[str, str],
    policy: ConnectPolicy,
    plugins: Iterable[str] | Mapping[str, str] = (),
    resolve: Resolver = system_resolve,
    masked: Callable[[str], bool] | None = None,
    existing: Callable[[], Iterable[str]] = tuple,
) -> None:
    """The rules on a whole config (values as strings); raises ConnectPolicyRefused at the first failure.
    ``plugins``: the worker's plugin classes, or a mapping of them to their types (source, sink), which
    rule 5 needs; ``masked`` (None: no topic is masked for the sender) and ``existing`` for rule 5."""
    check_class(config, policy, plugins)
    for key in sorted(config):
        value = str(config[key] if config[key] is not None else "")
        if _COMMAND_KEY.search(key):
            raise ConnectPolicyRefused(key, "the worker would run this as a command")
        if _PLACEHOLDER.search(value):
            raise ConnectPolicyRefused(key, "a ${provider:...} placeholder would be resolved with the worker's access")
        check_files(key, value)
    for key in sorted(config):
        check_hosts(key, str(config[key] if config[key] is not None else ""), policy, resolve)
    if masked is not None and isinstance(plugins, Mapping):
        check_masked_topics(config, policy, plugins, masked, existing)
