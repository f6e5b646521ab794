"""A long-lived, thread-safe handle on one cluster whose every call has a deadline.

kafka-python's admin client waits on its own I/O thread without a deadline of its
own, so each call here runs on a small worker pool and is abandoned after
``config.timeout`` seconds. A failed or timed-out call drops the client; the next
call builds a new one, which is how the console recovers by itself when brokers
come back.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import TypeVar

import kafka.errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from broker.config import ClusterConfig
from broker.errors import ClusterUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

# Errors that mean "the cluster did not answer" rather than "the request was wrong".
_UNREACHABLE = (
    kafka.errors.KafkaTimeoutError,
    kafka.errors.KafkaConnectionError,
    kafka.errors.NodeNotReadyError,
    kafka.errors.RequestTimedOutError,
    ConnectionError,
    OSError,
)


class ClusterConnection:
    """Admin access to one cluster, shared by every request of the process."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._admin: KafkaAdminClient | None = None
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"kafka-{config.name}")
        # Brokers seen alive before, by id: a broker that stops is still listed (as down).
        self.known_brokers: dict[int, tuple[str, int, str | None]] = {}
        # Idle consumers for reading messages (a consumer serves one caller at a time).
        self._consumers: queue.LifoQueue[KafkaConsumer] = queue.LifoQueue(maxsize=4)
        self._producer: KafkaProducer | None = None

    def _client(self) -> KafkaAdminClient:
        with self._lock:
            if self._admin is None:
                timeout_ms = int(self.config.timeout * 1000)
                self._admin = KafkaAdminClient(
                    client_id=f"kazami-{self.config.name}",
                    bootstrap_timeout_ms=timeout_ms,
                    reconnect_backoff_max_ms=1000,
                    **self.config.client_options(),
                )
            return self._admin

    def reset(self) -> None:
        """Drop the admin client (closed in the background); the next call connects afresh."""
        with self._lock:
            admin, self._admin = self._admin, None
        if admin is not None:
            threading.Thread(target=_close_quietly, args=(admin,), daemon=True).start()

    def call(self, fn: Callable[[KafkaAdminClient], T], what: str = "request", requests: int = 1) -> T:
        """Run ``fn(admin)``, which makes at most ``requests`` requests in a row, within that many
        time-outs of the cluster (each request is also bounded by the client's own time-out).

        Raises ClusterUnavailable when the cluster cannot be reached or does not answer
        in time; other Kafka errors pass through for the caller to map.
        """
        deadline = self.config.timeout * requests + 0.3
        future = self._pool.submit(lambda: fn(self._client()))
        try:
            return future.result(timeout=deadline)
        except FutureTimeout:
            self.reset()
            raise ClusterUnavailable(
                f"Cluster {self.config.name!r} did not answer the {what} within {deadline:.1f} s "
                f"({', '.join(self.config.bootstrap_servers)})."
            ) from None
        except _UNREACHABLE as exc:
            self.reset()
            raise ClusterUnavailable(
                f"Cannot reach cluster {self.config.name!r} at {', '.join(self.config.bootstrap_servers)}: "
                f"{_describe(exc)}."
            ) from None

    @contextmanager
    def consumer(self) -> Iterator[KafkaConsumer]:
        """A consumer of no group (nothing is committed), used by one caller at a time.

        Returned to a small pool afterwards; dropped instead if the caller failed with it.
        Raises ClusterUnavailable when a new one cannot bootstrap in time.
        """
        try:
            consumer = self._consumers.get_nowait()
        except queue.Empty:
            consumer = self._new_consumer()
        try:
            yield consumer
        except BaseException:
            _close_quietly(consumer)
            raise
        try:
            consumer.assign([])
            self._consumers.put_nowait(consumer)
        except (queue.Full, Exception):  # noqa: BLE001 - a consumer that cannot be reset is not reused
            _close_quietly(consumer)

    def _new_consumer(self) -> KafkaConsumer:
        try:
            return KafkaConsumer(
                client_id=f"kazami-{self.config.name}-reader",
                group_id=None,
                enable_auto_commit=False,
                bootstrap_timeout_ms=int(self.config.timeout * 1000),
                fetch_max_wait_ms=100,
                max_partition_fetch_bytes=1024 * 1024,
                reconnect_backoff_max_ms=1000,
                **self.config.client_options(),
            )
        except _UNREACHABLE as exc:
            raise ClusterUnavailable(
                f"Cannot reach cluster {self.config.name!r} at {', '.join(self.config.bootstrap_servers)}: "
                f"{_describe(exc)}."
            ) from None

    def producer(self) -> KafkaProducer:
        """The cluster's shared producer (thread-safe, acks=all, idempotent where the broker allows).

        Raises ClusterUnavailable when it cannot bootstrap in time.
        """
        with self._lock:
            if self._producer is None:
                try:
                    self._producer = KafkaProducer(
                        client_id=f"kazami-{self.config.name}-producer",
                        acks="all",
                        bootstrap_timeout_ms=int(self.config.timeout * 1000),
                        max_block_ms=int(self.config.timeout * 1000),
                        linger_ms=0,
                        **self.config.client_options(),
                    )
                except _UNREACHABLE as exc:
                    raise ClusterUnavailable(
                        f"Cannot reach cluster {self.config.name!r} at {', '.join(self.config.bootstrap_servers)}: "
                        f"{_describe(exc)}."
                    ) from None
            return self._producer

    def drop_producer(self) -> None:
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            threading.Thread(target=_close_quietly, args=(producer,), daemon=True).start()

    def close(self) -> None:
        self.reset()
        self.drop_producer()
        while True:
            try:
                _close_quietly(self._consumers.get_nowait())
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
