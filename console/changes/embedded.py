"""Stopping and starting brokers of the embedded cluster from the console (admins), as the multi-broker
walkthrough does by hand with ``python -m broker.local stop-broker N``.

Only for the default cluster, and only when ``KAZAMI_EMBEDDED_CLUSTER`` names the data folder of the
embedded cluster behind it (``make run`` sets it); never for a cluster the console merely points at. A
stop or start runs in the background (a broker takes seconds to stop cleanly, more to start): the
replication page shows it happen.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from django.conf import settings

from broker.errors import InvalidInput, KazamiError, NotSupported
from broker.local import launcher
from broker.local.layout import ClusterLayout
from console.config.clusters import get_configs

log = logging.getLogger(__name__)
_busy: dict[int, str] = {}
_lock = threading.Lock()


def data_folder(cluster: str) -> Path | None:
    """The embedded cluster's data folder when ``cluster`` is the console's default cluster and the
    setting names a folder holding a cluster; else None."""
    folder = str(getattr(settings, "KAZAMI_EMBEDDED_CLUSTER", "") or "")
    if not folder or cluster != next(iter(get_configs()), None):
        return None
    path = Path(folder)
    return path if ClusterLayout.load(path) is not None else None


def busy() -> dict[int, str]:
    """Brokers being stopped or started now: {id: "stopping" | "starting"}."""
    with _lock:
        return dict(_busy)


def change(cluster: str, broker: int, action: str) -> str:
    """Start stopping or starting ``broker`` in the background; returns "stopping" or "starting".
    Raises NotSupported (not the embedded cluster), InvalidInput (no such broker, or busy)."""
    folder = data_folder(cluster)
    if folder is None:
        raise NotSupported(
            f"Cluster {cluster!r} is not an embedded cluster this console started: stop its brokers where they run "
            "(KAZAMI_EMBEDDED_CLUSTER names the embedded cluster's data folder; `make run` sets it)."
        )
    if action not in ("stop", "start"):
        raise InvalidInput("The action is stop or start.")
    layout = ClusterLayout.load(folder)
    known = layout.broker_ids if layout else []
    if broker not in known:
        raise InvalidInput(f"The embedded cluster has no broker {broker} (brokers: {', '.join(map(str, known))}).")
    state = "stopping" if action == "stop" else "starting"
    with _lock:
        if broker in _busy:
            raise InvalidInput(f"Broker {broker} is {_busy[broker]} already.")
        _busy[broker] = state

    def run() -> None:
        try:
            if action == "stop":
                launcher.stop_broker(broker, folder, echo=lambda _: None)
            else:
                launcher.start_broker(broker, folder, echo=lambda _: None)
        except (KazamiError, launcher.LauncherError, OSError):
            log.exception("embedded cluster: %s of broker %s failed", action, broker)
        finally:
            with _lock:
                _busy.pop(broker, None)

    threading.Thread(target=run, name=f"embedded-{action}-{broker}", daemon=True).start()
    return state
