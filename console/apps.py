from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Kazami console"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from console.access import ensure_roles

        # After every migrate (and every test-database flush), the roles match console.access.ROLES.
        post_migrate.connect(ensure_roles, sender=self, dispatch_uid="kazami-roles")
