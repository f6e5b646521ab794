"""Who may do what: roles made of Django permissions, read-only clusters, and the audit log.

Every page, API endpoint and websocket needs ``console.view_console`` (AccessMiddleware and
the consumers check it). Every change goes through :func:`perform`, which checks the
action's permission and the cluster's read-only switch, runs the change, and writes one
AuditEntry with its outcome. Views never test roles themselves.

Roles are Django groups kept in step with :data:`ROLES` after every ``migrate``; a
superuser holds every permission and counts as an admin.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, Group, Permission
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from broker import redaction
from broker.errors import KazamiError, NotFound
from console.access import grants
from console.access.grants import Scope
from console.config.clusters import get_configs

T = TypeVar("T")

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
_VIEWER_PERMS = ["view_console"]
_OPERATOR_PERMS = [*_VIEWER_PERMS, "produce_messages", "reset_offsets", "change_topics", "run_analytics"]
_ADMIN_PERMS = [
    *_OPERATOR_PERMS,
    "delete_topics",
    "delete_groups",
    "reassign_partitions",
    "write_zookeeper",
    "manage_users",
]
# Role name -> the console permissions it holds (codenames of console.Access), weakest first.
ROLES: dict[str, list[str]] = {VIEWER: _VIEWER_PERMS, OPERATOR: _OPERATOR_PERMS, ADMIN: _ADMIN_PERMS}


def _named(target: str) -> list[str] | None:
    """The resource an action's audit target names: itself; none yet (a form) when empty."""
    return [target] if target else []


def _after_slash(target: str) -> list[str] | None:
    """``worker/connector`` names the connector, ``cluster/topic`` the topic written; without a "/", none yet."""
    return [target.split("/", 1)[1]] if "/" in target else []


def _copied_to(target: str) -> list[str] | None:
    """``c/t -> c2/t2`` names the topic written (checked on the cluster written to); "transfer N" none."""
    return [target.rpartition("/")[2]] if " -> " in target else []


def _subject(target: str) -> list[str] | None:
    """A subject, or the registry's global setting (``(global)``), which is the whole cluster's."""
    return None if target == "(global)" else _named(target)


def _listed(target: str) -> list[str] | None:
    """``a,b,c``: the topics (or groups) a job reads."""
    return [t for t in target.split(",") if t]


@dataclass(frozen=True)
class Action:
    """A change: the permission it needs and how a refusal names it. ``kind`` is what a grant must reach for it
    (None: a role on the whole cluster), and ``names`` reads the resources from the audit target: None for the
    whole cluster, [] for "not named yet" (a form's page, checked again with the name when it is sent)."""

    permission: str
    label: str
    kind: str | None = None
    names: Callable[[str], list[str] | None] = _named


