"""Searching a topic with the filter language: the bounds a user asked for, checked, and the run; for the search
page's websocket, the run with its matches and progress pushed as they come (:func:`stream_search`).

Every search has a budget (console/settings.py): KAZAMI_SEARCH_MAX_SECONDS of wall time, KAZAMI_SEARCH_REGEX_SECONDS
for the filter's regular expressions summed over the whole scan, and at most KAZAMI_SEARCH_PER_USER searches of one
user at once in a console process (:func:`search_slot`; a search waits for none: it is refused with SearchesBusy).
A search over HTTP stops when its client goes away (:func:`until_client_leaves`), one over the websocket when the
socket closes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse

from broker.client.connection import ClusterConnection
from broker.decode import RecordDecoder
from broker.errors import InvalidInput, KazamiError
from broker.messages import read as messages
from broker.messages.filtering import predicate_for, probe_for
from broker.messages.masking import NO_MASKING, Masker
from broker.messages.query import parse_query
from broker.messages.scan import ScanProgress, plan_scan, scan
from broker.times import parse_time
from console.config.clusters import get_connection
from console.live.fragments import message_rows
from console.live.tasks import TaskConsumer
from console.present.masking import masker_for
from console.present.messages import ShownMessage, decoding_for, show

MAX_SCAN_LIMIT = 5_000_000
DEFAULT_MAX_SCAN = 100_000
MAX_MATCHES_LIMIT = 10_000
DEFAULT_MAX_MATCHES = 200
PUSH_EVERY = 0.25  # seconds between a streamed search's pushes: progress and matches are batched in between
RESTART_WAIT = 5.0  # seconds a websocket search waits for the slot of the search it replaced to be given back

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class SearchSpec:
    query: str = ""
    partitions: list[int] | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    last: int | None = None  # the newest N messages of each partition
    max_scan: int = DEFAULT_MAX_SCAN
    max_matches: int = DEFAULT_MAX_MATCHES
    isolation: str = "read_uncommitted"  # read_committed: only what such a consumer is given

    def as_params(self) -> dict[str, str]:
        """The spec as query-string parameters (for download links and pasted URLs)."""
        params = {"q": self.query, "max_scan": str(self.max_scan), "max_matches": str(self.max_matches)}
        if self.partitions is not None:
            params["partitions"] = ",".join(str(p) for p in self.partitions)
        if self.since_ms is not None:
            params["since"] = str(self.since_ms)
        if self.until_ms is not None:
            params["until"] = str(self.until_ms)
        if self.last is not None:
            params["last"] = str(self.last)
        if self.isolation != "read_uncommitted":
            params["isolation"] = self.isolation
        return params


def _int(values: Mapping[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    raw = str(values.get(name) or "").strip()
    if not raw:
        return default
    try:
        number = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {raw[:40]!r}.") from None
    if not low <= number <= high:
        raise InvalidInput(f"{name} must be between {low:,} and {high:,}, not {number:,}.")
    return number


def search_spec_from(values: Mapping[str, Any]) -> SearchSpec:
    """A SearchSpec from form or query-string values; raises InvalidInput (QueryError for the query)."""
    query = str(values.get("q") or "")
    parse_query(query)  # refuse a bad query before anything is read
    raw_parts = str(values.get("partitions") or "").strip()
    partitions = None
    if raw_parts:
        try:
            partitions = sorted({int(p) for p in raw_parts.replace(" ", "").split(",") if p})
        except ValueError:
            raise InvalidInput(f"partitions must be numbers separated by commas, not {raw_parts[:40]!r}.") from None
        if any(p < 0 for p in partitions):
            raise InvalidInput("partitions must not be negative.")
    since = str(values.get("since") or "").strip()
    until = str(values.get("until") or "").strip()
    return SearchSpec(
        query=query,
        partitions=partitions,
        since_ms=parse_time(since, "since") if since else None,
        until_ms=parse_time(until, "until") if until else None,
        last=_int(values, "last", None, 1, MAX_SCAN_LIMIT),
        max_scan=_int(values, "max_scan", DEFAULT_MAX_SCAN, 1, MAX_SCAN_LIMIT) or DEFAULT_MAX_SCAN,
        max_matches=_int(values, "max_matches", DEFAULT_MAX_MATCHES, 1, MAX_MATCHES_LIMIT) or DEFAULT_MAX_MATCHES,
        isolation=messages.check_isolation(str(values.get("isolation") or "")),
    )


def _has_registry(registry: RecordDecoder | None) -> bool:
    return registry is not None and registry.source is not None


# ------------------------------------------------------------------------------------------------ the budget


class SearchesBusy(KazamiError):
    """The user already runs as many searches as one user may at once (KAZAMI_SEARCH_PER_USER): HTTP 429."""


_slots = threading.Condition()
_running: Counter[str] = Counter()  # searcher -> searches under way in this process


def searcher(user: Any, address: str | None) -> str:
    """Whose searches count together: a user's, or for anonymous reading (KAZAMI_ANONYMOUS_READ), an address's."""
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    return f"anonymous:{address or '?'}"


@contextmanager
def search_slot(who: str, wait: float = 0.0) -> Iterator[None]:
    """Hold one of ``who``'s KAZAMI_SEARCH_PER_USER searches for the block; waits up to ``wait`` seconds for one to
    be given back, then raises SearchesBusy."""
    most = int(settings.KAZAMI_SEARCH_PER_USER)
    with _slots:
        if not _slots.wait_for(lambda: _running[who] < most, timeout=wait):
            several = "search" if most == 1 else f"{most} searches"
            raise SearchesBusy(
                f"You already run {several} at once, the most one user may (KAZAMI_SEARCH_PER_USER). Wait for one "
                "to finish, or stop it, and search again."
            )
        _running[who] += 1
    try:
        yield
    finally:
        with _slots:
            _running[who] -= 1
            if _running[who] <= 0:
                del _running[who]
            _slots.notify_all()


def running_searches(who: str) -> int:
    """How many searches ``who`` runs now in this process."""
    with _slots:
        return _running[who]


async def until_client_leaves(work: Callable[[threading.Event], T], name: str = "search") -> T:
    """``work(cancel)`` run as Django runs a sync view (sync_to_async, thread-sensitive: the request's own
    thread and database connection), awaited. When the awaiting task is cancelled (an HTTP client that goes
    away: Django cancels its view), ``cancel`` is set at once, so the work stops at its next record instead of
    running to its end for nobody; the view answers nobody and the work's thread ends on its own."""
    cancel = threading.Event()
    running: asyncio.Future[T] = asyncio.ensure_future(sync_to_async(work, thread_sensitive=True)(cancel))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        cancel.set()
        log.info("%s: the client went away; its search stops", name)
        running.add_done_callback(_ended_for_nobody(name))
        raise


