"""Issue #29's figures and targets in one table, from the runs `make bench` just made.

Reads bench/out/service.json (bench/service.py: neardup serve against datasketch),
bench/out/paced.json (bench/paced.py: latency at a paced load) and bench/out/cluster.json
(bench/cluster.py: per-master spread on a 3+3 cluster), and prints every figure next to
its target with met / not met, and when each run was made. Figures, never assertions.
Containment's p50 at 100k documents is bench/alignment.py's (`--scale 100000`).

    python bench/issue.py [--service ...] [--paced ...] [--cluster ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cluster import COMMAND_SPREAD, MEMORY_SPREAD
from common import OUT
from report import issue_table


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def cluster_rows(data: dict[str, Any]) -> list[str]:
    """The cluster targets: every master's share of an ingest's commands and of the memory
    it adds, as the farthest master's distance from the mean."""
    lines = []
    for name, r in data["results"].items():
        if r["masters"] < 2 or "command_spread" not in r:
            continue
        for key, label, target in (
            ("command_spread", "commands per master during ingest", COMMAND_SPREAD),
            ("memory_spread", "added used_memory per master", MEMORY_SPREAD),
        ):
            value = r[key]
            met = "met" if value <= target else "NOT met"
            lines.append(
                f"{name + ': ' + label:56}{'±' + format(100 * value, '.1f') + '%':>16}"
                f"{'±' + format(100 * target, '.0f') + '%':>18}  {met}"
            )
    return lines


# Issue #29: GET's p99 at half its peak rate, paced.
PACED_GET_P99_MS = 5.0


def paced_rows(data: dict[str, Any]) -> list[str]:
    """GET /similar's latency at half its measured peak, against the target."""
    half = data["get"]["paced"].get("0.5")
    if half is None:
        return ["(bench/paced.py ran no 50% load)"]
    met = "met" if half["p99_ms"] <= PACED_GET_P99_MS else "NOT met"
    label = f"GET p99 at half the peak ({data['get']['peak']['qps']:,.0f} q/s), ms"
    return [
        f"{label:56}{half['p99_ms']:>16.2f}{'<= ' + format(PACED_GET_P99_MS, 'g'):>18}  {met}",
        f"{'  (p50 / p99.9 there, ms; achieved q/s)':56}"
        f"{format(half['p50_ms'], '.2f') + ' / ' + format(half['p999_ms'], '.2f'):>16}"
        f"{format(half.get('achieved_qps', float('nan')), ',.0f'):>18}",
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--service", type=Path, default=OUT / "service.json")
    p.add_argument("--paced", type=Path, default=OUT / "paced.json")
    p.add_argument("--cluster", type=Path, default=OUT / "cluster.json")
    args = p.parse_args(argv)
    service, paced, cluster = _read(args.service), _read(args.paced), _read(args.cluster)
    print("=" * 100)
    if service is None:
        print(f"(no {args.service}: run bench/service.py)")
    else:
        print(f"bench/service.py run of {service['meta']['date']}: `{service['meta']['command']}`")
        print("\n".join(issue_table(service)))
    if paced is None:
        print(f"(no {args.paced}: run bench/paced.py)")
    else:
        print(f"\nbench/paced.py run of {paced['meta'].get('date', '?')}:")
        print("\n".join(paced_rows(paced)))
    print(
        "(containment with evidence, p50 at 100k documents, target <= 10 ms: "
        "bench/alignment.py --bits 0,8 --scale 100000)"
    )
    if cluster is None:
        print(f"(no {args.cluster}: run bench/cluster.py)")
    else:
        meta = cluster["meta"]
        print(
            f"\nbench/cluster.py run of {meta.get('date', '?')}: {meta['docs']:,} documents, "
            f"batches of {meta['batch']}, Index in-process; the farthest master from the mean"
        )
        print("\n".join(cluster_rows(cluster)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
