"""The host CPU's speed. A runtime's host-side time (Python dispatch per kernel, a serving engine's CPU work per step
and per sequence) is single-threaded Python and C++ on the host, so it scales inversely with the host's single-
thread speed; the GPU's own time (its kernels, the gaps between them) does not (vllm-project/vllm issue #8147: a
faster host CPU sped vLLM 0.5.5 up 3.8x on an RTX 3090). Every host constant in data/runtimes.yaml and
data/serving.yaml was measured or tuned on its sources' hosts (H100 and A100 servers of 2023-25; the data files name
no CPU for them): they are the reference, speed 1, and a plan's host_speed is its host's single-thread speed over
theirs (e.g. PassMark's single-thread rating of both CPUs), 1 by default, so that default answers do not change."""

from __future__ import annotations

from dataclasses import replace

from planner.inputs.runtimes import Efficiency

REFERENCE_HOST_SPEED = 1.0  # the hosts the constants were measured on


def host_seconds(seconds: float, host_speed: float) -> float:
    """`seconds` of host CPU work at the reference hosts' speed, on a host `host_speed` times as fast single-threaded:
    a serving front end's work on a request (HTTP, tokenising the prompt, the hop to the engine and back) and the
    engine's host steps before a first token goes out are single-threaded Python like the constants above."""
    return seconds / host_speed


def on_host(eff: Efficiency, host_speed: float) -> Efficiency:
    """`eff` on a host `host_speed` times as fast single-threaded as the reference: each host-side time divided by
    it (dispatch per kernel, eager prefill's, the per-step and per-sequence CPU work, an expert loop's dispatches
    and round trips), the GPU's own untouched."""
    if host_speed == REFERENCE_HOST_SPEED:
        return eff
    return replace(eff, host_us_per_kernel=eff.host_us_per_kernel / host_speed,
                   prefill_host_us_per_kernel=eff.prefill_host_us_per_kernel / host_speed,
                   step_host_us=eff.step_host_us / host_speed, host_us_per_seq=eff.host_us_per_seq / host_speed,
                   idle_op_us=eff.idle_op_us / host_speed, sync_us=eff.sync_us / host_speed)
