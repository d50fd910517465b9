"""The traced model kind: a profile written by `planner profile` loads everywhere a model does, answers the model
protocol from its laws, goes through the same engine, and a hand-edited file with impossible numbers is refused."""

from __future__ import annotations

import copy
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from planner.base.schema import DataFileError
from planner.cli import main
from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Infer, Train
from planner.inputs.models import KINDS, ModelProfile, load_model_file, parse_model_text
from planner.inputs.models.traced import TracedProfile, parse_traced
from planner.inputs.work import Setup
from planner.views import plan_inputs, share

FACTS = load_facts()
SIZES = [100, 200, 400]


def _law(fn):
    """A law dict whose coefficients give the points exactly: fn(L) = c0 + c1 L + c2 L^2."""
    c0, c1, c2 = fn(0), (fn(1) - fn(-1)) / 2, (fn(1) + fn(-1)) / 2 - fn(0)
    coeffs = [c0, c1, c2] if c2 else [c0, c1]
    return {"law": ["constant", "linear", "quadratic"][len(coeffs) - 1], "coeffs": coeffs,
            "points": [float(fn(L)) for L in SIZES], "error_pct": 0.0}


def _env(fn):
    law = _law(fn)
    return {"points": law["points"], "error_pct": 0.0, "pieces": [law]}


ZERO = _law(lambda L: 0.0)
# A made-up model with round numbers: per sample, linear layers 2e6 FLOPs per unit of L reading 4 MB of weights and
# 8 kB of activations per L; attention 1000 L^2 FLOPs; elementwise 3 kB per L. Training does 3x, checkpointed 4x.
WORK = {"linear layers": {"flops": lambda L: 2e6 * L, "weight_bytes": lambda L: 4e6,
                          "activation_bytes": lambda L: 8e3 * L},
        "attention": {"flops": lambda L: 1e3 * L * L, "weight_bytes": lambda L: 0.0,
                      "activation_bytes": lambda L: 2e3 * L},
        "elementwise & norms": {"flops": lambda L: 0.0, "weight_bytes": lambda L: 1e3,
                                "activation_bytes": lambda L: 3e3 * L}}
FACTOR = {"forward": 1, "train": 3, "train_checkpointed": 4}
MEMORY = {"inference_fp32": 1e4, "inference_bf16": 6e3, "train_fp32": 5e4, "train_bf16": 3e4,
          "train_checkpointed_fp32": 2e4, "train_checkpointed_bf16": 1.2e4}  # bytes per unit of L


def profile_dict() -> dict:
    work = {step: {g: {q: _law(lambda L, fn=fn, k=k: k * fn(L)) for q, fn in qs.items()} for g, qs in WORK.items()}
            for step, k in FACTOR.items()}
    return {"kind": "traced", "id": "toy-traced", "name": "Toy traced", "source": "written by hand for the tests",
            "input_size_name": "L", "default_input_size": 200, "params": 1_000_000,
            "trace": {"torch_version": "2.13.0+cpu", "date": "2026-11-21", "factory": "toy.py:build", "args": {},
                      "sizes": SIZES, "tolerance_pct": 1.0, "seconds": 1.0, "autocast": "cpu bf16"},
            "work": work, "kernels": {s: _law(lambda L, k=k: 10.0 * k) for s, k in FACTOR.items()},
            "memory": {name: _env(lambda L, b=b: b * L) for name, b in MEMORY.items()}, "notes": "toy"}


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data) -> bool:
        return True  # the planner's YAML reader refuses aliases


def _text(doc: dict) -> str:
    return yaml.dump(doc, Dumper=_NoAliases, sort_keys=False)


def _load(doc: dict) -> TracedProfile:
    return parse_model_text(_text(doc), "toy.yaml", "toy.yaml")


def _setup(precision: str) -> Setup:
    rules = FACTS.rules
    p = rules.precision(precision)
    return Setup(p, rules.default_kv_dtype(p), rules.attention("sdpa"))


def test_a_traced_profile_is_a_model_kind_that_loads_from_text_and_file(tmp_path):
    assert KINDS["traced"] is parse_traced
    m = _load(profile_dict())
    assert isinstance(m, ModelProfile) and m.kind == "traced" and m.params == 1_000_000
    path = tmp_path / "toy.yaml"
    path.write_text(_text(profile_dict()), encoding="utf-8")
    assert load_model_file(path) == m
    # the trace counts 10 eager ops; fused-block units divide by eager PyTorch's 2.5 kernels per fused kernel
    assert m.kernels_per_forward == 10 / 2.5 and not m.can_generate and m.architecture() is None


