"""A long-lived, thread-safe handle on one cluster whose every call has a deadline.

kafka-python's admin client waits on its own I/O thread without a deadline of its
own, so each call here runs on a small worker pool and is abandoned after at most
``MAX_ROUNDS`` time-outs of the cluster, however many requests it makes. A call that
could not connect, or was abandoned, drops the client it used; the next call builds a
new one, which is how the console recovers by itself when brokers come back. A broker
that accepts connections and never answers (a frozen process) only costs the request
sent to it: the client closes that connection, so a read is tried once more, elsewhere.
"""

from __future__ import annotations

import logging
import queue
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import kafka.errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.net.compat import KafkaNetClient
from kafka.protocol.metadata import CoordinatorType

from broker.client.config import ClusterConfig, ssl_context
from broker.client.diagnose import diagnose_refusal
from broker.errors import ClusterAuthFailed, ClusterUnavailable, NotSupported
from broker.shared_reads import SharedReads, Timestamps

log = logging.getLogger(__name__)
T = TypeVar("T")

# Errors kafka-python raises when a broker refuses our credentials outright.
_REFUSED = (
    kafka.errors.SaslAuthenticationFailedError,
    kafka.errors.UnsupportedSaslMechanismError,
    kafka.errors.IllegalSaslStateError,
)
# However many requests a call makes, it is abandoned after this many time-outs of the cluster: a page
# that waits longer is, for its reader, a cluster that does not answer.
MAX_ROUNDS = 3
# A broker that did not answer a request sent to it alone is left out of the reads that can do without it
# (offsets, sizes) for this many time-outs: a frozen broker costs one time-out, not one per page.
SILENT_ROUNDS = 5
# Meanwhile, once every time-out, the reads of PROBE_WINDOW seconds ask it anyway: one answer (note_answered) ends
# its silence at once. Under load one slow answer (a busy broker, or this process too busy to read the answer
# in time) made a broker silent for all five rounds, and every read of the partitions it leads failed meanwhile.
PROBE_WINDOW = 0.1
# DescribeQuorum's API key: listed by KRaft brokers only.
DESCRIBE_QUORUM_KEY = 55
ADMIN_METADATA_MAX_AGE_MS = 5000
# How long the hand-made TLS/SASL check after a failed bootstrap may take (it answers in milliseconds
# when the broker is there; this bounds a broker that accepts connections and says nothing).
_DIAGNOSE_SECONDS = 0.5


class _RedactSecrets(logging.Filter):
    """Replaces registered secrets in records of kafka-python's loggers: at DEBUG they print whole
    requests (a PLAIN SaslAuthenticate request carries the password) and the admin client's settings."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()

    def add(self, secret: str) -> None:
        # As text, and as it shows inside the repr of bytes.
        self._secrets.update({secret, repr(secret.encode())[2:-1]})

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot format is left to logging
            return True
        found = [s for s in self._secrets if s and s in text]
        if found:
            for secret in sorted(found, key=len, reverse=True):
                text = text.replace(secret, "***")
            record.msg, record.args = text, ()
        return True


# Every secret of a connection (passwords, SCRAM salts) is registered here; the filter hides them in logs.
SECRETS_REDACTED = _RedactSecrets()
# A logger's filters see only its own records, so each of kafka-python's loggers gets it: those known to
# print requests or settings (created now if their module loads later), and every one loaded already.
_KAFKA_LOGGERS = {"kafka.admin.client", "kafka.protocol.parser", "kafka.net.connection", "kafka.net.manager"}
_KAFKA_LOGGERS.update(name for name in logging.root.manager.loggerDict if name.startswith("kafka."))
for _name in sorted(_KAFKA_LOGGERS):
    logging.getLogger(_name).addFilter(SECRETS_REDACTED)

# Errors that mean "the cluster did not answer" rather than "the request was wrong".
_UNREACHABLE = (
    kafka.errors.KafkaTimeoutError,
    kafka.errors.KafkaConnectionError,
    kafka.errors.NodeNotReadyError,
    kafka.errors.RequestTimedOutError,
    ConnectionError,
    OSError,
)
# Errors of a cluster that is settling after brokers stopped or started: a client that cached where a group's
# coordinator, a partition's leader or the controller was, or which brokers exist, asks the wrong one.
_SETTLING = (
    kafka.errors.NotCoordinatorError,
    kafka.errors.CoordinatorNotAvailableError,
    kafka.errors.CoordinatorLoadInProgressError,
    kafka.errors.NotLeaderForPartitionError,
    kafka.errors.LeaderNotAvailableError,
    kafka.errors.NotControllerError,
    kafka.errors.UnknownBrokerIdError,
)


def keep_out_of_logs(*secrets: str) -> None:
    """Have kafka-python's log records show ``***`` instead of any of ``secrets`` from now on."""
    for secret in secrets:
        if secret:
            SECRETS_REDACTED.add(secret)


