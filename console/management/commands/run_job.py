"""``manage.py run_job ID``: the process an analytics job runs in (console/background/jobs.py starts it;
console/background/job_process.py is what it runs)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console.background.job_process import run_job_process


class Command(BaseCommand):
    # Django's system checks (URLs, templates, models) were checked by the console that started this process:
    # run again they add to every job's start.
    requires_system_checks = ()
    help = "Run one queued analytics job (started by the console; not meant to be run by hand)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        run_job_process(options["job_id"])
