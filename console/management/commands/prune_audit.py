"""Delete audit entries older than some days (the audit log is otherwise kept for ever); for cron."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from console.models import AuditEntry


class Command(BaseCommand):
    help = "Delete the audit entries older than --older-than-days DAYS; prints how many."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--older-than-days", type=float, required=True, metavar="DAYS")
        parser.add_argument("--dry-run", action="store_true", help="only count what would be deleted")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than_days"]
        if days < 1:
            raise CommandError("--older-than-days must be at least 1: the audit log is not for throwing away")
        before = timezone.now() - timedelta(days=days)
        old = AuditEntry.objects.filter(at__lt=before)
        if options["dry_run"]:
            self.stdout.write(f"{old.count()} audit entries are older than {before:%Y-%m-%d %H:%M} UTC.")
            return
        deleted, _ = old.delete()
        kept = AuditEntry.objects.count()
        self.stdout.write(f"Deleted {deleted} audit entries older than {before:%Y-%m-%d %H:%M} UTC; {kept} kept.")
