"""``python -m broker.demo seed|tasks|web``: the demo data of ``make run``, the task-queue demo, and a
generator of web traffic (page views, ad impressions, clicks, shares) live or as a backfill."""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time

from broker.demo.seed import seed
from broker.errors import KazamiError

DEFAULT_SERVERS = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_s(text: str) -> float:
    """Seconds in ``text``: a number with an optional unit (ms, s, m, h, d; seconds without one), e.g.
    ``24h``, ``90m``, ``1.5d``. Raises argparse.ArgumentTypeError for anything else or for 0."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*", text)
    if not match or float(match[1]) <= 0:
        raise argparse.ArgumentTypeError(f"not a positive duration: {text!r} (e.g. 24h, 90m, 3600)")
    return float(match[1]) * _UNITS[match[2] or "s"]


def _positive(text: str) -> int:
    value = int(text.replace("_", "").replace(",", ""))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _web_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    web = sub.add_parser(
        "web",
        help="web events (page views, impressions, clicks, shares) live at a rate or as a backfill",
        description="Write web events keyed by user into a topic (created if missing, with --partitions "
        "partitions and min(3, brokers) replicas), lz4-compressed: live at --rate events a second with "
        "timestamps of now, or --backfill N events spread over the --span before now.",
    )
    web.add_argument("--topic", default="page-views", help="topic to write (%(default)s)")
    web.add_argument("--bootstrap-servers", default=DEFAULT_SERVERS)
    mode = web.add_mutually_exclusive_group(required=True)
    mode.add_argument("--rate", type=float, help="live: events a second, timestamps of now")
    mode.add_argument("--backfill", type=_positive, metavar="N", help="write N events into the past --span")
    web.add_argument("--duration", type=duration_s, help="live: stop after this long (default: until Ctrl-C)")
    web.add_argument("--span", type=duration_s, default=86400.0, help="backfill: how far back (24h)")
    web.add_argument("--users", type=_positive, default=100_000, help="users in the population (%(default)s)")
    web.add_argument("--seed", type=int, default=None, help="seed of the generator (default: a new one)")
    web.add_argument(
        "--workers",
        type=_positive,
        default=None,
        help="backfill: processes writing at once, each the users of its own partitions "
        "(default: one per core, one for a small backfill)",
    )
    web.add_argument("--partitions", type=_positive, default=6, help="partitions of a new topic (%(default)s)")


def _web(args: argparse.Namespace) -> int:
    from broker.demo import web

    if args.rate is not None and args.rate <= 0:
        print("error: --rate must be positive", file=sys.stderr)
        return 2
    if args.duration is not None and args.rate is None:
        print("error: --duration goes with --rate (a backfill takes --span)", file=sys.stderr)
        return 2
    servers = args.bootstrap_servers.split(",")
    seed_value = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    created = web.ensure_topic(servers, args.topic, args.partitions)
    print(f"Topic {args.topic}: {'created' if created else 'exists'}; seed {seed_value}.", flush=True)
    shown = [0.0]

    def progress(events: int, seconds: float, total: int | None = None, every: float = 2.0) -> None:
        if seconds - shown[0] >= every:
            shown[0] = seconds
            of = f" / {total:,}" if total else ""
            print(f"  {events:,}{of} events, {events / seconds:,.0f} events/s", flush=True)

    if args.backfill is not None:
        workers = args.workers or (1 if args.backfill < 200_000 else max(1, min(os.cpu_count() or 1, 4)))
        started = time.monotonic()
        try:
            written = web.backfill(
                servers,
                args.topic,
                args.backfill,
                int(args.span * 1000),
                seed=seed_value,
                users=args.users,
                workers=workers,
                progress=lambda n, s: progress(n, s, args.backfill),
            )
        except KeyboardInterrupt:
            print(f"Interrupted after {time.monotonic() - started:.1f} s.", file=sys.stderr)
            return 130
    else:
        print(f"Writing {args.rate:,g} events/s{'' if args.duration else ' until Ctrl-C'}.", flush=True)
        written = web.live(
            servers,
            args.topic,
            args.rate,
            args.duration,
            seed=seed_value,
            users=args.users,
            progress=lambda n, s: progress(n, s, every=5.0),
        )
    print(f"{written.events:,} events in {written.seconds:.1f} s: {written.rate:,.0f} events/s.", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.demo", description="Demo workloads for a Kafka cluster.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("seed", help="create the demo topics and fill them (once)")
    cmd.add_argument("--bootstrap-servers", default=DEFAULT_SERVERS)
    tasks = sub.add_parser("tasks", help="the task-queue demo: lag grows, then a second worker drains it")
    tasks.add_argument("--bootstrap-servers", default=DEFAULT_SERVERS)
    tasks.add_argument(
        "--second-after",
        type=float,
        default=None,
        help="start a second worker after this many seconds (default: never)",
    )
    tasks.add_argument("--duration", type=float, default=0, help="stop after this many seconds (default: run on)")
    _web_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "tasks":
            from broker.demo.tasks import run

            run(args.bootstrap_servers.split(","), args.second_after, args.duration)
            return 0
        if args.command == "web":
            return _web(args)
        seed(args.bootstrap_servers)
    except KazamiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
