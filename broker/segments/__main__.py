"""``python -m broker.segments dump FILE...``: Kafka's ``kafka-dump-log`` without a JVM (see dump.py)."""

from __future__ import annotations

import argparse
import sys

from broker.segments.dump import DEFAULT_MAX_MESSAGE_SIZE, NO_LIMIT, DumpOptions, dump


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m broker.segments",
        description="Read Kafka's on-disk files (segments, indexes, producer snapshots, transaction indexes).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser(
        "dump",
        help="print what kafka-dump-log prints for the same files and options",
        description="Print what Kafka's kafka-dump-log prints for the same files and options, line for line "
        "where the information is the same. Damage is reported on stderr and reading goes on.",
    )
    cmd.add_argument("files", nargs="*", metavar="FILE", help=".log, .index, .timeindex, .snapshot, .txnindex")
    cmd.add_argument("--deep-iteration", action="store_true", help="print every record of every batch")
    cmd.add_argument("--print-data-log", action="store_true", help="print keys and values (implies deep)")
    cmd.add_argument("--index-sanity-check", action="store_true", help="only run the broker's index check")
    cmd.add_argument("--verify-index-only", action="store_true", help="check indexes against the log, quietly")
    cmd.add_argument("--skip-record-metadata", action="store_true", help="print keys and values only")
    cmd.add_argument("--max-bytes", type=int, default=NO_LIMIT, help="read at most this many bytes of a .log")
    cmd.add_argument(
        "--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE, help="accepted, as the tool's option"
    )
    cmd.add_argument("--files", dest="more_files", action="append", default=[], help="as kafka-dump-log (a,b)")
    cmd.add_argument("--json", action="store_true", help="JSON lines instead of the tool's text")
    cmd.add_argument(
        "--offsets-decoder", action="store_true", help="decode __consumer_offsets records (implies --print-data-log)"
    )
    cmd.add_argument(
        "--transaction-log-decoder",
        action="store_true",
        help="decode __transaction_state records (implies --print-data-log)",
    )
    cmd.add_argument("--cluster-metadata-decoder", action="store_true", help="not supported yet")
    args = parser.parse_args(argv)
    if args.cluster_metadata_decoder:
        parser.error("--cluster-metadata-decoder is not supported yet: KRaft metadata records print undecoded.")
    files = [*args.files, *(f for group in args.more_files for f in group.split(",") if f)]
    if not files:
        parser.error("name at least one file to dump")
    options = DumpOptions(
        deep_iteration=args.deep_iteration,
        print_data_log=args.print_data_log,
        index_sanity_check=args.index_sanity_check,
        verify_index_only=args.verify_index_only,
        skip_record_metadata=args.skip_record_metadata,
        max_bytes=args.max_bytes,
        max_message_size=args.max_message_size,
        json=args.json,
        offsets_decoder=args.offsets_decoder,
        transaction_log_decoder=args.transaction_log_decoder,
    )
    return dump(files, options, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