def _ended_for_nobody(name: str) -> Callable[[asyncio.Future[Any]], None]:
    """Logs how a search whose client went away ended (and takes its error, which nobody else will)."""

    def ended(future: asyncio.Future[Any]) -> None:
        error = None if future.cancelled() else future.exception()
        log.info("%s: the search of a client that went away has ended%s", name, f" ({error})" if error else "")

    return ended


def _regex_budget() -> float:
    return float(settings.KAZAMI_SEARCH_REGEX_SECONDS)


def _max_seconds() -> float:
    return float(settings.KAZAMI_SEARCH_MAX_SECONDS)


# ------------------------------------------------------------------------------------------------ the run


@dataclass
class SearchResult:
    spec: SearchSpec
    shown: list[ShownMessage] = field(default_factory=list)
    progress: ScanProgress = field(default_factory=ScanProgress)
    cut: str | None = None  # why the matches stop short of the spec's limits, if they do
    regex_seconds: float = 0.0  # the time the filter's regular expressions took, summed over the scan

    @property
    def stop_reason(self) -> str | None:
        """Why the search stopped before the end of its range, in a sentence (None: it read it all)."""
        return self.cut or self.progress.why

    def budget(self) -> dict[str, float]:
        """What the search could spend and what it spent (the API's ``budget``)."""
        return {
            "max_seconds": _max_seconds(),
            "regex_seconds": _regex_budget(),
            "used_seconds": round(self.progress.elapsed, 3),
            "regex_used_seconds": round(self.regex_seconds, 3),
        }


