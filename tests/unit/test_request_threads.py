"""console.asgi.RequestThreads: the HTTP requests' synchronous work runs on a fixed set of threads, made once and
kept, never one started per request; a request beyond the set waits for a thread rather than adding one, and is
dropped when its client leaves while it waits."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from asgiref.sync import sync_to_async

from console.asgi import GIVEN_EXECUTORS, RequestThreads
from tests.aio import run


class SyncWork:
    """An ASGI app whose request does its work in a thread-sensitive sync_to_async, as Django runs a view; the
    work waits for ``release`` when it is given one."""

    def __init__(self, release: threading.Event | None = None) -> None:
        self.release = release
        self.threads: set[int] = set()
        self.running = 0
        self.most_at_once = 0
        self.done = 0
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()

    def work(self) -> None:
        with self._lock:
            self.threads.add(threading.get_ident())
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        if self.release is not None:
            assert self.release.wait(10), "never released"
        with self._lock:
            self.running -= 1
            self.done += 1

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.bodies.append((await receive())["body"])  # as Django reads the request before its view
        await sync_to_async(self.work)()


HTTP = {"type": "http"}


class Client:
    """The ASGI receive of one request: its body, then nothing until it leaves (``leave``)."""

    def __init__(self, body: bytes = b"") -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.queue.put_nowait({"type": "http.request", "body": body, "more_body": False})

    async def __call__(self) -> dict[str, Any]:
        return await self.queue.get()

    def leave(self) -> None:
        self.queue.put_nowait({"type": "http.disconnect"})


def nothing() -> Client:
    return Client()


async def ignore(message: dict[str, Any]) -> None:
    return None


def test_the_asgiref_in_use_lets_a_context_be_given_its_executor() -> None:
    assert GIVEN_EXECUTORS


def test_many_requests_one_after_another_share_the_threads_made_once() -> None:
    app = SyncWork()
    pooled = RequestThreads(app, size=3)

    async def main() -> None:
        for _ in range(40):
            await pooled(HTTP, nothing(), ignore)

    before = threading.active_count()
    run(main())
    assert app.done == 40
    assert len(app.threads) == 1  # one at a time: the same thread again and again
    assert pooled.made == 1
    assert threading.active_count() <= before + 1  # no thread per request (nor a thread joining it)


def test_requests_beyond_the_set_wait_for_a_thread_rather_than_start_one() -> None:
    release = threading.Event()
    app = SyncWork(release)
    pooled = RequestThreads(app, size=2)

    async def main() -> None:
        requests = [asyncio.create_task(pooled(HTTP, nothing(), ignore)) for _ in range(6)]
        for _ in range(200):  # until the first two run
            if app.running == 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert app.running == 2  # the other four wait on the event loop, in no thread
        release.set()
        await asyncio.gather(*requests)

    run(main())
    assert app.done == 6
    assert app.most_at_once == 2
    assert pooled.made == 2
    assert len(app.threads) == 2


def test_a_request_given_up_while_waiting_passes_its_turn_on() -> None:
    release = threading.Event()
    app = SyncWork(release)
    pooled = RequestThreads(app, size=1)

    async def main() -> None:
        first = asyncio.create_task(pooled(HTTP, nothing(), ignore))
        while app.running == 0:
            await asyncio.sleep(0.01)
        given_up = asyncio.create_task(pooled(HTTP, nothing(), ignore))
        last = asyncio.create_task(pooled(HTTP, nothing(), ignore))
        await asyncio.sleep(0.05)
        given_up.cancel()
        release.set()
        await asyncio.wait_for(asyncio.gather(first, last), timeout=10)
        assert given_up.cancelled()

    run(main())
    assert app.done == 2
    assert pooled.made == 1


def test_websockets_and_other_scopes_pass_through() -> None:
    seen: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    pooled = RequestThreads(app, size=1)
    run(pooled({"type": "websocket"}, nothing(), ignore))
    assert seen == ["websocket"]
    assert pooled.made == 0


def test_a_request_whose_client_leaves_while_it_waits_is_not_worked_on() -> None:
    release = threading.Event()
    app = SyncWork(release)
    pooled = RequestThreads(app, size=1)

    async def main() -> None:
        first = asyncio.create_task(pooled(HTTP, Client(b"first"), ignore))
        while app.running == 0:
            await asyncio.sleep(0.01)
        gone, kept = Client(b"gone"), Client(b"kept")
        left = asyncio.create_task(pooled(HTTP, gone, ignore))
        last = asyncio.create_task(pooled(HTTP, kept, ignore))
        await asyncio.sleep(0.05)
        gone.leave()  # its client gave up (a time-out) while it waited for the thread
        await asyncio.wait_for(left, timeout=10)  # done at once, without a thread
        assert app.done == 0
        release.set()
        await asyncio.wait_for(asyncio.gather(first, last), timeout=10)

    run(main())
    assert app.done == 2
    assert app.bodies == [b"first", b"kept"]  # the waiting request's body, read while it waited, reached the app
