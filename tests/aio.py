"""Run a coroutine to its end from a test, whatever the test's thread already runs.

A session's Playwright (the browser tests' sync API) leaves its event loop marked as running in the main thread
between its calls, so ``asyncio.run`` there fails once the browser tests have run in the same session. The
coroutine runs in a thread of its own, with a loop of its own; its answer or its error comes back."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T], timeout: float = 120) -> T:
    answer: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            answer.append(asyncio.run(coro))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test as it was raised
            error.append(exc)

    thread = threading.Thread(target=target, name="test-asyncio-run", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"the coroutine did not end in {timeout} s")
    if error:
        raise error[0]
    return answer[0]
