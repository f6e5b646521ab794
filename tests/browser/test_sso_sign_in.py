"""Single sign-on through a real OpenID Connect provider, in Chromium (issue 33): the console sends the browser to
the provider (authorization code with PKCE), a person signs in there, and the provider's group claim becomes the
Kazami role. The provider (mock-oauth2-server, tests/oidc_provider.py) is run by the test; its login page takes a
user name and the claims to sign, as a company's provider would take a password.

A group the role map does not name may carry grants (a team): given on the Users page, they are what its members
see once they sign in.

Refused: a user whose groups map to no role, a provider's user named like a local account (no takeover), and local
password logins when sign-on is the only way in, except the break-glass admin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.local import launcher
from console.devserver import running_console
from tests import oidc_provider
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("single sign-on does not depend on the cluster's mode: run once"),
]

BREAK_GLASS = ("breakglass", "kz-Break-Glass-Admin-4!")
LOCAL = ("carol", "kz-Carols-Own-Password-8!")


@pytest.fixture(scope="module")
def sso_console(kafka_cluster: launcher.ClusterLayout, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with oidc_provider.provider() as issuer:
        settings = {
            "KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP,
            "KAZAMI_CLUSTERS_FILE": "",
            "KAZAMI_LAG_SAMPLER": "0",
            "KAZAMI_OIDC_ISSUER": issuer,
            "KAZAMI_OIDC_CLIENT_ID": "kazami-console",
            "KAZAMI_OIDC_CLIENT_SECRET": "kazami-console-secret",
            "KAZAMI_OIDC_ROLE_MAP": "kafka-admins=admin,kafka-operators=operator,kafka-readers=viewer",
            "KAZAMI_OIDC_ONLY": "1",
            "KAZAMI_OIDC_LOCAL_USERS": BREAK_GLASS[0],
            "KAZAMI_OIDC_NAME": "Example SSO",
        }
        users = {BREAK_GLASS[0]: ("admin", BREAK_GLASS[1]), LOCAL[0]: ("operator", LOCAL[1])}
        with running_console(tmp_path_factory.mktemp("sso-console"), settings, users) as url:
            yield url


def sign_in_at_provider(page: Any, console: str, username: str, groups: list[str]) -> None:
    """From the console's login page through the provider's login form, as a person would."""
    page.goto(f"{console}/login/")
    page.click("#sso-start")
    page.wait_for_selector("textarea[name=claims]")
    assert not page.url.startswith(console), page.url  # at the provider now
    page.fill("input[name=username]", username)
    claims = {"preferred_username": username, "groups": groups, "email": f"{username}@example.com"}
    page.fill("textarea[name=claims]", json.dumps(claims))
    page.click("input[type=submit]")
    page.wait_for_url(f"{console}/**")


def test_a_provider_user_signs_in_with_the_role_its_group_maps_to_and_logs_out(
    browser: Any, sso_console: str, artifacts: Path
) -> None:
    page = browser.new_page()
    try:
        sign_in_at_provider(page, sso_console, "alice", ["staff", "kafka-operators"])
        page.goto(f"{sso_console}/clusters/local/topics/")
        who = page.text_content(".who") or ""
        assert "alice" in who
        assert "operator" in who
        page.screenshot(path=str(artifacts / "sso-signed-in.png"), full_page=True)
        assert page.goto(f"{sso_console}/users/").status == 403  # the Users page is an admin's
        page.goto(f"{sso_console}/clusters/local/topics/")
        page.click("text=Log out")
        page.wait_for_url(f"{sso_console}/login/")  # by way of the provider's end of session
        page.goto(f"{sso_console}/clusters/local/topics/")
        assert "/login/" in page.url  # signed out here (and at the provider)
    finally:
        page.close()


def test_the_providers_groups_decide_again_at_every_sign_in(browser: Any, sso_console: str) -> None:
    page = browser.new_page()
    try:
        sign_in_at_provider(page, sso_console, "bob", ["kafka-readers"])
        page.goto(f"{sso_console}/clusters/local/topics/")
        assert "viewer" in (page.text_content(".who") or "")
        page.context.clear_cookies()
        sign_in_at_provider(page, sso_console, "bob", ["kafka-admins"])
        assert page.goto(f"{sso_console}/users/").status == 200
        assert "admin" in (page.text_content(".who") or "")
    finally:
        page.close()


def test_a_user_whose_groups_map_to_no_role_is_refused(browser: Any, sso_console: str, artifacts: Path) -> None:
    page = browser.new_page()
    try:
        sign_in_at_provider(page, sso_console, "mallory", ["interns"])
        assert "/login/" in page.url
        assert page.is_visible("#sso-refused")
        page.screenshot(path=str(artifacts / "sso-refused.png"), full_page=True)
        page.goto(f"{sso_console}/clusters/local/topics/")
        assert "/login/" in page.url
    finally:
        page.close()


def test_a_provider_user_named_like_a_local_account_does_not_take_it_over(browser: Any, sso_console: str) -> None:
    page = browser.new_page()
    try:
        sign_in_at_provider(page, sso_console, LOCAL[0], ["kafka-admins"])
        assert page.is_visible("#sso-refused")
        page.goto(f"{sso_console}/clusters/local/topics/")
        assert "/login/" in page.url
    finally:
        page.close()


def test_only_the_break_glass_admin_logs_in_with_a_password(browser: Any, sso_console: str) -> None:
    page = browser.new_page()
    try:
        page.goto(f"{sso_console}/login/")
        page.click("#local-login summary")
        page.fill("#id_username", LOCAL[0])
        page.fill("#id_password", LOCAL[1])
        page.click("button[type=submit]")
        assert "local accounts are turned off" in (page.text_content(".alert-error") or "")
        page.goto(f"{sso_console}/login/")
        page.click("#local-login summary")
        page.fill("#id_username", BREAK_GLASS[0])
        page.fill("#id_password", BREAK_GLASS[1])
        page.click("button[type=submit]")
        assert page.goto(f"{sso_console}/users/").status == 200
        assert "breakglass" in (page.text_content(".who") or "")
    finally:
        page.close()


def log_in_locally(page: Any, console: str, username: str, password: str) -> None:
    page.goto(f"{console}/login/")
    page.click("#local-login summary")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")


def test_a_providers_group_carries_the_grant_an_admin_gives_its_team(
    browser: Any, sso_console: str, artifacts: Path
) -> None:
    ours, theirs = unique("pay"), unique("ledger")
    for topic in (ours, theirs):
        create_topic(topic, partitions=1, replication=1)
    admin = browser.new_page()
    try:
        log_in_locally(admin, sso_console, *BREAK_GLASS)
        admin.goto(f"{sso_console}/users/")
        admin.fill("#new-grant #id_team", "payments")
        admin.fill("#new-grant #id_cluster", "local")
        admin.select_option("#new-grant #id_resource", "topic")
        admin.fill("#new-grant #id_pattern", "pay-*")
        admin.select_option("#new-grant #id_role", "operator")
        admin.click("#new-grant button[type=submit]")
        admin.wait_for_url(f"{sso_console}/users/")
        assert "local:topic:pay-*:operator" in (admin.text_content("#team-grants") or "")
        admin.screenshot(path=str(artifacts / "users-grants.png"), full_page=True)
    finally:
        admin.close()
    page = browser.new_page()
    try:
        sign_in_at_provider(page, sso_console, "pat", ["payments"])  # no role map entry: the team's grant
        page.goto(f"{sso_console}/clusters/local/topics/?per_page=200")
        listed = page.text_content("#topics-table") or page.content()
        assert ours in listed
        assert theirs not in listed
        assert "operator" in (page.text_content(".who") or "")
        page.screenshot(path=str(artifacts / "sso-scoped-topics.png"), full_page=True)
        assert page.goto(f"{sso_console}/clusters/local/topics/{theirs}/").status == 404
        assert page.goto(f"{sso_console}/clusters/local/zookeeper/").status == 403
    finally:
        page.close()
