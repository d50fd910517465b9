"""Hand-off: the engine's launch command and a SkyServe service that SkyPilot's own parser accepts."""

import shlex

import yaml

from planner.engine.deployment import search
from planner.engine.plan import Plan
from planner.engine.serving_sim import Requests, Slo
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import load_schedulers
from planner.views.skyserve import launch_command, service_yaml

FACTS = load_facts()
SCHEDULERS = load_schedulers()


def _best(runtime: str):
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm")
    dep = search(plan, FACTS, SCHEDULERS, [FACTS.catalog.get("h100-sxm")], Requests((512,), (256,)), 40.0,
                 Slo(1.0, 0.1), runtimes=(runtime,), tps=(1,))
    assert dep.best is not None
    return dep.best


def test_vllm_command_carries_the_deployment():
    best = _best("vllm")
    words = shlex.split(launch_command(best, SCHEDULERS, "meta-llama/Meta-Llama-3-8B", 768))
    assert words[:3] == ["vllm", "serve", "meta-llama/Meta-Llama-3-8B"]
    flags = dict(zip(words[3::2], words[4::2]))
    # vLLM's defaults on an 80 GB H100 (data/serving.yaml): 1024 sequences, 8192 tokens per step
    assert flags == {"--tensor-parallel-size": "1", "--max-num-seqs": "1024", "--max-num-batched-tokens": "8192",
                     "--max-model-len": "768", "--gpu-memory-utilization": "0.9", "--host": "0.0.0.0",
                     "--port": "8000"}


def test_a_hostile_model_name_stays_one_word():
    best = _best("sglang")
    words = shlex.split(launch_command(best, SCHEDULERS, "x; rm -rf / #", 768))
    assert words[:4] == ["python", "-m", "sglang.launch_server", "--model-path"] and words[4] == "x; rm -rf / #"


def test_skypilot_parses_the_service(skypilot):
    for runtime in ("vllm", "sglang", "tensorrt-llm", "llama.cpp"):
        best = _best(runtime)
        text = service_yaml(best, SCHEDULERS, "meta-llama/Meta-Llama-3-8B", "llama-3-8b", 768, "test\nheader")
        parsed = skypilot.parse(text)
        assert "error" not in parsed, parsed
        assert parsed["service"]["readiness_probe"]["path"] == "/health"
        assert parsed["service"]["replica_policy"]["min_replicas"] == best.replicas
        assert parsed["resources"][0]["accelerators"] == {"H100-SXM": 1}  # data/skypilot.yaml: SkyPilot's name
        assert parsed["run"] == yaml.safe_load(text)["run"] and parsed["secrets"] == {"HF_TOKEN": None}
