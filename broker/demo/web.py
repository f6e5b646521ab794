"""Web traffic for the demo and the analytics jobs: page views, ad impressions, clicks and shares.

Every event is a JSON object with a ``type`` and ``ts`` (epoch ms); the record key is its
``user_id`` and the record timestamp equals ``ts``:

- ``page_view``: ``user_id``, ``session_id``, ``url``, ``referrer`` and, on a search result
  page (``/search?q=...``), ``keyword`` (the search words; absent on other pages). The
  referrer is an external address on a session's first view ("" when the visitor came
  directly) and the previous page's path on the ones after.
- ``impression``: ``impression_id``, ``ad_id``, ``campaign_id``, ``user_id``, ``url``: an ad
  shown on a page view (same ``ts``, user and url).
- ``click``: ``impression_id``, ``ad_id``, ``campaign_id``, ``user_id``: a click on an
  impression emitted earlier, usually seconds later, sometimes an hour later.
- ``share``: ``user_id``, ``url``, ``network``: a page shared seconds after its view.

The model is small and seeded: a long tail of pages and search words (Zipf-like), a user
population where a few users come back often and most seldom, sessions of a few views, an
ad click rate of a few percent that differs by ad. The same seed and arguments give the same
events.
"""

from __future__ import annotations

import heapq
import json
import math
import multiprocessing
import queue
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from broker.client.connection import live_brokers
from broker.demo.batches import BatchProducer, encode_batches, key_field, topic_leaders
from broker.errors import ClusterUnavailable, KafkaRefused, KazamiError
from broker.messages.partitioners import murmur2_partition
from broker.topics.changes import settled_everywhere

# Shares of page views, and of sessions.
SEARCH_SHARE = 0.12  # page views that are a search result page
IMPRESSION_SHARE = 0.35  # page views that show an ad
SHARE_SHARE = 0.02  # page views shared on a social network
BOUNCE_SHARE = 0.4  # sessions of a single page view
SESSION_MEAN_AFTER_BOUNCE = 6.0  # mean views of the other sessions beyond the first two
CTR_RANGE = (0.005, 0.06)  # each ad's click rate is drawn from this range
LATE_CLICK_SHARE = 0.1  # clicks that come minutes to hours after the impression
SESSION_GAP_S = 40.0  # mean seconds between two views of one session

# Popularity exponents (1 is Zipf's law): pages and words follow it; users less steeply, so that many
# users come once and a few come back very often.
PAGE_SKEW = 1.0
KEYWORD_SKEW = 1.0
USER_SKEW = 0.6
AD_SKEW = 0.5

MAX_SESSIONS = 50_000

_WORDS = (  # noqa: SIM905 - a word list reads best as words
    "kafka spark stream lag broker topic partition offset consumer producer replica leader cluster "
    "schema avro json parquet window join watermark batch checkpoint sink source connector metric alert "
    "dashboard latency throughput retention compaction segment index backup restore upgrade shoes jacket "
    "camera laptop phone charger headphones keyboard monitor desk chair lamp backpack bottle coffee tea "
    "mug notebook pen watch bike helmet tent stove boots socks scarf gloves red blue black white green "
    "cheap best new used small large wireless waterproof organic sale gift review guide tutorial price "
    "delivery return warranty size color vintage premium"
).split()

_CORE_PAGES = ["/", "/products", "/search", "/cart", "/pricing", "/checkout", "/blog", "/docs", "/about", "/login"]

_REFERRERS = (
    ("", 34),
    ("https://www.google.com/", 30),
    ("https://www.bing.com/", 5),
    ("https://duckduckgo.com/", 4),
    ("https://t.co/", 6),
    ("https://www.facebook.com/", 7),
    ("https://www.linkedin.com/", 3),
    ("https://www.reddit.com/", 5),
    ("https://news.ycombinator.com/", 2),
    ("https://mail.example.net/", 4),
)

_NETWORKS = (("twitter", 30), ("facebook", 25), ("whatsapp", 20), ("linkedin", 15), ("reddit", 10))


