"""Scoped roles: grants of a role on part of a cluster, and what a user holds (a global role and its grants).

A :class:`Grant` gives a role on the clusters matching a glob: on all of each, or on the topics, consumer groups,
connectors or schema subjects whose names match another glob. It is given to one user, or to a team: a group its
identity provider or directory names (console.identity keeps a user's teams as Django groups at every sign-in).
A global role still reaches everything; grants only add to it. Pure but for the functions at the end, which read
the grants of a user from the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

ROLE_ORDER = ("viewer", "operator", "admin")  # weakest first (console.access's roles)

# What a grant may name: a whole cluster, or the topics, consumer groups, connectors or schema subjects matching
# a glob in it.
KINDS = ("cluster", "topic", "group", "connector", "subject")


@dataclass(frozen=True)
class Grant:
    """``role`` on the clusters matching ``cluster`` (a glob): on all of each (``kind`` "cluster"), or on its
    resources of ``kind`` whose names match ``pattern`` (fnmatch's ``*``, ``?`` and ``[...]``, case-sensitive as
    Kafka's names are)."""

    cluster: str
    kind: str
    pattern: str
    role: str

    def __str__(self) -> str:
        return f"{self.cluster}:{self.kind}:{self.pattern}:{self.role}"

    def on_cluster(self, cluster: str) -> bool:
        return fnmatchcase(cluster, self.cluster)

    def covers(self, cluster: str, kind: str | None, name: str | None) -> bool:
        """Whether this grant reaches ``name`` of ``kind`` in ``cluster``. ``kind`` None is the cluster itself (its
        brokers, ZooKeeper, ACLs...), which only a cluster grant reaches; ``name`` None is "some resource of that
        kind" (a form before its name is typed, a list before it is filtered)."""
        if not self.on_cluster(cluster):
            return False
        if self.kind == "cluster":
            return True
        if kind != self.kind:
            return False
        return name is None or fnmatchcase(name, self.pattern)


def parse_grant(text: str) -> Grant:
    """``CLUSTER:RESOURCE:GLOB:ROLE`` (a group id's glob may itself hold ":") as a Grant; raises ValueError
    saying what is wrong."""
    head, sep, role = text.strip().rpartition(":")
    cluster, sep2, rest = head.partition(":")
    kind, sep3, pattern = rest.partition(":")
    if not (sep and sep2 and sep3):
        raise ValueError(f"{text!r} is not CLUSTER:RESOURCE:GLOB:ROLE (e.g. local:topic:orders.*:operator).")
    if kind not in KINDS:
        raise ValueError(f"{text!r}: the resource is one of {', '.join(KINDS)}, not {kind!r}.")
    if role not in ROLE_ORDER:
        raise ValueError(f"{text!r}: the role is one of {', '.join(ROLE_ORDER)}, not {role!r}.")
    if not cluster or not pattern:
        raise ValueError(f"{text!r}: the cluster and the glob may not be empty (use * for all).")
    if kind == "cluster" and pattern != "*":
        raise ValueError(f"{text!r}: a cluster grant covers the whole cluster; write its glob as *.")
    return Grant(cluster, kind, pattern, role)


def strongest(roles: Iterable[str | None]) -> str | None:
    """The strongest of ``roles`` (None among them ignored), None when there is none."""
    found = [r for r in roles if r is not None]
    return max(found, key=ROLE_ORDER.index) if found else None


@dataclass(frozen=True)
class Scope:
    """What one user holds: a global ``role`` (on everything, None for none) and ``grants``."""

    role: str | None
    grants: tuple[Grant, ...] = ()

    @property
    def anything(self) -> bool:
        """Whether the user may read anything at all."""
        return self.role is not None or bool(self.grants)

    def role_on(self, cluster: str, kind: str | None = None, name: str | None = None) -> str | None:
        """The strongest role the user has on ``name`` of ``kind`` in ``cluster`` (see Grant.covers)."""
        return strongest([self.role, *(g.role for g in self.grants if g.covers(cluster, kind, name))])

    def role_anywhere(self, cluster: str) -> str | None:
        """The strongest role the user has on anything in ``cluster``: what its forms are offered for."""
        return strongest([self.role, *(g.role for g in self.grants if g.on_cluster(cluster))])

    def whole(self, cluster: str) -> bool:
        """Whether the user may read all of ``cluster`` (a global role, or a cluster grant on it)."""
        return self.role_on(cluster) is not None

    def on_cluster(self, cluster: str) -> bool:
        """Whether the user may read anything of ``cluster``."""
        return self.role_anywhere(cluster) is not None

    def sees(self, cluster: str, kind: str, name: str) -> bool:
        return self.role_on(cluster, kind, name) is not None

    def sees_every(self, cluster: str, kind: str, names: list[str]) -> bool:
        """Whether the user may see all of ``names``; none named means all there are (the whole cluster)."""
        if self.whole(cluster):
            return True
        return bool(names) and all(self.sees(cluster, kind, n) for n in names)


# The parameter a live view of a list is given for a user whose roles on its cluster are scoped: the user's grants,
# one a line (console.live.consumers sets it and drops any a browser sent). Users holding the same grants share one
# poller.
GRANTS_PARAM = "grants"


def scope_in(params: Any) -> Scope | None:
    """The grants a live view is drawn for (in its parameters), None for a user who sees all of the cluster."""
    text = params.get(GRANTS_PARAM)
    return Scope(None, tuple(parse_grant(g) for g in text.split("\n"))) if text else None


def kept_in(params: Any, cluster: str, kind: str) -> Any:
    """Whether a name of ``kind`` is drawn in a live list for the grants in ``params`` (a test); None: all are."""
    scope = scope_in(params)
    return None if scope is None else (lambda name: scope.sees(cluster, kind, name))


# --- a user's grants, from the database -----------------------------------------------------------------------

# Where grants_of keeps a user's grants: among the relations Django keeps on the instance (refresh_from_db() forgets
# them), as console.access keeps its roles.
_GRANTS_KEPT = "kazami_grants"


def grants_of(user: Any) -> tuple[Grant, ...]:
    """The grants ``user`` holds, its own and its teams', asked once per user object (a request's)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return ()
    kept = getattr(user, "_prefetched_objects_cache", None)
    if kept is None:
        kept = user._prefetched_objects_cache = {}
    found: tuple[Grant, ...] | None = kept.get(_GRANTS_KEPT)
    if found is None:
        from django.db.models import Q

        from console.models import Grant as Stored

        teams = user.groups.exclude(name__in=ROLE_ORDER).values("name")
        rows = Stored.objects.filter(Q(user=user) | Q(team__in=teams)).values_list(
            "cluster", "resource", "pattern", "role"
        )
        found = kept[_GRANTS_KEPT] = tuple(Grant(*row) for row in rows)
    return found


def forget(user: Any) -> None:
    """Make the next grants_of(user) ask the database again (after a change of its grants or teams)."""
    getattr(user, "_prefetched_objects_cache", {}).pop(_GRANTS_KEPT, None)


def teams_of(user: Any) -> list[str]:
    """The user's teams: its Django groups that are not roles."""
    return sorted(user.groups.exclude(name__in=ROLE_ORDER).values_list("name", flat=True))


def set_teams(user: Any, names: Iterable[str]) -> None:
    """Make ``user``'s teams exactly ``names`` (what its identity provider or directory says at sign-in). A name
    that is a role's is skipped: a directory group called "admin" is a team name, never the admin role."""
    from django.contrib.auth.models import Group

    wanted = {n for n in names if n and n not in ROLE_ORDER and len(n) <= 150}
    current = set(teams_of(user))
    if wanted == current:
        return
    user.groups.remove(*Group.objects.filter(name__in=current - wanted))
    user.groups.add(*(Group.objects.get_or_create(name=n)[0] for n in sorted(wanted - current)))
    forget(user)


def team_grants_exist(names: Iterable[str]) -> bool:
    """Whether any grant is given to one of the teams ``names`` (a sign-in with no role may still get in)."""
    from console.models import Grant as Stored

    return Stored.objects.filter(team__in=[n for n in names if n]).exists()


def check_grant(user: Any, team: str, text: str) -> Grant:
    """The grant ``text`` (CLUSTER:RESOURCE:GLOB:ROLE) for ``user``, or for ``team`` when user is None; raises
    ValueError for a malformed grant, no holder or both, or a name no team may have."""
    grant = parse_grant(text)
    team = team.strip()
    if (user is None) == (not team):
        raise ValueError("A grant is given to a user or to a team (one of them).")
    if team and (team in ROLE_ORDER or len(team) > 150):
        raise ValueError(f"{team[:160]!r} cannot name a team (a role's name, or longer than 150 characters).")
    return grant


def do_add_grant(user: Any, team: str, text: str) -> Any:
    """Store the grant ``text`` for ``user`` or ``team`` (see check_grant, whose ValueError it raises); the one
    already stored when the holder has it."""
    from console.models import Grant as Stored

    grant = check_grant(user, team, text)
    found, _ = Stored.objects.get_or_create(
        user=user, team=team.strip(), cluster=grant.cluster, resource=grant.kind, pattern=grant.pattern, role=grant.role
    )
    return found
