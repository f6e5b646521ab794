"""Runs that move data (broker.transfer): each in a thread of the console process that took it, its progress
written to its Transfer row twice a second. Cancelling is asked through the row (from any process) and seen at the
next report; a row whose heartbeat stopped (its process ended) reads as interrupted, with the position a resumed
run starts from. Each run's end is in the audit log, with its counts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.db import OperationalError, close_old_connections, connection
from django.utils import timezone

from broker.errors import KazamiError
from console.models import AuditEntry, Transfer

log = logging.getLogger(__name__)

STALE_S = 30.0  # a running transfer with no heartbeat for this long is interrupted (its process ended)
Report = Callable[[dict[str, Any]], None]
Work = Callable[[threading.Event, Report], dict[str, Any]]
T = TypeVar("T")


def start(transfer: Transfer, work: Work, action: str, describe: Callable[[dict[str, Any]], str]) -> None:
    """Run ``work(cancel, report)`` for ``transfer`` in a thread; ``work`` returns its last progress (``error``
    and ``stopped`` in it say how it ended); ``describe`` turns that into the audit log's result."""
    thread = threading.Thread(
        target=_run, args=(transfer.pk, work, action, describe), name=f"transfer-{transfer.pk}", daemon=True
    )
    thread.start()


def retried(what: Callable[[], T], seconds: float = 10.0) -> T:
    """``what()``, asked again for up to ``seconds`` while the database is locked (SQLite under other writers)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return what()
        except OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _run(pk: int, work: Work, action: str, describe: Callable[[dict[str, Any]], str]) -> None:
    close_old_connections()
    cancel = threading.Event()

    def report(progress: dict[str, Any]) -> None:
        retried(lambda: Transfer.objects.filter(pk=pk).update(progress=progress, heartbeat_at=timezone.now()))
        if retried(lambda: Transfer.objects.filter(pk=pk, cancel_requested_at__isnull=False).exists()):
            cancel.set()

    final: dict[str, Any] = {}
    status, error = Transfer.FAILED, ""
    try:
        now = timezone.now()
        retried(
            lambda: Transfer.objects.filter(pk=pk).update(status=Transfer.RUNNING, started_at=now, heartbeat_at=now)
        )
        final = work(cancel, report)
        error = str(final.get("error") or "")
        if error:
            status = Transfer.FAILED
        elif final.get("stopped") == "cancelled" or cancel.is_set():
            status = Transfer.CANCELLED
        else:
            status = Transfer.SUCCEEDED
    except KazamiError as exc:
        error = str(exc)
    except Exception:
        log.exception("transfer %s failed", pk)
        error = "internal error (see the console's log)"
    finally:
        try:
            fields: dict[str, Any] = {"status": status, "finished_at": timezone.now(), "error": error[:4000]}
            if final:
                fields["progress"] = final
            retried(lambda: Transfer.objects.filter(pk=pk).update(**fields))
            retried(lambda: _audit_end(pk, action, status, error, final, describe))
        finally:
            connection.close()


def _audit_end(
    pk: int, action: str, status: str, error: str, final: dict[str, Any], describe: Callable[[dict[str, Any]], str]
) -> None:
    transfer = Transfer.objects.get(pk=pk)
    outcome = "done" if status in (Transfer.SUCCEEDED, Transfer.CANCELLED) else "failed"
    result = f"{transfer.kind} {pk} {status}: {describe(final) if final else error}"
    if error and final:
        result += f" ({error})"
    AuditEntry.objects.create(
        at=timezone.now(),
        user=transfer.created_by,
        username=transfer.username,
        cluster=transfer.cluster,
        action=action,
        target=f"{transfer.cluster}/{transfer.topic}"[:512],
        params={"transfer": pk},
        outcome=outcome,
        result=result[:4000],
    )


def settled(transfer: Transfer) -> Transfer:
    """``transfer`` as it stands: a running one whose heartbeat stopped is marked interrupted."""
    if transfer.status in (Transfer.RUNNING, Transfer.QUEUED):
        beat = transfer.heartbeat_at or transfer.created_at
        if timezone.now() - beat > timedelta(seconds=STALE_S):
            Transfer.objects.filter(pk=transfer.pk, status=transfer.status).update(
                status=Transfer.INTERRUPTED,
                finished_at=timezone.now(),
                error="the console process running it ended; resume it to go on from its last saved position",
            )
            transfer.refresh_from_db()
    return transfer


def as_json(transfer: Transfer) -> dict[str, Any]:
    return {
        "id": transfer.pk,
        "kind": transfer.kind,
        "cluster": transfer.cluster,
        "topic": transfer.topic,
        "spec": transfer.spec,
        "status": transfer.status,
        "finished": transfer.finished,
        "progress": transfer.progress,
        "created_by": transfer.username,
        "created_at": transfer.created_at.isoformat(),
        "started_at": transfer.started_at.isoformat() if transfer.started_at else None,
        "finished_at": transfer.finished_at.isoformat() if transfer.finished_at else None,
        "resumed_from": transfer.resumed_from_id,
        "error": transfer.error or None,
    }
