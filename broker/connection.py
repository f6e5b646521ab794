"""A long-lived, thread-safe handle on one cluster whose every call has a deadline.

kafka-python's admin client waits on its own I/O thread without a deadline of its
own, so each call here runs on a small worker pool and is abandoned after
``config.timeout`` seconds. A failed or timed-out call drops the client; the next
call builds a new one, which is how the console recovers by itself when brokers
come back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

import kafka.errors
from kafka import KafkaAdminClient

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

    def call(self, fn: Callable[[KafkaAdminClient], T], what: str = "request") -> T:
        """Run ``fn(admin)`` within the cluster's time-out.

        Raises ClusterUnavailable when the cluster cannot be reached or does not answer
        in time; other Kafka errors pass through for the caller to map.
        """
        deadline = self.config.timeout + 0.3
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

    def close(self) -> None:
        self.reset()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _describe(exc: BaseException) -> str:
    """A short reason for an unreachable cluster; kafka-python's own texts are not meant for users."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"no broker answered ({exc.strerror})"
    return "no broker answered"


def _close_quietly(admin: KafkaAdminClient) -> None:
    try:
        admin.close()
    except Exception:
        log.debug("closing a dropped admin client failed", exc_info=True)
