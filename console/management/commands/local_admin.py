"""First start of a local console: create the user ``admin`` (admin role) and say how to log in."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from console.access import ADMIN, set_role


class Command(BaseCommand):
    help = "Create the user 'admin' with a random password (kept in var/admin-password) when there is no user."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8888/", help="where the console is served")

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["url"].rstrip("/") + "/login/"
        path = settings.VAR_DIR / "admin-password"
        if settings.KAZAMI_ANONYMOUS_READ:
            self.stdout.write("  Anonymous visitors may read (KAZAMI_ANONYMOUS_READ=1); log in to change anything.")
        if not User.objects.exists():
            password = secrets.token_urlsafe(12)
            user = User.objects.create_user("admin", password=password)
            set_role(user, ADMIN)
            settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
            path.write_text(password + "\n")
            path.chmod(0o600)
            self.stdout.write(f"  Created the user admin. Log in at {url} as admin with password {password}")
            self.stdout.write(f"  (the password is kept in {path}; add users on the Users page).")
        elif path.exists() and User.objects.filter(username="admin").exists():
            self.stdout.write(f"  Log in at {url} as admin; the password is in {path}.")
        else:
            self.stdout.write(f"  Log in at {url} (users are managed on the Users page).")
