"""The console's changes to transactions, as the hanging-transactions page and the API both make them:
aborting a hanging transaction (writing its abort marker); checked, run and audited through
console.access.perform (domain in broker/messages/transactions.py)."""

from __future__ import annotations

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.messages import transactions
from console.access import perform


def abort_transaction(
    request: HttpRequest,
    conn: ClusterConnection,
    cluster: str,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
) -> transactions.Aborted:
    params = {
        "partition": partition,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "coordinator_epoch": coordinator_epoch,
    }
    return perform(
        request,
        "transactions.abort",
        cluster,
        f"{topic}-{partition}",
        params,
        lambda: transactions.do_abort(conn, topic, partition, producer_id, producer_epoch, coordinator_epoch),
        lambda done: f"aborted; last stable offset {done.last_stable_offset} of {done.high_watermark}",
    )
