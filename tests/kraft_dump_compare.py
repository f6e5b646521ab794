"""``python -m broker.segments dump`` against the DumpLogSegments of a Kafka release, on one node's log dir
(prototype check for Kafka 4, not a pytest module): which files and options print the same, which differ.

    python -m tests.kraft_dump_compare 4.3.0 var/k43/kafka-logs-0

Compares a topic's first segment (plain, deep, data), its indexes, ``__consumer_offsets`` (deep and
``--offsets-decoder``), ``__transaction_state`` (``--transaction-log-decoder``), ``__share_group_state``
and the KRaft metadata log (deep, ``--cluster-metadata-decoder``). A live metadata log grows between the
two reads: a difference at its very end is that, not a bug.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

from broker.local.jvm import check_java
from broker.local.versions import release


def non_empty(root: Path, pattern: str) -> list[str]:
    return [str(p) for p in sorted(root.glob(pattern)) if p.stat().st_size > 0]


def run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False).stdout


def main(argv: list[str]) -> int:
    version, root = argv[0], Path(argv[1])
    kafka = release(version)
    quiet = Path("/tmp/kazami-quiet-log4j2.properties")
    quiet.write_text("status=warn\nrootLogger.level=ERROR\n")
    logging = f"-Dlog4j2.configurationFile={quiet}" if kafka.log4j2 else "-Dlog4j.configuration=file:/dev/null"
    first = non_empty(root, "*-0/00000000000000000000.log")
    topic = next((f for f in first if not Path(f).parent.name.startswith("__")), None)
    cases: list[tuple[list[str], list[str]]] = []
    if topic:
        cases += [([topic], []), ([topic], ["--deep-iteration"]), ([topic], ["--print-data-log"])]
        cases += [([topic.replace(".log", ".index")], []), ([topic.replace(".log", ".timeindex")], [])]
    offsets = non_empty(root, "__consumer_offsets-*/*.log")
    cases += [(offsets, ["--deep-iteration"]), (offsets, ["--offsets-decoder"])]
    cases += [(non_empty(root, "__transaction_state-*/*.log"), ["--transaction-log-decoder"])]
    cases += [(non_empty(root, "__share_group_state-*/*.log"), ["--print-data-log"])]
    metadata = non_empty(root, "__cluster_metadata-0/*.log")[:1]
    cases += [(metadata, ["--deep-iteration"]), (metadata, ["--cluster-metadata-decoder"])]
    java = check_java()
    for files, options in cases:
        if not files:
            print(f"none  {options}")
            continue
        theirs = run(
            [java, logging, "-cp", kafka.classpath, kafka.tool("DumpLogSegments"), "--files", ",".join(files), *options]
        )
        ours = run([sys.executable, "-m", "broker.segments", "dump", "--files", ",".join(files), *options])
        what = f"{Path(files[0]).parent.name}/{Path(files[0]).name} ({len(files)} files) {' '.join(options)}"
        if theirs == ours:
            print(f"same  {what}: {len(theirs.splitlines())} lines")
            continue
        diff = [d for d in difflib.unified_diff(theirs.splitlines(), ours.splitlines(), lineterm="", n=0)]
        print(f"DIFF  {what}: {len(theirs.splitlines())} lines theirs, {len(ours.splitlines())} ours")
        for line in diff[2:8]:
            print(f"      {line[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
