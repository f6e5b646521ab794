"""``kazami``'s commands: arguments parsed, the cluster chosen, the broker/ function called, the answer drawn by
output.py, and every error a sentence on stderr with an exit code that says what kind it was."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from broker.client.connection import ClusterConnection
from broker.decode import InputError, RecordDecoder, decode, encode_input
from broker.errors import (
    ClusterUnavailable,
    ConfigError,
    InvalidInput,
    KafkaRefused,
    KazamiError,
    NotFound,
    NotSupported,
    PartitionUnavailable,
    UnknownCluster,
)
from broker.groups.lag import get_group, get_groups
from broker.messages.filtering import predicate_for, probe_for
from broker.messages.log import Message
from broker.messages.partitioners import CHOICES
from broker.messages.query import parse_query
from broker.messages.query_terms import QueryError
from broker.messages.read import check_isolation, check_limit, get_message, get_page
from broker.messages.scan import ScanProgress, find_by_key, plan_scan, scan
from broker.messages.tail import Tail
from broker.times import parse_time
from broker.topics.read import get_topic, get_topic_partitions, get_topics
from broker.zk.client import get_children, get_node
from console.cli import output
from console.config.clusters import get_configs, get_connection
from console.config.registry import registry_for

OK, NOTHING_MATCHED, BAD_INPUT, NOT_FOUND, UNAVAILABLE, REFUSED, INTERRUPTED = 0, 1, 2, 3, 4, 5, 130


class Found(Exception):
    """A command ended with nothing to show (find, search): exit code 1, as grep's."""


def exit_code(error: BaseException) -> int:
    """The exit code of an error (see the package's docstring)."""
    if isinstance(error, InvalidInput | InputError | ConfigError | QueryError):
        return BAD_INPUT
    if isinstance(error, NotFound | UnknownCluster):
        return NOT_FOUND
    if isinstance(error, ClusterUnavailable | PartitionUnavailable):
        return UNAVAILABLE
    if isinstance(error, KafkaRefused | NotSupported):
        return REFUSED
    return 1


class Context:
    """What a command works with: the chosen cluster's connection and registry, where to write, how."""

    def __init__(self, cluster: str, as_json: bool, out: TextIO) -> None:
        self.cluster, self.as_json, self.out = cluster, as_json, out
        self._registry: RecordDecoder | None = None

    @property
    def conn(self) -> ClusterConnection:
        return get_connection(self.cluster)

    @property
    def registry(self) -> RecordDecoder:
        """The cluster's schema registry, for records in its wire format (a reader that says why not, without)."""
        if self._registry is None:
            try:
                self._registry = RecordDecoder(registry_for(self.cluster))
            except ConfigError as exc:
                self._registry = RecordDecoder(None, f"the schema registry is not configured correctly: {exc}")
        return self._registry

    def records(self, messages: Sequence[Message]) -> None:
        """Records one a line (JSON Lines with --json)."""
        for message in messages:
            self.record(message)

    def record(self, message: Message) -> None:
        if self.as_json:
            output.as_json(self.out, output.record_json(message, self.registry), lines=True)
        else:
            self.out.write(output.record_line(message, self.registry) + "\n")
        self.out.flush()


# ---------------------------------------------------------------- the commands


def clusters(ctx: Context, args: argparse.Namespace) -> None:
    configs = get_configs()
    if ctx.as_json:
        output.as_json(
            ctx.out,
            [
                {"name": c.name, "bootstrap_servers": list(c.bootstrap_servers), "read_only": c.read_only}
                for c in configs.values()
            ],
        )
        return
    rows = [(c.name, ",".join(c.bootstrap_servers), "read-only" if c.read_only else "") for c in configs.values()]
    output.table(ctx.out, ("CLUSTER", "BOOTSTRAP", ""), rows)


def topics(ctx: Context, args: argparse.Namespace) -> None:
    found = get_topics(ctx.conn, include_internal=args.all)
    if ctx.as_json:
        output.as_json(ctx.out, [t.as_dict() for t in found])
        return
    rows = [
        (
            t.name,
            t.partitions,
            t.replication_factor,
            output.number(t.messages),
            output.size(t.size),
            t.under_replicated or "",
            t.offline or "",
        )
        for t in found
    ]
    output.table(
        ctx.out,
        ("TOPIC", "PARTITIONS", "REPLICAS", "MESSAGES", "SIZE", "UNDER-REPLICATED", "OFFLINE"),
        rows,
        right=(False, True, True, True, True, True, True),
    )


