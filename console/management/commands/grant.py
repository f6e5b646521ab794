"""Give a team (a group the identity provider or directory names) scoped roles, or take them away."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from console.access.grants import do_add_grant, parse_grant
from console.models import Grant


class Command(BaseCommand):
    help = "Give TEAM the grants CLUSTER:RESOURCE:GLOB:ROLE (or, with --revoke, take them away)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("team", help="the group's name as the identity provider or directory gives it")
        parser.add_argument("grants", nargs="+", metavar="CLUSTER:RESOURCE:GLOB:ROLE")
        parser.add_argument("--revoke", action="store_true", help="take the grants away instead")

    def handle(self, *args: Any, **options: Any) -> None:
        team = options["team"]
        try:
            parsed = [parse_grant(text) for text in options["grants"]]
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        for g in parsed:
            if options["revoke"]:
                Grant.objects.filter(
                    team=team, cluster=g.cluster, resource=g.kind, pattern=g.pattern, role=g.role
                ).delete()
                self.stdout.write(f"team {team}: {g} taken away.")
            else:
                try:
                    do_add_grant(None, team, str(g))
                except ValueError as exc:
                    raise CommandError(str(exc)) from None
                self.stdout.write(f"team {team}: {g} given.")
