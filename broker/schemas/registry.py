"""A client of any Confluent-compatible schema registry (Confluent Schema Registry, Karapace, Redpanda's,
Apicurio's ``/apis/ccompat/v7``): schemas by id and by subject, subjects, versions, compatibility rules and
checks, registration, references both ways, soft and permanent deletes.

Every request has the registry's time-out (a change three of them). Basic auth or a bearer token, TLS with a CA
file, a client certificate and key. Secrets never appear in ``repr``, error messages or log lines: a message
the registry echoes is cleaned of them before it is raised.

Errors are :class:`~broker.schemas.model.RegistryError` with the registry's own message and error code
(40401 subject not found, 40402 version not found, 40403 schema not found, 40408 no subject-level config,
409 incompatible, 42201 invalid schema, ...), or status 0 with a readable reason when the registry cannot be
reached (refused, no answer in time, TLS). A registry that did not answer is not asked again for a few
seconds: callers meanwhile get the same error at once, so a page of records never waits once per record.

Schemas by id are cached for the life of the client (an id never changes its schema); a failed look-up of an
id is remembered for a few seconds. The cache is thread-safe, and concurrent look-ups of one id make one
request.
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
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from broker.errors import ConfigError
from broker.schemas.model import AVRO, SCHEMA_TYPES, RegisteredSchema, RegistryError, SchemaReference

T = TypeVar("T")

# Compatibility levels a Confluent-compatible registry takes.
LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
# The registry's error codes the console names.
SUBJECT_NOT_FOUND, VERSION_NOT_FOUND, SCHEMA_NOT_FOUND = 40401, 40402, 40403
SUBJECT_SOFT_DELETED, SUBJECT_NOT_SOFT_DELETED, NO_SUBJECT_CONFIG = 40404, 40405, 40408
INCOMPATIBLE, INVALID_SCHEMA = 409, 42201
# Seconds a registry that could not be reached is left alone; seconds a failed look-up of an id is remembered.
DOWN_FOR = 5.0
FAILED_ID_FOR = 5.0
# Changes may take a registry longer than a read: they get this many time-outs.
CHANGE_TIMEOUTS = 3
# A concrete subject-version is kept this long (a permanent delete and a new registration may reuse it).
VERSION_KEPT_FOR = 300.0
# How many requests a listing sends at once (only for what a page shows).
PARALLEL = 8
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass(frozen=True)
class RegistryConfig:
    """How to reach one registry. ``repr`` never shows the password or the token."""

    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    # PEM files: the CA to check an https registry against (without it, the system's CAs), and a client
    # certificate and key for a registry that requires one.
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    # False: an https registry's certificate is not checked (a test setup; never for production).
    ssl_verify: bool = True
    # Seconds any one request may take before the registry counts as not answering.
    timeout: float = 5.0

    def __post_init__(self) -> None:
        check_registry_config(self)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.password, self.token) if s)


def check_registry_config(config: RegistryConfig) -> None:
    """Raise ConfigError naming the first bad field of ``config`` (never a secret)."""
    where = "the schema registry"
    parsed = urllib.parse.urlsplit(config.url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or any(c.isspace() for c in config.url):
        shown = "" if "@" in config.url else f" {config.url[:200]!r}"
        raise ConfigError(f"{where}: the URL{shown} is not http(s)://host[:port][/path].")
    if "@" in parsed.netloc:
        raise ConfigError(f"{where}: put credentials in its username and password (or token), not in the URL.")
    if (config.username is None) != (config.password is None):
        raise ConfigError(f"{where}: basic auth needs both a username and a password.")
    if config.username is not None and config.token:
        raise ConfigError(f"{where}: give basic auth (username, password) or a bearer token, not both.")
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        path = getattr(config, name)
        if path and not Path(path).is_file():
            shown = "a value that is not a file path" if "\n" in path or "-----" in path else path
            raise ConfigError(f"{where}: {name} {shown} is not a file.")
    if bool(config.ssl_keyfile) and not config.ssl_certfile:
        raise ConfigError(f"{where}: a client key (ssl_keyfile) needs its certificate (ssl_certfile).")
    if not config.timeout > 0:
        raise ConfigError(f"{where}: the time-out must be positive.")


@dataclass(frozen=True)
class SubjectSummary:
    """One subject as the list shows it (``compatibility``: the level that applies to it, its own or the
    global one; None when not asked or not answered)."""

    subject: str
    schema_type: str | None
    latest_version: int | None
    id: int | None
    compatibility: str | None = None
    deleted: bool = False
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "type": self.schema_type,
            "latest_version": self.latest_version,
            "id": self.id,
            "compatibility": self.compatibility,
        }


@dataclass(frozen=True)
class Compatibility:
    """A subject's compatibility: its own level (None: it follows the global one) and the level that applies."""

    subject_level: str | None
    effective: str | None
    global_level: str | None


