"""``manage.py run_live CLUSTER``: the process the live analytics query runs in (started by the console)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console.background.live_analytics import run_live_process


class Command(BaseCommand):
    # Django's system checks (URLs, templates, models) were checked by the console that started this process:
    # run again they add to every live query's start.
    requires_system_checks = ()
    help = "Run a cluster's live analytics query (started by the console; not meant to be run by hand)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("cluster")

    def handle(self, *args: Any, **options: Any) -> None:
        run_live_process(options["cluster"])
