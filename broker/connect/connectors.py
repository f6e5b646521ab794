"""Kafka Connect through its workers' REST API: connectors, their status, config, topics and offsets,
plugins, validation, and the changes (create, update, pause, resume, stop, restart, offsets, delete).

Every request has the Connect cluster's time-out. A worker that does not answer raises ConnectUnavailable
(a ClusterUnavailable, so pages treat it as they treat a silent broker) and is then left alone for a few
time-outs: pages asking meanwhile get the same note at once instead of waiting again. The worker's own
refusals keep its message (ConnectRefused); a config it rejects raises ConnectConfigInvalid with the reasons
per field. The connectors of a Connect cluster come in one request (``?expand=status&expand=info``), never
one per connector.

Values of keys that look like secrets (and ``password=...`` inside other values, such as a JDBC URL) are
masked in what is read; an update that sends a masked value back keeps the value the worker has.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from broker import redaction
from broker.client.config import ConnectConfig
from broker.errors import (
    AlreadyExists,
    ClusterAuthFailed,
    ClusterUnavailable,
    InvalidInput,
    KafkaRefused,
    NotFound,
)

# What a secret is shown as; which names and values are secrets: broker.redaction (one rule everywhere).
MASK = redaction.MASK
STATES = ("RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING")
# How long a worker that did not answer is left alone, in its time-outs.
SILENT_FOR = 3
# Validation and changes may take a worker longer than a read (the first validation of a plugin loads its
# classes; a change waits for the group's leader): they get this many time-outs.
CHANGE_TIMEOUTS = 3


class ConnectUnavailable(ClusterUnavailable):
    """The Connect worker did not answer within the time-out (or refused the connection)."""


class ConnectRefused(KafkaRefused):
    """The worker answered with an error (its message kept)."""


class ConnectConfigInvalid(InvalidInput):
    """The worker's validation rejected a connector config; ``fields`` maps each key to its reasons."""

    def __init__(self, message: str, fields: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.fields = fields


# ---------------------------------------------------------------- pure helpers


def is_secret_key(key: str) -> bool:
    """Whether the config ``key`` holds a secret (broker.redaction.is_secret_name)."""
    return redaction.is_secret_name(key)


def mask_value(key: str, value: Any) -> Any:
    """``value`` as it may be shown: MASK for a secret-looking key; in any other value the secrets it holds
    (URL credentials, Authorization values, ``password=`` parts, JSON fields) hidden, the rest kept."""
    return redaction.redact_value(key, value, MASK)


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A connector config with its secrets masked (see mask_value), keys sorted."""
    return {k: mask_value(k, config[k]) for k in sorted(config)}


def unmask(new: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, str]:
    """``new`` with every value still showing a mask replaced by the value in ``current`` (the worker's):
    an edit of a masked config does not overwrite a secret with the mask."""
    merged: dict[str, str] = {}
    for key, value in new.items():
        text = "" if value is None else str(value)
        if MASK in text and key in current and mask_value(key, current[key]) == text:
            text = str(current[key])
        merged[str(key)] = text
    return merged


@dataclass(frozen=True)
class TaskState:
    id: int
    state: str
    worker: str | None
    trace: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "worker": self.worker, "trace": self.trace}


@dataclass(frozen=True)
class Connector:
    """A connector as one Connect cluster reports it: its status, type, and (masked) config."""

    connect: str
    name: str
    type: str
    state: str
    worker: str | None
    trace: str | None
    tasks: tuple[TaskState, ...]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def connector_class(self) -> str:
        return str(self.config.get("connector.class") or "")

    @property
    def short_class(self) -> str:
        return self.connector_class.rsplit(".", 1)[-1]

    @property
    def running_tasks(self) -> int:
        return sum(1 for t in self.tasks if t.state == "RUNNING")

    @property
    def failed_tasks(self) -> int:
        return sum(1 for t in self.tasks if t.state == "FAILED")

    @property
    def troubled(self) -> bool:
        return self.state == "FAILED" or self.failed_tasks > 0

    def as_dict(self, with_config: bool = False) -> dict[str, Any]:
        found: dict[str, Any] = {
            "connect": self.connect,
            "name": self.name,
            "type": self.type,
            "class": self.connector_class,
            "state": self.state,
            "worker": self.worker,
            "trace": self.trace,
            "tasks": [t.as_dict() for t in self.tasks],
            "tasks_running": self.running_tasks,
            "tasks_failed": self.failed_tasks,
        }
        if with_config:
            found["config"] = self.config
        return found


def parse_status(connect: str, status: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> Connector:
    """A Connector from the worker's status document (``/connectors/<n>/status`` or the ``status`` of an
    expanded list), with ``config`` masked."""
    head = status.get("connector") or {}
    tasks = tuple(
        sorted(
            (
                TaskState(
                    id=int(t.get("id", 0)),
                    state=str(t.get("state", "UNASSIGNED")),
                    worker=t.get("worker_id"),
                    trace=t.get("trace"),
                )
                for t in status.get("tasks") or []
            ),
            key=lambda t: t.id,
        )
    )
    return Connector(
        connect=connect,
        name=str(status.get("name", "")),
        type=str(status.get("type") or "unknown"),
        state=str(head.get("state", "UNASSIGNED")),
        worker=head.get("worker_id"),
        trace=head.get("trace"),
        tasks=tasks,
        config=mask_config(config or {}),
    )


def parse_expanded(connect: str, answer: Mapping[str, Any]) -> list[Connector]:
    """Connectors from ``GET /connectors?expand=status&expand=info``, by name. A connector created a moment
    ago may have no status yet: it is shown UNASSIGNED."""
    found = []
    for name, entry in sorted(answer.items()):
        info = entry.get("info") or {}
        status = dict(entry.get("status") or {"name": name, "connector": {"state": "UNASSIGNED"}, "tasks": []})
        status.setdefault("name", name)
        status.setdefault("type", info.get("type"))
        found.append(parse_status(connect, status, info.get("config") or {}))
    return found


@dataclass(frozen=True)
class FormField:
    """One field of the create form, from a plugin's config definition."""

    name: str
    type: str
    required: bool
    default: str | None
    importance: str
    documentation: str
    group: str
    secret: bool

    @property
    def advanced(self) -> bool:
        """One of Connect's own settings every connector has (errors, transforms, converters...), not the
        plugin's: the form keeps them folded unless required."""
        return bool(self.group) and self.group != "Common" and not self.required

    @property
    def input_type(self) -> str:
        if self.secret or self.type == "PASSWORD":
            return "password"
        if self.type in ("INT", "LONG", "SHORT", "DOUBLE"):
            return "number"
        return "text"

    @property
    def choices(self) -> list[str] | None:
        return ["true", "false"] if self.type == "BOOLEAN" else None


_IMPORTANCE = {"HIGH": 0, "MEDIUM": 1, "LOW": 2}


def form_fields(definitions: Sequence[Mapping[str, Any]]) -> list[FormField]:
    """The create form's fields from ``GET /connector-plugins/<p>/config``: ``name`` and ``tasks.max`` first,
    then required ones, then by importance and name. ``connector.class`` is the chosen plugin, not a field."""
    fields = {
        "name": FormField(
            "name",
            "STRING",
            True,
            None,
            "HIGH",
            "A name for the connector, unique in its Connect cluster.",
            "Common",
            False,
        ),
        "tasks.max": FormField("tasks.max", "INT", False, "1", "HIGH", "Maximum number of tasks.", "Common", False),
    }
    for d in definitions:
        name = str(d.get("name", ""))
        if not name or name == "connector.class" or (name in fields and name in ("name",)):
            continue
        fields[name] = FormField(
            name=name,
            type=str(d.get("type") or "STRING"),
            required=bool(d.get("required")),
            default=None if d.get("default_value") is None else str(d.get("default_value")),
            importance=str(d.get("importance") or "LOW"),
            documentation=str(d.get("documentation") or ""),
            group=str(d.get("group") or ""),
            secret=is_secret_key(name) or str(d.get("type")) == "PASSWORD",
        )
    first = ["name", "tasks.max"]
    rest = sorted(
        (f for n, f in fields.items() if n not in first),
        key=lambda f: (not f.required, _IMPORTANCE.get(f.importance, 3), f.name),
    )
    return [fields[n] for n in first] + rest


def config_from_form(plugin: str, fields: list[FormField], data: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """(name, config) from the create form's values: blank fields are left out (the worker's defaults)."""
    config = {"connector.class": plugin}
    for f in fields:
        value = str(data.get(f.name, "")).strip()
        if value:
            config[f.name] = value
    return config.get("name", ""), config


def validation_errors(answer: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each key the worker's validation found wrong, with its reasons (``/config/validate``'s answer)."""
    found: dict[str, list[str]] = {}
    for entry in answer.get("configs") or []:
        value = entry.get("value") or {}
        if value.get("errors"):
            found[str(value.get("name"))] = [str(e) for e in value["errors"]]
    return found


def check_config(config: Any) -> dict[str, str]:
    """A connector config as the worker takes it (every value a string); raises InvalidInput."""
    if not isinstance(config, Mapping) or not config:
        raise InvalidInput("A connector config is a JSON object of settings, with at least connector.class.")
    checked: dict[str, str] = {}
    for key, value in config.items():
        if isinstance(value, dict | list):
            raise InvalidInput(f"The value of {key!r} must be a string, number or boolean, not {type(value).__name__}.")
        checked[str(key)] = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    if not checked.get("connector.class"):
        raise InvalidInput("The config needs connector.class: the plugin that runs the connector.")
    return checked


def check_name(name: Any) -> str:
    text = str(name or "").strip()
    if not text:
        raise InvalidInput("Give the connector a name.")
    if len(text) > 249 or any(c in text for c in "/\\\n\r\t") or text in (".", ".."):
        raise InvalidInput(f"{text[:60]!r} cannot be a connector name: no '/', '\\\\' or control characters.")
    return text


def parse_offsets(raw: Any) -> list[dict[str, Any]]:
    """``{"offsets": [{"partition": {...}, "offset": {...} | null}]}`` (or the list alone), checked."""
    offsets = raw.get("offsets") if isinstance(raw, Mapping) else raw
    if not isinstance(offsets, list) or not offsets:
        raise InvalidInput('Give offsets as {"offsets": [{"partition": {...}, "offset": {...}}]}.')
    for entry in offsets:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("partition"), Mapping):
            raise InvalidInput('Each offset needs a "partition" object (as GET .../offsets shows it).')
        if entry.get("offset") is not None and not isinstance(entry.get("offset"), Mapping):
            raise InvalidInput('An "offset" is an object, or null to remove that partition\'s offset.')
    return [dict(e) for e in offsets]


# ---------------------------------------------------------------- the REST client


_silent: dict[str, tuple[float, str]] = {}  # url -> (silent until, why), per process
_silent_lock = threading.Lock()


class ConnectClient:
    """Requests to one Connect cluster's REST API, each within its time-out."""

    def __init__(self, config: ConnectConfig) -> None:
        self.config = config
        self._tls: ssl.SSLContext | None = None
        if config.url.startswith("https:"):
            context = ssl.create_default_context(cafile=config.ssl_cafile)
            if not config.ssl_verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._tls = context

    @property
    def where(self) -> str:
        return f"Connect cluster {self.config.name!r} at {self.config.url}"

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        """The decoded JSON answer (None for an empty one). Raises ConnectUnavailable, ClusterAuthFailed,
        NotFound, AlreadyExists or ConnectRefused. A request the worker refuses while its group rebalances
        (as it does for a moment after a connector is created or deleted) is sent again, within the time-out,
        unless it is a POST (which may have been done)."""
        timeout = self.config.timeout * (1 if method == "GET" else CHANGE_TIMEOUTS)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._request_once(method, path, body, query, timeout)
            except ConnectRefused as exc:
                if method == "POST" or "rebalance" not in str(exc) or time.monotonic() + 0.25 > deadline:
                    raise
                time.sleep(0.25)

    def _request_once(
        self, method: str, path: str, body: Any, query: list[tuple[str, str]] | None, timeout: float
    ) -> Any:
        with _silent_lock:
            silent = _silent.get(self.config.url)
        if silent and silent[0] > time.monotonic():
            raise ConnectUnavailable(silent[1])
        url = self.config.url + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.config.username is not None:
            token = base64.b64encode(f"{self.config.username}:{self.config.password or ''}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310 - http(s) only
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self._tls) as answer:  # noqa: S310
                raw = answer.read()
        except urllib.error.HTTPError as exc:
            raise self._refusal(exc.code, exc.read()) from None
        except (TimeoutError, urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            timed_out = isinstance(reason, TimeoutError) or "timed out" in str(reason)
            what = f"did not answer within {timeout:g} s" if timed_out else f"cannot be reached ({_describe(reason)})"
            message = f"{self.where} {what}."
            if timed_out:
                until = time.monotonic() + SILENT_FOR * timeout
                with _silent_lock:
                    _silent[self.config.url] = (until, message + " It is asked again shortly.")
            raise ConnectUnavailable(message) from None
        with _silent_lock:
            _silent.pop(self.config.url, None)
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ConnectRefused(f"{self.where} answered with something that is not JSON.") from None

    def _refusal(self, status: int, raw: bytes) -> Exception:
        try:
            message = str(json.loads(raw).get("message") or "")
        except (ValueError, AttributeError):
            message = raw.decode(errors="replace")[:500]
        message = message or f"HTTP {status}"
        for secret in self.config.secrets:
            message = message.replace(secret, "***")
        if status in (401, 403):
            return ClusterAuthFailed(f"{self.where} refused the console's credentials ({status}): {message}")
        if status == 404:
            return NotFound(f"{self.where}: {message}")
        if status == 409 and "already exists" in message:
            return AlreadyExists(f"{self.where}: {message}")
        if status == 409:
            return ConnectRefused(f"{self.where} is busy (rebalancing, or the change conflicts): {message}")
        return ConnectRefused(f"{self.where} refused: {message}")


def _describe(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused: is the worker running?"
    if isinstance(reason, ssl.SSLError):
        return f"TLS: {reason.reason or reason}"
    return str(reason) or type(reason).__name__


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


# ---------------------------------------------------------------- reads


@dataclass(frozen=True)
class ConnectorList:
    connectors: list[Connector]
    # Connect clusters that did not answer, with why.
    unanswered: dict[str, str]
    asked: list[str]


def get_worker(client: ConnectClient) -> dict[str, Any]:
    """The worker's ``version``, ``commit`` and ``kafka_cluster_id`` (its REST root)."""
    answer = client.request("GET", "/")
    return dict(answer or {})


def list_connectors(client: ConnectClient) -> list[Connector]:
    """Every connector of one Connect cluster with its status and masked config: one request."""
    answer = client.request("GET", "/connectors", query=[("expand", "status"), ("expand", "info")])
    return parse_expanded(client.config.name, answer or {})


def list_all(clients: list[ConnectClient]) -> ConnectorList:
    """The connectors of several Connect clusters, asked at once; those that do not answer are named in
    ``unanswered`` (the others are still listed)."""
    found: list[Connector] = []
    unanswered: dict[str, str] = {}
    if not clients:
        return ConnectorList([], {}, [])
    with ThreadPoolExecutor(max_workers=min(8, len(clients))) as pool:
        futures = {c.config.name: pool.submit(list_connectors, c) for c in clients}
        for name, future in futures.items():
            try:
                found += future.result()
            except (ClusterUnavailable, ConnectRefused, NotFound) as exc:
                unanswered[name] = str(exc)
    return ConnectorList(found, unanswered, [c.config.name for c in clients])


def _status_document(client: ConnectClient, name: str) -> dict[str, Any]:
    """The worker's status of ``name``; a connector created a moment ago has none yet ("No status found"):
    it is UNASSIGNED until a worker takes it. Raises NotFound for a connector that does not exist."""
    try:
        return dict(client.request("GET", f"/connectors/{_quote(name)}/status") or {})
    except NotFound as exc:
        if "No status found" not in str(exc):
            raise
    # No status: just created (it exists) or just deleted (its status is not gone yet). Its config tells.
    client.request("GET", f"/connectors/{_quote(name)}/config")
    return {"name": name, "connector": {"state": "UNASSIGNED"}, "tasks": []}


def get_connector(client: ConnectClient, name: str) -> Connector:
    """One connector's status with its masked config (two requests); raises NotFound."""
    config = client.request("GET", f"/connectors/{_quote(name)}/config")
    return parse_status(client.config.name, _status_document(client, name), config or {})


def get_status(client: ConnectClient, name: str) -> Connector:
    """One connector's status only (no config); raises NotFound."""
    return parse_status(client.config.name, _status_document(client, name))


def get_raw_config(client: ConnectClient, name: str) -> dict[str, str]:
    """The connector's config as the worker has it, secrets included: for merging an edit, never shown."""
    return dict(client.request("GET", f"/connectors/{_quote(name)}/config") or {})


def get_topics(client: ConnectClient, name: str) -> list[str]:
    """The topics the connector used since it was created or its topics were reset (KIP-558)."""
    answer = client.request("GET", f"/connectors/{_quote(name)}/topics") or {}
    return sorted((answer.get(name) or {}).get("topics") or [])


def get_offsets(client: ConnectClient, name: str) -> list[dict[str, Any]]:
    """The connector's offsets (KIP-875, Kafka 3.6+): ``[{"partition": {...}, "offset": {...}}]``."""
    answer = client.request("GET", f"/connectors/{_quote(name)}/offsets") or {}
    return list(answer.get("offsets") or [])


def list_plugins(client: ConnectClient, connectors_only: bool = False) -> list[dict[str, str]]:
    """The worker's plugins: ``class``, ``type`` (source, sink, converter, transformation, ...), ``version``."""
    query = [("connectorsOnly", "true" if connectors_only else "false")]
    answer = client.request("GET", "/connector-plugins", query=query) or []
    return sorted(
        ({"class": p.get("class", ""), "type": p.get("type", ""), "version": p.get("version", "")} for p in answer),
        key=lambda p: (p["type"] not in ("source", "sink"), p["type"], p["class"]),
    )


def plugin_definition(client: ConnectClient, plugin: str) -> list[dict[str, Any]]:
    """The config definition of a connector plugin (``GET /connector-plugins/<p>/config``)."""
    return list(client.request("GET", f"/connector-plugins/{_quote(plugin)}/config") or [])


def validate(client: ConnectClient, config: Mapping[str, str]) -> dict[str, list[str]]:
    """The worker's reasons per field against ``config`` (empty: valid). One request."""
    plugin = config["connector.class"]
    answer = client.request("PUT", f"/connector-plugins/{_quote(plugin)}/config/validate", dict(config))
    return validation_errors(answer or {})


# ---------------------------------------------------------------- changes


def _check_valid(client: ConnectClient, config: Mapping[str, str]) -> None:
    errors = validate(client, config)
    if errors:
        count = sum(len(v) for v in errors.values())
        keys = ", ".join(sorted(errors))
        raise ConnectConfigInvalid(
            f"The worker rejected the config ({count} problem{'s' if count != 1 else ''}: {keys}); "
            "nothing was changed.",
            errors,
        )


def do_create(client: ConnectClient, name: str, config: Mapping[str, Any]) -> Connector:
    """Validate with the worker, then create; raises ConnectConfigInvalid (nothing created), AlreadyExists."""
    name = check_name(name)
    checked = {**check_config(config), "name": name}
    _check_valid(client, checked)
    client.request("POST", "/connectors", {"name": name, "config": checked})
    return parse_status(client.config.name, {"name": name, "connector": {"state": "UNASSIGNED"}}, checked)


def merged_config(client: ConnectClient, name: str, config: Mapping[str, Any]) -> dict[str, str]:
    """``config`` checked, with the masked values sent back replaced by the worker's: what an update sends."""
    current = get_raw_config(client, name)
    return {**unmask(check_config(config), current), "name": name}


def do_replace_config(client: ConnectClient, name: str, merged: Mapping[str, str]) -> None:
    """Validate, then replace the connector's config with ``merged`` (from merged_config) as it is."""
    _check_valid(client, merged)
    client.request("PUT", f"/connectors/{_quote(name)}/config", dict(merged))


def do_update_config(client: ConnectClient, name: str, config: Mapping[str, Any]) -> None:
    """Validate, then replace the connector's config; masked values sent back keep the worker's."""
    do_replace_config(client, name, merged_config(client, name, config))


def do_pause(client: ConnectClient, name: str) -> None:
    client.request("PUT", f"/connectors/{_quote(name)}/pause")


def do_resume(client: ConnectClient, name: str) -> None:
    client.request("PUT", f"/connectors/{_quote(name)}/resume")


def do_stop(client: ConnectClient, name: str) -> None:
    """Stop the connector and its tasks (its config is kept; offsets can then be reset or altered)."""
    client.request("PUT", f"/connectors/{_quote(name)}/stop")


def do_restart(client: ConnectClient, name: str, include_tasks: bool = True, only_failed: bool = False) -> None:
    """Restart the connector (and its tasks, or only the failed ones)."""
    query = [("includeTasks", str(include_tasks).lower()), ("onlyFailed", str(only_failed).lower())]
    client.request("POST", f"/connectors/{_quote(name)}/restart", query=query)


def do_restart_task(client: ConnectClient, name: str, task: int) -> None:
    client.request("POST", f"/connectors/{_quote(name)}/tasks/{int(task)}/restart")


def _require_stopped(client: ConnectClient, name: str) -> None:
    state = get_status(client, name).state
    if state != "STOPPED":
        raise InvalidInput(f"Connector {name!r} is {state}: stop it first; offsets change only on a stopped connector.")


def do_reset_offsets(client: ConnectClient, name: str) -> str:
    """Remove every offset of a stopped connector; the worker's message."""
    _require_stopped(client, name)
    answer = client.request("DELETE", f"/connectors/{_quote(name)}/offsets") or {}
    return str(answer.get("message") or "offsets reset")


def do_alter_offsets(client: ConnectClient, name: str, offsets: list[dict[str, Any]]) -> str:
    """Set (or with a null offset remove) offsets of a stopped connector; the worker's message."""
    _require_stopped(client, name)
    answer = client.request("PATCH", f"/connectors/{_quote(name)}/offsets", {"offsets": parse_offsets(offsets)}) or {}
    return str(answer.get("message") or "offsets altered")


def do_delete(client: ConnectClient, name: str) -> None:
    client.request("DELETE", f"/connectors/{_quote(name)}")