@dataclass(frozen=True)
class CompatibilityResult:
    compatible: bool
    messages: tuple[str, ...] = ()


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _schema_body(text: str, schema_type: str, references: Sequence[SchemaReference]) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": text}
    if schema_type != AVRO:
        body["schemaType"] = schema_type
    if references:
        body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in references]
    return body


def parse_references(raw: Any) -> tuple[SchemaReference, ...]:
    """References as the registry (or a caller's JSON) writes them: ``[{"name", "subject", "version"}]``;
    raises RegistryError (status 400) naming what is wrong."""
    if raw in (None, ""):
        return ()
    if not isinstance(raw, list):
        raise RegistryError('References are a list of {"name", "subject", "version"}.', 400)
    found = []
    for entry in raw:
        if not isinstance(entry, dict) or not all(entry.get(k) not in (None, "") for k in ("name", "subject")):
            raise RegistryError('Each reference needs "name", "subject" and "version".', 400)
        try:
            version = int(entry["version"])
        except (KeyError, TypeError, ValueError):
            raise RegistryError(f"Reference {entry.get('name')!r}: its version must be a whole number.", 400) from None
        found.append(SchemaReference(str(entry["name"]), str(entry["subject"]), version))
    return tuple(found)


def _registered(answer: Any, schema_id: int | None = None) -> RegisteredSchema:
    if not isinstance(answer, dict) or not isinstance(answer.get("schema"), str):
        raise RegistryError("The registry answered with something that is not a schema.", 502)
    kind = str(answer.get("schemaType") or AVRO).upper()
    return RegisteredSchema(
        id=int(answer["id"]) if answer.get("id") is not None else schema_id,
        schema_type=kind,
        text=answer["schema"],
        references=parse_references(answer.get("references") or []),
        subject=str(answer["subject"]) if answer.get("subject") is not None else None,
        version=int(answer["version"]) if answer.get("version") is not None else None,
    )