# Every kind of change the console makes, the permission it needs, and how a refusal names it.
ACTIONS: dict[str, Action] = {
    "topic.create": Action("change_topics", "create topics", kind="topic"),
    "topic.add_partitions": Action("change_topics", "add partitions", kind="topic"),
    "topic.configs": Action("change_topics", "change topic configs", kind="topic"),
    "topic.schema": Action("change_topics", "upload schemas", kind="topic"),
    "topic.delete_records": Action("delete_topics", "delete records", kind="topic"),
    "topic.delete": Action("delete_topics", "delete topics", kind="topic"),
    "message.produce": Action("produce_messages", "produce messages", kind="topic"),
    "analytics.start": Action("run_analytics", "run analytics jobs", kind="topic", names=_listed),
    # Who may see a job may cancel it (console.views.analytics finds it only for them).
    "analytics.cancel": Action("run_analytics", "cancel analytics jobs", kind="topic", names=lambda _: []),
    "analytics.live": Action("run_analytics", "start or stop the live analytics query"),
    "sql.save": Action("run_analytics", "save SQL queries"),
    "sql.delete": Action("run_analytics", "delete saved SQL queries"),
    "group.reset_offsets": Action("reset_offsets", "reset offsets", kind="group"),
    "group.delete": Action("delete_groups", "delete consumer groups", kind="group"),
    "group.delete_offsets": Action("delete_groups", "delete a group's offsets", kind="group"),
    "partitions.reassign": Action("reassign_partitions", "reassign partitions"),
    "partitions.elect": Action("reassign_partitions", "elect partition leaders"),
    "transactions.abort": Action("delete_topics", "abort hanging transactions"),
    # Moving data: operators copy, import and redrive (they write to topics, as producing does).
    "topic.copy": Action("produce_messages", "copy records between topics", kind="topic", names=_copied_to),
    "topic.import": Action("produce_messages", "import records into topics", kind="topic", names=_after_slash),
    "topic.redrive": Action("produce_messages", "send dead letters back to their topics"),
    "zookeeper.create": Action("write_zookeeper", "create znodes"),
    "zookeeper.set": Action("write_zookeeper", "change znodes"),
    "zookeeper.delete": Action("write_zookeeper", "delete znodes"),
    "broker.stop_start": Action("reassign_partitions", "stop and start brokers of the embedded cluster"),
    "broker.configs": Action("reassign_partitions", "change broker configurations"),
    "user.create": Action("manage_users", "create users"),
    "user.change": Action("manage_users", "change users"),
    "user.grant": Action("manage_users", "give scoped roles"),
    "user.revoke": Action("manage_users", "take scoped roles away"),
    # Not a change: a request to change something outside a scoped user's grants, refused before its view (audited).
    "access.scoped": Action("view_console", "reach beyond one's grants"),
    "quotas.change": Action("reassign_partitions", "change client quotas"),
    "acls.create": Action("reassign_partitions", "create ACLs"),
    "acls.delete": Action("reassign_partitions", "delete ACLs"),
    "scram.create": Action("reassign_partitions", "create SCRAM users"),
    "scram.password": Action("reassign_partitions", "change SCRAM passwords"),
    "scram.delete": Action("reassign_partitions", "delete SCRAM users"),
    # Kafka Connect: operators run connectors (as they change topics and reset offsets); admins delete them.
    "connect.create": Action("change_topics", "create connectors"),
    "connect.config": Action("change_topics", "change connector configs"),
    "connect.pause": Action("change_topics", "pause connectors", kind="connector", names=_after_slash),
    "connect.resume": Action("change_topics", "resume connectors", kind="connector", names=_after_slash),
    "connect.stop": Action("change_topics", "stop connectors", kind="connector", names=_after_slash),
    "connect.restart": Action("change_topics", "restart connectors and tasks", kind="connector", names=_after_slash),
    "connect.restart_failed": Action(
        "change_topics", "restart failed connector tasks", kind="connector", names=_after_slash
    ),
    "connect.offsets": Action(
        "reset_offsets", "reset or alter connector offsets", kind="connector", names=_after_slash
    ),
    "connect.delete": Action("delete_topics", "delete connectors", kind="connector", names=_after_slash),
    # Schema registry: operators register schemas and set compatibility (as they change topics); admins delete.
    "schemas.register": Action("change_topics", "register schemas", kind="subject", names=_subject),
    "schemas.compatibility": Action("change_topics", "change schema compatibility", kind="subject", names=_subject),
    "schemas.delete": Action("delete_topics", "delete schemas and subjects", kind="subject", names=_subject),
    # Alerts: operators write rules (what to watch); admins choose where alerts go (channels reach the outside).
    "alerts.rule": Action("change_topics", "change alert rules"),
    "alerts.channel": Action("reassign_partitions", "change alert channels"),
    "alerts.test": Action("change_topics", "send a test alert"),
    "alerts.silence": Action("change_topics", "silence alerts"),
    "alerts.ack": Action("change_topics", "acknowledge alerts"),
}


class Forbidden(KazamiError):
    """The user's role does not allow this."""


class ReadOnlyCluster(KazamiError):
    """The cluster is configured read-only: no change is made through the console."""


class NotVisible(NotFound):
    """A resource outside the user's grants: answered as an unknown one (404), so its name tells nothing."""


# --- roles --------------------------------------------------------------------------------


def ensure_roles(**_: Any) -> None:
    """Create the role groups and give each exactly its permissions (run after every migrate)."""
    perms = {p.codename: p for p in Permission.objects.filter(content_type__app_label="console")}
    for role, codenames in ROLES.items():
        group = Group.objects.get_or_create(name=role)[0]
        group.permissions.set([perms[c] for c in codenames if c in perms])


