"""Tailing a topic: new messages as they arrive, read by a thread of its own into a bounded buffer."""

from __future__ import annotations

import threading

from kafka import TopicPartition

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, NotFound
from broker.messages.log import Message
from broker.messages.read import PAGE_BYTES, _record, check_isolation
from broker.topics.read import get_topic_partitions


class Tail:
    """New messages of a topic (or one partition) as they arrive, read by a thread of its own.

    Messages wait in a bounded buffer: when the reader falls behind a fast topic, the oldest
    waiting ones are dropped and counted, so memory stays flat however fast the topic is.
    """

    def __init__(
        self,
        conn: ClusterConnection,
        topic: str,
        partitions: list[int],
        buffer: int = 200,
        isolation: str = "read_uncommitted",
    ) -> None:
        self.conn, self.topic, self.partitions = conn, topic, partitions
        self.isolation = check_isolation(isolation)  # read_committed: records show once committed
        self._buffer: list[Message] = []
        self._held = 0  # bytes waiting in the buffer
        self._limit = buffer
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.dropped = 0
        self.received = 0
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"tail-{topic}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def drain(self, at_most: int) -> tuple[list[Message], int]:
        """Up to ``at_most`` waiting messages, oldest first, and how many were dropped since the last call."""
        with self._lock:
            taken, self._buffer = self._buffer[:at_most], self._buffer[at_most:]
            self._held -= sum(m.size for m in taken)
            dropped, self.dropped = self.dropped, 0
        return taken, dropped

    def discard(self) -> int:
        """Forget every waiting message (while paused); returns how many."""
        with self._lock:
            count, self._buffer, self._held = len(self._buffer), [], 0
        return count

    def _run(self) -> None:
        consumer = None
        try:
            consumer = self.conn._new_consumer(isolation=self.isolation)
            tps = [TopicPartition(self.topic, p) for p in self.partitions]
            consumer.assign(tps)
            consumer.seek_to_end(*tps)
            while not self._stop.is_set():
                batch = consumer.poll(timeout_ms=300, max_records=500)
                for records in batch.values():
                    for record in records:
                        self._add(_record(record))
        except Exception as exc:  # noqa: BLE001 - the page shows why the tail stopped
            self.error = f"The live tail stopped: {type(exc).__name__}: {exc}"
        finally:
            if consumer is not None:
                consumer.close()

    def trouble(self) -> str | None:
        """Why new messages may not be arriving now, read from the topic's partitions (a shared read):
        the cluster does not answer, the topic is gone, or a tailed partition has no leader. None when
        every tailed partition can be read. The reader goes on meanwhile and picks up where it was."""
        try:
            infos = get_topic_partitions(self.conn, self.topic)
        except ClusterUnavailable as exc:
            return f"{exc} The tail goes on by itself once it answers."
        except NotFound as exc:
            return str(exc)
        leaderless = [i.partition for i in infos if i.partition in self.partitions and not i.available]
        if not leaderless:
            return None
        names = ", ".join(str(p) for p in leaderless)
        which = f"Partition {names} has" if len(leaderless) == 1 else f"Partitions {names} have"
        return f"{which} no leader now: new messages there show once one is elected."

    def _add(self, message: Message) -> None:
        with self._lock:
            self.received += 1
            self._buffer.append(message)
            self._held += message.size
            while len(self._buffer) > 1 and (len(self._buffer) > self._limit or self._held > PAGE_BYTES):
                self._held -= self._buffer.pop(0).size
                self.dropped += 1