@dataclass(frozen=True)
class WebEvent:
    """One event as a Kafka record: ``key`` is the user id, ``value`` the JSON event."""

    key: bytes
    value: bytes
    timestamp_ms: int


def _json(text: str) -> bytes:
    return json.dumps(text).encode()


def _weighted(pairs: tuple[tuple[str, int], ...]) -> list[bytes]:
    """A table to draw from with one uniform index: each JSON string as often as its weight says."""
    return [_json(name) for name, weight in pairs for _ in range(weight)]


def _skewed(count: int, skew: float) -> Callable[[float], int]:
    """A function of a uniform draw u in [0, 1) giving a rank in [0, count) with a probability about
    proportional to (rank + 1) ** -skew (the inverse of a truncated Pareto distribution)."""
    if skew == 1.0:
        top = float(count + 1)
        return lambda u: min(int(top**u) - 1, count - 1)
    span = (count + 1) ** (1.0 - skew) - 1.0
    power = 1.0 / (1.0 - skew)
    return lambda u: min(int((1.0 + u * span) ** power) - 1, count - 1)


class _Catalog:
    """What the traffic is made of: pages, search words, ads and users, drawn once from the seed.

    Strings are kept as JSON (quoted bytes) so that events are made by formatting alone."""

    def __init__(self, seed: int, users: int) -> None:
        rng = random.Random(f"web-catalog:{seed}")
        words = list(_WORDS)
        pages = list(_CORE_PAGES)
        pages += [f"/products/{n}" for n in rng.sample(range(100, 100_000), 1200)]
        pages += [f"/category/{w}" for w in rng.sample(words, 40)]
        slugs = {"-".join(rng.sample(words, rng.randint(2, 4))) for _ in range(450)}
        pages += [f"/blog/{s}" for s in sorted(slugs)]
        pages += [f"/docs/{a}/{b}" for a, b in {tuple(rng.sample(words, 2)) for _ in range(220)}]
        tail = pages[len(_CORE_PAGES) :]
        rng.shuffle(tail)
        self.pages = [_json(p) for p in _CORE_PAGES + tail]

        phrases: dict[str, None] = {}
        while len(phrases) < 900:
            phrases[" ".join(rng.sample(words, rng.choice((1, 1, 2, 2, 2, 3))))] = None
        keywords = list(phrases)
        rng.shuffle(keywords)
        self.searches = [(_json("/search?q=" + k.replace(" ", "+")), _json(k)) for k in keywords]

        campaigns = [f"cmp-{n:03d}" for n in range(1, 26)]
        self.ads = [
            (
                b'"ad_id":"ad-%04d","campaign_id":%s' % (n, _json(rng.choice(campaigns))),
                rng.uniform(*CTR_RANGE),
            )
            for n in range(1, 151)
        ]

        width = max(6, len(str(users - 1)))
        self.user_ids = [f"u{n:0{width}d}".encode() for n in range(users)]
        self.user_order = list(range(users))
        rng.shuffle(self.user_order)  # the most active users are spread over the id range
        self.referrers = _weighted(_REFERRERS)
        self.networks = _weighted(_NETWORKS)


_PAGE_VIEW = b'{"type":"page_view","ts":%d,"user_id":"%s","session_id":"%s","url":%s,"referrer":%s}'
_SEARCH_VIEW = b'{"type":"page_view","ts":%d,"user_id":"%s","session_id":"%s","url":%s,"referrer":%s,"keyword":%s}'
_IMPRESSION = b'{"type":"impression","ts":%d,"impression_id":"%s%x",%s,"user_id":"%s","url":%s}'
_CLICK = b'{"type":"click","ts":%d,"impression_id":"%s%x",%s,"user_id":"%s"}'
_SHARE = b'{"type":"share","ts":%d,"user_id":"%s","url":%s,"network":%s}'


class _Session:
    """An open session: its user (number), id, the referrer of its next view (JSON), the views left."""

    __slots__ = ("id", "left", "referrer", "user")

    def __init__(self, user: int, session_id: bytes, referrer: bytes, left: int) -> None:
        self.user, self.id, self.referrer, self.left = user, session_id, referrer, left