def topic(ctx: Context, args: argparse.Namespace) -> None:
    detail = get_topic(ctx.conn, args.topic)
    if ctx.as_json:
        output.as_json(ctx.out, detail.as_dict())
        return
    s = detail.summary
    ctx.out.write(
        f"{s.name}: {s.partitions} partitions, replication factor {s.replication_factor}, "
        f"{output.number(s.messages)} messages, {output.size(s.size)}\n\n"
    )
    rows = [
        (
            p.partition,
            p.leader if p.leader is not None else "none",
            ",".join(map(str, p.replicas)),
            ",".join(map(str, p.isr)),
            output.number(p.start_offset),
            output.number(p.end_offset),
            output.number(p.messages),
            output.size(p.size),
        )
        for p in detail.partitions
    ]
    output.table(
        ctx.out,
        ("PARTITION", "LEADER", "REPLICAS", "ISR", "FIRST OFFSET", "END OFFSET", "MESSAGES", "SIZE"),
        rows,
        right=(True, True, False, False, True, True, True, True),
    )


def get(ctx: Context, args: argparse.Namespace) -> None:
    located = get_message(ctx.conn, args.topic, args.partition, args.offset)
    if ctx.as_json:
        answer = output.record_json(located.message, ctx.registry)
        output.as_json(ctx.out, {**answer, "prev_offset": located.prev_offset, "next_offset": located.next_offset})
        return
    output.record_whole(ctx.out, located.message, ctx.registry)


def _partitions(ctx: Context, topic_name: str, partition: int | None) -> list[int]:
    if partition is not None:
        return [partition]
    return [p.partition for p in get_topic_partitions(ctx.conn, topic_name)]


def first(ctx: Context, args: argparse.Namespace) -> None:
    _ends(ctx, args, last=False)


def last(ctx: Context, args: argparse.Namespace) -> None:
    _ends(ctx, args, last=True)


def _ends(ctx: Context, args: argparse.Namespace, last: bool) -> None:
    """The first (or last) ``-n`` records of each partition asked for, partition by partition."""
    isolation, limit = check_isolation(args.isolation), check_limit(args.n)
    for partition in _partitions(ctx, args.topic, args.partition):
        page = get_page(ctx.conn, args.topic, partition, limit=limit, from_end=last, isolation=isolation)
        ctx.records(page.messages)


def tail(ctx: Context, args: argparse.Namespace) -> None:
    """New records as they arrive, until ``--count`` came, ``--seconds`` passed, or Ctrl-C."""
    partitions = _partitions(ctx, args.topic, args.partition)
    follower = Tail(ctx.conn, args.topic, partitions, buffer=10_000, isolation=check_isolation(args.isolation))
    follower.start()
    shown = 0
    deadline = time.monotonic() + args.seconds if args.seconds else None
    try:
        while args.count is None or shown < args.count:
            if deadline is not None and time.monotonic() >= deadline:
                break
            taken, dropped = follower.drain(args.count - shown if args.count else 1000)
            if dropped:
                sys.stderr.write(f"kazami: {dropped} records arrived faster than shown and were skipped\n")
            ctx.records(taken)
            shown += len(taken)
            if follower.error:
                raise ClusterUnavailable(follower.error)
            if not taken:
                time.sleep(0.1)
    finally:
        follower.stop()


def find(ctx: Context, args: argparse.Namespace) -> None:
    try:
        key = encode_input(args.key, args.key_format)
    except InputError as exc:
        raise InvalidInput(f"key: {exc}") from None
    found = find_by_key(ctx.conn, args.topic, key, partitioner=args.partitioner, max_scan=args.max_scan)
    if not ctx.as_json:
        sys.stderr.write(f"kazami: {found.reason}; {found.scanned:,} records read\n")
    ctx.records(found.matches)
    if not found.matches:
        raise Found()


