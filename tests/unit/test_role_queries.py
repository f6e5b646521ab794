"""What a request pays to know a user's role: one query for its role groups, whatever how many permissions the
page asks about; and a role changed elsewhere applies to the next user object (the next request)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.access import ROLES, ensure_roles, has, role_of, set_role


@pytest.mark.django_db
def test_every_permission_and_the_role_of_a_request_cost_one_query() -> None:
    ensure_roles()
    user = User.objects.create_user("olga", password="long-enough-1")
    set_role(user, "operator")
    fresh = User.objects.get(pk=user.pk)  # as a request loads it
    every = sorted({p for perms in ROLES.values() for p in perms})
    with CaptureQueriesContext(connection) as queries:
        answers = {p: has(fresh, p) for p in every}
        assert role_of(fresh) == "operator"
    assert len(queries) == 1, [q["sql"] for q in queries.captured_queries]
    assert {p for p, yes in answers.items() if yes} == set(ROLES["operator"])
    # The same answers as Django's own permission check on the role groups.
    assert answers == {p: User.objects.get(pk=user.pk).has_perm(f"console.{p}") for p in every}


@pytest.mark.django_db
def test_a_role_changed_by_another_request_applies_to_the_next_one() -> None:
    ensure_roles()
    user = User.objects.create_user("piet", password="long-enough-1")
    set_role(user, "admin")
    seen = User.objects.get(pk=user.pk)
    assert has(seen, "delete_topics")
    set_role(User.objects.get(pk=user.pk), "viewer")  # an admin's request, on its own user object
    assert not has(User.objects.get(pk=user.pk), "delete_topics")
    seen.refresh_from_db()
    assert (role_of(seen), has(seen, "delete_topics"), has(seen, "view_console")) == ("viewer", False, True)
    set_role(seen, "operator")  # on the same object: asked again at once
    assert role_of(seen) == "operator"


@pytest.mark.django_db
def test_inactive_users_hold_nothing_and_superusers_everything() -> None:
    ensure_roles()
    boss = User.objects.create_superuser("boss", password="long-enough-2")
    assert all(has(boss, p) for p in ROLES["admin"])
    assert role_of(boss) == "admin"
    gone = User.objects.create_user("gone", password="long-enough-3")
    set_role(gone, "admin")
    gone.is_active = False
    gone.save()
    assert not has(User.objects.get(pk=gone.pk), "view_console")
