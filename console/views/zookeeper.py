"""ZooKeeper pages and their JSON API: the browser (a tree from / that opens lazily, a path box, a znode's
data, stat, ACL, children and what it means to Kafka) and the servers' health. On a KRaft cluster each page
says there is no ZooKeeper; the API answers 409.

Where the cluster's ``zookeeper_writes`` setting allows it, admins create, change and delete znodes: on the
node page (each change confirmed on a page of its own first) and with ``POST`` to the API, both through
console.changes.zookeeper, so every attempt is audited.

Secrets are not shown (broker.zk.registry.redact_data: broker.redaction's rule). A user's config znode
(/config/users/<name> and what is under it), where Kafka keeps SCRAM credentials, is refused to anyone but
admins (403 on the page, the tree and the API alike); admins see it with the salt, stored key and server key
hidden, and cannot edit it on the page (the data shown is not the data held)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.client.connection import ClusterConnection
from broker.decode import decode
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError
from broker.zk.client import (
    DEFAULT_LIMIT,
    MAX_DATA,
    MAX_LIMIT,
    NoZooKeeper,
    get_children,
    get_node,
    get_servers,
    get_tree,
    zookeeper_address,
)
from broker.zk.fourletter import serving
from broker.zk.paths import check_path, child_path, crumbs, parent_path, split_connect
from broker.zk.registry import explain, holds_credentials, redact_data
from broker.zk.writes import (
    ZNodeChanged,
    ZNodeHasChildren,
    ZNodeProtected,
    ZooKeeperWritesOff,
    check_change,
    check_data,
    check_delete,
    check_version,
    protection,
)
from console.access import ADMIN, Forbidden, role_of
from console.changes import zookeeper as zookeeper_changes
from console.config.clusters import get_connection
from console.errors import api_view, json_error, page_view, status_of
from console.params import choice_param, int_param, is_htmx, json_object
from console.views.topics import confirm_page, confirmed

DECODINGS = ("auto", "json", "text", "hex")
# Characters of a znode's data drawn on the page (a hex dump covers a quarter as many bytes).
SHOWN_CHARS = 200_000
PROBLEM_TITLES = {
    400: "That is not a znode path.",
    404: "No such znode.",
    409: "No ZooKeeper.",
    422: "ZooKeeper refused.",
    503: "ZooKeeper does not answer.",
}
# How the changes' own refusals answer (the rest as every other error: console.errors).
WRITE_STATUS: list[tuple[type[KazamiError], int, str]] = [
    (ZooKeeperWritesOff, 403, "zookeeper_writes_off"),
    (ZNodeProtected, 403, "protected"),
    (ZNodeChanged, 409, "version_moved"),
    (ZNodeHasChildren, 409, "has_children"),
]
OPS = ("create", "set", "delete")
ACTIONS = {op: f"zookeeper.{op}" for op in OPS}
DATA_ENCODINGS = ("utf-8", "base64")
TRUE = ("1", "true", "on", "yes")


def _status(exc: KazamiError) -> tuple[int, str]:
    for cls, status, code in WRITE_STATUS:
        if isinstance(exc, cls):
            return status, code
    return status_of(exc)


def check_readable(request: HttpRequest, path: str) -> None:
    """Raise Forbidden when ``path`` holds SCRAM credentials (a user's config znode) and the user is no admin."""
    if holds_credentials(path) and role_of(request.user) != ADMIN:
        raise Forbidden(
            f"{path} holds a user's SCRAM credentials (salted passwords): only admins may read it. "
            "The users and their quotas are on the Security pages."
        )


def _shown(node: Any) -> Any:
    """``node`` with its data as it may be shown (redact_data)."""
    return replace(node, data=redact_data(node.path, node.data))


def _page_params(request: HttpRequest) -> tuple[int, int]:
    """(offset, limit) of a children page; raises InvalidInput."""
    offset = int_param(request, "offset", 0, minimum=0)
    limit = int_param(request, "limit", DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
    return offset or 0, limit or DEFAULT_LIMIT


def _summary(conn: ClusterConnection, cluster: str) -> dict[str, Any]:
    """What every ZooKeeper page shows first: the address and whether it serves, or why there is none
    (``no_zookeeper`` on KRaft, ``error`` when it is not known)."""
    context: dict[str, Any] = {
        "cluster": cluster,
        "address": None,
        "chroot": None,
        "serving": None,
        "configured": bool(conn.config.zookeeper_connect),
        "writes_on": conn.config.zookeeper_writes and not conn.config.read_only,
        "no_zookeeper": None,
        "ignored": None,
        "error": None,
    }
    try:
        address = zookeeper_address(conn)
    except NoZooKeeper as exc:
        context.update(no_zookeeper=str(exc), ignored=conn.config.zookeeper_connect)
        return context
    except ClusterUnavailable as exc:
        context["error"] = str(exc)
        return context
    context["address"] = address
    try:
        context["chroot"] = split_connect(address)[1]
    except KazamiError as exc:
        context["error"] = str(exc)
        return context
    context["serving"] = serving(address, conn.config.timeout)
    return context


def _browse(request: HttpRequest, conn: ClusterConnection, context: dict[str, Any], raw: str | None = None) -> int:
    """Fill ``context`` with the znode the request names (or ``raw``), its tree and what it means; the
    HTTP status."""
    raw = request.GET.get("path", "") if raw is None else raw
    context.update(path_text=raw.strip() or "/", decoding="auto", decodings=DECODINGS, path=None)
    try:
        path = check_path(raw or "/")
        context.update(path=path, crumbs=crumbs(path))
        context["decoding"] = choice_param(request, "as", DECODINGS, "auto")
        offset, limit = _page_params(request)
        check_readable(request, path)
    except (InvalidInput, Forbidden) as exc:
        return _problem(context, exc)
    if context["serving"] is False:
        context.update(problem_title=PROBLEM_TITLES[503], problem=_silent(conn, context["address"]))
        return 503
    try:
        held = get_node(conn, path, offset, limit, child_stats=True)
    except KazamiError as exc:
        status = _problem(context, exc)
        if status == 404:
            context["tree"] = tree = _tree(conn, path)
            # The tree is opened down to the deepest ancestor that exists.
            context["nearest"] = next(reversed(tree)) if tree else None
        return status
    node = _shown(held)
    context.update(
        node=node,
        explained=explain(path, node.data, node.stat),
        decoded=None if node.too_large else decode(node.data, context["decoding"], limit=SHOWN_CHARS),
        max_data=MAX_DATA,
        tree=_tree(conn, path),
        writes=_writes(conn, node, context.get("draft"), redacted=node.data != held.data),
    )
    return 200


def _writes(conn: ClusterConnection, node: Any, draft: dict[str, str] | None, redacted: bool = False) -> dict[str, Any]:
    """What the change forms of a node page need: whether writes are on, the data as text to edit (None
    when it is not UTF-8 text, too large, or shown with secrets hidden: ``redacted``), and why each change is
    refused here, if it is."""
    config = conn.config
    text: str | None = None
    if node.data is not None and not redacted:
        try:
            text = node.data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    refusals: dict[str, str | None] = {"set": None, "create": None, "delete": protection(node.path)}
    for op, path in (("set", node.path), ("create", child_path(node.path, "x"))):
        try:
            check_change(path, creating=op == "create")
        except KazamiError as exc:
            refusals[op] = str(exc).replace(child_path(node.path, "x"), child_path(node.path, "…"))
    return {
        "on": config.zookeeper_writes and not config.read_only,
        "acl": config.zookeeper_acl,
        "text": text,
        "redacted": redacted,
        "refused": refusals,
        "warning": None if refusals["delete"] else check_delete(node.path),
        "draft": draft or {},
    }


def _silent(conn: ClusterConnection, address: str) -> str:
    return (
        f"ZooKeeper ({address}) does not answer, or none of its servers serves requests (no quorum). "
        f"The Kafka pages of cluster {conn.config.name!r} keep working without it."
    )


def _problem(context: dict[str, Any], exc: KazamiError) -> int:
    status, _ = status_of(exc)
    context.update(problem_title=PROBLEM_TITLES.get(status, "The znode cannot be shown."), problem=str(exc))
    return status


def _tree(conn: ClusterConnection, path: str) -> dict[str, Any] | None:
    """The tree opened down to ``path``, None when it cannot be read (the page says why elsewhere)."""
    try:
        return dict(get_tree(conn, path))
    except KazamiError:
        return None


@require_GET
@page_view
def zookeeper(request: HttpRequest, cluster: str) -> HttpResponse:
    """The ZooKeeper browser at ``?path=`` (``/`` by default), data shown ``?as=`` auto, json, text or hex,
    children paged by ``?offset=`` and ``?limit=``; on KRaft, that there is no ZooKeeper."""
    conn = get_connection(cluster)
    context = _summary(conn, cluster)
    status = 503 if context["error"] else 200
    if context["address"]:
        status = _browse(request, conn, context)
    return render(request, "zookeeper/page.html", context, status=status)


@require_GET
@page_view
def zookeeper_tree(request: HttpRequest, cluster: str) -> HttpResponse:
    """A tree level: the children of ``?path=`` as nested list items (``?items=1``: the items alone, to
    follow a previous page). htmx swaps it in when a node is opened; an error is drawn in its place
    (status 200 for htmx, which swaps nothing else)."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {"cluster": cluster, "tree": {}, "current": request.GET.get("current", "")}
    try:
        path = check_path(request.GET.get("path") or "/")
        offset, limit = _page_params(request)
        check_readable(request, path)
        context["page"] = get_children(conn, path, offset, limit)
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["message"] = str(exc)
        return render(request, "zookeeper/_tree_error.html", context, status=200 if is_htmx(request) else status)
    template = "zookeeper/_tree_items.html" if request.GET.get("items") == "1" else "zookeeper/_tree.html"
    return render(request, template, context)


@require_GET
@page_view
def zookeeper_servers(request: HttpRequest, cluster: str) -> HttpResponse:
    """Each ZooKeeper server's mode, znode and watch counts, outstanding requests and latency."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {"cluster": cluster, "servers": None, "address": None, "no_zookeeper": None}
    status = 200
    try:
        context["address"], context["servers"] = get_servers(conn)
    except NoZooKeeper as exc:
        context["no_zookeeper"] = str(exc)
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["error"] = str(exc)
    return render(request, "zookeeper/servers.html", context, status=status)


@require_http_methods(["GET", "POST"])
@api_view
def zookeeper_api(request: HttpRequest, cluster: str) -> Any:
    """GET: a znode: ``path``, ``data`` (UTF-8 text, or base64 as ``data_encoding`` says), ``stat``, ``acl``,
    a page of ``children`` with ``children_total``, and ``explained``: what it means to Kafka (rows), with
    ``meaning`` (title, summary) when the registry knows the path. POST: a change (see _change_api)."""
    if request.method == "POST":
        return _change_api(request, cluster)
    conn = get_connection(cluster)
    path = check_path(request.GET.get("path") or "/")
    offset, limit = _page_params(request)
    check_readable(request, path)
    node = _shown(get_node(conn, path, offset, limit))
    explained = explain(path, node.data, node.stat)
    return {
        **node.as_dict(),
        "explained": [r.as_dict() for r in explained.rows] if explained else [],
        "meaning": (
            {"title": explained.title, "summary": explained.summary, "problem": explained.problem}
            if explained
            else None
        ),
    }


@require_GET
@api_view
def zookeeper_servers_api(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Each server's health from its four-letter words; 409 on KRaft."""
    address, servers = get_servers(get_connection(cluster))
    return {"address": address, "servers": [s.as_dict() for s in servers]}


# ---------------------------------------------------------------- changes


def _data(body: dict[str, Any]) -> bytes:
    """The ``data`` of a change as bytes: text, or base64 when ``data_encoding`` says so; raises InvalidInput."""
    raw = body.get("data")
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        raise InvalidInput("data must be a string: UTF-8 text, or base64 with data_encoding base64.")
    encoding = choice_param(body, "data_encoding", DATA_ENCODINGS, "utf-8")
    if encoding == "base64":
        try:
            return check_data(base64.b64decode(raw, validate=True))
        except (binascii.Error, ValueError):
            raise InvalidInput("data is not valid base64.") from None
    return check_data(raw.encode("utf-8", errors="surrogatepass"))


def _flag(value: Any) -> bool:
    return value is True or str(value).strip().lower() in TRUE


def _change_api(request: HttpRequest, cluster: str) -> HttpResponse:
    """``{"op": "create"|"set"|"delete", "path", "data", "data_encoding", "version", "recursive"}``: create
    (201, the new znode's ``stat``), set (the new ``stat``) or delete (``deleted``: how many znodes).
    400 bad path or data, 403 not allowed (role, read-only cluster, writes off, a znode Kafka depends on),
    404 no such znode (or parent), 409 the version moved, the znode exists or has children."""
    conn = get_connection(cluster)
    try:
        body = json_object(request, forms=True)
        op = choice_param(body, "op", OPS, "")
        path = check_path(str(body.get("path") or ""))
        if op == "create":
            stat = zookeeper_changes.create_znode(request, conn, cluster, path, _data(body))
            return JsonResponse({"op": op, "path": path, "stat": stat.as_dict()}, status=201)
        version = check_version(body.get("version"))
        if op == "set":
            stat = zookeeper_changes.set_znode(request, conn, cluster, path, _data(body), version)
            return JsonResponse({"op": op, "path": path, "stat": stat.as_dict()})
        deleted = zookeeper_changes.delete_znode(request, conn, cluster, path, version, _flag(body.get("recursive")))
        return JsonResponse({"op": op, "path": path, "deleted": deleted.count, "warning": check_delete(path)})
    except KazamiError as exc:
        status, code = _status(exc)
        return json_error(status, code, str(exc))


@require_POST
@page_view
def zookeeper_change(request: HttpRequest, cluster: str) -> HttpResponse:
    """A change from the node page's forms (``action`` create, set or delete): first a page that says what
    it will do (and warns where it should), then, confirmed, the change; back to the node with what was
    done, or to its page with why not."""
    conn = get_connection(cluster)
    op = request.POST.get("action", "")
    where = request.POST.get("path", "")
    draft = {"op": op, "data": request.POST.get("data", ""), "name": request.POST.get("name", "")}
    try:
        if op not in OPS:
            raise InvalidInput(f"action must be one of {', '.join(OPS)}.")
        node_path = check_path(where)
        path = node_path
        if op == "create":
            name = request.POST.get("name", "").strip()
            if not name or "/" in name:
                raise InvalidInput("The new znode's name must be one path segment, without /.")
            path = check_path(child_path(node_path, name))
        zookeeper_changes.check_zookeeper_change(request, conn, cluster, ACTIONS[op], path)
        # A browser sends a textarea's line ends as CR LF: the znode gets the LF the text was shown with.
        data = check_data(request.POST.get("data", "").replace("\r\n", "\n").encode("utf-8", errors="surrogatepass"))
        version = check_version(request.POST.get("version")) if op != "create" else -1
        recursive = _flag(request.POST.get("recursive", ""))
        back = _node_url(cluster, node_path)
        if not confirmed(request):
            return _confirm(request, conn, cluster, op, path, data, version, recursive, back)
        if op == "create":
            zookeeper_changes.create_znode(request, conn, cluster, path, data)
            messages.success(request, f"{path} created.")
        elif op == "set":
            stat = zookeeper_changes.set_znode(request, conn, cluster, path, data, version)
            messages.success(request, f"{path} changed: version {stat.version}, {stat.data_length} bytes.")
        else:
            deleted = zookeeper_changes.delete_znode(request, conn, cluster, path, version, recursive)
            more = (
                f" with {deleted.count - 1} znode{'s' if deleted.count != 2 else ''} under it"
                if deleted.count > 1
                else ""
            )
            messages.success(request, f"{path} deleted{more}.")
            path = parent_path(path) or "/"
    except KazamiError as exc:
        status, _ = _status(exc)
        if status == 503:
            raise
        context = _summary(conn, cluster)
        context.update(change_error=str(exc), draft=draft)
        if context["address"]:
            _browse(request, conn, context, where if where.strip() else "/")
        return render(request, "zookeeper/page.html", context, status=status)
    return redirect(_node_url(cluster, path))


def _node_url(cluster: str, path: str) -> str:
    return f"{reverse('zookeeper', args=[cluster])}?path={quote(path, safe='/')}"


def _confirm(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    op: str,
    path: str,
    data: bytes,
    version: int,
    recursive: bool,
    back: str,
) -> HttpResponse:
    """The page that says what the change will do, checked as far as it can be before it is made."""
    size = f"{len(data):,} byte{'s' if len(data) != 1 else ''}"
    if op == "create":
        check_change(path, creating=True)
        lines = [
            f"Create {path} holding {size}.",
            "It is persistent, with ZooKeeper's open ACL: anyone who reaches ZooKeeper may read and change it.",
        ]
        return confirm_page(request, cluster, f"Create znode {path}?", lines, back)
    node = get_node(conn, path, limit=1)
    if op == "set":
        check_change(path, creating=False)
        lines = [
            f"Set the data of {path} to {size} (it holds {node.stat.data_length:,} now).",
            f"Only if it is still at version {version}: if someone changed it since, nothing is changed.",
        ]
        if node.stat.ephemeral_owner is not None:
            lines.append(f"It is ephemeral, owned by session {node.stat.owner_hex}, which may write it again.")
        return confirm_page(request, cluster, f"Change znode {path}?", lines, back)
    warning = check_delete(path)
    children = node.stat.num_children
    lines = [f"Delete {path}, if it is still at version {version}."]
    if children and recursive:
        lines.append(
            f"And everything under it ({children} child{'ren' if children != 1 else ''} and their own), all in one "
            "transaction: all of it goes or none."
        )
    elif children:
        lines.append(
            f"It has {children} child{'ren' if children != 1 else ''}: ZooKeeper refuses unless you delete recursively."
        )
    if warning:
        lines.append(warning)
    elif node.stat.ephemeral_owner is not None:
        lines.append(
            f"It is ephemeral, held by session {node.stat.owner_hex}: whoever holds that session expects it to "
            "be there until the session ends."
        )
    lines.append("A deleted znode cannot be brought back.")
    return confirm_page(request, cluster, f"Delete znode {path}?", lines, back, danger=True)