def role_of(user: Any) -> str | None:
    """The strongest role ``user`` has, ``None`` for none (a superuser is an admin)."""
    if not user.is_authenticated:
        return VIEWER if settings.KAZAMI_ANONYMOUS_READ else None
    if user.is_superuser:
        return ADMIN
    names = _role_groups(user)
    for role in reversed(ROLES):
        if role in names:
            return role
    return None


def _role_groups(user: Any) -> frozenset[str]:
    """The role groups ``user`` is in, asked once per user object (a request's): kept as Django keeps a
    prefetched relation, so set_role() and ``refresh_from_db()`` make it ask again, and a role
    given or taken applies from the next request on, in every process."""
    kept = getattr(user, "_prefetched_objects_cache", None)
    if kept is None:
        kept = user._prefetched_objects_cache = {}
    roles: frozenset[str] | None = kept.get(_ROLES_KEPT)
    if roles is None:
        roles = kept[_ROLES_KEPT] = frozenset(user.groups.filter(name__in=list(ROLES)).values_list("name", flat=True))
    return roles


# Where _role_groups keeps a user's roles: among the relations Django keeps on the instance, which
# refresh_from_db() forgets.
_ROLES_KEPT = "kazami_roles"


# Role name -> its permissions as a set, for has().
_ROLE_PERMS = {role: frozenset(codenames) for role, codenames in ROLES.items()}


def set_role(user: Any, role: str) -> None:
    """Give ``user`` ``role`` (and no other). A superuser holds every permission whatever its groups, so
    any role but admin also takes superuser status away."""
    if role not in ROLES:
        raise KazamiError(f"Unknown role {role!r}; roles: {', '.join(ROLES)}.")
    user.groups.remove(*Group.objects.filter(name__in=list(ROLES)))
    user.groups.add(Group.objects.get(name=role))
    getattr(user, "_prefetched_objects_cache", {}).pop(_ROLES_KEPT, None)
    if user.is_superuser and role != "admin":
        user.is_superuser = False
        user.save(update_fields=["is_superuser"])


def take_role(user: Any) -> None:
    """Take ``user``'s role away (grants it holds stay)."""
    user.groups.remove(*user.groups.filter(name__in=list(ROLES)))
    getattr(user, "_prefetched_objects_cache", {}).pop(_ROLES_KEPT, None)


def signed_in_as(user: Any, role: str | None, teams: list[str]) -> bool:
    """What an identity provider or directory said at sign-in: the global ``role`` (None: none) and the user's
    ``teams``, whose grants it holds. Whether it may get in: a role, or a grant to it or one of its teams."""
    if role is None:
        take_role(user)
    elif role_of(user) != role:
        set_role(user, role)
    grants.set_teams(user, teams)  # forgets the grants it had asked for when the teams change
    return role is not None or bool(grants.grants_of(user))


def has(user: Any, permission: str) -> bool:
    """May ``user`` (possibly anonymous) use ``permission``? Anonymous users read only, and only
    when KAZAMI_ANONYMOUS_READ is on."""
    if not user.is_authenticated:
        return permission == "view_console" and bool(settings.KAZAMI_ANONYMOUS_READ)
    if not user.is_active:
        return False
    if user.is_superuser:
        return True
    # What Django's has_perm answers for the role groups (ensure_roles keeps their permissions exactly ROLES'),
    # with one query per request for the user's groups instead of two for its user and group permissions.
    return any(permission in _ROLE_PERMS[role] for role in _role_groups(user))


# --- scoped roles (console.access.grants) -------------------------------------------------------------------


def scope_of(user: Any) -> Scope:
    """What ``user`` holds: its global role (if it may use it: an active user) and its grants."""
    if user.is_authenticated and not user.is_active:
        return Scope(None)
    return Scope(role_of(user), grants.grants_of(user))


def may(user: Any, permission: str, cluster: str | None, kind: str | None = None, name: str | None = None) -> bool:
    """May ``user`` use ``permission`` on ``name`` of ``kind`` in ``cluster`` (see console.access.grants.Grant.covers)?
    Without a cluster (users, alert channels), only a global role counts."""
    if has(user, permission):
        return True
    if not cluster:
        return False
    role = scope_of(user).role_on(cluster, kind, name)
    return role is not None and permission in _ROLE_PERMS[role]