def run_search(
    conn: ClusterConnection,
    cluster: str,
    topic: str,
    spec: SearchSpec,
    cancel: threading.Event | None = None,
    on_progress: Callable[[ScanProgress], None] | None = None,
    on_match: Callable[[ShownMessage], None] | None = None,
    masker: Masker = NO_MASKING,
) -> SearchResult:
    """Scan ``topic`` within ``spec``'s bounds; every match is shown (decoded) and passed to ``on_match``.
    With ``masker`` (the user's: console.present.masking.masker_for), the query is matched against the masked
    messages and the matches are shown masked. The scan stops, saying why, when it is cancelled, or has taken
    KAZAMI_SEARCH_MAX_SECONDS, or its regular expressions KAZAMI_SEARCH_REGEX_SECONDS.

    Raises QueryError, TopicNotFound, PartitionNotFound, ClusterUnavailable.
    """
    query = parse_query(spec.query)  # its regular expressions compiled once, their time summed over the scan
    query.limit_regex_time(_regex_budget())
    query.stop_at(time.monotonic() + _max_seconds())  # the scan's own deadline, for a slow comparison inside a record
    ranges = plan_scan(
        conn,
        topic,
        spec.partitions,
        start_ms=spec.since_ms,
        stop_ms=spec.until_ms,
        last=spec.last,
        isolation=spec.isolation,
    )
    decoding = decoding_for(cluster, topic)
    result = SearchResult(spec=spec)
    held = 0

    def progress(p: ScanProgress) -> None:
        result.progress = p
        if on_progress is not None:
            on_progress(p)

    for message in scan(
        conn,
        topic,
        ranges,
        predicate_for(query, masker, decoding.registry),
        max_scan=spec.max_scan,
        max_matches=spec.max_matches,
        cancel=cancel,
        on_progress=progress,
        deadline_s=_max_seconds(),
        isolation=spec.isolation,
        report_seconds=PUSH_EVERY,
        # A masked reader sees texts the records do not hold: no probe then (broker.messages.filtering).
        probe=None if masker.active else probe_for(query, framed=_has_registry(decoding.registry)),
    ):
        shown = show(cluster, masker.message(message), decoding)
        result.shown.append(shown)
        held += message.size
        if on_match is not None:
            on_match(shown)
        if held >= messages.PAGE_BYTES:
            result.cut = f"The matches so far hold more than {messages.PAGE_BYTES // (1024 * 1024)} MB; search stopped."
            break
    result.regex_seconds = query.regex_seconds
    if result.progress.stopped in ("deadline", "regex_budget", "cancelled"):
        log.info(
            "search of %s/%s %s; %.1f s, %.1f s in regular expressions",  # not the query: it may hold a secret
            cluster,
            topic,
            result.progress.why,
            result.progress.elapsed,
            result.regex_seconds,
        )
    return result


async def stream_search(to: TaskConsumer, topic: str, spec: SearchSpec, cancel: threading.Event) -> None:
    """:func:`run_search` for the search page's websocket (console.live.consumers.SearchConsumer): the results
    emptied, then the matches and the progress pushed to ``to`` as they come, at most every PUSH_EVERY seconds,
    with the download links at the end. Stops when ``cancel`` is set. Raises KazamiError."""
    pending: list[ShownMessage] = []
    state: dict[str, Any] = {"progress": ScanProgress(), "last_push": 0.0}
    lock = threading.Lock()

    def on_match(shown: ShownMessage) -> None:
        with lock:
            pending.append(shown)

    def on_progress(progress: ScanProgress) -> None:
        state["progress"] = progress
        now = time.monotonic()
        if progress.done or now - state["last_push"] >= PUSH_EVERY:
            state["last_push"] = now
            to.from_thread(_push(to, topic, pending, lock, progress, spec))

    await to.send(
        text_data=message_rows([], "search-results", "innerHTML")
        + render_to_string("messages/_search_progress.html", {"progress": ScanProgress()})
    )
    conn = get_connection(to.cluster)
    user = to.scope["user"]
    # The user's masking, as the search page's: the query sees masked messages only.
    masker = await database_sync_to_async(masker_for)(user, to.cluster, topic)
    who = searcher(user, (to.scope.get("client") or [None])[0])

    def run() -> None:
        # A new search on the same page stops the one before: wait a little for it to give its slot back.
        with search_slot(who, wait=RESTART_WAIT):
            run_search(conn, to.cluster, topic, spec, cancel, on_progress, on_match, masker)

    await to.in_thread(run)


async def _push(
    to: TaskConsumer,
    topic: str,
    pending: list[ShownMessage],
    lock: threading.Lock,
    progress: ScanProgress,
    spec: SearchSpec,
) -> None:
    """The matches found since the last push, and the progress (with the download links once done)."""
    with lock:
        batch = pending[:]
        pending.clear()
    downloads = None
    if progress.done:
        base = reverse("topic-search", kwargs={"cluster": to.cluster, "topic": topic})
        params = spec.as_params()
        downloads = {
            "json": f"{base}?{urlencode({**params, 'format': 'json'})}",
            "csv": f"{base}?{urlencode({**params, 'format': 'csv'})}",
            "link": f"{base}?{urlencode({**params, 'run': '1'})}",
        }
    html: str = render_to_string("messages/_search_progress.html", {"progress": progress, "downloads": downloads})
    if batch:
        html = message_rows(batch, "search-results", "beforeend") + html
    await to.send(text_data=html)
