"""``/ws/clusters/<c>/brokers/<b>/partitions/<t>/<p>/check/``: reads every segment of a replica whole in the
background (broker.cluster.logdirs.check_replica), pushing progress and findings; {"action": "start"} starts it,
{"action": "stop"} (or closing the page) stops it."""

from __future__ import annotations

import asyncio
import json
import threading

from asgiref.sync import sync_to_async
from django.template.loader import render_to_string

from broker.cluster import logdirs
from broker.errors import KazamiError
from console.config.clusters import get_configs, get_connection
from console.live.consumers import CLOSE_UNKNOWN, Rechecked, refusal


class SegmentCheckConsumer(Rechecked):
    cancel: threading.Event | None = None

    async def connect(self) -> None:
        if code := await refusal(self.scope):
            await self.close(code=code)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster, self.broker = kwargs["cluster"], kwargs["broker"]
        self.topic, self.partition = kwargs["topic"], kwargs["partition"]
        if self.cluster not in get_configs():
            await self.close(code=CLOSE_UNKNOWN)
            return
        await self.accept()
        self.start_rechecking()

    async def disconnect(self, code: int) -> None:
        self.stop_rechecking()
        if self.cancel is not None:
            self.cancel.set()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            action = json.loads(text_data or "{}").get("action")
        except ValueError:
            return
        if self.cancel is not None:
            self.cancel.set()
        if action == "start":
            self.cancel = threading.Event()
            asyncio.get_running_loop().create_task(self._run(self.cancel))

    async def _run(self, cancel: threading.Event) -> None:
        loop = asyncio.get_running_loop()

        def on_progress(progress: logdirs.CheckProgress) -> None:
            html = render_to_string("disks/_check_progress.html", {"progress": progress})
            asyncio.run_coroutine_threadsafe(self.send(text_data=html), loop)

        def run() -> None:
            pdir = logdirs.replica_dir(get_connection(self.cluster), self.broker, self.topic, self.partition)
            logdirs.check_replica(pdir, on_progress, cancel)

        try:
            await sync_to_async(run, thread_sensitive=False)()
        except KazamiError as exc:
            await self.send(text_data=render_to_string("disks/_check_progress.html", {"error": str(exc)}))
