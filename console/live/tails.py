"""Shared tails: one reader of a topic (or of one partition) for every browser tailing it in this process.

New messages are read, decoded and drawn once however many watch, and the rows sent to each watcher (the tail
consumers of console.live.consumers) at most ``ROWS_PER_PUSH`` every ``PUSH_EVERY`` seconds; what a fast topic
produces beyond that is skipped and counted. Every ``CHECK_EVERY`` seconds the reader asks whether its partitions
can be read, and a change is shown to every watcher at once. The first watcher starts the reader (:func:`join`),
the last one to leave stops it (:func:`leave`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from asgiref.sync import sync_to_async

from broker.client.connection import ClusterConnection
from broker.errors import KazamiError
from broker.messages import read as messages
from broker.messages.log import Message
from broker.messages.masking import Masker
from broker.messages.tail import Tail
from broker.topics import read as topics
from console.live.fragments import message_row, message_rows
from console.present.messages import Decoding, decoding_for, show

log = logging.getLogger(__name__)

PUSH_EVERY = 0.5
ROWS_PER_PUSH = 25
CHECK_EVERY = 3.0  # how often the shared reader asks whether its partitions can be read

# cluster, topic, partitions, isolation, and the masking of the watchers' role: browsers whose roles see
# different values do not share rows.
TailKey = tuple[str, str, tuple[int, ...], str, Masker]


class Watcher(Protocol):
    """A browser tailing a topic (console.live.consumers.TailConsumer)."""

    paused: bool

    async def show_status(self, text: str, trouble: str | None = None) -> None:
        """Say ``text`` (and ``trouble``, why new messages may not be arriving) in place of the counts."""

    async def show_state(self) -> None:
        """The browser's counts, with the reader's trouble if it has one."""

    async def push(self, rows: str, count: int, skipped: int) -> None:
        """Send ``rows`` (``count`` messages, ``skipped`` left out to keep up) with the browser's own counts."""

    async def redraw(self, rows: str) -> None:
        """Send ``rows`` that replace rows already shown (by their ids), alone in a message."""


@dataclass(eq=False)
class SharedTail:
    """One reader of a topic (or of one partition) for every browser tailing it in this process: new
    messages are read, decoded and drawn once however many watch, and the rows sent to each."""

    cluster: str
    tail: Tail
    decoding: Decoding
    masker: Masker
    watchers: set[Watcher] = field(default_factory=set)
    pump: asyncio.Task[None] | None = None
    trouble: str | None = None  # why new messages may not be arriving now (Tail.trouble), None if none

    def current(self) -> bool:
        """Still reading for this event loop (a loop that ended, as in tests, leaves its task behind)."""
        return self.pump is not None and not self.pump.done() and self.pump.get_loop() is asyncio.get_running_loop()


_tails: dict[TailKey, SharedTail] = {}


async def tailed(conn: ClusterConnection, topic: str, query: Mapping[str, Sequence[str]]) -> tuple[list[int], str]:
    """The partitions (``partition=N``, else all) and the isolation a tail's query string asks for, checked
    against the topic (off the event loop). Raises KazamiError (TopicNotFound, no such partition, a bad
    isolation), ValueError (a partition that is not a number)."""
    infos = await sync_to_async(topics.get_topic_partitions, thread_sensitive=False)(conn, topic)
    wanted = [int(query["partition"][0])] if query.get("partition") else [p.partition for p in infos]
    if any(p not in {i.partition for i in infos} for p in wanted):
        raise KazamiError(f"Topic {topic!r} has no partition {wanted[0]}.")
    isolation = messages.check_isolation((query.get("isolation") or [""])[0])
    return wanted, isolation


async def join(key: TailKey, conn: ClusterConnection, watcher: Watcher) -> SharedTail:
    """The reader of ``key`` with ``watcher`` among its watchers, started if none reads for this event loop."""
    cluster, topic, wanted, isolation, masker = key
    shared = _tails.get(key)
    if shared is None or not shared.current():
        decoding = await sync_to_async(decoding_for, thread_sensitive=False)(cluster, topic)
        shared = _tails.get(key)  # another browser may have started it meanwhile
        if shared is None or not shared.current():
            shared = _tails[key] = SharedTail(
                cluster, Tail(conn, topic, list(wanted), isolation=isolation), decoding, masker
            )
            shared.tail.start()
            shared.pump = asyncio.get_running_loop().create_task(_pump(key, shared))
    shared.watchers.add(watcher)
    return shared


