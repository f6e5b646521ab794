"""``/ws/clusters/<c>/brokers/<b>/partitions/<t>/<p>/check/``: reads every segment of a replica whole in the
background (broker.cluster.logdirs.check_replica), pushing progress and findings; {"action": "start"} starts it,
{"action": "stop"} (or closing the page) stops it."""

from __future__ import annotations

import threading
from typing import Any

from django.template.loader import render_to_string

from broker.cluster import logdirs
from console.config.clusters import get_connection
from console.live.tasks import TaskConsumer


class SegmentCheckConsumer(TaskConsumer):
    PROGRESS_TEMPLATE = "disks/_check_progress.html"

    def route(self, kwargs: dict[str, Any]) -> None:
        self.cluster, self.broker = kwargs["cluster"], kwargs["broker"]
        self.topic, self.partition = kwargs["topic"], kwargs["partition"]

    async def on_start(self, data: dict[str, Any]) -> None:
        self.run_task(self._check)

    async def _check(self, cancel: threading.Event) -> None:
        def on_progress(progress: logdirs.CheckProgress) -> None:
            self.from_thread(render_to_string(self.PROGRESS_TEMPLATE, {"progress": progress}))

        def run() -> None:
            pdir = logdirs.replica_dir(get_connection(self.cluster), self.broker, self.topic, self.partition)
            logdirs.check_replica(pdir, on_progress, cancel)

        await self.in_thread(run)
