"""ZooKeeper pages and their JSON API: the browser (a tree from / that opens lazily, a path box, a znode's
data, stat, children and what it means to Kafka) and the servers' health. On a KRaft cluster each page
says there is no ZooKeeper; the API answers 409."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from broker.connection import ClusterConnection
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
from broker.zk.paths import check_path, crumbs, split_connect
from broker.zk.registry import explain
from broker.zookeeper import zookeeper_serving
from console.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.params import choice_param, int_param

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
    context["serving"] = zookeeper_serving(address, conn.config.timeout)
    return context


def _browse(request: HttpRequest, conn: ClusterConnection, context: dict[str, Any]) -> int:
    """Fill ``context`` with the znode the request names, its tree and what it means; the HTTP status."""
    raw = request.GET.get("path", "")
    context.update(path_text=raw.strip() or "/", decoding="auto", decodings=DECODINGS, path=None)
    try:
        path = check_path(raw or "/")
        context.update(path=path, crumbs=crumbs(path))
        context["decoding"] = choice_param(request, "as", DECODINGS, "auto")
        offset, limit = _page_params(request)
    except InvalidInput as exc:
        return _problem(context, exc)
    if context["serving"] is False:
        context.update(problem_title=PROBLEM_TITLES[503], problem=_silent(conn, context["address"]))
        return 503
    try:
        node = get_node(conn, path, offset, limit, child_stats=True)
    except KazamiError as exc:
        status = _problem(context, exc)
        if status == 404:
            context["tree"] = tree = _tree(conn, path)
            # The tree is opened down to the deepest ancestor that exists.
            context["nearest"] = next(reversed(tree)) if tree else None
        return status
    context.update(
        node=node,
        explained=explain(path, node.data, node.stat),
        decoded=None if node.too_large else decode(node.data, context["decoding"], limit=SHOWN_CHARS),
        max_data=MAX_DATA,
        tree=_tree(conn, path),
    )
    return 200


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
        context["page"] = get_children(conn, path, offset, limit)
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["message"] = str(exc)
        return render(
            request, "zookeeper/_tree_error.html", context, status=200 if request.headers.get("HX-Request") else status
        )
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


@require_GET
@api_view
def zookeeper_api(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """A znode: ``path``, ``data`` (UTF-8 text, or base64 as ``data_encoding`` says), ``stat``, a page of
    ``children`` with ``children_total``, and ``explained``: what it means to Kafka (rows), with
    ``meaning`` (title, summary) when the registry knows the path."""
    conn = get_connection(cluster)
    path = check_path(request.GET.get("path") or "/")
    offset, limit = _page_params(request)
    node = get_node(conn, path, offset, limit)
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