def test_work_per_step_scales_with_batch_size_and_precision():
    """bf16: weights 2 B and activations 2 B per traced fp32 value of 4 B. Linear layers at L=300, batch 4:
    FLOPs 4 x 2e6 x 300 = 2.4e9; bytes 4 MB x 2/4 + 4 x 8 kB x 300 x 2/4 = 2 MB + 4.8 MB."""
    m = _load(profile_dict())
    groups = {g.name: g for g in m.forward_work(_setup("bf16"), 4, 300)}
    assert groups["linear layers"].flops == pytest.approx(2.4e9)
    assert groups["linear layers"].bytes == pytest.approx(2e6 + 4.8e6)
    assert groups["attention"].flops == pytest.approx(4 * 1e3 * 300 ** 2)
    assert groups["elementwise & norms"].bytes == pytest.approx(1e3 / 2 + 4 * 3e3 * 300 / 2)
    fp32 = {g.name: g for g in m.forward_work(_setup("fp32"), 4, 300)}
    assert fp32["linear layers"].bytes == pytest.approx(4e6 + 4 * 8e3 * 300)
    train = {g.name: g for g in m.train_work(_setup("bf16"), 1, 300, checkpointing=False)}
    ckpt = {g.name: g for g in m.train_work(_setup("bf16"), 1, 300, checkpointing=True)}
    assert train["linear layers (fwd+bwd)"].flops == pytest.approx(3 * 2e6 * 300)
    assert ckpt["linear layers (fwd+bwd)"].flops == pytest.approx(4 * 2e6 * 300)


def test_memory_follows_the_trace_of_the_plans_activation_width():
    """fp32 uses the fp32 trace; bf16 and fp8 (2-byte activations) the bf16-autocast trace."""
    m = _load(profile_dict())
    (inf32,) = m.inference_memory(_setup("fp32"), 2, 300)
    (inf16,) = m.inference_memory(_setup("bf16"), 2, 300)
    (inf8,) = m.inference_memory(_setup("fp8"), 2, 300)
    assert inf32.gb == pytest.approx(2 * 1e4 * 300 / 1e9) and inf16.gb == pytest.approx(2 * 6e3 * 300 / 1e9)
    assert inf8.gb == inf16.gb
    assert m.train_activation_memory(_setup("bf16"), 3, 300, True).gb == pytest.approx(3 * 1.2e4 * 300 / 1e9)
    assert m.train_activation_memory(_setup("fp32"), 3, 300, False).gb == pytest.approx(3 * 5e4 * 300 / 1e9)


def test_a_traced_profile_goes_through_the_same_engine():
    """Memory = weights + the traced activations + the CUDA context; the batch that fits grows as memory shrinks."""
    m = _load(profile_dict())
    gpu = FACTS.catalog.get("rtx-4090")
    e = estimate_gpu(Plan(m, Infer(1000, 300), "fp32", batch=8), gpu, FACTS)
    assert e.feasible and e.seconds > 0
    assert e.memory.get("activations") == pytest.approx(8 * 1e4 * 300 / 1e9)
    assert e.memory.get("weights") == pytest.approx(1e6 * 4 / 1e9)
    train = estimate_gpu(Plan(m, Train(10**6, 30_000, 1.0), "bf16"), gpu, FACTS)
    ckpt = estimate_gpu(Plan(m, Train(10**6, 30_000, 1.0, checkpointing=True), "bf16"), gpu, FACTS)
    assert 1 < train.max_batch < ckpt.max_batch  # checkpointing: 1.2e4 vs 3e4 bytes per unit of L