def _describe(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused: is the registry running?"
    if isinstance(reason, ssl.SSLCertVerificationError):
        return f"TLS: its certificate was not accepted ({reason.verify_message or reason.reason})"
    if isinstance(reason, ssl.SSLError):
        return f"TLS: {reason.reason or reason}"
    return str(reason) or type(reason).__name__


class Registry:
    """One registry, shared by every request of the process (the id cache is per instance). Implements
    ``SchemaSource``."""

    def __init__(self, config: RegistryConfig) -> None:
        self.config = config
        self._tls: ssl.SSLContext | None = None
        if config.url.startswith("https:"):
            context = ssl.create_default_context(cafile=config.ssl_cafile)
            if config.ssl_certfile:
                try:
                    context.load_cert_chain(config.ssl_certfile, config.ssl_keyfile)
                except (ssl.SSLError, OSError) as exc:
                    raise ConfigError(
                        f"the schema registry: its client certificate or key cannot be loaded ({_describe(exc)})."
                    ) from None
            if not config.ssl_verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._tls = context
        self._lock = threading.Lock()
        self._by_id: dict[int, RegisteredSchema] = {}
        self._failed_ids: dict[int, tuple[float, RegistryError]] = {}
        self._pending: dict[int, Future[RegisteredSchema]] = {}
        self._versions: dict[tuple[str, int], tuple[float, RegisteredSchema]] = {}
        self._down: tuple[float, RegistryError] | None = None
        # Whether the registry answered GET /schemas?latestOnly=true without subjects (Apicurio): not asked again.
        self._no_latest_listing = False

    def __repr__(self) -> str:
        return f"Registry({self.config.url!r})"

    @property
    def url(self) -> str:
        return self.config.url

    @property
    def where(self) -> str:
        return f"The schema registry at {self.config.url}"

    # ------------------------------------------------------------ HTTP

    def _clean(self, text: str) -> str:
        for secret in self.config.secrets:
            text = text.replace(secret, "***")
        return text

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        """The decoded JSON answer (None for an empty one); raises RegistryError."""
        with self._lock:
            down = self._down
        if down is not None and down[0] > time.monotonic():
            raise down[1]
        timeout = self.config.timeout * (1 if method == "GET" else CHANGE_TIMEOUTS)
        url = self.config.url + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": f"{CONTENT_TYPE}, application/json"}
        if data is not None:
            headers["Content-Type"] = CONTENT_TYPE
        if self.config.username is not None:
            pair = f"{self.config.username}:{self.config.password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        elif self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310 - http(s) only
        try:
            raw = self._exchange(req, timeout, retry=method == "GET")
        except urllib.error.HTTPError as exc:
            raise self._refusal(exc.code, exc.read()) from None
        except (TimeoutError, urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            timed_out = isinstance(reason, TimeoutError) or "timed out" in str(reason)
            what = f"did not answer within {timeout:g} s" if timed_out else f"cannot be reached ({_describe(reason)})"
            error = RegistryError(self._clean(f"{self.where} {what}."), 0)
            with self._lock:
                self._down = (time.monotonic() + DOWN_FOR, error)
            raise error from None
        with self._lock:
            self._down = None
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise RegistryError(f"{self.where} answered with something that is not JSON.", 502) from None

    def _exchange(self, req: urllib.request.Request, timeout: float, retry: bool) -> bytes:
        """The answer's body. A connection the registry closed without answering (a reset, or a server that
        drops a connection now and then, as Apicurio's did once in a CI run) is tried once more for a read: a
        read is safe to repeat, and one dropped connection should not mark the registry down for DOWN_FOR s."""
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self._tls) as answer:  # noqa: S310
                return bytes(answer.read())
        except (urllib.error.URLError, ConnectionResetError) as exc:
            dropped = isinstance(exc, ConnectionResetError) or isinstance(exc.reason, ConnectionResetError)
            if not retry or not dropped or isinstance(exc, urllib.error.HTTPError):
                raise
        with urllib.request.urlopen(req, timeout=timeout, context=self._tls) as answer:  # noqa: S310
            return bytes(answer.read())

    def _refusal(self, status: int, raw: bytes) -> RegistryError:
        code: int | None = None
        try:
            found = json.loads(raw)
            message = str(found.get("message") or "")
            code = int(found["error_code"]) if found.get("error_code") is not None else None
        except (ValueError, AttributeError, TypeError):
            message = raw.decode(errors="replace")[:500]
            if message.lstrip().startswith("<"):
                message = ""
        # Apicurio prefixes the Java exception's class: what follows it is the registry's reason.
        if message.startswith(("io.apicurio.", "java.")) and ": " in message:
            message = message.split(": ", 1)[1]
        message = self._clean(message or f"HTTP {status}")
        if status in (401, 403):
            return RegistryError(f"{self.where} refused the console's credentials ({status}): {message}", status, code)
        return RegistryError(message, status, code)

    def _get(self, path: str, query: list[tuple[str, str]] | None = None) -> Any:
        return self.request("GET", path, query=query)

    # ------------------------------------------------------------ SchemaSource

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema of ``schema_id`` with its references, and a subject and version that use it where the
        registry tells (the first it names). Cached for good; a failure is remembered for FAILED_ID_FOR s."""
        schema_id = int(schema_id)
        with self._lock:
            if schema_id in self._by_id:
                return self._by_id[schema_id]
            failed = self._failed_ids.get(schema_id)
            if failed is not None and failed[0] > time.monotonic():
                raise failed[1]
            pending = self._pending.get(schema_id)
            mine = pending is None
            if pending is None:
                pending = self._pending[schema_id] = Future()
        if not mine:
            try:
                return pending.result(timeout=self.config.timeout * 3)
            except TimeoutError:
                raise RegistryError(f"{self.where} did not answer schema id {schema_id} in time.", 0) from None
        try:
            found = self._fetch_id(schema_id)
        except RegistryError as exc:
            with self._lock:
                self._failed_ids[schema_id] = (time.monotonic() + FAILED_ID_FOR, exc)
                self._pending.pop(schema_id, None)
            pending.set_exception(exc)
            raise
        except BaseException as exc:
            with self._lock:
                self._pending.pop(schema_id, None)
            pending.set_exception(exc)
            raise
        with self._lock:
            self._by_id[schema_id] = found
            self._failed_ids.pop(schema_id, None)
            self._pending.pop(schema_id, None)
        pending.set_result(found)
        return found

    def _fetch_id(self, schema_id: int) -> RegisteredSchema:
        found = _registered(self._get(f"/schemas/ids/{schema_id}"), schema_id)
        try:
            uses = self.subjects_of_id(schema_id)
        except RegistryError as exc:
            if exc.status == 0:
                raise
            uses = []
        if uses:
            subject, version = uses[0]
            found = RegisteredSchema(found.id, found.schema_type, found.text, found.references, subject, version)
        return found

    def schema_by_subject(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        """The schema registered under ``subject`` at ``version`` (a number, or "latest"), with its id; a
        numbered version is kept for VERSION_KEPT_FOR s. Raises RegistryError (40401, 40402)."""
        numbered = str(version) != "latest"
        key = (subject, int(version)) if numbered else None
        if key is not None:
            with self._lock:
                kept = self._versions.get(key)
            if kept is not None and kept[0] > time.monotonic():
                return kept[1]
        path = f"/subjects/{_quote(subject)}/versions/{int(version) if numbered else 'latest'}"
        found = _registered(self._get(path))
        if found.subject is None or found.version is None:
            found = RegisteredSchema(
                found.id,
                found.schema_type,
                found.text,
                found.references,
                subject,
                int(version) if numbered else found.version,
            )
        if found.version is not None:
            with self._lock:
                self._versions[(subject, found.version)] = (time.monotonic() + VERSION_KEPT_FOR, found)
        return found

    def schema_by_subject_including_deleted(self, subject: str, version: int) -> RegisteredSchema:
        """One version, a soft-deleted one too (``?deleted=true``, which Confluent's registry honours; Apicurio
        answers 40401 or 40402 for a soft-deleted version, which is raised)."""
        try:
            return self.schema_by_subject(subject, version)
        except RegistryError as exc:
            if exc.code not in (SUBJECT_NOT_FOUND, VERSION_NOT_FOUND):
                raise
        found = _registered(self._get(f"/subjects/{_quote(subject)}/versions/{int(version)}", [("deleted", "true")]))
        return RegisteredSchema(found.id, found.schema_type, found.text, found.references, subject, int(version))

    def forget(self, subject: str | None = None) -> None:
        """Drop the kept subject-versions (of ``subject``, or all), after a change made through the console."""
        with self._lock:
            for key in [k for k in self._versions if subject is None or k[0] == subject]:
                del self._versions[key]

    # ------------------------------------------------------------ reads

    def subjects_of_id(self, schema_id: int) -> list[tuple[str, int]]:
        """The (subject, version) pairs that use schema ``schema_id``."""
        answer = self._get(f"/schemas/ids/{int(schema_id)}/versions") or []
        return [(str(e["subject"]), int(e["version"])) for e in answer if isinstance(e, dict) and "subject" in e]

    def subjects(self, deleted: bool = False) -> list[str]:
        """Every subject, sorted (with ``deleted``: soft-deleted ones too)."""
        query = [("deleted", "true")] if deleted else None
        return sorted(str(s) for s in self._get("/subjects", query) or [])

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        query = [("deleted", "true")] if deleted else None
        return sorted(int(v) for v in self._get(f"/subjects/{_quote(subject)}/versions", query) or [])

    def referenced_by(self, subject: str, version: int | str) -> list[int]:
        """The ids of the schemas that reference ``subject`` at ``version``."""
        return sorted(int(i) for i in self._get(f"/subjects/{_quote(subject)}/versions/{version}/referencedby") or [])

    def schema_types(self) -> list[str]:
        return [str(t) for t in self._get("/schemas/types") or []]

    def latest_schemas(self) -> dict[str, SubjectSummary] | None:
        """Every subject's latest schema in one request (``GET /schemas?latestOnly=true``) where the registry
        answers it with subjects and versions (Confluent, Karapace); None where it does not (Apicurio lists
        schema texts only): callers then ask per subject, only for those they show."""
        if self._no_latest_listing:
            return None
        try:
            answer = self._get("/schemas", [("latestOnly", "true")])
        except RegistryError as exc:
            if exc.status == 0:
                raise
            self._no_latest_listing = True
            return None
        if not isinstance(answer, list) or any(not isinstance(e, dict) or "subject" not in e for e in answer):
            # Not asked again: such a registry answers every schema's text, for nothing.
            self._no_latest_listing = True
            return None
        found: dict[str, SubjectSummary] = {}
        for e in answer:
            summary = SubjectSummary(
                subject=str(e["subject"]),
                schema_type=str(e.get("schemaType") or AVRO),
                latest_version=int(e["version"]) if e.get("version") is not None else None,
                id=int(e["id"]) if e.get("id") is not None else None,
            )
            old = found.get(summary.subject)
            if old is None or (summary.latest_version or 0) > (old.latest_version or 0):
                found[summary.subject] = summary
        return found

    def global_compatibility(self) -> str | None:
        answer = self._get("/config") or {}
        level = answer.get("compatibilityLevel") or answer.get("compatibility")
        return str(level) if level else None

    def compatibility(self, subject: str, global_level: str | None = None) -> Compatibility:
        """The subject's own level (None: it follows the global one) and the one that applies. Two requests
        (``defaultToGlobal`` false and true). Apicurio answers a level for a subject without one of its own (NONE,
        or the global level when its default global rule is configured): a level equal to the global one, or
        NONE where another level applies, is shown as following the global level."""
        if global_level is None:
            global_level = self.global_compatibility()
        path = f"/config/{_quote(subject)}"
        try:
            own = (self._get(path, [("defaultToGlobal", "false")]) or {}).get("compatibilityLevel")
        except RegistryError as exc:
            if exc.code != NO_SUBJECT_CONFIG and exc.status != 404:
                raise
            own = None
        effective = self.effective_compatibility(subject) or global_level
        if (own == "NONE" and effective != "NONE") or own == global_level:
            own = None
        return Compatibility(str(own) if own else None, effective, global_level)

    def effective_compatibility(self, subject: str) -> str | None:
        """The level that applies to ``subject`` (its own, else the global one): one request."""
        try:
            answer = self._get(f"/config/{_quote(subject)}", [("defaultToGlobal", "true")]) or {}
        except RegistryError as exc:
            if exc.code != NO_SUBJECT_CONFIG and exc.status != 404:
                raise
            return None
        level = answer.get("compatibilityLevel") or answer.get("compatibility")
        return str(level) if level else None

    def summaries(self, subjects: Sequence[str], latest: dict[str, SubjectSummary] | None) -> list[SubjectSummary]:
        """The list's rows for ``subjects`` (the page shown): type, latest version and id from ``latest`` (one
        listing) or, where the registry has no such listing, one request per subject shown; and the level that
        applies to each. At most PARALLEL requests at once; a subject that fails carries its error."""

        def one(subject: str) -> SubjectSummary:
            row = (latest or {}).get(subject)
            try:
                if row is None:
                    found = self.schema_by_subject(subject, "latest")
                    row = SubjectSummary(subject, found.schema_type, found.version, found.id)
                level = self.effective_compatibility(subject)
            except RegistryError as exc:
                if exc.status == 0:
                    raise
                if row is None and exc.code in (SUBJECT_NOT_FOUND, VERSION_NOT_FOUND):
                    return SubjectSummary(subject, None, None, None, deleted=True)
                return SubjectSummary(subject, None, None, None, error=str(exc))
            return SubjectSummary(row.subject, row.schema_type, row.latest_version, row.id, level)

        return self._each(one, list(subjects))

    def _each(self, work: Callable[[str], T], items: list[str]) -> list[T]:
        if len(items) <= 1:
            return [work(i) for i in items]
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(items))) as pool:
            return list(pool.map(work, items))

    # ------------------------------------------------------------ changes

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the global level, or ``subject``'s own; the level the registry answers."""
        level = check_level(level)
        path = "/config" + (f"/{_quote(subject)}" if subject is not None else "")
        answer = self.request("PUT", path, {"compatibility": level}) or {}
        return str(answer.get("compatibility") or answer.get("compatibilityLevel") or level)

    def delete_compatibility(self, subject: str) -> None:
        """Remove ``subject``'s own level: it follows the global one again."""
        try:
            self.request("DELETE", f"/config/{_quote(subject)}")
        except RegistryError as exc:
            if exc.code != NO_SUBJECT_CONFIG:
                raise

    def check_compatibility(
        self,
        subject: str,
        text: str,
        schema_type: str = AVRO,
        references: Sequence[SchemaReference] = (),
        version: int | str = "latest",
    ) -> CompatibilityResult:
        """Whether a draft may be registered under ``subject``: against ``version`` (a number or "latest"), or
        against every version with ``version="all"``. The registry's reasons where it gives them. A subject
        with no version yet accepts anything."""
        path = f"/compatibility/subjects/{_quote(subject)}/versions"
        if str(version) != "all":
            path += f"/{int(version) if str(version) != 'latest' else 'latest'}"
        body = _schema_body(text, check_type(schema_type), references)
        try:
            answer = self.request("POST", path, body, [("verbose", "true")]) or {}
        except RegistryError as exc:
            if exc.code in (SUBJECT_NOT_FOUND, VERSION_NOT_FOUND) and str(version) in ("latest", "all"):
                return CompatibilityResult(True, ("The subject has no version yet: any schema may be its first.",))
            raise
        messages = answer.get("messages") or []
        return CompatibilityResult(bool(answer.get("is_compatible")), tuple(str(m) for m in messages))

    def register(
        self, subject: str, text: str, schema_type: str = AVRO, references: Sequence[SchemaReference] = ()
    ) -> tuple[int, int | None]:
        """Register a schema under ``subject`` (the same schema again gives its existing id): its id and
        version. Raises RegistryError: 409 incompatible, 42201 invalid, with the registry's reason."""
        body = _schema_body(text, check_type(schema_type), references)
        answer = self.request("POST", f"/subjects/{_quote(subject)}/versions", body) or {}
        schema_id = int(answer["id"])
        version = answer.get("version")
        if version is None:
            looked = self.request("POST", f"/subjects/{_quote(subject)}", body) or {}
            version = looked.get("version")
        self.forget(subject)
        return schema_id, int(version) if version is not None else None

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete ``subject`` (its versions hidden, kept), or delete it for good (soft first when it was
        not yet); the versions deleted."""
        path = f"/subjects/{_quote(subject)}"
        try:
            if permanent:
                try:
                    self.request("DELETE", path)
                except RegistryError as exc:
                    if exc.code != SUBJECT_SOFT_DELETED:
                        raise
                answer = self.request("DELETE", path, query=[("permanent", "true")])
            else:
                answer = self.request("DELETE", path)
        finally:
            self.forget(subject)
        return sorted(int(v) for v in answer or [])

    def delete_version(self, subject: str, version: int, permanent: bool = False) -> int:
        """Soft-delete one version, or delete it for good (soft first when it was not yet)."""
        path = f"/subjects/{_quote(subject)}/versions/{int(version)}"
        try:
            if permanent:
                try:
                    self.request("DELETE", path)
                except RegistryError as exc:
                    if exc.code not in (SUBJECT_SOFT_DELETED, 40406):
                        raise
                answer = self.request("DELETE", path, query=[("permanent", "true")])
            else:
                answer = self.request("DELETE", path)
        finally:
            self.forget(subject)
        return int(answer) if answer is not None else int(version)


def check_level(level: str) -> str:
    found = str(level or "").strip().upper()
    if found not in LEVELS:
        raise RegistryError(f"{level!r} is not a compatibility level: one of {', '.join(LEVELS)}.", 400)
    return found


def check_type(schema_type: str | None) -> str:
    """A schema type as the registry names it (AVRO, PROTOBUF, JSON); blank is Avro. "JSONSCHEMA" and
    "json_schema" are taken as JSON."""
    found = str(schema_type or AVRO).strip().upper().replace("_", "")
    found = {"JSONSCHEMA": "JSON", "PROTO": "PROTOBUF"}.get(found, found)
    if found not in SCHEMA_TYPES:
        raise RegistryError(f"{schema_type!r} is not a schema type: one of {', '.join(SCHEMA_TYPES)}.", 400)
    return found
