"""The deployment search's answer as plain rows and a JSON document: the best deployment with its latency
percentiles, the runner-ups and why each loses, a rate sweep of the best, and its hand-off (launch command and
SkyServe service)."""

from __future__ import annotations

from planner.engine.deployment import Candidate, Deployment, disaggregation_verdict
from planner.engine.serving_sim import RatePoint
from planner.inputs.serving_runtimes import Schedulers
from planner.views.skyserve import launch_command, model_repo, service_yaml, yaml_text
from planner.views.skyserve_split import split_hand_off, split_service

MAX_LEFT_OUT_ROWS = 20  # the JSON lists this many of the candidates left out, and counts the rest
# a disaggregated best runs two pools behind a router (planner.views.skyserve_split)
SPLIT_HAND_OFF = ("a disaggregated deployment runs two pools (prefill and decode servers) behind a router that sends "
                  "each request to a prefill server, then with its KV cache to a decode server; its hand-off is one "
                  "unit of them (servers on one node and the router), run once per unit")


def _ms(x: float) -> float:
    return round(x * 1e3, 2)


def point_row(p: RatePoint) -> dict:
    """One replica at one rate: percentiles in ms, throughput and goodput."""
    row = {"rate_rps": round(p.rate, 4)}
    for name, pct in (("ttft", p.ttft), ("tpot", p.tpot), ("itl", p.itl), ("e2e", p.e2e)):
        row |= {f"{name}_p{q}_ms": _ms(v) for q, v in pct.items()}
    usd = None if p.usd_per_m_tokens is None else float(f"{p.usd_per_m_tokens:.4g}")
    return row | {"tokens_per_s": round(p.tokens_per_s, 1), "requests_per_s": round(p.requests_per_s, 3),
                  "goodput_rps": None if p.goodput is None else round(p.goodput, 3), "meets_slo": p.meets_slo,
                  "preemptions": p.preemptions, "settled": p.settled, "over_saturation": p.over_saturation,
                  "usd_per_1m_output_tokens": usd}


def candidate_row(c: Candidate) -> dict:
    row = {"gpu": c.gpu.id, "runtime": c.sched.id, "tp": c.tp, "replicas": c.replicas,
           "gpus": None if c.replicas is None else c.replicas * c.tp,
           "usd_per_hour": None if c.usd_per_hour is None else round(c.usd_per_hour, 2),
           "estimated_rps_per_replica": round(c.ceiling_rps, 3),
           "saturation_rps_per_replica": None if c.saturation_rps is None else round(c.saturation_rps, 3),
           "max_num_seqs": c.sched.max_num_seqs, "token_budget": c.sched.token_budget,
           "kv_cache_tokens": c.steps.kv_tokens if c.steps is not None else None, "why": c.why,
           "disaggregated": c.disaggregated}
    if c.disaggregated:
        row |= {"prefill_servers": c.pools.prefill if c.pools else None,
                "decode_servers": c.pools.decode if c.pools else None,
                "kv_link": c.pools.link.name if c.pools else None,
                "kv_link_gbps_per_gpu": round(c.pools.link.gbps, 1) if c.pools else None,
                "kv_transfer_ms_longest_prompt": None if c.kv_transfer_s is None else _ms(c.kv_transfer_s),
                "prefill_saturation_rps_per_server": None if c.prefill_saturation_rps is None
                else round(c.prefill_saturation_rps, 3)}
    if c.point is not None:
        row |= {"per_replica": point_row(c.point)}
    return row


def deployment_doc(dep: Deployment, schedulers: Schedulers, model_id: str, max_model_len: int,
                   sweep: list[RatePoint], header: str) -> dict:
    """Everything `planner serve --rate` prints as JSON."""
    doc: dict = {"rate_rps": dep.rate, "slo": {"ttft_p95_ms": _ms(dep.slo.ttft_s), "tpot_p95_ms": _ms(dep.slo.tpot_s)}}
    best = dep.best
    doc["best"] = candidate_row(best) if best else None
    if best is None:
        doc["why_none"] = ("no candidate meets the SLO at this rate: the closest are listed under runner_ups with "
                           "why each misses")
    doc["runner_ups"] = [candidate_row(c) for c in dep.runner_ups]
    doc["left_out"] = [{"gpu": c.gpu.id, "runtime": c.sched.id, "tp": c.tp, "disaggregated": c.disaggregated,
                        "why": c.why}
                       for c in dep.left_out[:MAX_LEFT_OUT_ROWS]]
    doc["left_out_count"] = len(dep.left_out)
    doc["disaggregation"] = disaggregation_verdict(dep)
    if best is not None and best.disaggregated:
        doc["hand_off_note"] = SPLIT_HAND_OFF
        doc["split_hand_off"] = split_doc(best, schedulers, model_id, max_model_len, header)
    elif best is not None:
        repo = model_repo(model_id)
        doc["sweep_per_replica"] = [point_row(p) for p in sweep]
        doc["launch_command"] = launch_command(best, schedulers, repo, max_model_len)
        doc["skyserve_yaml"] = service_yaml(best, schedulers, repo, model_id, max_model_len, header)
    return doc


def split_doc(c: Candidate, schedulers: Schedulers, model_id: str, max_model_len: int, header: str) -> dict:
    """A disaggregated deployment's hand-off: one unit's commands per pool, its router, the units, and a SkyServe
    service where the runtime's router and the unit's size allow one (else why not)."""
    repo = model_repo(model_id)
    hand = split_hand_off(c, schedulers, repo, max_model_len)
    task, notes = split_service(c, schedulers, repo, model_id, max_model_len)
    doc = {"notes": notes}
    if hand is not None:
        doc |= {"units": hand.units, "gpus_per_unit": hand.unit_gpus, "prefill_commands": list(hand.prefill),
                "decode_commands": list(hand.decode), "router_command": hand.router}
    doc["skyserve_yaml"] = None if task is None else yaml_text(task, notes, header)
    return doc


def summary_rows(dep: Deployment) -> list[dict]:
    """The best and the runner-ups as flat rows (the table and CSV formats)."""
    rows = []
    for c in ([dep.best] if dep.best else []) + list(dep.runner_ups):
        p = c.point
        layout = f"{c.pools.prefill} prefill + {c.pools.decode} decode" if c.disaggregated and c.pools else (
            "disaggregated" if c.disaggregated else "aggregated")
        rows.append({"gpu": c.gpu.id, "runtime": c.sched.id, "tp": c.tp, "layout": layout, "replicas": c.replicas,
                     "usd_per_hour": None if c.usd_per_hour is None else round(c.usd_per_hour, 2),
                     "ttft_p95_ms": _ms(p.ttft[95]) if p else None, "tpot_p95_ms": _ms(p.tpot[95]) if p else None,
                     "why": c.why or "best"})
    return rows
