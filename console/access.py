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
from broker.errors import KazamiError
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


@dataclass(frozen=True)
class Action:
    permission: str
    label: str


# Every kind of change the console makes, the permission it needs, and how a refusal names it.
ACTIONS: dict[str, Action] = {
    "topic.create": Action("change_topics", "create topics"),
    "topic.add_partitions": Action("change_topics", "add partitions"),
    "topic.configs": Action("change_topics", "change topic configs"),
    "topic.schema": Action("change_topics", "upload schemas"),
    "topic.delete_records": Action("delete_topics", "delete records"),
    "topic.delete": Action("delete_topics", "delete topics"),
    "message.produce": Action("produce_messages", "produce messages"),
    "analytics.start": Action("run_analytics", "run analytics jobs"),
    "analytics.cancel": Action("run_analytics", "cancel analytics jobs"),
    "analytics.live": Action("run_analytics", "start or stop the live analytics query"),
    "sql.save": Action("run_analytics", "save SQL queries"),
    "sql.delete": Action("run_analytics", "delete saved SQL queries"),
    "group.reset_offsets": Action("reset_offsets", "reset offsets"),
    "group.delete": Action("delete_groups", "delete consumer groups"),
    "group.delete_offsets": Action("delete_groups", "delete a group's offsets"),
    "partitions.reassign": Action("reassign_partitions", "reassign partitions"),
    "partitions.elect": Action("reassign_partitions", "elect partition leaders"),
    "transactions.abort": Action("delete_topics", "abort hanging transactions"),
    # Moving data: operators copy, import and redrive (they write to topics, as producing does).
    "topic.copy": Action("produce_messages", "copy records between topics"),
    "topic.import": Action("produce_messages", "import records into topics"),
    "topic.redrive": Action("produce_messages", "send dead letters back to their topics"),
    "zookeeper.create": Action("write_zookeeper", "create znodes"),
    "zookeeper.set": Action("write_zookeeper", "change znodes"),
    "zookeeper.delete": Action("write_zookeeper", "delete znodes"),
    "broker.stop_start": Action("reassign_partitions", "stop and start brokers of the embedded cluster"),
    "broker.configs": Action("reassign_partitions", "change broker configurations"),
    "user.create": Action("manage_users", "create users"),
    "user.change": Action("manage_users", "change users"),
    "quotas.change": Action("reassign_partitions", "change client quotas"),
    "acls.create": Action("reassign_partitions", "create ACLs"),
    "acls.delete": Action("reassign_partitions", "delete ACLs"),
    "scram.create": Action("reassign_partitions", "create SCRAM users"),
    "scram.password": Action("reassign_partitions", "change SCRAM passwords"),
    "scram.delete": Action("reassign_partitions", "delete SCRAM users"),
    # Kafka Connect: operators run connectors (as they change topics and reset offsets); admins delete them.
    "connect.create": Action("change_topics", "create connectors"),
    "connect.config": Action("change_topics", "change connector configs"),
    "connect.pause": Action("change_topics", "pause connectors"),
    "connect.resume": Action("change_topics", "resume connectors"),
    "connect.stop": Action("change_topics", "stop connectors"),
    "connect.restart": Action("change_topics", "restart connectors and tasks"),
    "connect.restart_failed": Action("change_topics", "restart failed connector tasks"),
    "connect.offsets": Action("reset_offsets", "reset or alter connector offsets"),
    "connect.delete": Action("delete_topics", "delete connectors"),
    # Schema registry: operators register schemas and set compatibility (as they change topics); admins delete.
    "schemas.register": Action("change_topics", "register schemas"),
    "schemas.compatibility": Action("change_topics", "change schema compatibility"),
    "schemas.delete": Action("delete_topics", "delete schemas and subjects"),
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


def is_read_only(cluster: str | None) -> bool:
    if not cluster:
        return False
    config = get_configs().get(cluster)
    return bool(config and config.read_only)


# --- changes ------------------------------------------------------------------------------


def require(request: HttpRequest, action: str, cluster: str | None) -> None:
    """Raise ReadOnlyCluster or Forbidden unless ``request``'s user may do ``action`` on ``cluster``."""
    spec = ACTIONS[action]
    if is_read_only(cluster):
        raise ReadOnlyCluster(f"Cluster {cluster!r} is read-only: the console makes no changes to it.")
    if not has(request.user, spec.permission):
        who = request.user.get_username() if request.user.is_authenticated else "An anonymous visitor"
        needed = [role for role, perms in ROLES.items() if spec.permission in perms]
        raise Forbidden(
            f"{who} ({role_of(request.user) or 'no role'}) may not {spec.label}: "
            f"that needs the {' or '.join(needed)} role."
        )


def perform(
    request: HttpRequest,
    action: str,
    cluster: str | None,
    target: str,
    params: dict[str, Any],
    change: Callable[[], T],
    describe: Callable[[T], str] = lambda _: "done",
) -> T:
    """Check, run ``change()`` and write the audit entry (refused, failed or done); errors pass on."""
    try:
        require(request, action, cluster)
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
        require(request, action, cluster)
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
        message = f"{request.user.get_username()} has no role yet; an admin can give one on the Users page."
        if wants_json(request):
            return JsonResponse({"error": "forbidden", "message": message}, status=403)
        return render(request, "errors/error.html", {"status": 403, "message": message}, status=403)


class Abilities:
    """What the current user may change on the current cluster, for templates: ``can.produce_messages``."""

    def __init__(self, request: HttpRequest, cluster: str | None) -> None:
        self._user = getattr(request, "user", AnonymousUser())
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
        return has(self._user, permission)


def abilities(request: HttpRequest) -> dict[str, Any]:
    """Template context: ``can`` (see Abilities), ``role`` and ``read_only`` of the current cluster."""
    match = getattr(request, "resolver_match", None)
    cluster = match.kwargs.get("cluster") if match else None
    can = Abilities(request, cluster)
    user = getattr(request, "user", AnonymousUser())
    return {"can": can, "role": role_of(user), "read_only": can.read_only}
