"""Issue #15's figures and targets in one table, from the runs `make bench` just made.

Reads bench/out/service.json (bench/service.py: neardup serve against datasketch) and
bench/out/cluster.json (bench/cluster.py: per-master spread on a 3+3 cluster), and prints
every figure next to its target with met / not met, and when each run was made. Figures,
never assertions.

    python bench/issue.py [--service bench/out/service.json] [--cluster bench/out/cluster.json]
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--service", type=Path, default=OUT / "service.json")
    p.add_argument("--cluster", type=Path, default=OUT / "cluster.json")
    args = p.parse_args(argv)
    service, cluster = _read(args.service), _read(args.cluster)
    print("=" * 100)
    if service is None:
        print(f"(no {args.service}: run bench/service.py)")
    else:
        print(f"bench/service.py run of {service['meta']['date']}: `{service['meta']['command']}`")
        print("\n".join(issue_table(service)))
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
