"""`make bench` / `python -m bench [name ...]`: run the benchmarks and write bench/results/."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from bench import bench_groups, bench_messages, bench_overview, bench_topics, bench_up
from bench.bench_up import DATA
from bench.common import REPO, RESULTS

BENCHMARKS = {
    "cluster_up": bench_up.run,
    "overview_latency": bench_overview.run,
    "message_page": bench_messages.run,
    "topic_list": bench_topics.run,
    "group_lag": bench_groups.run,
}


def write_summary() -> None:
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench`; each figure is a ratio to a reference measured "
        "in the same run (see each benchmark's docstring in `bench/`).",
        "",
    ]
    for path in sorted(RESULTS.glob("*.json")):
        data: dict[str, Any] = json.loads(path.read_text())
        lines.append(f"## {data['benchmark']} ({data['measured_at']}, {data['machine']['cpus']} CPUs)")
        lines.append("")
        for key, value in data.items():
            if key.startswith(("ratio_", "console_", "reference_", "groups_")) or key.endswith(("_s", "_ms")):
                lines.append(f"- `{key}`: {json.dumps(value)}")
        lines.append("")
    (RESULTS / "summary.md").write_text("\n".join(lines))


def main(argv: list[str]) -> int:
    chosen = argv or list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    try:
        if "cluster_up" not in chosen:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "broker.local",
                    "--data",
                    str(DATA),
                    "up",
                    "--zookeeper-port",
                    "13181",
                    "--base-port",
                    "13092",
                ],
                cwd=REPO,
                check=True,
            )
        for name in chosen:
            print(f"== {name}", flush=True)
            print(json.dumps(BENCHMARKS[name](), indent=2), flush=True)
    finally:
        subprocess.run(
            [sys.executable, "-m", "broker.local", "--data", str(DATA), "down"], cwd=REPO, capture_output=True
        )
    write_summary()
    print(f"results in {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
