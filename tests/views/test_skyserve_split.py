"""Hand-off of a disaggregated deployment: each pool's commands, the router, and a SkyServe service that
SkyPilot's own parser accepts."""

import json
import shlex

import yaml

from planner.engine.deployment import Candidate, Deployment
from planner.engine.serving_sim import KvLink, Pools, Slo
from planner.inputs.facts import load_facts
from planner.inputs.serving_runtimes import load_schedulers
from planner.views.deployment_view import deployment_doc
from planner.views.skyserve_split import commands_text, split_hand_off, split_service, unit_of

FACTS = load_facts()
SCHEDULERS = load_schedulers()
MODEL = "meta-llama/Meta-Llama-3-8B"


def _split(runtime: str, prefill: int, decode: int, tp: int = 1) -> Candidate:
    gpu = FACTS.catalog.get("h100-sxm")
    sched = SCHEDULERS.get(runtime).on(gpu.id, gpu.vram_gib)
    return Candidate(gpu, sched, tp, 2.0 * tp, 1.0, replicas=prefill + decode, disaggregated=True,
                     pools=Pools(prefill, decode, KvLink(300.0, "NVLink")))


def test_pools_split_into_equal_units():
    """2 prefill + 4 decode servers: gcd 2, so 2 units of 1 + 2; 3 + 5 can't split: one unit of 3 + 5."""
    assert unit_of(_split("sglang", 2, 4)) == (1, 2, 2)
    assert unit_of(_split("sglang", 3, 5)) == (3, 5, 1)


def test_sglang_pools_have_their_roles_gpus_and_router():
    """One unit of 1 prefill + 2 decode servers at TP 2: GPUs 0-1 prefill, 2-3 and 4-5 decode, ports 8100-8102,
    the router on SGLang's port 30000 naming each server (the prefill one with its bootstrap port)."""
    hand = split_hand_off(_split("sglang", 2, 4, tp=2), SCHEDULERS, MODEL, 768)
    assert hand.units == 2 and hand.unit_gpus == 6
    [pre] = hand.prefill
    words = shlex.split(pre)
    assert words[0] == "CUDA_VISIBLE_DEVICES=0,1" and words[1:4] == ["python", "-m", "sglang.launch_server"]
    flags = dict(zip(words[4::2], words[5::2]))
    assert flags["--disaggregation-mode"] == "prefill" and flags["--port"] == "8100" and flags["--tp-size"] == "2"
    assert flags["--disaggregation-bootstrap-port"] == "8998"
    assert [shlex.split(d)[0] for d in hand.decode] == ["CUDA_VISIBLE_DEVICES=2,3", "CUDA_VISIBLE_DEVICES=4,5"]
    assert all("--disaggregation-mode decode" in d for d in hand.decode)
    assert hand.router == ("python -m sglang_router.launch_router --pd-disaggregation --prefill "
                           "http://127.0.0.1:8100 8998 --decode http://127.0.0.1:8101 --decode http://127.0.0.1:8102 "
                           "--host 0.0.0.0 --port 30000")


def test_vllm_pools_carry_the_nixl_connector_roles():
    hand = split_hand_off(_split("vllm", 1, 1), SCHEDULERS, MODEL, 768)
    pre, dec = shlex.split(hand.prefill[0]), shlex.split(hand.decode[0])
    assert pre[:3] == ["VLLM_NIXL_SIDE_CHANNEL_PORT=5600", "CUDA_VISIBLE_DEVICES=0", "vllm"]
    assert dec[:3] == ["VLLM_NIXL_SIDE_CHANNEL_PORT=5601", "CUDA_VISIBLE_DEVICES=1", "vllm"]
    assert json.loads(pre[pre.index("--kv-transfer-config") + 1]) == {"kv_connector": "NixlConnector",
                                                                       "kv_role": "kv_producer"}
    assert json.loads(dec[dec.index("--kv-transfer-config") + 1])["kv_role"] == "kv_consumer"
    assert "--prefiller-ports 8100 --decoder-hosts localhost --decoder-ports 8101" in hand.router
    task, notes = split_service(_split("vllm", 1, 1), SCHEDULERS, MODEL, "llama-3-8b", 768)
    assert task is None and "toy_proxy_server.py" in notes[0]


def test_a_unit_beyond_a_node_and_tensorrt_llm_get_no_service():
    task, notes = split_service(_split("sglang", 3, 5, tp=2), SCHEDULERS, MODEL, "llama-3-8b", 768)
    assert task is None and "16 GPUs" in notes[0]
    assert split_hand_off(_split("tensorrt-llm", 1, 1), SCHEDULERS, MODEL, 768) is None


def test_skypilot_parses_the_split_service(skypilot):
    task, _ = split_service(_split("sglang", 2, 4), SCHEDULERS, MODEL, "llama-3-8b", 768)
    text = yaml.safe_dump(task, sort_keys=False)
    parsed = skypilot.parse(text)
    assert "error" not in parsed, parsed
    assert parsed["service"]["readiness_probe"]["path"] == "/health"
    assert parsed["service"]["replica_policy"]["min_replicas"] == 2
    assert parsed["resources"][0]["accelerators"] == {"H100-SXM": 3}
    assert parsed["ports"] == [["30000"]]  # only the router is exposed
    assert parsed["run"].count("sglang.launch_server") == 3 and parsed["run"].endswith("--port 30000")


def test_the_json_and_the_page_carry_a_split_winner_hand_off():
    """A disaggregated best (2 prefill + 4 decode SGLang servers): the JSON gives one unit's commands, 2 units and
    the service; the Serving tab's command block is the same unit as one script (servers in the background)."""
    best = _split("sglang", 2, 4)
    doc = deployment_doc(Deployment(best, (), (), 20.0, Slo(0.5, 0.05)), SCHEDULERS, "llama-3-8b", 768, [], "h")
    hand = doc["split_hand_off"]
    assert hand["units"] == 2 and hand["gpus_per_unit"] == 3
    assert len(hand["prefill_commands"]) == 1 and len(hand["decode_commands"]) == 2
    assert yaml.safe_load(hand["skyserve_yaml"])["service"]["replicas"] == 2
    script = commands_text(split_hand_off(best, SCHEDULERS, MODEL, 768)).splitlines()
    assert script[0].startswith("# one unit of 2") and len(script) == 5
    assert all(line.endswith(" &") for line in script[1:4]) and script[4].startswith("python -m sglang_router")