def role_on(user: Any, cluster: str, kind: str | None = None, name: str | None = None) -> str | None:
    """The strongest role ``user`` has on ``name`` of ``kind`` in ``cluster`` (what masking follows)."""
    return scope_of(user).role_on(cluster, kind, name) if user.is_authenticated else role_of(user)


def on_cluster(user: Any, cluster: str) -> bool:
    """Whether ``user`` may read anything of ``cluster``."""
    return has(user, "view_console") or scope_of(user).on_cluster(cluster)


def sees_all(user: Any, cluster: str) -> bool:
    """Whether ``user`` may read all of ``cluster``: lists need no filtering."""
    return has(user, "view_console") or scope_of(user).whole(cluster)


def visible(request: HttpRequest, cluster: str, kind: str, items: list[T], name: Callable[[T], str]) -> list[T]:
    """``items`` (topics, groups, connectors, subjects...) of ``cluster`` that the request's user may see, by
    ``name(item)``: all of them for a role on the whole cluster."""
    keep = seen(request, cluster, kind)
    return items if keep is None else [item for item in items if keep(name(item))]


def seen(request: HttpRequest, cluster: str, kind: str) -> Callable[[str], bool] | None:
    """Whether the request's user may see a name of ``kind`` in ``cluster``, as a test; None when it may see all."""
    if sees_all(request.user, cluster):
        return None
    scope = scope_of(request.user)
    return lambda name: scope.sees(cluster, kind, name)


def sees_every(user: Any, cluster: str, kind: str, names: list[str]) -> bool:
    """Whether ``user`` may see all of ``names`` of ``kind`` in ``cluster``; no names means all there are (a lag
    report of every group), which needs the whole cluster."""
    return has(user, "view_console") or scope_of(user).sees_every(cluster, kind, names)


def require_seen(request: HttpRequest, cluster: str, kind: str, names: list[str]) -> None:
    """Raise NotVisible (a 404, as for an unknown name) unless the user may see every one of ``names``."""
    if sees_all(request.user, cluster):
        return
    scope = scope_of(request.user)
    for name in names:
        if not scope.sees(cluster, kind, name):
            raise NotVisible(not_seen(cluster, kind, name))


KIND_LABELS = {"topic": "topic", "group": "consumer group", "connector": "connector", "subject": "schema subject"}


def not_seen(cluster: str, kind: str, name: str) -> str:
    """What a user is told of a resource outside its grants: what it would be told of one that does not exist."""
    return f"No {KIND_LABELS[kind]} named {name!r} in cluster {cluster!r}."


def is_read_only(cluster: str | None) -> bool:
    if not cluster:
        return False
    config = get_configs().get(cluster)
    return bool(config and config.read_only)


# --- changes ------------------------------------------------------------------------------


def require(request: HttpRequest, action: str, cluster: str | None, target: str = "", kind: str | None = "") -> None:
    """Raise ReadOnlyCluster or Forbidden unless ``request``'s user may do ``action`` on ``cluster``: with a global
    role, or a grant reaching what ``target`` names (``kind`` overrides the action's, for a report on groups)."""
    spec = ACTIONS[action]
    if is_read_only(cluster):
        raise ReadOnlyCluster(f"Cluster {cluster!r} is read-only: the console makes no changes to it.")
    if has(request.user, spec.permission):
        return
    kind = spec.kind if kind == "" else kind
    names = spec.names(target) if kind else None
    if cluster and kind and names is not None:
        wanted: list[str | None] = [*names] if names else [None]
        if all(may(request.user, spec.permission, cluster, kind, n) for n in wanted):
            return
    elif cluster and may(request.user, spec.permission, cluster):
        return
    who = request.user.get_username() if request.user.is_authenticated else "An anonymous visitor"
    needed = " or ".join(role for role, perms in ROLES.items() if spec.permission in perms)
    if not (request.user.is_authenticated and grants.grants_of(request.user)):
        raise Forbidden(
            f"{who} ({role_of(request.user) or 'no role'}) may not {spec.label}: that needs the {needed} role."
        )
    held = role_of(request.user) or "scoped roles only"
    if not cluster or names is None:
        where = f"that needs the {needed} role on the whole cluster" if cluster else f"that needs the {needed} role"
    else:
        named = ", ".join(names) or f"some {KIND_LABELS.get(kind or 'topic')}"
        where = f"that needs the {needed} role on {named}"
    raise Forbidden(f"{who} ({held}) may not {spec.label}: {where}.")