# Consumers by purpose: pages of messages (up to 1 MB a partition per fetch). (The lag-in-time lookup
# reads with fetch requests of its own: broker/messages/stamps.py.)
CONSUMER_OPTIONS: dict[str, dict[str, int]] = {
    "reader": {"fetch_max_wait_ms": 100, "max_partition_fetch_bytes": 1024 * 1024},
    # Following the offsets topic (broker.groups.commit_reader): small records, many partitions.
    "commits": {"fetch_max_wait_ms": 500, "max_partition_fetch_bytes": 256 * 1024},
}


class ClusterConnection:
    """Admin access to one cluster, shared by every request of the process."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        keep_out_of_logs(*config.secrets)
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        # The last refusal of our credentials: until a new check passes, calls fail at once with it
        # instead of waiting out a bootstrap that cannot succeed.
        self._refused: ClusterAuthFailed | None = None
        self._admin: KafkaAdminClient | None = None
        # When the last bootstrap of an admin client failed, and how (None once one succeeds).
        self._bootstrap_failed: tuple[float, BaseException] | None = None
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"kafka-{config.name}")
        # Brokers seen alive before, by id: a broker that stops is still listed (as down).
        self.known_brokers: dict[int, tuple[str, int, str | None]] = {}
        # Idle consumers by purpose (a consumer serves one caller at a time): reading messages.
        self._consumers: dict[str, queue.LifoQueue[KafkaConsumer]] = {
            purpose: queue.LifoQueue(maxsize=4) for purpose in CONSUMER_OPTIONS
        }
        self._producer: KafkaProducer | None = None
        # Broker id -> (until when it counts as silent, since when), in time.monotonic().
        self._silent: dict[int, tuple[float, float]] = {}
        # The brokers last seen registered and not fenced (note_alive), None before the first look.
        self._last_alive: set[int] | None = None
        # When a request a ZooKeeper-mode broker needs ZooKeeper for (reading topic configurations, or a
        # topic change) last timed out (None: the last one answered). The broker holds such a request, and
        # one of its request threads, for as long as ZooKeeper is down; broker.topics.read does not send another
        # until ZooKeeper serves again.
        self.zookeeper_stalled_at: float | None = None
        # "zookeeper" or "kraft", learnt from the cluster once it answered (see mode()).
        self._mode: str | None = None
        # ZooKeeper mode: the brokers' own zookeeper.connect (broker.cluster.overview), used when none is configured.
        self.learned_zookeeper: str | None = None
        # Group id -> type ("classic", "consumer", "share") as the last listing or lookup found it, so that
        # a group's page asks the one describe request its type needs.
        self.group_types: dict[str, str] = {}
        # Answers shared by callers asking the same within config.max_age (broker/shared_reads.py), and the
        # timestamps of messages the lag-in-time lookup has read.
        self.reads = SharedReads(config.max_age)
        self.timestamps = Timestamps()
        self._background: ClusterConnection | None = None

    @property
    def background(self) -> ClusterConnection:
        """The same cluster for work nobody waits on (the lag sampler, the replication watch): an admin client
        and workers of its own, sharing what this connection knows (kept answers, message timestamps, brokers
        seen and silent ones, group types). On one client, a page waited behind such a call (the lag of 5,000
        groups: seconds) and failed when the call's time-out dropped the client under it: the p99 of a page of
        messages was 1 to 2 s on a cluster of 5,000 groups, ~150 ms with the calls apart."""
        with self._lock:
            if self._background is None:
                other = ClusterConnection(self.config)
                other.reads, other.timestamps = self.reads, self.timestamps
                other.known_brokers, other.group_types = self.known_brokers, self.group_types
                other._silent = self._silent
                self._background = other
            return self._background

    @property
    def known_mode(self) -> str | None:
        """``kraft`` or ``zookeeper`` once learnt (see mode()), without asking: None before."""
        return self._mode

    def mode(self) -> str | None:
        """``kraft`` or ``zookeeper``, learnt from the API versions the bootstrap broker gave the admin client
        (no request of its own: a KRaft broker lists DescribeQuorum, a ZooKeeper-mode one does not); None
        while the cluster does not answer."""
        if self._mode is None and self._admin is None:
            try:
                self.call(lambda admin: None, "connection")
            except ClusterUnavailable:
                return None
        return self._mode

    @property
    def zookeeper_connect(self) -> str | None:
        """The configured ZooKeeper (else the one the brokers name), unless the cluster runs in KRaft mode:
        then none, whatever is configured."""
        if self._mode == "kraft":
            return None
        return self.config.zookeeper_connect or self.learned_zookeeper

    def mark_silent(self, broker: int) -> None:
        """Note that ``broker`` did not answer a request sent to it alone."""
        now = time.monotonic()
        self._silent[broker] = (now + self.config.timeout * SILENT_ROUNDS, now)

    def note_answered(self, brokers: Iterable[int]) -> None:
        """``brokers`` answered a request sent to them: none of them is silent any more."""
        for broker in brokers:
            if broker in self._silent:
                self._silent.pop(broker, None)

    def note_alive(self, alive: set[int]) -> None:
        """Brokers registered (and not fenced) now. One that was away and is back has restarted: it is not
        silent any more, so the pages ask it again at once rather than after SILENT_ROUNDS time-outs."""
        back = alive - self._last_alive if self._last_alive is not None else set()
        for broker in back:
            self._silent.pop(broker, None)
        self._last_alive = set(alive)

    def is_silent(self, broker: int) -> bool:
        """Whether reads should leave ``broker`` out: it did not answer lately (mark_silent), and this is not one
        of the moments it is asked again (PROBE_WINDOW seconds once every time-out)."""
        marked = self._silent.get(broker)
        if marked is None:
            return False
        until, since = marked
        now = time.monotonic()
        if now >= until:
            return False
        waited = now - since
        return waited < self.config.timeout or waited % self.config.timeout >= PROBE_WINDOW

    def silent_brokers(self) -> set[int]:
        """Brokers that did not answer a request of theirs lately (see SILENT_ROUNDS)."""
        now = time.monotonic()
        return {b for b, (until, _) in list(self._silent.items()) if until > now}

    def _options(self) -> dict[str, Any]:
        """The config's client options with the TLS context built once (the files are read once, and a
        key password is never prompted for). Raises ConfigError when the TLS files do not load."""
        options = self.config.client_options()
        # A new connection to a broker that accepts it and never answers (a frozen process) would otherwise
        # wait out kafka-python's own setup time-out (10 s, growing to 30 s) with the request queued behind.
        setup_ms = int(self.config.timeout * 1000)
        options["kafka_client"] = partial(
            KafkaNetClient, socket_connection_setup_timeout_ms=setup_ms, socket_connection_setup_timeout_max_ms=setup_ms
        )
        if self.config.uses_tls:
            if self._tls is None:
                self._tls = ssl_context(self.config)
            options["ssl_context"] = self._tls
        return options

    def _check_refusal(self) -> None:
        """After a refusal, ask again by hand (quick) before building a client; raises ClusterAuthFailed
        while the cluster still refuses."""
        refused = self._refused
        if refused is None:
            return
        reason = diagnose_refusal(self.config, self._tls, _DIAGNOSE_SECONDS)
        if reason is not None:
            raise ClusterAuthFailed(self._auth_message(reason)) from None
        self._refused = None

    def _client(self) -> KafkaAdminClient:
        asked = time.monotonic()
        with self._lock:
            if self._admin is None:
                # A caller that waited here while another one's bootstrap failed shares that failure,
                # rather than wait out a bootstrap of its own (the live poller and a page, say).
                failed = self._bootstrap_failed
                if failed is not None and failed[0] > asked:
                    raise failed[1]
                self._check_refusal()
                timeout_ms = int(self.config.timeout * 1000)
                try:
                    self._admin = KafkaAdminClient(
                        client_id=f"kazami-{self.config.name}",
                        bootstrap_timeout_ms=timeout_ms,
                        reconnect_backoff_max_ms=1000,
                        # Its own list of brokers (a small request) is refreshed often, so that a broker
                        # that started after the client is reached soon (list_groups asks each one).
                        metadata_max_age_ms=ADMIN_METADATA_MAX_AGE_MS,
                        **self._options(),
                    )
                except (*_UNREACHABLE, *_REFUSED) as exc:
                    self._bootstrap_failed = (time.monotonic(), exc)
                    raise
                self._bootstrap_failed = None
                self._learn_mode(self._admin)
            return self._admin

    def _learn_mode(self, admin: KafkaAdminClient) -> None:
        """Note the cluster's mode from the API versions the admin client was given at bootstrap (no
        request): a KRaft broker lists DescribeQuorum, a ZooKeeper-mode one does not."""
        try:
            keys = {int(k) for k in admin.api_versions()}
        except (AttributeError, TypeError, ValueError):
            return
        if keys:
            self._mode = "kraft" if DESCRIBE_QUORUM_KEY in keys else "zookeeper"

    def reset(self, used: KafkaAdminClient | None = None) -> None:
        """Drop the admin client (closed in the background); the next call connects afresh. With ``used``,
        only if that is still the current client: a failed call does not drop the one built after it."""
        with self._lock:
            if used is not None and used is not self._admin:
                return
            admin, self._admin = self._admin, None
        if admin is not None:
            threading.Thread(target=_close_quietly, args=(admin,), daemon=True).start()

    def try_once(self, fn: Callable[[KafkaAdminClient], T]) -> T:
        """Run ``fn(admin)`` on the current client, on the caller's thread, once: no retry, no time-out of
        its own (``fn``'s request has one), and a failure never drops the client another call may be
        using. For a guess whose answer is checked before it is used (a page's first fetch sent to the
        leader the last metadata named while the metadata is asked again); raises whatever ``fn`` raises."""
        return fn(self._client())

    def call(
        self, fn: Callable[[KafkaAdminClient], T], what: str = "request", requests: int = 1, retry: bool = False
    ) -> T:
        """Run ``fn(admin)``, which makes at most ``requests`` requests in a row, within that many
        time-outs of the cluster and never more than ``MAX_ROUNDS`` (each request is also bounded by the
        client's own time-out). With ``retry`` (reads only: ``fn`` changes nothing), a call that found a
        broker silent is made once more while time is left (the client closed the connection to that
        broker, so the next attempt asks another), and so is one that met the cluster settling (a
        coordinator or leader moved: a new client asks afresh).

        Raises ClusterUnavailable when the cluster cannot be reached, does not answer in time or is
        still settling, ClusterAuthFailed (a ClusterUnavailable) when it refuses our TLS certificate or SASL
        credentials, ConfigError when the TLS files do not load; other Kafka errors pass through for
        the caller to map.
        """
        try:
            return self._call(fn, what, requests, retry)
        finally:
            if not retry:
                # A change (only reads are retried): answers kept from before it are out of date.
                self.reads.forget()

    def _call(self, fn: Callable[[KafkaAdminClient], T], what: str, requests: int, retry: bool) -> T:
        budget = self.config.timeout * min(requests, MAX_ROUNDS) + 0.3
        deadline = time.monotonic() + budget
        attempts = 2 if retry else 1
        while True:
            attempts -= 1
            used: list[KafkaAdminClient] = []  # the client the attempt got, once it has one
            future = self._pool.submit(self._attempt, fn, used)
            try:
                return future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                future.cancel()
                # The call still runs on its worker: closing its client fails what it waits for.
                self.reset(used[0] if used else None)
                raise ClusterUnavailable(
                    f"Cluster {self.config.name!r} did not answer the {what} within {budget:.1f} s "
                    f"({', '.join(self.config.bootstrap_servers)})."
                ) from None
            except (*_UNREACHABLE, *_REFUSED) as exc:
                failure: BaseException = exc
                closed = bool(used and getattr(used[0], "_closed", False))
            except _SETTLING as exc:
                # The client's list of brokers is older than the metadata it was given (it bootstrapped
                # while some brokers were still starting), or the cluster is settling (a group coordinator
                # or a leader moved, and the client still asks the old one): a new client asks afresh.
                failure, closed = exc, True
            except Exception:
                # A client closed under the call (another call gave up on it) fails in its own ways.
                if not (used and getattr(used[0], "_closed", False)):
                    raise
                failure, closed = kafka.errors.KafkaConnectionError("the client was closed"), True
            # One broker did not answer in time; the client closed that connection and stays usable.
            silent = isinstance(failure, kafka.errors.RequestTimedOutError)
            if not silent:
                self.reset(used[0] if used else None)
            # A client that had bootstrapped lost one broker's connection (it stopped): a new client asks
            # the others. Not when no broker could be reached at all: asking again would double the wait.
            reached = bool(used) and not isinstance(failure, _REFUSED)
            if attempts > 0 and (silent or closed or reached) and deadline - time.monotonic() > self.config.timeout:
                continue
            if silent:
                raise ClusterUnavailable(
                    f"Cluster {self.config.name!r} did not answer the {what} in time: a broker took longer "
                    f"than {self.config.timeout:g} s to answer ({', '.join(self.config.bootstrap_servers)})."
                ) from None
            if isinstance(failure, _SETTLING):
                raise ClusterUnavailable(
                    f"Cluster {self.config.name!r} is settling (brokers or group coordinators are moving: "
                    f"{type(failure).__name__}); the {what} should work again in a moment."
                ) from None
            raise self._failure(failure) from None

    def _attempt(self, fn: Callable[[KafkaAdminClient], T], used: list[KafkaAdminClient]) -> T:
        admin = self._client()
        used.append(admin)
        return fn(admin)

    def _failure(self, exc: BaseException) -> ClusterUnavailable:
        """The error to raise for a client that could not connect: ClusterAuthFailed when the cluster
        refuses our credentials (kafka-python says so for some refusals; for the others a quick check by
        hand finds out), ClusterUnavailable otherwise."""
        reason: str | None = None
        if self.config.security_protocol != "PLAINTEXT":
            started = time.monotonic()
            reason = diagnose_refusal(self.config, self._tls, _DIAGNOSE_SECONDS)
            log.debug("refusal check of cluster %s took %.3f s", self.config.name, time.monotonic() - started)
        if reason is None and isinstance(exc, _REFUSED):
            mechanism = self.config.sasl_mechanism
            reason = f"SASL authentication failed for user {self.config.sasl_username!r} ({mechanism})"
        if reason is not None:
            self._refused = ClusterAuthFailed(self._auth_message(reason))
            return self._refused
        return ClusterUnavailable(
            f"Cannot reach cluster {self.config.name!r} at {', '.join(self.config.bootstrap_servers)}: "
            f"{_describe(exc)}."
        )

    def _auth_message(self, reason: str) -> str:
        text = f"Cluster {self.config.name!r}: {reason}"
        for secret in self.config.secrets:
            text = text.replace(secret, "***")
        return text

    @contextmanager
    def consumer(self, purpose: str = "reader") -> Iterator[KafkaConsumer]:
        """A consumer of no group (nothing is committed), used by one caller at a time; ``purpose`` is
        one of CONSUMER_OPTIONS.

        Returned to a small pool afterwards; dropped instead if the caller failed with it.
        Raises ClusterUnavailable when a new one cannot bootstrap in time.
        """
        pool = self._consumers[purpose]
        try:
            consumer = pool.get_nowait()
        except queue.Empty:
            consumer = self._new_consumer(purpose)
        try:
            yield consumer
        except BaseException:
            _close_quietly(consumer)
            raise
        try:
            consumer.assign([])
            pool.put_nowait(consumer)
        except (queue.Full, Exception):  # noqa: BLE001 - a consumer that cannot be reset is not reused
            _close_quietly(consumer)

    def own_consumer(self, purpose: str) -> KafkaConsumer:
        """A consumer of no group that the caller keeps (and closes); ``purpose`` is one of CONSUMER_OPTIONS.
        Raises ClusterUnavailable when it cannot bootstrap in time."""
        return self._new_consumer(purpose)

    def _new_consumer(self, purpose: str = "reader", isolation: str = "read_uncommitted") -> KafkaConsumer:
        self._check_refusal()
        try:
            return KafkaConsumer(
                client_id=f"kazami-{self.config.name}-{purpose}",
                group_id=None,
                enable_auto_commit=False,
                isolation_level=isolation,
                bootstrap_timeout_ms=int(self.config.timeout * 1000),
                reconnect_backoff_max_ms=1000,
                **CONSUMER_OPTIONS[purpose],
                **self._options(),
            )
        except (*_UNREACHABLE, *_REFUSED) as exc:
            raise self._failure(exc) from None

    def producer(self) -> KafkaProducer:
        """The cluster's shared producer (thread-safe, acks=all, idempotent where the broker allows).

        Raises ClusterUnavailable when it cannot bootstrap in time, ClusterAuthFailed when the
        cluster refuses our credentials.
        """
        with self._lock:
            if self._producer is None:
                self._check_refusal()
                try:
                    self._producer = KafkaProducer(
                        client_id=f"kazami-{self.config.name}-producer",
                        acks="all",
                        bootstrap_timeout_ms=int(self.config.timeout * 1000),
                        max_block_ms=int(self.config.timeout * 1000),
                        # A message not acknowledged while its page waits is given up, not written later.
                        delivery_timeout_ms=int(self.config.timeout * 2000),
                        reconnect_backoff_max_ms=1000,
                        linger_ms=0,
                        **self._options(),
                    )
                except (*_UNREACHABLE, *_REFUSED) as exc:
                    raise self._failure(exc) from None
            return self._producer

    def own_producer(self, purpose: str, **options: Any) -> KafkaProducer:
        """A producer the caller keeps (and closes), for bulk writes (copies, imports): acks=all, idempotent,
        batched; ``options`` add to or override those (``transactional_id`` for exactly-once).
        Raises ClusterUnavailable, ClusterAuthFailed."""
        self._check_refusal()
        settings: dict[str, Any] = {
            "client_id": f"kazami-{self.config.name}-{purpose}",
            "acks": "all",
            "bootstrap_timeout_ms": int(self.config.timeout * 1000),
            "max_block_ms": int(max(self.config.timeout, 10) * 1000),
            "reconnect_backoff_max_ms": 1000,
            "linger_ms": 20,
            "batch_size": 512 * 1024,
            "max_request_size": 8 * 1024 * 1024,
            "compression_type": "lz4",
            **options,
        }
        try:
            return KafkaProducer(**settings, **self._options())
        except (*_UNREACHABLE, *_REFUSED) as exc:
            raise self._failure(exc) from None

    def drop_producer(self) -> None:
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            threading.Thread(target=_close_quietly, args=(producer,), daemon=True).start()

    def close(self) -> None:
        if self._background is not None:
            self._background.close()
        self.reset()
        self.drop_producer()
        for pool in self._consumers.values():
            while True:
                try:
                    _close_quietly(pool.get_nowait())
                except queue.Empty:
                    break
        self._pool.shutdown(wait=False, cancel_futures=True)


def _describe(exc: BaseException) -> str:
    """A short reason for an unreachable cluster; kafka-python's own texts are not meant for users."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"no broker answered ({exc.strerror})"
    return "no broker answered"


def _close_quietly(client: KafkaAdminClient | KafkaConsumer | KafkaProducer) -> None:
    try:
        client.close()
    except Exception:
        log.debug("closing a dropped admin client failed", exc_info=True)


def live_brokers(admin: KafkaAdminClient, conn: ClusterConnection | None = None) -> list[dict[str, Any]]:
    """The brokers DescribeCluster lists, without the fenced ones: a KRaft broker that stopped stays
    registered, fenced, until it comes back, and must not be asked anything meanwhile. With ``conn``, a
    broker seen back after being away is not silent any more (ClusterConnection.note_alive)."""
    alive = [b for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced")]
    if conn is not None:
        conn.note_alive({int(b["broker_id"]) for b in alive})
    return alive


def send_request(
    admin: KafkaAdminClient,
    request: Any,
    unsupported: str | None = None,
    *,
    node: int | None = None,
    timeout_ms: int | None = None,
) -> Any:
    """Send a request kafka-python's admin client has no call for, through its own connections, and return
    the answer: to broker ``node`` (any broker the client picks when None), waiting at most ``timeout_ms``
    for it (the client's request_timeout_ms when None). Raises the kafka.errors exception the request
    failed with; with ``unsupported``, brokers too old for the request raise NotSupported with that text.

    This module is the only one that reaches into the admin client's connection manager (kafka-python
    3.0.x has no public call for any of this): send_requests, find_coordinators, forget_coordinators and
    broker_versions are the rest of what the areas need of it."""
    manager = admin._manager

    async def ask() -> Any:
        return await manager.send(request, node_id=node, request_timeout_ms=timeout_ms)

    try:
        return manager.run(ask)
    except kafka.errors.IncompatibleBrokerVersion as exc:
        if unsupported is None:
            raise
        raise NotSupported(unsupported) from exc


def send_requests(
    admin: KafkaAdminClient, requests: Iterable[tuple[Any, int | None]], timeout_ms: int | None = None
) -> list[Any]:
    """Send every ``(request, node)`` at once (node None: any broker), each waited for at most ``timeout_ms``
    (the client's request_timeout_ms when None), and return when all have answered or failed: the
    answers in the order of ``requests``, with the kafka.errors exception a request failed with in place
    of its answer (``raise`` it to fail as send_request would). Other exceptions raise."""
    manager = admin._manager
    asked = list(requests)

    async def ask() -> list[Any]:
        sent: list[Any] = []
        for request, node in asked:
            try:
                sent.append(manager.send(request, node_id=node, request_timeout_ms=timeout_ms))
            except kafka.errors.KafkaError as exc:  # a node the client's metadata does not list
                sent.append(exc)
        answers: list[Any] = []
        for future in sent:
            if isinstance(future, kafka.errors.KafkaError):
                answers.append(future)
                continue
            try:
                answers.append(await future)
            except kafka.errors.KafkaError as exc:
                answers.append(exc)
        return answers

    answers: list[Any] = manager.run(ask)
    return answers


def find_coordinators(
    admin: KafkaAdminClient,
    keys: list[str],
    key_type: CoordinatorType = CoordinatorType.GROUP,
    timeout_ms: int | None = None,
) -> dict[str, int]:
    """The node id of each key's coordinator (group ids, or transactional ids with
    ``CoordinatorType.TRANSACTION``), found by the admin client's own helper: from its cache, else in one
    batched FindCoordinator request. With ``timeout_ms``, raises KafkaTimeoutError when that passes first."""
    manager = admin._manager

    async def find() -> dict[str, int]:
        if timeout_ms is None:
            found: dict[str, int] = await admin._find_coordinator_ids(keys, key_type=key_type)
            return found
        finding = manager.call_soon(admin._find_coordinator_ids, keys, key_type)
        waited: dict[str, int] = await manager.wait_for(finding, timeout_ms)
        return waited

    coordinators: dict[str, int] = manager.run(find)
    return coordinators


def forget_coordinators(
    admin: KafkaAdminClient, keys: Iterable[str], key_type: CoordinatorType = CoordinatorType.GROUP
) -> None:
    """Drop the admin client's cached coordinators of ``keys`` (it keeps them for good): the next
    find_coordinators asks afresh."""
    cached = admin._manager.cluster._coordinators
    for key in keys:
        cached.pop((key_type, key), None)


def broker_versions(admin: KafkaAdminClient) -> Any:
    """The API versions the admin client was given at bootstrap (kafka-python's BrokerVersionData), None
    before it has them."""
    return admin._manager.broker_version_data