class WebTraffic:
    """A stateful source of web events: sessions stay open and late clicks stay due from one call of
    :meth:`events` to the next, so calls for consecutive windows of time make one continuous stream.

    ``users_where`` keeps only the users whose key (user id as bytes) it accepts: workers that split the
    users between them (e.g. by partition) each simulate their own, and together a whole population.
    ``rate`` (events a second) sizes the number of open sessions once; without it, each call sizes them
    from its own count and window. Workers sharing a seed give each a ``stream`` number of its own: it
    seeds their draws and their session and impression ids (``s-<stream tag>-<n>``, ``i-<stream tag>-<n>``)."""

    def __init__(
        self,
        seed: int = 7,
        users: int = 10_000,
        users_where: Callable[[bytes], bool] | None = None,
        rate: float | None = None,
        stream: int = 0,
    ) -> None:
        if users < 1:
            raise ValueError("users must be at least 1")
        self.catalog = catalog = _Catalog(seed, users)
        order = [u for u in catalog.user_order if users_where is None or users_where(catalog.user_ids[u])]
        if not order:
            raise ValueError("no user is left by users_where")
        self._order = order
        self._rate = rate
        self._rng = random.Random(f"web-stream:{seed}:{stream}")
        self._tag = b"%08x" % self._rng.getrandbits(32)
        self._sessions: list[_Session] = []
        self._session_count = 0
        self._impression_count = 0
        self._due: list[tuple[int, int, int, bytes]] = []  # (ts, sequence, user, value): clicks and shares
        self._due_count = 0
        self._pick_user = _skewed(len(order), USER_SKEW)
        self._pick_page = _skewed(len(catalog.pages), PAGE_SKEW)
        self._pick_search = _skewed(len(catalog.searches), KEYWORD_SKEW)
        self._pick_ad = _skewed(len(catalog.ads), AD_SKEW)

    @property
    def keys(self) -> list[bytes]:
        """Record keys (user ids as bytes) by the user numbers that :meth:`events` returns."""
        return self.catalog.user_ids

    def _new_session(self) -> _Session:
        rng = self._rng
        self._session_count += 1
        views = 1
        if rng.random() >= BOUNCE_SHARE:
            views = 2 + int(-math.log(1.0 - rng.random()) * SESSION_MEAN_AFTER_BOUNCE)
        referrers = self.catalog.referrers
        return _Session(
            self._order[self._pick_user(rng.random())],
            b"s-%s-%x" % (self._tag, self._session_count),
            referrers[int(rng.random() * len(referrers))],
            views,
        )

    def _resize(self, sessions: int) -> None:
        del self._sessions[sessions:]
        while len(self._sessions) < sessions:
            self._sessions.append(self._new_session())

    def events(self, count: int, start_ms: int, end_ms: int) -> list[tuple[int, int, bytes]]:
        """About ``count`` events with timestamps in [start_ms, end_ms), oldest first, as
        (timestamp ms, user number, JSON value); ``keys[user number]`` is the record key.

        Page views are spread evenly (with jitter) over the window, sized so that with the impressions,
        clicks and shares they come to ``count``; the list stops once it holds ``count`` events, or a
        few more (an impression is never cut from its page view), and holds every click and share due
        before ``end_ms``. Later ones are kept for the next window. Raises ValueError when the window
        is empty."""
        if end_ms <= start_ms:
            raise ValueError("end_ms must be after start_ms")
        out: list[tuple[int, int, bytes]] = []
        if count <= 0:
            return out
        mean_ctr = sum(ctr for _, ctr in self.catalog.ads) / len(self.catalog.ads)
        per_view = 1.0 + IMPRESSION_SHARE * (1.0 + mean_ctr) + SHARE_SHARE
        views = count / per_view
        step = (end_ms - start_ms) / views
        views_per_s = self._rate / per_view if self._rate else views / (end_ms - start_ms) * 1000
        self._resize(max(1, min(MAX_SESSIONS, round(views_per_s * SESSION_GAP_S))))

        rng = self._rng
        rand = rng.random
        catalog = self.catalog
        user_ids = catalog.user_ids
        pages, searches, ads, networks = catalog.pages, catalog.searches, catalog.ads, catalog.networks
        pick_page, pick_search, pick_ad = self._pick_page, self._pick_search, self._pick_ad
        sessions = self._sessions
        n_sessions = len(sessions)
        n_networks = len(networks)
        due = self._due
        push, pop = heapq.heappush, heapq.heappop
        append = out.append
        impression_prefix = b"i-%s-" % self._tag
        impressions = self._impression_count
        due_count = self._due_count
        last = end_ms - 1
        index = 0
        while len(out) < count:
            ts = start_ms + int((index + rand()) * step)
            index += 1
            if ts > last:
                ts = last
            while due and due[0][0] <= ts:
                entry = pop(due)
                append((entry[0], entry[2], entry[3]))
            slot = int(rand() * n_sessions)
            session = sessions[slot]
            user = session.user
            uid = user_ids[user]
            if rand() < SEARCH_SHARE:
                url, keyword = searches[pick_search(rand())]
                append((ts, user, _SEARCH_VIEW % (ts, uid, session.id, url, session.referrer, keyword)))
            else:
                url = pages[pick_page(rand())]
                append((ts, user, _PAGE_VIEW % (ts, uid, session.id, url, session.referrer)))
            if session.left <= 1:
                sessions[slot] = self._new_session()
            else:
                session.referrer = url
                session.left -= 1
            r = rand()
            if r < IMPRESSION_SHARE:
                impressions += 1
                ad, ctr = ads[pick_ad(rand())]
                append((ts, user, _IMPRESSION % (ts, impression_prefix, impressions, ad, uid, url)))
                if r < IMPRESSION_SHARE * ctr:
                    if rand() < LATE_CLICK_SHARE:
                        delay = 60_000 + int(rand() * 7_140_000)
                    else:
                        delay = 300 + int(-math.log(1.0 - rand()) * 6_000)
                    due_count += 1
                    click = _CLICK % (ts + delay, impression_prefix, impressions, ad, uid)
                    push(due, (ts + delay, due_count, user, click))
            elif r > 1.0 - SHARE_SHARE:
                delay = 1_000 + int(-math.log(1.0 - rand()) * 20_000)
                due_count += 1
                share = _SHARE % (ts + delay, uid, url, networks[int(rand() * n_networks)])
                push(due, (ts + delay, due_count, user, share))
        while due and due[0][0] < end_ms:
            entry = pop(due)
            append((entry[0], entry[2], entry[3]))
        self._impression_count = impressions
        self._due_count = due_count
        return out


