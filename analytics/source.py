"""Reading topics into Spark: the Kafka source's options for a cluster, and a range of offsets as a frame.

The options carry the cluster's security settings the way Kafka's Java client takes them: SASL
through a JAAS line, TLS files as PEM (``ssl.truststore.type=PEM``; a client certificate and key
are joined into one PEM key store in a private scratch folder, since the Java client wants them in
one file).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from broker.client.config import ClusterConfig
from broker.messages.ranges import TopicRanges

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def kafka_options(config: ClusterConfig, scratch: Path) -> dict[str, str]:
    """Options for Spark's Kafka source and sink (``kafka.``-prefixed client settings) for ``config``."""
    opts = {
        "kafka.bootstrap.servers": ",".join(config.bootstrap_servers),
        "kafka.security.protocol": config.security_protocol,
        "kafka.request.timeout.ms": str(max(int(config.timeout * 1000), 10_000)),
    }
    if config.security_protocol.startswith("SASL_") and config.sasl_mechanism:
        module = _LOGIN_MODULES[config.sasl_mechanism]
        user = json.dumps(config.sasl_username or "")
        password = json.dumps(config.sasl_password or "")
        opts["kafka.sasl.mechanism"] = config.sasl_mechanism
        opts["kafka.sasl.jaas.config"] = f"{module} required username={user} password={password};"
    if config.uses_tls:
        if config.ssl_cafile:
            opts["kafka.ssl.truststore.type"] = "PEM"
            opts["kafka.ssl.truststore.location"] = config.ssl_cafile
        if config.ssl_certfile and config.ssl_keyfile:
            scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
            store = scratch / f"{config.name}-client-keystore.pem"
            text = Path(config.ssl_keyfile).read_text() + "\n" + Path(config.ssl_certfile).read_text()
            fd = os.open(store, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(text)
            opts["kafka.ssl.keystore.type"] = "PEM"
            opts["kafka.ssl.keystore.location"] = str(store)
            if config.ssl_password:
                opts["kafka.ssl.key.password"] = config.ssl_password
        if not config.ssl_check_hostname:
            opts["kafka.ssl.endpoint.identification.algorithm"] = ""
    return opts


def read_range(
    spark: SparkSession, options: dict[str, str], ranges: TopicRanges, from_ms: int | None, to_ms: int | None
) -> DataFrame:
    """The records of ``ranges`` whose record time is in [from_ms, to_ms): columns ``key``, ``value``,
    ``timestamp`` (ms) and the rest of the Kafka source's. Partitions with nothing to read are left out."""
    from pyspark.sql import functions as F

    wanted = [p for p in ranges.partitions if p.records > 0]
    assign: dict[str, list[int]] = {}
    for p in wanted:
        assign.setdefault(p.topic, []).append(p.partition)
    kept = TopicRanges(wanted, ranges.first_time_ms)
    frame = (
        spark.read.format("kafka")
        .options(**options)
        .option("assign", json.dumps(assign))
        .option("startingOffsets", json.dumps(kept.starting()))
        .option("endingOffsets", json.dumps(kept.ending()))
        # Records removed between planning and reading (retention) are skipped, not a failure.
        .option("failOnDataLoss", "false")
        .load()
        .withColumn("timestamp", F.unix_millis("timestamp"))
    )
    if from_ms is not None:
        frame = frame.where(F.col("timestamp") >= from_ms)
    if to_ms is not None:
        frame = frame.where(F.col("timestamp") < to_ms)
    return frame
