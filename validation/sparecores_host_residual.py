"""Does Spare Cores' vLLM first-token miss track the host CPU? For each server of
validation/to_predict/sparecores-vllm-sync.yaml, the median of (measured - predicted now) time to first token of
its rows (POST HOC: the current engine, the conditions read after), in ms, and that residual times the server's
host_speed (validation/sparecores_hosts.py): host CPU work at the reference hosts' speed if the residual is host
work. `python3 validation/sparecores_host_residual.py [model ...]` (default: the two smallest models, whose GPU time
is least)."""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sparecores_hosts import host_speed, row_servers  # noqa: E402

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import load_measurements, predict_row, validation_models  # noqa: E402


def main() -> None:
    wanted = set(sys.argv[1:]) or {"smollm-135m", "qwen2-0.5b"}
    catalog, models, servers = load_catalog(), validation_models(), row_servers()
    res = defaultdict(list)
    for row in load_measurements():
        if row.id not in servers or row.regime != "prefill" or row.model not in wanted:
            continue
        p = predict_row(row, catalog, models)
        if p.predicted:
            res[servers[row.id]].append((row.value - p.predicted) * 1e3)
    print(f"{'server':36s} {'host_speed':>10s} {'n':>3s} {'residual ms':>12s} {'x host_speed':>13s}")
    for server in sorted(res, key=host_speed):
        r = statistics.median(res[server])
        print(f"{server:36s} {host_speed(server):10.2f} {len(res[server]):3d} {r:12.1f} {r * host_speed(server):13.1f}")


if __name__ == "__main__":
    main()
