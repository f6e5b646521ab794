"""The console's changes to ACLs and SCRAM users, as the pages and the API both make them: checked, run and
audited through console.access.perform. A password never reaches the audit log: only that one was set."""

from __future__ import annotations

from collections.abc import Sequence

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.security import acls, scram
from console.access import perform


def _target(bindings: Sequence[acls.AclBinding]) -> str:
    return ", ".join(sorted({b.principal for b in bindings}))


def create_acls(
    request: HttpRequest, conn: ClusterConnection, cluster: str, bindings: Sequence[acls.AclBinding]
) -> list[acls.AclBinding]:
    """Create checked bindings (admins)."""
    return perform(
        request,
        "acls.create",
        cluster,
        _target(bindings),
        {"acls": [b.as_dict() for b in bindings]},
        lambda: acls.do_create_acls(conn, bindings),
        lambda done: f"{len(done)} ACL{'s' if len(done) != 1 else ''} created",
    )


def delete_acls(
    request: HttpRequest, conn: ClusterConnection, cluster: str, bindings: Sequence[acls.AclBinding]
) -> list[acls.AclBinding]:
    """Delete exactly the previewed bindings (admins)."""
    return perform(
        request,
        "acls.delete",
        cluster,
        _target(bindings),
        {"acls": [b.as_dict() for b in bindings]},
        lambda: acls.do_delete_acls(conn, bindings),
        lambda done: f"{len(done)} ACL{'s' if len(done) != 1 else ''} deleted",
    )


def set_scram_password(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    name: str,
    password: str,
    mechanisms: list[str],
    iterations: int,
    create: bool,
) -> scram.ScramUser:
    """Create a SCRAM user or change its password (admins); the audit entry says a password was set, not which."""
    return perform(
        request,
        "scram.create" if create else "scram.password",
        cluster,
        f"User:{name}",
        {"mechanisms": mechanisms, "iterations": iterations, "password": "(set)"},
        lambda: scram.do_set_password(conn, name, password, mechanisms, iterations, create),
        lambda user: ("created with " if create else "password changed for ") + ", ".join(user.mechanisms),
    )


def delete_scram_user(request: HttpRequest, conn: ClusterConnection, cluster: str, name: str) -> list[str]:
    return perform(
        request,
        "scram.delete",
        cluster,
        f"User:{name}",
        {},
        lambda: scram.do_delete_user(conn, name),
        lambda removed: "credentials deleted: " + ", ".join(removed),
    )