def leave(key: TailKey, shared: SharedTail, watcher: Watcher) -> None:
    """``watcher`` gone; the reader stops when it was the last."""
    shared.watchers.discard(watcher)
    if not shared.watchers:
        shared.tail.stop()
        if shared.pump is not None:
            shared.pump.cancel()
        if _tails.get(key) is shared:
            del _tails[key]


def _tail_rows(cluster: str, batch: list[Message], decoding: Decoding, masker: Masker) -> str:
    """New rows, newest first, on top of the tail's table: records labelled with their transaction's fate as the
    pages label them, and (read_uncommitted) the commit and abort markers."""
    return message_rows(
        [show(cluster, masker.message(m), decoding) for m in reversed(batch)], "tail-rows", "afterbegin"
    )


def _redrawn_rows(cluster: str, settled: list[Message], decoding: Decoding, masker: Masker) -> str:
    """The rows of records shown open whose transaction has ended since, each swapped in place of its
    ``msg-<partition>-<offset>`` row. Only ``<tr>`` elements: a message of their own, since a row after another
    element would not parse as a row."""
    return "".join(message_row(show(cluster, masker.message(m), decoding), oob=True) for m in settled)


async def _watch(shared: SharedTail) -> None:
    """Every CHECK_EVERY: whether the tailed partitions can be read now (Tail.trouble, off the event loop).
    A change is shown to every watcher at once: the cluster gone away, a partition without a leader, and
    when it is over. The reader itself goes on meanwhile."""
    while True:
        await asyncio.sleep(CHECK_EVERY)
        if await _recheck(shared):
            for watcher in list(shared.watchers):
                try:
                    await watcher.show_state()
                except Exception:  # one browser gone wrong does not keep the others uninformed
                    log.warning("a tail status to one browser failed", exc_info=True)


async def _recheck(shared: SharedTail) -> bool:
    """Ask whether the tailed partitions can be read now (Tail.trouble, off the event loop) and keep the
    answer; True when it changed."""
    try:
        trouble = await sync_to_async(shared.tail.trouble, thread_sensitive=False)()
    except Exception:  # an unforeseen failure of the check must not end the tail
        log.warning("checking a tail's partitions failed", exc_info=True)
        return False
    changed = trouble != shared.trouble
    shared.trouble = trouble
    return changed


async def _pump(key: TailKey, shared: SharedTail) -> None:
    """Every PUSH_EVERY: what the reader got since, drawn once (in a worker thread, off the event loop),
    to every watcher that is not paused. Runs ``_watch`` beside it."""
    watch = asyncio.get_running_loop().create_task(_watch(shared))
    try:
        await _push_forever(key, shared)
    finally:
        watch.cancel()


async def _push_forever(key: TailKey, shared: SharedTail) -> None:
    tail = shared.tail
    while True:
        await asyncio.sleep(PUSH_EVERY)
        if tail.error:
            for watcher in list(shared.watchers):
                await watcher.show_status(tail.error)
            if _tails.get(key) is shared:
                del _tails[key]
            return
        if not any(not w.paused for w in shared.watchers):
            tail.discard()  # nobody shows them
            continue
        settled = tail.settled()
        batch, dropped = tail.drain(ROWS_PER_PUSH)
        skipped = dropped + tail.discard() if len(batch) == ROWS_PER_PUSH else dropped
        if not batch and not skipped and not settled:
            continue
        rows = redrawn = ""
        if batch or skipped:
            rows = await sync_to_async(_tail_rows, thread_sensitive=False)(
                shared.cluster, batch, shared.decoding, shared.masker
            )
        if settled:
            redrawn = await sync_to_async(_redrawn_rows, thread_sensitive=False)(
                shared.cluster, settled, shared.decoding, shared.masker
            )
        if shared.trouble and batch:
            # Messages came in, so the trouble last seen (up to CHECK_EVERY ago) may be over: a partition
            # said to have no leader just delivered. Ask again before saying it beside them.
            await _recheck(shared)
        for watcher in list(shared.watchers):
            if not watcher.paused:
                try:
                    if rows:
                        await watcher.push(rows, len(batch), skipped)
                    if redrawn:
                        await watcher.redraw(redrawn)
                except Exception:  # one browser gone wrong does not stop the others' tail
                    log.warning("a tail push to one browser failed", exc_info=True)
