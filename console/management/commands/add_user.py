"""Create a user with a role, or give an existing user another role, from the command line."""

from __future__ import annotations

import sys
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from console.access import ROLES, set_role


class Command(BaseCommand):
    help = "Create USERNAME (password read from stdin) with --role, or change an existing user's role."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=list(ROLES), required=True)
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from stdin; it must pass the password policy (docs/operations.md)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["username"]
        user = User.objects.filter(username=name).first()
        if user is None:
            if not options["password_stdin"]:
                raise CommandError("a new user needs --password-stdin (the password, on stdin)")
            password = sys.stdin.readline().rstrip("\n")
            try:
                validate_password(password, User(username=name))
            except ValidationError as exc:
                raise CommandError("the password is refused: " + " ".join(exc.messages)) from None
            user = User.objects.create_user(name, password=password)
            verb = "Created"
        else:
            verb = "Updated"
        set_role(user, options["role"])
        self.stdout.write(f"{verb} {name}: role {options['role']}.")
