"""Hand-off for a disaggregated (prefill/decode) deployment: each pool's launch commands, the router that joins
them, and, where it fits, a SkyServe service.

A replica of the service is one unit of the deployment's P prefill and D decode servers: g = gcd(P, D) units of
P/g prefill and D/g decode servers each, every server on its own GPUs of one node (CUDA_VISIBLE_DEVICES) and its
own port, the runtime's router in front on the service port. SkyServe balances requests over the g units; a unit
moves its KV caches inside its node (NVLink). A unit larger than a node gets its commands and no service.

The runtimes' own flags (read 2026-11-27):
- SGLang, 'PD Disaggregation' (docs.sglang.io/docs/advanced_features/pd_disaggregation): `--disaggregation-mode
  prefill|decode` on `sglang.launch_server`; each prefill server's bootstrap port (`--disaggregation-bootstrap-port`,
  default 8998) is given to the router after its URL; `python -m sglang_router.launch_router --pd-disaggregation
  --prefill URL BOOTSTRAP_PORT ... --decode URL ... --host --port`, which answers /health.
- vLLM, 'NixlConnector Usage Guide' (docs.vllm.ai/en/stable/features/nixl_connector_usage): each instance with
  `--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer|kv_consumer"}'` and its own
  VLLM_NIXL_SIDE_CHANNEL_PORT on a shared host; the proxy that sends each request to a prefiller then a decoder is
  tests/v1/kv_connector/nixl_integration/toy_proxy_server.py in vLLM's repository (`--port --prefiller-hosts
  --prefiller-ports --decoder-hosts --decoder-ports`), not part of the wheel: no service is written for it.
- TensorRT-LLM: `trtllm-serve disaggregated -c CONFIG` reads a YAML file of context and generation servers, which
  this hand-off does not write.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass

from planner.engine.deployment import Candidate
from planner.inputs.serving_runtimes import Schedulers
from planner.views.skyserve import INITIAL_DELAY_SECONDS, launch_command, service

SERVER_BASE_PORT = 8100  # a unit's servers listen on 8100, 8101, ... (prefill first), the router on the engine's port
SGLANG_BOOTSTRAP_BASE = 8998  # SGLang's default bootstrap port, then one more per prefill server of a unit
NIXL_SIDE_BASE = 5600  # vLLM's NIXL side channel ports, one per instance on a host (the guide's 5600, 5601)
ROUTER_HEALTH = "/health"  # sglang_router's health path


@dataclass(frozen=True)
class SplitHandOff:
    """One unit's commands (each a shell line) and the units a deployment runs."""

    prefill: tuple[str, ...]
    decode: tuple[str, ...]
    router: str
    units: int
    unit_gpus: int
    notes: tuple[str, ...]


def unit_of(c: Candidate) -> tuple[int, int, int]:
    """(prefill servers, decode servers) in one unit of `c`'s pools, and the number of units: their gcd."""
    p, d = c.pools.prefill, c.pools.decode
    g = math.gcd(p, d)
    return p // g, d // g, g


def _servers(c: Candidate, schedulers: Schedulers, model: str, max_model_len: int, count: int, first_gpu: int,
             first_port: int, role_flags) -> tuple[list[str], list[int]]:
    lines, ports = [], []
    for i in range(count):
        gpus = ",".join(str(first_gpu + i * c.tp + k) for k in range(c.tp))
        port = first_port + i
        env, flags = role_flags(i)
        lines.append(f"{env} CUDA_VISIBLE_DEVICES={gpus} "
                     f"{launch_command(c, schedulers, model, max_model_len, port=port)} {flags}".strip())
        ports.append(port)
    return lines, ports