def search(ctx: Context, args: argparse.Namespace) -> None:
    """The records matching the console's search language, partition by partition, read in parallel."""
    query = parse_query(args.query)
    ranges = plan_scan(
        ctx.conn,
        args.topic,
        [args.partition] if args.partition is not None else None,
        start_ms=parse_time(args.since, "since") if args.since else None,
        stop_ms=parse_time(args.until, "until") if args.until else None,
        last=args.last,
        isolation=check_isolation(args.isolation),
    )
    registry = ctx.registry
    matched = 0
    last_progress: list[ScanProgress] = []
    for message in scan(
        ctx.conn,
        args.topic,
        ranges,
        predicate_for(query, registry=registry),
        max_scan=args.max_scan,
        max_matches=args.max,
        on_progress=last_progress.append,
        deadline_s=args.seconds,
        isolation=check_isolation(args.isolation),
        probe=probe_for(query, framed=registry.source is not None),
    ):
        ctx.record(message)
        matched += 1
    if last_progress and not ctx.as_json:
        done = last_progress[-1]
        why = f" ({done.why})" if done.why else ""
        sys.stderr.write(f"kazami: {matched:,} matched of {done.scanned:,} records read{why}\n")
    if not matched:
        raise Found()


def groups(ctx: Context, args: argparse.Namespace) -> None:
    found = get_groups(ctx.conn, with_time=args.time)
    if ctx.as_json:
        output.as_json(ctx.out, [g.as_dict() for g in found])
        return
    rows = [(g.group_id, g.state, len(g.members), ",".join(g.topics), output.number(g.total_lag)) for g in found]
    output.table(ctx.out, ("GROUP", "STATE", "MEMBERS", "TOPICS", "LAG"), rows, right=(False, False, True, False, True))


def lag(ctx: Context, args: argparse.Namespace) -> None:
    group = get_group(ctx.conn, args.group)
    if ctx.as_json:
        output.as_json(ctx.out, {**group.as_dict(), "partitions": [p.as_dict() for p in group.partitions]})
        return
    ctx.out.write(f"{group.group_id}: {group.state}, {len(group.members)} members, lag {group.total_lag:,}\n\n")
    rows = [
        (
            p.topic,
            p.partition,
            output.number(p.committed),
            output.number(p.log_end),
            output.number(p.lag),
            "" if p.lag_ms is None else f"{p.lag_ms / 1000:,.1f} s",
            p.client_id or "",
        )
        for p in group.partitions
    ]
    output.table(
        ctx.out,
        ("TOPIC", "PARTITION", "COMMITTED", "END OFFSET", "LAG", "LAG IN TIME", "CLIENT"),
        rows,
        right=(False, True, True, True, True, True, False),
    )


def zk_ls(ctx: Context, args: argparse.Namespace) -> None:
    page = get_children(ctx.conn, args.path, limit=args.limit)
    if ctx.as_json:
        output.as_json(ctx.out, {"path": page.parent, "children": page.names, "total": page.total})
        return
    for name in page.names:
        ctx.out.write(name + "\n")
    if page.total > len(page.names):
        sys.stderr.write(f"kazami: {len(page.names)} of {page.total} children shown (--limit)\n")


def zk_get(ctx: Context, args: argparse.Namespace) -> None:
    node = get_node(ctx.conn, args.path, limit=1)
    if ctx.as_json:
        output.as_json(ctx.out, node.as_dict())
        return
    if node.data is None:
        ctx.out.write(f"({node.path} holds more than the console reads of a znode)\n")
    elif node.data:
        ctx.out.write(decode(node.data, "auto", limit=output.WHOLE_LIMIT).text.rstrip("\n") + "\n")


# ---------------------------------------------------------------- arguments


def _partition_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("partition", nargs="?", type=int, help="one partition (default: every partition)")