def test_the_cli_estimates_a_traced_profile_file(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(_text(profile_dict()), encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["estimate", "--model", str(path), "--workload", "train", "--input-size", "300",
                     "--gpu", "rtx-4090", "--format", "json"])
    (row,) = json.loads(out.getvalue())
    assert code == 0 and row["feasible"] and row["seconds"] > 0


def test_a_traced_profile_travels_in_a_share_link():
    text = _text(profile_dict())
    assert share.spec_link_problem(text) is None
    inputs = plan_inputs.Inputs(model=plan_inputs.CUSTOM, spec=text, job="train", size=300)
    decoded, warnings = share.decode(share.encode(inputs))
    assert not warnings and plan_inputs.resolve_model(decoded) == _load(profile_dict())


def test_the_app_never_runs_uploaded_python(tmp_path):
    """A Python file uploaded as a model is text that fails to parse: nothing in it runs."""
    marker = tmp_path / "ran"
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\ndef build(size):\n    return None\n"
    with pytest.raises(DataFileError):
        parse_model_text(code, "model.py", "uploaded model profile")
    assert not marker.exists()


def _edited(path: list, value) -> dict:
    doc = copy.deepcopy(profile_dict())
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize("path, value, field, words", [
    (["memory", "train_fp32", "points"], [5e6, 4e6, 3e6], "points", "memory decreases from L=100"),
    (["work", "forward", "attention", "flops", "points"], [1e7, -4e7, 1.6e8], "points", "negative (-4e+07) at L=200"),
    (["work", "forward", "attention", "flops", "coeffs"], [0.0, 0.0, 2e3], "coeffs", "edit both or re-trace"),
    (["kernels", "train", "points"], [30.0, 30.0], "points", "expected a list of 3 to 3 numbers"),
    (["params"], -5, "params", "must be >= 0"),
    (["trace", "sizes"], [100, 100, 400], "sizes", "strictly increasing"),
    (["memory", "inference_fp32", "pieces"], [], "pieces", "non-empty list"),
])
def test_a_hand_edited_profile_with_impossible_numbers_is_refused(path, value, field, words):
    with pytest.raises(DataFileError) as err:
        _load(_edited(path, value))
    assert err.value.field.endswith(field) and words in str(err.value) and err.value.record.startswith("'toy-traced'")


def test_unknown_and_missing_fields_are_named():
    doc = profile_dict()
    doc["work"]["forward"]["attention"]["flopz"] = doc["work"]["forward"]["attention"].pop("flops")
    with pytest.raises(DataFileError, match="'flopz': unknown field \\(did you mean 'flops'\\?\\)"):
        _load(doc)
    doc = profile_dict()
    del doc["memory"]["train_bf16"]
    with pytest.raises(DataFileError, match="'train_bf16': missing"):
        _load(doc)


def test_a_law_that_turns_negative_or_memory_that_shrinks_beyond_the_traced_sizes_is_refused_at_that_size():
    """Laws fitted on 100..400 can misbehave far outside: 1e6 - 2e3 L is negative past L=500; a memory law that
    peaks and falls (here 1e3 L - L^2 / 2: 180,000 at the default L=200, 95,000 at L=1900) can't describe memory
    there."""
    doc = profile_dict()
    doc["work"]["forward"]["attention"]["activation_bytes"] = _law(lambda L: 1e6 - 2e3 * L)
    m = _load(doc)
    m.check_size(400)
    with pytest.raises(ValueError, match="work.forward.attention.activation_bytes is negative at L=600"):
        m.check_size(600)
    doc = profile_dict()
    doc["memory"]["train_fp32"] = _env(lambda L: 1e3 * L - L * L / 2)
    with pytest.raises(ValueError, match="memory.train_fp32 shrinks from L=200 to 1,900"):
        _load(doc).check_size(1900)


EXAMPLE_PROFILES = sorted((Path(__file__).resolve().parents[2] / "examples" / "profiles").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLE_PROFILES, ids=lambda p: p.stem)
def test_the_example_profiles_load_travel_and_estimate(path):
    """The traced profiles of the seeds' reference models (written by `planner profile`) load without torch, fit in
    a share link and give a feasible single-sample inference at their default size on an 80 GB GPU."""
    m = load_model_file(path)
    assert m.kind == "traced" and m.params > 0
    assert share.spec_link_problem(path.read_text(encoding="utf-8")) is None
    e = estimate_gpu(Plan(m, Infer(10, m.default_input_size), "bf16", batch=1), FACTS.catalog.get("h100-sxm"), FACTS)
    assert e.feasible and e.seconds > 0


def test_what_does_not_grow_with_the_input_counts_once_per_step():
    """One sample was traced: a training step's weight gradients (and GPT-2's tied-embedding gradient sum) are the
    same at every L and for any batch. A law c0 + c1 L gives c0 + batch x c1 L for a batch."""
    doc = profile_dict()
    doc["memory"]["train_fp32"] = _env(lambda L: 5e5 + 5e4 * L)
    doc["work"]["train"]["elementwise & norms"]["activation_bytes"] = _law(lambda L: 7e6 + 9e3 * L)
    m = _load(doc)
    assert m.train_activation_memory(_setup("fp32"), 3, 300, False).gb == pytest.approx((5e5 + 3 * 5e4 * 300) / 1e9)
    (_, _, elementwise) = m.train_work(_setup("fp32"), 3, 300, False)
    assert elementwise.bytes == pytest.approx(3 * 1e3 + 7e6 + 3 * 9e3 * 300)  # 3x weights: the train factor