def web_events(count: int, start_ms: int, end_ms: int, seed: int = 7, users: int = 10_000) -> Iterator[WebEvent]:
    """Exactly ``count`` web events (fewer only when ``count`` < 1) with timestamps in [start_ms, end_ms),
    oldest first, from ``users`` users; the same arguments give the same events.

    Clicks and shares due after ``end_ms`` are left out. Raises ValueError when the window is empty or
    ``users`` < 1."""
    traffic = WebTraffic(seed, users)
    keys = traffic.keys
    for ts, user, value in traffic.events(count, start_ms, end_ms)[:count]:
        yield WebEvent(key=keys[user], value=value, timestamp_ms=ts)


def ensure_topic(servers: list[str], topic: str, partitions: int = 6, configs: dict[str, str] | None = None) -> bool:
    """Create ``topic`` unless it exists: ``partitions`` partitions, min(3, brokers) replicas. Returns
    whether it was created. Raises ClusterUnavailable when the brokers do not answer, KafkaRefused
    when they refuse the topic."""
    try:
        admin = KafkaAdminClient(bootstrap_servers=servers, client_id="kazami-web", bootstrap_timeout_ms=10_000)
    except kafka.errors.KafkaError as exc:
        raise ClusterUnavailable(f"Cannot reach {','.join(servers)}: {exc}") from None
    try:
        if topic in admin.list_topics():
            return False
        replicas = min(3, len(live_brokers(admin)))
        try:
            admin.create_topics([NewTopic(topic, partitions, replicas, topic_configs=configs or {})])
        except kafka.errors.TopicAlreadyExistsError:
            return False
        admin.wait_for_topics([topic], timeout_ms=30_000)
        settled_everywhere(admin, [topic], 30, partitions)
        return True
    except kafka.errors.KafkaError as exc:
        raise KafkaRefused(f"Cannot create topic {topic}: {exc}") from None
    finally:
        admin.close()