def _isolation_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--committed",
        dest="isolation",
        action="store_const",
        const="read_committed",
        default="read_uncommitted",
        help="what a read_committed consumer is given (default: every record, labelled, and markers)",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="kazami",
        description="Kazami's answers on the command line, straight from the cluster (the console's settings).",
        epilog="Exit codes: 0 answered, 1 nothing matched, 2 bad input, 3 not found, 4 unavailable, 5 refused.",
    )
    top.add_argument("--cluster", "-c", help="a cluster of the console's settings (default: the first)")
    top.add_argument("--json", action="store_true", help="JSON for scripts (JSON Lines for records)")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Callable[[Context, argparse.Namespace], None], text: str) -> argparse.ArgumentParser:
        found = sub.add_parser(name, help=text, description=text)
        found.set_defaults(run=run)
        return found

    command("clusters", clusters, "the clusters the console's settings name")
    command("topics", topics, "every topic: partitions, replicas, messages, size").add_argument(
        "--all", action="store_true", help="internal topics too"
    )
    command("topic", topic, "a topic's partitions: leaders, ISR, offsets").add_argument("topic")
    got = command("get", get, "the record at an offset, whole")
    got.add_argument("topic")
    got.add_argument("partition", type=int)
    got.add_argument("offset", type=int)
    for name, run, text in (
        ("first", first, "the first records of each partition (or one)"),
        ("last", last, "the last records of each partition (or one)"),
    ):
        ends = command(name, run, text)
        ends.add_argument("topic")
        _partition_option(ends)
        ends.add_argument("-n", type=int, default=1, help="records per partition (default 1, at most 500)")
        _isolation_option(ends)
    tailed = command("tail", tail, "new records as they arrive (Ctrl-C stops)")
    tailed.add_argument("topic")
    _partition_option(tailed)
    tailed.add_argument("--count", type=int, help="stop after this many records")
    tailed.add_argument("--seconds", type=float, help="stop after this many seconds")
    _isolation_option(tailed)
    found = command("find", find, "the records with a key, in the partitions producers put it")
    found.add_argument("topic")
    found.add_argument("key")
    found.add_argument("--key-format", choices=("text", "hex", "base64"), default="text")
    found.add_argument("--partitioner", choices=CHOICES, default="auto")
    found.add_argument("--max-scan", type=int, default=200_000, help="newest records read per partition")
    searched = command("search", search, "the records a query matches (the console's search language)")
    searched.add_argument("topic")
    searched.add_argument("query", help='e.g. \'value.status == "PAID" and key contains "42"\'')
    searched.add_argument("--partition", "-p", type=int)
    searched.add_argument("--last", type=int, help="only the last N records of each partition")
    searched.add_argument("--since", help="from this time (ISO date-time, or epoch ms)")
    searched.add_argument("--until", help="up to this time")
    searched.add_argument("--max", type=int, default=100, help="stop after this many matches (default 100)")
    searched.add_argument("--max-scan", type=int, default=100_000_000, help="stop after reading this many")
    searched.add_argument("--seconds", type=float, default=600.0, help="stop after this many seconds")
    _isolation_option(searched)
    command("groups", groups, "consumer groups: state, members, topics, lag").add_argument(
        "--time", action="store_true", help="lag in time too, in --json (reads each partition's oldest waiting record)"
    )
    command("lag", lag, "a group's lag per partition, in records and in time").add_argument("group")
    zk = command("zk", lambda ctx, args: None, "ZooKeeper (ZooKeeper-mode clusters)")
    zk_sub = zk.add_subparsers(dest="zk_command", required=True, metavar="ls|get")
    listed = zk_sub.add_parser("ls", help="a znode's children")
    listed.add_argument("path")
    listed.add_argument("--limit", type=int, default=1000)
    listed.set_defaults(run=zk_ls)
    zk_sub.add_parser("get", help="a znode's data").add_argument("path")
    zk_sub.choices["get"].set_defaults(run=zk_get)
    return top


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run one command; returns the exit code (the console script exits with it)."""
    args = parser().parse_args(argv)
    out = out or sys.stdout
    try:
        names = list(get_configs())
        cluster = args.cluster or os.environ.get("KAZAMI_CLUSTER_NAME") or names[0]
        if cluster not in names:
            raise UnknownCluster(f"No cluster named {cluster!r}; the settings name {', '.join(names)}.")
        args.run(Context(cluster, args.json, out), args)
    except Found:
        return NOTHING_MATCHED
    except KazamiError as exc:
        sys.stderr.write(f"kazami: {exc}\n")
        return exit_code(exc)
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:  # `kazami tail T | head`: the reader left
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        return OK
    return OK


def run() -> None:
    """The console script's entry point."""
    sys.exit(main())