def perform(
    request: HttpRequest,
    action: str,
    cluster: str | None,
    target: str,
    params: dict[str, Any],
    change: Callable[[], T],
    describe: Callable[[T], str] = lambda _: "done",
    kind: str | None = "",
) -> T:
    """Check, run ``change()`` and write the audit entry (refused, failed or done); errors pass on."""
    try:
        require(request, action, cluster, target, kind)
    except KazamiError as exc:
        record(request, action, cluster, target, params, "refused", str(exc))
        raise
    try:
        result = change()
    except KazamiError as exc:
        record(request, action, cluster, target, params, "failed", str(exc))
        raise
    except Exception:
        record(request, action, cluster, target, params, "failed", "internal error (see the console's log)")
        raise
    record(request, action, cluster, target, params, "done", describe(result))
    return result


# What the audit log keeps of a secret.
HIDDEN = "(hidden)"


def mask(params: Any) -> Any:
    """``params`` as the audit log keeps them: the value of every secret-looking key (at any depth) replaced by
    HIDDEN, and the secrets inside every other text (URL credentials, Authorization values, ``password=``
    parts, JSON fields) too: broker.redaction's rule, the one the pages follow."""
    return redaction.redact_any(params, HIDDEN)


def record(
    request: HttpRequest,
    action: str,
    cluster: str | None,
    target: str,
    params: dict[str, Any],
    outcome: str,
    result: str,
) -> None:
    from console.models import AuditEntry

    user = request.user if request.user.is_authenticated else None
    AuditEntry.objects.create(
        at=timezone.now(),
        user=user,
        username=user.get_username() if user else "anonymous",
        cluster=cluster or "",
        action=action,
        target=target[:512],
        params=mask(params),
        outcome=outcome,
        result=redaction.redact_text(result[:4000], HIDDEN),
        remote_addr=request.META.get("REMOTE_ADDR") or None,
    )


def guard(request: HttpRequest, action: str, cluster: str | None, target: str) -> None:
    """``require``, and a refused POST goes into the audit log (a GET of the form does not)."""
    try:
        require(request, action, cluster, target)
    except KazamiError as exc:
        if request.method == "POST":
            record(request, action, cluster, target, {}, "refused", str(exc))
        raise


