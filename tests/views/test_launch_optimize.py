"""What SkyPilot's optimizer is asked (the planner's candidates and seconds) and what is made of its answer (the
task with its offers, the side-by-side report), without SkyPilot: its answers here are written by hand."""

import pytest
import yaml

from planner.clients.skypilot_optimizer import CandidateOffer, Offer, OptimizerResult
from planner.engine.estimate import estimate_all
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.launch_names import load_skypilot_names
from planner.inputs.models import load_models
from planner.views import launch, launch_optimize

FACTS = load_facts()
NAMES = load_skypilot_names()
HOSTILE = ["$(touch /tmp/pwned)", "`id`", "a: # b", "x'y\"z", "x\nname: pwned", "{x}", "\u2028"]


@pytest.fixture(scope="module")
def ranking():
    plan = Plan(load_models().get("gpt2-124m"), Generate(10_000, 128, 256), "bf16", runtime="vllm",
                price_tier="secure")
    return estimate_all(plan, FACTS)


def offer(name: str, cloud: str, region: str, usd_hr: float, seconds: float, instance: str = "i") -> Offer:
    return Offer(cloud, region, None, instance, name, 1, False, usd_hr, 1, seconds, usd_hr * seconds / 3600)


def test_every_feasible_candidate_goes_as_any_of_with_its_seconds(ranking):
    task, _ = launch.skypilot_task(ranking, NAMES, False, "t", max_candidates=None)
    ask, seconds = launch_optimize.optimizer_inputs(task, ranking, NAMES)
    names = [next(iter(r["accelerators"])) for r in ask["resources"]["any_of"]]
    assert "ordered" not in ask["resources"] and "ordered" in task["resources"]  # the task itself is left as it was
    assert len(names) > launch.MAX_CANDIDATES and set(seconds) == set(names)
    # each name's seconds are those of the first feasible GPU the ranking lists under it
    for name in names:
        first = next(e for e in ranking if e.feasible and NAMES.get(e.gpu.id) == name)
        assert seconds[name] == first.seconds


def test_the_task_written_holds_skypilots_offers_cheapest_job_first(ranking):
    task, _ = launch.skypilot_task(ranking, NAMES, False, "t", max_candidates=None)
    result = OptimizerResult("0.14.1", ("Lambda", "RunPod"), offer("H100", "Lambda", "us-east-1", 3.29, 1800),
                             (CandidateOffer("A100-80GB", 7200, offer("A100-80GB", "RunPod", "CA", 1.39, 7200), None),
                              CandidateOffer("H100", 1800, offer("H100", "Lambda", "us-east-1", 3.29, 1800), None),
                              CandidateOffer("L4", 600, None, "no offer on the enabled clouds")))
    out = launch_optimize.optimized_task(task, result)
    # $1.645 (0.5 h x $3.29) before $2.78 (2 h x $1.39); L4 has no offer
    assert [(r["infra"], r["accelerators"]) for r in out["resources"]["ordered"]] == [
        ("lambda/us-east-1", {"H100": 1}), ("runpod/CA", {"A100-80GB": 1})]
    report = launch_optimize.optimizer_report(ranking, NAMES, result, "secure")
    assert "chosen: H100:1 x 1 node(s) on Lambda us-east-1 (i): $3.29/node-hour x 30 min = $1.65" in report
    assert "- no offer on the enabled clouds: L4" in report


@pytest.mark.parametrize("evil", HOSTILE)
def test_what_skypilot_answers_reaches_the_task_as_the_same_text(ranking, evil):
    """A region or instance type is SkyPilot's catalog text: whatever it holds, the task file reads back the same."""
    task, _ = launch.skypilot_task(ranking, NAMES, False, "t")
    result = OptimizerResult("0.14.1", ("Vast",), offer("H100", "Vast", f"Texas, US{evil}", 1.87, 60, f"1x{evil}"),
                             (CandidateOffer("H100", 60, offer("H100", "Vast", f"Texas, US{evil}", 1.87, 60,
                                                               f"1x{evil}"), None),))
    out = launch_optimize.optimized_task(task, result)
    text = launch.skypilot_yaml(out, f"plan {evil}", launch.accelerator_order(out), notes=[evil])
    back = yaml.safe_load(text)
    assert back["resources"]["ordered"] == [{"infra": f"vast/Texas, US{evil}", "instance_type": f"1x{evil}",
                                             "accelerators": {"H100": 1}, "use_spot": False}]
    assert back["name"] == task["name"] and back["run"] == task["run"]
