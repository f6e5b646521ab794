"""An identity provider's groups made into Kazami roles (console.identity.roles): the map, the strongest role, and
the map's mistakes refused with the entry named."""

from __future__ import annotations

import pytest

from console.identity.roles import parse_role_map, role_from_claims

MAP = parse_role_map(" kafka-admins=admin, kafka-ops=operator ,readers=viewer,")


def test_the_map_reads_group_equals_role_entries() -> None:
    assert MAP == {"kafka-admins": "admin", "kafka-ops": "operator", "readers": "viewer"}
    assert parse_role_map("") == {}


def test_a_group_name_holding_equals_signs_keeps_them_up_to_the_last() -> None:
    assert parse_role_map("team=data=operator") == {"team=data": "operator"}


@pytest.mark.parametrize("text", ["kafka-admins", "=admin", "ops=root", "ops=Admin"])
def test_a_bad_entry_is_refused_with_its_text(text: str) -> None:
    with pytest.raises(ValueError, match="KAZAMI_OIDC_ROLE_MAP"):
        parse_role_map(text)


def test_the_strongest_role_of_the_users_groups_is_given() -> None:
    assert role_from_claims({"groups": ["readers", "kafka-ops"]}, "groups", MAP) == "operator"
    assert role_from_claims({"groups": ["kafka-admins", "readers"]}, "groups", MAP) == "admin"
    assert role_from_claims({"groups": "readers"}, "groups", MAP) == "viewer"  # one group as a string
    assert role_from_claims({"roles": ["kafka-ops"]}, "roles", MAP) == "operator"  # another claim


def test_no_mapped_group_gives_no_role_unless_a_star_gives_everyone_one() -> None:
    assert role_from_claims({"groups": ["interns"]}, "groups", MAP) is None
    assert role_from_claims({}, "groups", MAP) is None
    assert role_from_claims({"groups": [None, 3, {"x": 1}]}, "groups", MAP) is None  # not names: ignored
    everyone = {**MAP, "*": "viewer"}
    assert role_from_claims({"groups": ["interns"]}, "groups", everyone) == "viewer"
    assert role_from_claims({"groups": ["kafka-ops"]}, "groups", everyone) == "operator"