def needs(action: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """For a view that shows or makes the change ``action``: 403 before anything else when not allowed."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            target = str(kwargs.get("topic") or kwargs.get("group") or kwargs.get("username") or "")
            guard(request, action, kwargs.get("cluster"), target)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


# --- every request --------------------------------------------------------------------------


def public(view: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a view that needs no login (the login page, the health check)."""
    view.kazami_public = True  # type: ignore[attr-defined]
    return view


def token_allowed(view: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a view a scraper may read with ``Authorization: Bearer $KAZAMI_METRICS_TOKEN``."""
    view.kazami_token = True  # type: ignore[attr-defined]
    return view


def _bearer_ok(request: HttpRequest) -> bool:
    token = settings.KAZAMI_METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    return bool(token) and given.startswith("Bearer ") and hmac.compare_digest(given[7:].strip(), token)


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/") or request.path == "/metrics"


class AccessMiddleware:
    """Every view needs a login with the viewer permission, unless it is marked public:
    pages redirect to the login page, the API answers 401 (no login) or 403 (no role)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        if getattr(view, "kazami_public", False) or has(request.user, "view_console"):
            return None
        if getattr(view, "kazami_token", False) and _bearer_ok(request):
            return None
        if not request.user.is_authenticated:
            if wants_json(request):
                return JsonResponse({"error": "login_required", "message": "Log in first."}, status=401)
            return redirect(f"{settings.LOGIN_URL}?next={quote(request.get_full_path(), safe='/')}")
        scope = scope_of(request.user)
        if scope.grants:
            refused = scoped_refusal(scope, view, kwargs)
            if refused is None:
                return None
            status, message = refused
            if request.method not in ("GET", "HEAD", "OPTIONS"):  # a change tried: audited, as every refusal is
                record(request, "access.scoped", kwargs.get("cluster"), request.path, {}, "refused", message)
        else:
            status, message = (
                403,
                f"{request.user.get_username()} has no role yet; an admin can give one on the Users page.",
            )
        if wants_json(request):
            return JsonResponse(
                {"error": "forbidden" if status == 403 else "not_found", "message": message}, status=status
            )
        return render(request, "errors/error.html", {"status": status, "message": message}, status=status)


def scoped(view: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a view that a user with scoped roles only may open on a cluster it holds a grant on: it shows only
    what the grants reach (a list filtered with :func:`visible`, a form whose change is checked when sent)."""
    view.kazami_scoped = True  # type: ignore[attr-defined]
    return view


def resource_of(kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """The topic, group, subject or connector a URL names, as (kind, name)."""
    for kind in ("topic", "group", "subject"):
        if kind in kwargs:
            return kind, str(kwargs[kind])
    if "connect_name" in kwargs and "name" in kwargs:
        return "connector", str(kwargs["name"])
    return None


def scoped_refusal(scope: Scope, view: Any, kwargs: dict[str, Any]) -> tuple[int, str] | None:
    """Why a user holding only grants may not open ``view`` with ``kwargs`` (status, message), None when it may:
    a cluster or a named resource outside its grants is unknown to it (404); a page of the whole cluster (brokers,
    ZooKeeper, ACLs...) needs a grant on the whole cluster (403); a page outside any cluster, a global role."""
    cluster = kwargs.get("cluster")
    if cluster is None:
        if getattr(view, "kazami_scoped", False):
            return None
        return 403, "This page needs a global role; yours are scoped to parts of clusters."
    if not scope.on_cluster(cluster):
        return 404, f"No cluster named {cluster!r}."
    named = resource_of(kwargs)
    if named is not None:
        return None if scope.sees(cluster, *named) else (404, not_seen(cluster, *named))
    if getattr(view, "kazami_scoped", False) or scope.whole(cluster):
        return None
    return 403, f"This page shows all of cluster {cluster!r}; your roles there are scoped to some of its resources."


class Abilities:
    """What the current user may change on the current cluster, for templates: ``can.produce_messages``. On a
    page of one topic, group, connector or subject, what the user may do to it; elsewhere, what it may do to
    something of the cluster (a form offered; the change is checked again when sent)."""

    def __init__(self, request: HttpRequest, cluster: str | None, kwargs: dict[str, Any] | None = None) -> None:
        self._user = getattr(request, "user", AnonymousUser())
        self._cluster = cluster
        self._resource = resource_of(kwargs or {})
        self.read_only = is_read_only(cluster)

    @property
    def change_alerts(self) -> bool:
        """Alert rules, silences and acknowledgements change nothing in Kafka: offered on a read-only cluster too."""
        return has(self._user, ACTIONS["alerts.rule"].permission)

    @property
    def change_alert_channels(self) -> bool:
        return has(self._user, ACTIONS["alerts.channel"].permission)

    def __getattr__(self, permission: str) -> bool:
        if permission.startswith("_"):
            raise AttributeError(permission)
        if self.read_only and permission != "view_console" and permission != "manage_users":
            return False
        if has(self._user, permission):
            return True
        if not self._cluster or permission == "manage_users" or not self._user.is_authenticated:
            return False
        scope = scope_of(self._user)
        if self._resource is not None:
            role = scope.role_on(self._cluster, *self._resource)
        else:
            role = scope.role_anywhere(self._cluster)
        return role is not None and permission in _ROLE_PERMS[role]


def abilities(request: HttpRequest) -> dict[str, Any]:
    """Template context: ``can`` (see Abilities), ``role`` and ``read_only`` of the current cluster, and
    ``partial``: whether the user's roles there are scoped to some of it (the navigation shows only the pages that
    follow grants)."""
    match = getattr(request, "resolver_match", None)
    kwargs = match.kwargs if match else {}
    cluster = kwargs.get("cluster")
    can = Abilities(request, cluster, kwargs)
    user = getattr(request, "user", AnonymousUser())
    role = role_of(user)
    partial = False
    if user.is_authenticated and not has(user, "view_console"):
        shown = cluster or next(iter(get_configs()), None)
        partial = not (shown and scope_of(user).whole(shown))
        if role is None and shown:
            role = scope_of(user).role_anywhere(shown)
    return {"can": can, "role": role, "read_only": can.read_only, "partial": partial}