def split_hand_off(c: Candidate, schedulers: Schedulers, model: str, max_model_len: int) -> SplitHandOff | None:
    """The commands of one unit of a disaggregated `c` (None: the runtime's split needs a config file this hand-off
    does not write)."""
    p, d, g = unit_of(c)
    port = schedulers.get(c.sched.id).port
    if c.sched.id == "sglang":
        pre, pre_ports = _servers(c, schedulers, model, max_model_len, p, 0, SERVER_BASE_PORT, lambda i: (
            "", f"--disaggregation-mode prefill --disaggregation-bootstrap-port {SGLANG_BOOTSTRAP_BASE + i}"))
        dec, dec_ports = _servers(c, schedulers, model, max_model_len, d, p * c.tp, SERVER_BASE_PORT + p,
                                  lambda i: ("", "--disaggregation-mode decode"))
        router = ("python -m sglang_router.launch_router --pd-disaggregation "
                  + " ".join(f"--prefill http://127.0.0.1:{x} {SGLANG_BOOTSTRAP_BASE + i}"
                             for i, x in enumerate(pre_ports))
                  + " " + " ".join(f"--decode http://127.0.0.1:{x}" for x in dec_ports)
                  + f" --host 0.0.0.0 --port {port}")
        return SplitHandOff(tuple(pre), tuple(dec), router, g, (p + d) * c.tp, ())
    if c.sched.id == "vllm":
        def nixl(role: str, offset: int):
            config = shlex.quote(json.dumps({"kv_connector": "NixlConnector", "kv_role": role},
                                            separators=(",", ":")))
            return lambda i: (f"VLLM_NIXL_SIDE_CHANNEL_PORT={NIXL_SIDE_BASE + offset + i}",
                              f"--kv-transfer-config {config}")
        pre, pre_ports = _servers(c, schedulers, model, max_model_len, p, 0, SERVER_BASE_PORT, nixl("kv_producer", 0))
        dec, dec_ports = _servers(c, schedulers, model, max_model_len, d, p * c.tp, SERVER_BASE_PORT + p,
                                  nixl("kv_consumer", p))
        router = (f"python toy_proxy_server.py --port {port} --prefiller-hosts {' '.join(['localhost'] * p)} "
                  f"--prefiller-ports {' '.join(map(str, pre_ports))} --decoder-hosts {' '.join(['localhost'] * d)} "
                  f"--decoder-ports {' '.join(map(str, dec_ports))}")
        note = ("vLLM's proxy is a script of its repository (tests/v1/kv_connector/nixl_integration/"
                "toy_proxy_server.py, 'toy' by its name), not part of the wheel: copy it from the vLLM version you "
                "install, or put your own router in front; no SkyServe service is written for it")
        return SplitHandOff(tuple(pre), tuple(dec), router, g, (p + d) * c.tp, (note,))
    return None


def commands_text(hand: SplitHandOff) -> str:
    """One unit's commands as a shell script: the servers in the background, then the router."""
    head = (f"# one unit of {hand.units}: {len(hand.prefill)} prefill + {len(hand.decode)} decode servers and the "
            f"router, {hand.unit_gpus} GPUs of one node")
    return "\n".join([head] + [f"{line} &" for line in hand.prefill + hand.decode] + [hand.router])


def split_service(c: Candidate, schedulers: Schedulers, model: str, model_id: str,
                  max_model_len: int) -> tuple[dict | None, list[str]]:
    """A SkyServe service whose replica is one unit of `c` (a dict for yaml), or None and why not; with notes."""
    hand = split_hand_off(c, schedulers, model, max_model_len)
    if hand is None:
        return None, [f"{c.sched.name}'s disaggregated serving is configured by a file this hand-off does not write"]
    if c.sched.id != "sglang":
        return None, list(hand.notes)
    if c.gpu.node_gpus and hand.unit_gpus > c.gpu.node_gpus:
        return None, [f"one unit of {hand.unit_gpus} GPUs spans more than a {c.gpu.node_gpus}-GPU node: run the pools' "
                      "commands on separate nodes with the router's URLs pointing at them"]
    task, notes = service(c, schedulers, model, model_id, max_model_len)
    servers = [f"({line}) &" for line in hand.prefill + hand.decode]
    task["name"] = f"serve-{c.sched.id}-{c.gpu.id}-split".replace(".", "-")[:60]
    task["service"] = {"readiness_probe": {"path": ROUTER_HEALTH, "initial_delay_seconds": INITIAL_DELAY_SECONDS},
                       "replicas": hand.units}
    accel = next(iter(task["resources"]["accelerators"]))
    task["resources"]["accelerators"] = {accel: hand.unit_gpus}
    task["run"] = "\n".join(servers + [hand.router])
    return task, notes + [f"one replica is {len(hand.prefill)} prefill + {len(hand.decode)} decode servers and the "
                          "router on one node; SkyServe spreads requests over the replicas"]
