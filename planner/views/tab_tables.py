"""The Serving and Accuracy tabs' tables as plain rows: per GPU, serving latencies and the most sequences served within
latency targets; per regime, the planner's accuracy against published measurements, with the shared column names.
"""

from __future__ import annotations

from datetime import date

from planner.engine.deployment import disaggregation_verdict, search
from planner.engine.estimate import efficiency_on
from planner.engine.serving import max_concurrency, serving_point
from planner.engine.serving_sim import Requests, Slo
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation import uncertainty
from planner.views.deployment_view import SPLIT_HAND_OFF, summary_rows
from planner.views.skyserve import launch_command, model_repo, service_yaml, yaml_text
from planner.views.skyserve_split import commands_text, split_hand_off, split_service

# The Accuracy tab's column names for a bias and a verdict, shared by its leave-one-source-out and split tables.
BIAS_COLUMN = "median bias % (+ = estimate too fast)"
VERDICT_COLUMN = "meets target (and bias ±10 %)"


# the Serving tab's names for serving_trace.LENGTH_SPREADS
LENGTH_WORDS = {"fixed": "Fixed (the job's)", "sharegpt": "ShareGPT-like spread",
                "uniform": "Uniform (benchmarks' random set)"}

def accuracy_rows() -> tuple[list[dict], date]:
    """The leave-one-source-out accuracy per regime as last written by `planner validate --write-uncertainty`, with
    accuracy targets, for the page's Accuracy tab; and the date it was written."""
    table = uncertainty.load_uncertainty()
    return [{"regime": a.regime, "rows": a.rows, "median |error| %": a.median_ape, "90th pct |error| %": a.p90_ape,
             BIAS_COLUMN: a.median_bias_pct, "target %": a.target_ape,
             VERDICT_COLUMN: None if a.meets is None else ("yes" if a.meets else "no")}
            for a in table.accuracy], table.generated


def serving_rows(plan, gpus, facts, prompt: int, output: int, ttft_s: float | None,
                 tpot_s: float | None) -> list[dict]:
    """Per GPU: one sequence alone, and the most sequences served at once within the latency targets (TTFT, TPOT
    in seconds): latencies in ms (TTFT with the plan's runtime's server front end, its own column: data/serving.yaml
    request_overhead_ms + prompt x tokenize_us_per_token), output tokens/s and $ per 1M output tokens
    (planner.engine.serving); a device
    the plan's runtime can't run on (a CPU) is left out."""
    rows = []
    for gpu in gpus:
        if efficiency_on(plan, gpu, facts).unsupported:  # the runtime can't run on this device (a CPU)
            continue
        sched = load_schedulers().serving(plan.runtime, gpu.id, gpu.vram_gib)
        alone = serving_point(plan, gpu, facts, 1, prompt, output, sched)
        best = max_concurrency(plan, gpu, facts, prompt, output, ttft_s, tpot_s, sched)
        row = {"GPU": gpu.name, "TTFT alone (ms)": alone.ttft_s * 1e3, "Front end (ms)": alone.front_end_s * 1e3,
               "TPOT alone (ms)": alone.tpot_s * 1e3,
               "Max concurrency in target": best.concurrency if best else 0,
               "TPOT at max (ms)": best.tpot_s * 1e3 if best else None,
               "Tokens/s at max": best.tokens_per_s if best else None,
               "$ per 1M tokens at max": best.usd_per_m_tokens if best else None, "gpu_id": gpu.id}
        rows.append(row)
    return rows


def deployment_answer(plan, gpus, facts, prompt: int, output: int, rate: float, ttft_s: float,
                      tpot_s: float, lengths: str = "fixed") -> tuple[str, list[dict], str | None, str | None]:
    """The Serving tab's deployment: a sentence, the best and runner-up rows (planner.engine.deployment over `gpus`
    and every serving runtime), and the best's launch command and SkyServe YAML (None when nothing meets the SLO; a
    disaggregated best: one unit's commands, and a service where planner.views.skyserve_split writes one).
    `lengths`: each request at prompt/output tokens, or spread around them (serving_trace.LENGTH_SPREADS)."""
    schedulers = load_schedulers()
    dep = search(plan, facts, schedulers, list(gpus), Requests.spread(prompt, output, lengths), rate,
                 Slo(ttft_s, tpot_s))
    rows = summary_rows(dep)
    slo = f"p95 TTFT <= {ttft_s * 1e3:g} ms and p95 TPOT <= {tpot_s * 1e3:g} ms"
    if dep.best is None:
        return (f"No deployment of these GPUs serves {rate:g} requests/s within {slo}; each row says why.", rows,
                None, None)
    b, repo = dep.best, model_repo(plan.model.id)
    verdict = disaggregation_verdict(dep)
    header = f"{plan.model.name}: {rate:g} requests/s, {slo}"
    if b.disaggregated:
        hand = split_hand_off(b, schedulers, repo, prompt + output)
        task, notes = split_service(b, schedulers, repo, plan.model.id, prompt + output)
        return (f"Cheapest: {b.label}, ${b.usd_per_hour:,.2f}/h, serving {rate:g} requests/s within {slo} (p95 TTFT "
                f"{b.point.ttft[95] * 1e3:,.0f} ms, p95 TPOT {b.point.tpot[95] * 1e3:,.1f} ms). {verdict[:1].upper()}"
                f"{verdict[1:]}. {SPLIT_HAND_OFF[:1].upper()}{SPLIT_HAND_OFF[1:]}.", rows,
                commands_text(hand) if hand else None, yaml_text(task, notes, header) if task else None)
    sentence = (f"Cheapest: {b.replicas} replica{'s' if b.replicas > 1 else ''} of {b.tp} x {b.gpu.name} under "
                f"{b.sched.name}, ${b.usd_per_hour:,.2f}/h, serving {rate:g} requests/s within {slo} (p95 TTFT "
                f"{b.point.ttft[95] * 1e3:,.0f} ms, p95 TPOT {b.point.tpot[95] * 1e3:,.1f} ms per replica)."
                + (f" {verdict[:1].upper()}{verdict[1:]}." if verdict else ""))
    return (sentence, rows, launch_command(b, schedulers, repo, prompt + output),
            service_yaml(b, schedulers, repo, plan.model.id, prompt + output, header))
