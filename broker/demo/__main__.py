"""``python -m broker.demo seed [--bootstrap-servers ...]``: the demo data of ``make run``."""

from __future__ import annotations

import argparse
import os
import sys

from broker.demo.seed import seed
from broker.errors import KazamiError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.demo", description="Demo workloads for a Kafka cluster.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("seed", help="create the demo topics and fill them (once)")
    cmd.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"),
    )
    args = parser.parse_args(argv)
    try:
        seed(args.bootstrap_servers)
    except KazamiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
