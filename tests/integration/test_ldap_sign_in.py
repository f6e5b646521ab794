"""LDAP sign-in through the console's login form, against a real OpenLDAP (Debian's slapd, run by the test over
StartTLS with its own CA: tests/ldap_server.py), with the directory's groups mapped to roles (issue 33).

A directory group that maps to no role may carry grants (a team): its members sign in and see only what they reach.

Refused: a wrong password, an unknown user, an empty password, a user in no mapped group, a user an admin disabled
here, and a directory user named like a local account (the local password still logs in; the directory's does
not)."""

from __future__ import annotations

import json
import re
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.local import launcher
from console.devserver import ServedConsole, console_process
from tests import ldap_server
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique
from tests.integration.test_hostile_input import Session, anonymous

pytestmark = [pytest.mark.kafka, pytest.mark.zookeeper("LDAP sign-in does not depend on the cluster's mode: run once")]

ADMIN = ("local-admin", "kz-Local-Admin-Pass-3!")
LOCAL = ("carol", "kz-Carols-Local-Pass-6!")
PEOPLE = {
    "alice": "alice-directory-pw-1",
    "dave": "dave-directory-pw-2",
    "erin": "erin-directory-pw-3",
    "frank": "frank-directory-pw-4",
    LOCAL[0]: "carol-directory-pw-5",
    "gina": "gina-directory-pw-6",
}
GROUPS = {
    "kafka-ops": ["alice", "frank", LOCAL[0]],
    "kafka-admins": ["dave"],
    "interns": ["erin"],
    "payments": ["gina"],  # in no role map: what the team's grants give, once it has some
}


@pytest.fixture(scope="module")
def console(kafka_cluster: launcher.ClusterLayout) -> Iterator[ServedConsole]:
    with ldap_server.directory(PEOPLE, GROUPS) as directory:
        settings = {
            "KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP,
            "KAZAMI_CLUSTERS_FILE": "",
            "KAZAMI_LAG_SAMPLER": "0",
            "KAZAMI_LDAP_URL": directory.url,
            "KAZAMI_LDAP_START_TLS": "1",
            "KAZAMI_LDAP_CA_FILE": str(directory.ca_file),
            "KAZAMI_LDAP_USER_BASE": ldap_server.PEOPLE,
            "KAZAMI_LDAP_GROUP_BASE": ldap_server.GROUPS,
            "KAZAMI_LDAP_ROLE_MAP": "kafka-admins=admin,kafka-ops=operator",
        }
        users = {ADMIN[0]: ("admin", ADMIN[1]), LOCAL[0]: ("viewer", LOCAL[1])}
        with (
            tempfile.TemporaryDirectory(prefix="kazami-ldap-console-") as var,
            console_process(Path(var), settings, users) as served,
        ):
            yield served


def try_login(console: ServedConsole, username: str, password: str) -> tuple[Session, int]:
    """A login through the form; (the session, the answer's status: 302 signed in, 200 the form again, saying the
    name and password do not match)."""
    session = anonymous(console)
    form = session.send("GET", "/login/").body.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    data = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token[1]})
    answer = session.send("POST", "/login/", data.encode(), "application/x-www-form-urlencoded")
    if answer.status == 200:
        assert "do not match an active account" in answer.body.decode()
    return session, answer.status


def who(session: Session) -> str:
    """The name and role the page header shows ("" when not signed in): the Users page (403 but for admins)."""
    page = session.send("GET", "/users/").body.decode()
    found = re.search(r'<span class="who"[^>]*>([^<]*)</span>', page)
    return found[1] if found else ""


def test_a_directory_user_signs_in_with_the_role_its_group_maps_to(console: ServedConsole) -> None:
    session, status = try_login(console, "alice", PEOPLE["alice"])
    assert status == 302
    assert who(session) == "alice · operator"
    admin, status = try_login(console, "dave", PEOPLE["dave"])
    assert status == 302
    assert who(admin) == "dave · admin"
    assert admin.send("GET", "/users/").status == 200
    assert session.send("GET", "/users/").status == 403


@pytest.mark.parametrize(
    ("username", "password"),
    [
        ("alice", "not-her-password"),  # a wrong password
        ("nobody", "whatever-it-is-1"),  # an unknown user
        ("erin", PEOPLE["erin"]),  # in no group the role map names
    ],
    ids=["wrong-password", "unknown-user", "no-mapped-group"],
)
def test_refused_sign_ins_stay_on_the_form(console: ServedConsole, username: str, password: str) -> None:
    session, status = try_login(console, username, password)
    assert status == 200
    assert who(session) == ""


def test_a_user_an_admin_disabled_here_is_refused_with_the_right_password(console: ServedConsole) -> None:
    _, status = try_login(console, "frank", PEOPLE["frank"])
    assert status == 302
    admin, _ = try_login(console, *ADMIN)
    page = admin.send("GET", "/users/").body.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    body = urllib.parse.urlencode({"role": "operator", "csrfmiddlewaretoken": token[1]})  # "active" left unticked
    changed = admin.send("POST", "/users/frank/", body.encode(), "application/x-www-form-urlencoded")
    assert changed.status in (200, 302), changed.body[:300]
    _, status = try_login(console, "frank", PEOPLE["frank"])
    assert status == 200


def test_a_directory_user_named_like_a_local_account_cannot_sign_in_as_it(console: ServedConsole) -> None:
    _, status = try_login(console, LOCAL[0], PEOPLE[LOCAL[0]])
    assert status == 200  # the directory's password is not the local account's
    session, status = try_login(console, *LOCAL)
    assert status == 302
    assert who(session) == "carol · viewer"  # the local account, its own role (not the directory group's)


def test_an_empty_password_is_never_an_anonymous_bind(console: ServedConsole) -> None:
    session = anonymous(console)
    form = session.send("GET", "/login/").body.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    data = urllib.parse.urlencode({"username": "alice", "password": "", "csrfmiddlewaretoken": token[1]})
    answer = session.send("POST", "/login/", data.encode(), "application/x-www-form-urlencoded")
    assert answer.status == 200
    assert who(session) == ""


def test_a_directory_group_with_a_grant_signs_its_members_in_to_what_the_grant_reaches(console: ServedConsole) -> None:
    ours, theirs = unique("pay"), unique("ledger")
    for topic in (ours, theirs):
        create_topic(topic, partitions=1, replication=1)
    _, status = try_login(console, "gina", PEOPLE["gina"])
    assert status == 200  # no role and no grant yet
    admin, _ = try_login(console, *ADMIN)
    page = admin.send("GET", "/users/").body.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    grant = {"team": "payments", "cluster": "local", "resource": "topic", "pattern": "pay-*", "role": "operator"}
    body = urllib.parse.urlencode({**grant, "csrfmiddlewaretoken": token[1]})
    given = admin.send("POST", "/users/grants/", body.encode(), "application/x-www-form-urlencoded")
    assert given.status == 302, given.body[:300]
    session, status = try_login(console, "gina", PEOPLE["gina"])
    assert status == 302
    listed = json.loads(session.send("GET", "/api/clusters/local/topics/").body)["topics"]
    names = {t["name"] for t in listed}
    assert ours in names
    assert theirs not in names
    assert all(n.startswith("pay-") for n in names)
    assert session.send("GET", f"/api/clusters/local/topics/{theirs}/").status == 404
    assert session.send("GET", "/clusters/local/brokers/configs/").status == 403