@dataclass(frozen=True)
class Written:
    """What a run wrote: events and the seconds it took."""

    events: int
    seconds: float

    @property
    def rate(self) -> float:
        """Events a second."""
        return self.events / self.seconds if self.seconds > 0 else 0.0


CHUNK_EVENTS = 20_000  # events a worker makes, encodes and sends at a time


class _Router:
    """Makes a worker's events into batches per partition: the partition of each user is Kafka's default
    partitioner's for its key. With ``workers`` > 1, worker ``worker`` keeps the users of the partitions
    p with p % workers == worker, so that every partition has one writer and stays in time order."""

    def __init__(self, partitions: int, worker: int = 0, workers: int = 1) -> None:
        self.partitions = partitions
        self._worker, self._workers = worker, workers
        self._of: dict[bytes, int] = {}
        self._route: list[int] = []
        self._key_fields: list[bytes] = []

    def mine(self, key: bytes) -> bool:
        """Whether ``key``'s user belongs to this worker (pass as WebTraffic's ``users_where``)."""
        partition = self._of[key] = murmur2_partition(key, self.partitions)
        return partition % self._workers == self._worker

    def attach(self, keys: list[bytes]) -> None:
        """Learn the keys by user number (WebTraffic.keys)."""
        of, partitions = self._of, self.partitions
        self._route = [of[k] if k in of else murmur2_partition(k, partitions) for k in keys]
        self._key_fields = [key_field(k) for k in keys]

    def batches(self, events: list[tuple[int, int, bytes]]) -> dict[int, list[bytes]]:
        """{partition: record batches} for ``events`` (from WebTraffic.events), each batch in time order."""
        buckets: list[list[tuple[int, int, bytes]]] = [[] for _ in range(self.partitions)]
        route = self._route
        for event in events:
            buckets[route[event[1]]].append(event)
        return {p: encode_batches(bucket, self._key_fields) for p, bucket in enumerate(buckets) if bucket}


@dataclass(frozen=True)
class _Share:
    """One worker's part of a backfill: ``count`` events of the users of its partitions."""

    servers: list[str]
    topic: str
    count: int
    start_ms: int
    end_ms: int
    seed: int
    users: int
    worker: int
    workers: int
    acks: int


def _backfill_share(share: _Share, progress: Callable[[int], None]) -> int:
    """One worker's part of :func:`backfill`: ``count`` events of its users. Returns the events written."""
    count, start_ms = share.count, share.start_ms
    producer = BatchProducer(share.servers, share.topic, acks=share.acks)
    try:
        router = _Router(producer.partitions, share.worker, share.workers)
        mine = router.mine if share.workers > 1 else None
        traffic = WebTraffic(share.seed, share.users, users_where=mine, stream=share.worker)
        router.attach(traffic.keys)
        chunks = max(1, math.ceil(count / CHUNK_EVENTS))
        span = share.end_ms - start_ms
        written = 0
        for chunk in range(chunks):
            want = count * (chunk + 1) // chunks - written
            low, high = start_ms + span * chunk // chunks, start_ms + span * (chunk + 1) // chunks
            if want <= 0 or high <= low:
                continue
            events = traffic.events(want, low, high)
            if chunk == chunks - 1:
                del events[count - written :]
            producer.send(router.batches(events))
            written += len(events)
            progress(len(events))
        producer.flush()
        return written
    finally:
        producer.close()


def _backfill_worker(share: _Share, reports: Any) -> None:
    """A worker process of :func:`backfill`: reports ("progress", n), then ("done", n) or ("error", the
    error to raise)."""
    try:
        written = _backfill_share(share, lambda n: reports.put(("progress", n)))
        reports.put(("done", written))
    except KazamiError as exc:
        reports.put(("error", exc))
    except Exception as exc:  # noqa: BLE001 - any failure is reported to the parent, which raises it
        reports.put(("error", ClusterUnavailable(f"A backfill worker failed: {type(exc).__name__}: {exc}")))


