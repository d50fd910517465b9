"""The host CPU of each Spare Cores server that ran the `vllm` task (validation/to_predict/sparecores-vllm-sync.yaml),
as a row's `host_speed` (planner/engine/host_speed.py): PassMark PerformanceTest 11's single-thread rating of the
server's CPU, measured by Spare Cores' own inspector on that server (SpareCores/sc-inspector-data @804d3c71dda,
data/<vendor>/<server>/passmark/stdout: `CPU_SINGLETHREAD`, and its `Processor:` line; read 2026-11-28, after the
rows' predictions were committed), over the reference hosts' rating in the same data.

The reference hosts are the H100 and A100 servers of 2023-25 with Sapphire Rapids or Zen 3 CPUs
(host_speed.py): in this data, GCP's a3-highgpu-1g/2g/4g and a3-edgegpu-8g (Xeon Platinum 8481C, Sapphire Rapids,
H100) and Azure's NC24/48/96ads_A100_v4 (EPYC 7V13, Zen 3, A100). Their ratings: 2,802, 2,720, 3,154, 3,134 (mean
2,952) and 2,276, 2,505, 2,511 (mean 2,431); the reference is the mean of the two families, 2,692. The runs were
made one at a time on an otherwise idle server (the inspector's tasks run in series), so the rating is the CPU's own.

`python3 validation/sparecores_hosts.py` prints each server's host_speed; `--write` adds `host_speed` to every row of
the source in validation/conditions_read_after.yaml (merging into a row's existing entry, or a new entry)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROWS_FILE = HERE / "to_predict" / "sparecores-vllm-sync.yaml"
AFTER_FILE = HERE / "conditions_read_after.yaml"
DATA = "SpareCores/sc-inspector-data @804d3c71dda"

# server: (the CPU PassMark names, CPU_SINGLETHREAD, the date of the PassMark run)
PASSMARK_SINGLE_THREAD = {
    "aws/g5.16xlarge": ("AMD EPYC 7R32 (Zen 2)", 2135.4, "2024-11-09"),
    "aws/g5.xlarge": ("AMD EPYC 7R32 (Zen 2)", 2136.6, "2024-11-08"),
    "azure/Standard_NC24ads_A100_v4": ("AMD EPYC 7V13 (Zen 3)", 2276.0, "2024-11-09"),
    "azure/Standard_NC48ads_A100_v4": ("AMD EPYC 7V13 (Zen 3)", 2505.1, "2024-11-10"),
    "azure/Standard_NC96ads_A100_v4": ("AMD EPYC 7V13 (Zen 3)", 2511.1, "2024-11-11"),
    "azure/Standard_NC40ads_H100_v5": ("AMD EPYC 9V84 (Zen 4)", 2906.6, "2025-03-25"),
    "gcp/a2-highgpu-1g": ("Intel Xeon CPU @ 2.20GHz (GCP's Cascade Lake)", 1697.8, "2024-11-08"),
    "gcp/a2-highgpu-2g": ("Intel Xeon CPU @ 2.20GHz (GCP's Cascade Lake)", 1692.6, "2024-11-08"),
    "gcp/a2-highgpu-8g": ("Intel Xeon CPU @ 2.20GHz (GCP's Cascade Lake)", 1698.6, "2024-11-08"),
    "gcp/a2-ultragpu-1g": ("Intel Xeon CPU @ 2.20GHz (GCP's Cascade Lake)", 1689.7, "2024-11-08"),
    "gcp/g2-standard-16": ("Intel Xeon CPU @ 2.20GHz (GCP's Cascade Lake)", 1690.7, "2024-11-08"),
    "gcp/g2-standard-24": ("Intel Xeon CPU @ 2.20GHz (GCP's Cascade Lake)", 1712.6, "2024-11-08"),
    "gcp/g2-standard-48": ("Intel Xeon CPU @ 2.20GHz (GCP's Cascade Lake)", 1703.4, "2024-11-08"),
    "gcp/a3-highgpu-1g": ("Intel Xeon Platinum 8481C (Sapphire Rapids)", 2801.6, "2024-11-11"),
    "gcp/a3-highgpu-2g": ("Intel Xeon Platinum 8481C (Sapphire Rapids)", 2720.1, "2024-11-11"),
    "gcp/a3-highgpu-4g": ("Intel Xeon Platinum 8481C (Sapphire Rapids)", 3154.0, "2024-11-11"),
    "gcp/a3-edgegpu-8g": ("Intel Xeon Platinum 8481C (Sapphire Rapids)", 3134.0, "2025-01-02"),
    "gcp/a3-ultragpu-8g": ("Intel Xeon Platinum 8581C (Emerald Rapids)", 3207.7, "2026-07-14"),
    "upcloud/GPU-48xCPU-480GB-2xB200": ("Intel Xeon Platinum 8570 (Emerald Rapids)", 3236.1, "2026-05-22"),
    "vultr/vcg-l40s-16c-180g-48vram": ("Intel Xeon Gold 6448H (Sapphire Rapids)", 3317.3, "2026-06-30"),
    "vultr/vcg-l40s-32c-375g-96vram": ("Intel Xeon Gold 6448H (Sapphire Rapids)", 3318.9, "2026-06-30"),
}
SAPPHIRE_RAPIDS_REFERENCE = ("gcp/a3-highgpu-1g", "gcp/a3-highgpu-2g", "gcp/a3-highgpu-4g", "gcp/a3-edgegpu-8g")
ZEN3_REFERENCE = ("azure/Standard_NC24ads_A100_v4", "azure/Standard_NC48ads_A100_v4", "azure/Standard_NC96ads_A100_v4")


def family_mean(servers: tuple[str, ...]) -> float:
    return sum(PASSMARK_SINGLE_THREAD[s][1] for s in servers) / len(servers)


def reference_rating() -> float:
    """The reference hosts' single-thread rating: the mean of the Sapphire Rapids and the Zen 3 families' means."""
    return (family_mean(SAPPHIRE_RAPIDS_REFERENCE) + family_mean(ZEN3_REFERENCE)) / 2


def host_speed(server: str) -> float:
    """`server`'s single-thread rating over the reference's, rounded to 0.01."""
    return round(PASSMARK_SINGLE_THREAD[server][1] / reference_rating(), 2)


def row_servers() -> dict[str, str]:
    """Row id -> the cloud server its conditions name."""
    rows = yaml.safe_load(ROWS_FILE.read_text())["rows"]
    out = {}
    for row in rows:
        m = re.search(r"cloud server ([a-z]+/[A-Za-z0-9_.-]+?):", row["conditions"])
        if not m or m.group(1) not in PASSMARK_SINGLE_THREAD:
            raise SystemExit(f"{row['id']}: no known server in its conditions")
        out[row["id"]] = m.group(1)
    return out


def source_text(server: str) -> str:
    cpu, rating, date = PASSMARK_SINGLE_THREAD[server]
    ref = reference_rating()
    return (f"host_speed {host_speed(server)}: the row's server {server} has an {cpu}, PassMark PerformanceTest 11 "
            f"CPU_SINGLETHREAD {rating:,.0f} measured on it by Spare Cores ({DATA}, data/{server}/passmark/stdout, "
            f"run {date}; read 2026-11-28, after the predictions), over the reference hosts' {ref:,.0f} (the same "
            f"data's Sapphire Rapids 8481C H100 servers, mean {family_mean(SAPPHIRE_RAPIDS_REFERENCE):,.0f}, and Zen 3 "
            f"EPYC 7V13 A100 servers, mean {family_mean(ZEN3_REFERENCE):,.0f}; validation/sparecores_hosts.py)")


def write(path: Path = AFTER_FILE) -> int:
    """Add host_speed to every row of the source in `path`; the number of rows written."""
    servers = row_servers()
    lines = path.read_text().splitlines()
    seen, out, i = set(), [], 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"- id: (\S+)$", line)
        if m and m.group(1) in servers:
            rid = m.group(1)
            seen.add(rid)
            out.append(line)
            i += 1
            block = []
            while i < len(lines) and lines[i].startswith("  "):
                block.append(lines[i])
                i += 1
            if any(b.startswith("  host_speed:") for b in block):
                raise SystemExit(f"{rid}: already has a host_speed")
            out.append(f"  host_speed: {host_speed(servers[rid])}")
            for b in block:
                if b.startswith("  source: '") and b.endswith("'"):
                    b = b[:-1] + "; " + source_text(servers[rid]).replace("'", "''") + "'"
                elif b.startswith("  source:"):
                    raise SystemExit(f"{rid}: its source is not one single-quoted line")
                out.append(b)
            continue
        out.append(line)
        i += 1
    for rid, server in servers.items():
        if rid not in seen:
            out += [f"- id: {rid}", f"  host_speed: {host_speed(server)}",
                    "  source: '" + source_text(server).replace("'", "''") + "'"]
    path.write_text("\n".join(out) + "\n")
    return len(servers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="add host_speed to validation/conditions_read_after.yaml")
    args = ap.parse_args()
    print(f"reference rating {reference_rating():,.0f}")
    for server, (cpu, rating, _) in sorted(PASSMARK_SINGLE_THREAD.items(), key=lambda kv: kv[1][1]):
        print(f"{server:36s} {cpu:46s} {rating:8,.0f}  host_speed {host_speed(server):.2f}")
    if args.write:
        print(f"{write()} rows written to {AFTER_FILE.name}")


if __name__ == "__main__":
    main()
