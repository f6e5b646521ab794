"""Create a user with a role and grants, or change an existing user's role and add grants, from the command line."""

from __future__ import annotations

import sys
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from console.access import ROLES, set_role
from console.access.grants import do_add_grant, parse_grant


class Command(BaseCommand):
    help = (
        "Create USERNAME (password read from stdin) with --role and/or --grant, or change an existing user's role "
        "and add grants."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=list(ROLES), help="a global role (on every cluster)")
        parser.add_argument(
            "--grant",
            action="append",
            default=[],
            metavar="CLUSTER:RESOURCE:GLOB:ROLE",
            help="a scoped role, e.g. local:topic:orders.*:operator (repeatable; RESOURCE is cluster, topic, group, "
            "connector or subject)",
        )
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from stdin; it must pass the password policy (docs/operations.md)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name, role, wanted = options["username"], options["role"], options["grant"]
        for text in wanted:  # every grant checked before anything is stored
            try:
                parse_grant(text)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        user = User.objects.filter(username=name).first()
        if user is None and not role and not wanted:
            raise CommandError("a new user needs --role or --grant (or both)")
        if user is None and not options["password_stdin"]:
            raise CommandError("a new user needs --password-stdin (the password, on stdin)")
        with transaction.atomic():
            if user is None:
                password = sys.stdin.readline().rstrip("\n")
                try:
                    validate_password(password, User(username=name))
                except ValidationError as exc:
                    raise CommandError("the password is refused: " + " ".join(exc.messages)) from None
                user = User.objects.create_user(name, password=password)
                verb = "Created"
            else:
                verb = "Updated"
            if role:
                set_role(user, role)
            for text in wanted:
                do_add_grant(user, "", text)
        given = [f"role {role}"] if role else []
        given += [f"grant {g}" for g in wanted]
        self.stdout.write(f"{verb} {name}: {', '.join(given) or 'nothing changed'}.")