def backfill(
    servers: list[str],
    topic: str,
    count: int,
    span_ms: int,
    end_ms: int | None = None,
    seed: int = 7,
    users: int = 10_000,
    workers: int = 1,
    acks: int = 1,
    progress: Callable[[int, float], None] | None = None,
) -> Written:
    """Write ``count`` web events with timestamps spread over the ``span_ms`` before ``end_ms`` (now by
    default) into ``topic`` (which must exist), keyed by user, lz4-compressed.

    With ``workers`` > 1, that many processes (at most one a partition) share the work, each writing
    the users of its own partitions and a share of the events in proportion (the events then depend on
    ``workers`` too). ``progress(events so far, seconds)`` is called as the work goes. Returns what was
    written. Raises ClusterUnavailable, TopicNotFound or KafkaRefused."""
    end = end_ms if end_ms is not None else int(time.time() * 1000)
    start = end - span_ms
    started = time.monotonic()
    report = progress or (lambda _n, _s: None)
    if workers <= 1:
        done = 0

        def step(n: int) -> None:
            nonlocal done
            done += n
            report(done, time.monotonic() - started)

        written = _backfill_share(_Share(servers, topic, count, start, end, seed, users, 0, 1, acks), step)
        return Written(written, time.monotonic() - started)

    partitions = len(topic_leaders(servers, topic)[1])
    workers = min(workers, partitions)
    context = multiprocessing.get_context("spawn")  # the parent may hold kafka-python's I/O threads
    reports = context.Queue()
    processes = []
    owned = 0  # partitions of the workers before this one
    for worker in range(workers):
        mine = len(range(worker, partitions, workers))
        part = count * (owned + mine) // partitions - count * owned // partitions
        owned += mine
        share = _Share(servers, topic, part, start, end, seed, users, worker, workers, acks)
        processes.append(context.Process(target=_backfill_worker, args=(share, reports), daemon=True))
    for process in processes:
        process.start()
    written = finished = 0
    try:
        while finished < workers:
            try:
                kind, value = reports.get(timeout=1.0)
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in processes):
                    raise ClusterUnavailable("a backfill worker process died") from None
                continue
            if kind == "error":
                raise value
            if kind == "progress":
                written += value
                report(written, time.monotonic() - started)
            else:
                finished += 1
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join(timeout=10)
    return Written(written, time.monotonic() - started)


def live(
    servers: list[str],
    topic: str,
    rate: float,
    duration_s: float | None = None,
    seed: int | None = None,
    users: int = 10_000,
    progress: Callable[[int, float], None] | None = None,
    every_s: float = 0.2,
) -> Written:
    """Write web events into ``topic`` at ``rate`` events a second with timestamps of now (each
    ``every_s`` the events of the moment just past), for ``duration_s`` seconds or until
    KeyboardInterrupt. Returns what was written. Raises ClusterUnavailable, TopicNotFound or KafkaRefused."""
    traffic = WebTraffic(seed if seed is not None else time.time_ns(), users, rate=rate)
    producer = BatchProducer(servers, topic, acks=1)
    router = _Router(producer.partitions)
    router.attach(traffic.keys)
    report = progress or (lambda _n, _s: None)
    started = time.monotonic()
    previous = int(time.time() * 1000)
    written = 0
    owed = 0.0
    try:
        while duration_s is None or time.monotonic() - started < duration_s:
            time.sleep(max(0.0, every_s - (time.time() * 1000 - previous) / 1000))
            now = int(time.time() * 1000)
            if now <= previous:
                continue
            owed += rate * (now - previous) / 1000
            if owed >= 1:
                events = traffic.events(int(owed), previous, now)
                owed -= len(events)
                producer.send(router.batches(events))
                written += len(events)
                report(written, time.monotonic() - started)
            previous = now
    except KeyboardInterrupt:
        pass
    finally:
        try:
            producer.flush()
        finally:
            producer.close()
    return Written(written, time.monotonic() - started)
