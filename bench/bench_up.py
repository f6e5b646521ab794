"""How long `python -m broker.local up` takes: cold (new data folder) and warm (existing data); the
cluster alone (``--no-connect --no-registry``: neither the Connect worker nor the schema registry is started, as in
the figures before they existed).

Reference in the same run: starting one broker alone (`start-broker`), the floor of any
cluster start (one JVM to boot and register). The figure is up / one broker.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.common import BASE_PORT, BENCH_VAR, REPO, ZOOKEEPER_PORT, write_result

DATA = BENCH_VAR / "cluster"


def cli(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "broker.local", "--data", str(DATA), *args],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return time.perf_counter() - started


def run(rounds: int = 3) -> dict[str, Any]:
    cold, warm, one_broker, down = [], [], [], []
    for _ in range(rounds):
        cli("down")
        shutil.rmtree(DATA, ignore_errors=True)
        cold.append(
            cli(
                "up",
                "--no-connect",
                "--no-registry",
                "--brokers",
                "3",
                "--zookeeper-port",
                str(ZOOKEEPER_PORT),
                "--base-port",
                str(BASE_PORT),
            )
        )
        cli("stop-broker", "2")
        one_broker.append(cli("start-broker", "2"))
        down.append(cli("down"))
        warm.append(cli("up", "--no-connect", "--no-registry"))
    # Left running for the next benchmark; bench/__main__ stops it at the end.
    result = {
        "rounds": rounds,
        "brokers": 3,
        "up_cold_s": round(statistics.median(cold), 2),
        "up_warm_s": round(statistics.median(warm), 2),
        "down_s": round(statistics.median(down), 2),
        "reference_one_broker_start_s": round(statistics.median(one_broker), 2),
        "ratio_up_cold_to_one_broker": round(statistics.median(cold) / statistics.median(one_broker), 2),
        "ratio_up_warm_to_one_broker": round(statistics.median(warm) / statistics.median(one_broker), 2),
        "samples_s": {
            "cold": [round(x, 2) for x in cold],
            "warm": [round(x, 2) for x in warm],
            "one_broker": [round(x, 2) for x in one_broker],
        },
    }
    write_result("cluster_up", result)
    return result
