"""The profiler (planner.profiling.tracer): what it counts on a model small enough to count by hand, and how it refuses
what it can't trace. The reference models of the seeds are in test_profiler_references.py."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from planner.cli import main
from planner.inputs.models import load_model_file
from planner.profiling import tracer
from planner.profiling.tracer import ProfileError, Request

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "traced_models.py"
SIZES = (8, 16, 32, 64)
D, F = 64, 256  # the fixture MLP: Linear(D, F) -> ReLU -> Linear(F, D), fp32 (4 bytes)


def _trace(name: str, sizes=SIZES, **args):
    return tracer.trace_request(Request(f"{FIXTURES}:{name}", tuple(sizes), tuple(args.items())))


@pytest.fixture(scope="module")
def mlp():
    return _trace("mlp")


def _per_L(series, sizes=SIZES):
    """The slope of a quantity that is proportional to L (and check that it is)."""
    slopes = {v / L for v, L in zip(series, sizes)}
    assert len(slopes) == 1, series
    return slopes.pop()


def test_forward_flops_bytes_and_kernels_of_an_mlp_by_hand(mlp):
    """One sample of L rows. FLOPs: two matmuls of 2 x L x D x F. Weight bytes: both matrices and biases read once,
    4 (2 D F + F + D). Activation bytes of the linear layers: input and output of each, 4 L (D + F) x 2. ReLU reads
    and writes L x F. Three kernels: addmm, relu, addmm (the reshapes and the weight transposes are views)."""
    fwd = mlp["work"]["forward"]
    assert _per_L(fwd["linear layers"]["flops"]) == 4 * D * F
    assert set(fwd["linear layers"]["weight_bytes"]) == {4 * (2 * D * F + F + D)}
    assert _per_L(fwd["linear layers"]["activation_bytes"]) == 8 * (D + F)
    assert _per_L(fwd["elementwise & norms"]["activation_bytes"]) == 8 * F
    assert not any(fwd["attention"]["flops"]) and mlp["kernels"]["forward"] == [3] * len(SIZES)
    assert mlp["params"] == 2 * D * F + F + D


def test_training_flops_skip_the_gradient_nobody_needs(mlp):
    """Forward 2 matmuls; backward: the second layer's input and weight gradients, the first layer's weight gradient
    only (the input needs none): 5 matmuls of 2 L D F. Kernels: 3 forward, the loss's sum, its seed (ones), per layer
    the matmuls and the bias gradient's sum, ReLU's backward: 3 + 2 + (2 + 1) + 1 + (1 + 1) = 11."""
    assert _per_L(mlp["work"]["train"]["linear layers"]["flops"]) == 10 * D * F
    assert mlp["kernels"]["train"] == [11] * len(SIZES)
    # no nn.ModuleList in this model: nothing to checkpoint, the checkpointed step is the plain one
    assert mlp["work"]["train_checkpointed"] == mlp["work"]["train"]


def test_peak_memory_of_an_mlp_by_hand(mlp):
    """Inference (no grad): at ReLU the input (4 L D), the first layer's output and ReLU's output (4 L F each) are
    live: 4 L (D + 2F). Under bf16 autocast the two hidden tensors are 2-byte: 4 L D + 2 x 2 L F (the weights' bf16
    copies belong to the weights). Training, at the second layer's backward: input, ReLU output (saved), model output,
    the input gradient (4 L (2 D + 2 F)), one weight gradient in flight (4 D F), its bias gradient (4 D) and two
    scalars (the loss and its seed)."""
    peaks = {name: m["peaks"] for name, m in mlp["memory"].items()}
    assert _per_L(peaks["inference_fp32"]) == 4 * (D + 2 * F)
    assert _per_L(peaks["inference_bf16"]) == 4 * D + 4 * F
    assert peaks["train_fp32"] == [4 * L * (2 * D + 2 * F) + 4 * D * F + 4 * D + 8 for L in SIZES]


def test_checkpointing_recomputes_what_backward_needs_and_keeps_less():
    """Four MLP blocks in an nn.ModuleList, each checkpointed. Non-reentrant checkpointing stops recomputing once
    the tensors backward needs are back (torch's early stop): each block redoes its first matmul (ReLU's output, saved
    for the second layer's backward, depends on it) but not its last (nothing saved comes after it), so the step
    grows by exactly half a forward pass. The peak falls: the blocks' hidden activations are not kept."""
    raw = _trace("stack", blocks=4)
    flops = {step: raw["work"][step]["linear layers"]["flops"] for step in ("forward", "train", "train_checkpointed")}
    assert [c - t for c, t in zip(flops["train_checkpointed"], flops["train"])] == [f / 2 for f in flops["forward"]]
    plain, ckpt = raw["memory"]["train_fp32"]["peaks"], raw["memory"]["train_checkpointed_fp32"]["peaks"]
    assert all(c < p for c, p in zip(ckpt, plain))


def test_the_profile_file_has_the_laws_and_loads_as_a_model(tmp_path):
    text, model, warnings = tracer.profile(Request(f"{FIXTURES}:mlp", SIZES, (("f", 128),), "rows"),
                                             isolated=False)
    assert not warnings and model.kind == "traced" and model.input_size_name == "rows"
    assert model.law("forward", "linear layers", "flops").coeffs == (0.0, 4.0 * D * 128)
    assert model.memory_law("inference_fp32").at(1000) == 1000 * 4 * (D + 2 * 128)
    path = tmp_path / "mlp.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_model_file(path) == model
    assert "torch_version: 2.13" in text and "date: '20" in text and "points: [" in text


@pytest.mark.parametrize("name, words", [
    ("raises", "raised RuntimeError: config file not found: model.json (at "),
    ("needs_cuda", "the model needs CUDA"),
    ("branchy", "data-dependent control flow (at "),
    ("masked", "data-dependent control flow (at "),
    ("not_a_model", "returned a str as the model; expected a torch.nn.Module"),
])
def test_what_cant_be_traced_is_refused_by_name(name, words):
    with pytest.raises(ProfileError) as err:
        _trace(name, sizes=(8, 16, 32))
    assert words in str(err.value)
    if "(at " in words:  # the user's own line, not torch's
        assert "traced_models.py:" in str(err.value)


def test_a_custom_op_without_a_flop_formula_is_named_with_its_share_of_the_step():
    with pytest.raises(ProfileError) as err:
        _trace("custom", sizes=(8, 16, 32))
    text = str(err.value)
    assert "planner_test.fused_gelu_mm" in text and "of the step's bytes" in text and "register_flop_formula" in text


@pytest.mark.parametrize("spec, words", [
    ("no_colon.py", "expected MODULE:FACTORY"),
    ("missing_file.py:build", "no such Python file"),
    (f"{FIXTURES}:no_such_factory", "has no function 'no_such_factory'"),
    ("planner_no_such_module_xyz:build", "importing planner_no_such_module_xyz raised ModuleNotFoundError"),
])
def test_a_bad_factory_spec_is_named(spec, words):
    with pytest.raises(ProfileError, match=words):
        tracer.load_factory(spec)


def test_input_specs_and_factory_arguments_are_parsed_and_bounded():
    assert tracer.parse_input_spec("tokens=128,256,512") == ("tokens", (128, 256, 512))
    assert tracer.parse_input_spec("8,16,32") == ("L", (8, 16, 32))
    assert tracer.parse_factory_arg("attention=manual") == ("attention", "manual")
    assert tracer.parse_factory_arg("layers=2") == ("layers", 2) and tracer.parse_factory_arg("p=0.1")[1] == 0.1
    assert tracer.parse_factory_arg("tied=false") == ("tied", False)
    for bad in ("tokens=128,abc", "tokens=0,8,16", "bad name!=1,2,3"):
        with pytest.raises(ProfileError):
            tracer.parse_input_spec(bad)
    with pytest.raises(ProfileError, match="KEY=VALUE"):
        tracer.parse_factory_arg("1x=2")
    with pytest.raises(ProfileError, match="3 to 12 input sizes"):
        Request("x.py:f", (8, 16)).check()
    with pytest.raises(ProfileError, match="strictly increasing"):
        Request("x.py:f", (8, 16, 16)).check()


# ---------------------------------------------------------------- the command line and the caps (a child process)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_cli_profiles_a_model_and_the_planner_estimates_it(tmp_path):
    """End to end: trace (in a capped child process), write the file, estimate a training job on two GPUs."""
    path = tmp_path / "mlp.yaml"
    code, out, err = _cli("profile", f"{FIXTURES}:mlp", "--input", "rows=8,16,32,64", "--out", str(path),
                          "--default-size", "4096")
    assert code == 0 and path.exists() and f"wrote {path}" in err and "forward FLOPs" in out
    code, out, _ = _cli("estimate", "--model", str(path), "--workload", "train", "--gpu", "rtx-4090",
                        "--gpu", "h100-sxm", "--precision", "bf16", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and {r["gpu_id"] for r in rows} == {"rtx-4090", "h100-sxm"} and all(r["seconds"] for r in rows)


def test_a_factory_that_eats_host_memory_is_stopped_by_the_cap():
    """The factory allocates 2 GB of real memory; the child may add 0.5 GB: a clear message, no crashed host."""
    with pytest.raises(ProfileError, match="host memory"):
        tracer.run_isolated(Request(f"{FIXTURES}:hog_memory", (8, 16, 32), max_host_gb=0.5))


def test_a_factory_that_never_returns_is_stopped_by_the_time_cap():
    with pytest.raises(ProfileError, match="took longer than 2 s"):
        tracer.run_isolated(Request(f"{FIXTURES}:slow", (8, 16, 32), max_seconds=2))


def test_the_cli_names_the_problem_and_exits_2():
    code, _, err = _cli("profile", f"{FIXTURES}:branchy", "--input", "8,16,32")
    assert code == 2 and err.startswith("error: ") and "data-dependent control flow" in err
    assert "Traceback" not in err
