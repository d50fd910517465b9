"""Growth laws: the lowest-degree polynomial in L that fits traced points, peak-memory envelopes, the profile text."""

from __future__ import annotations

import pytest

from planner.inputs.models.traced import Envelope, Law
from planner.calibration.growth import (check_document, document_text, fit_envelope, fit_law, max_miss_pct,
                                  profile_document, summary_rows)

SIZES = (64, 128, 256, 512, 1024)


def test_an_exact_quadratic_is_found_with_its_coefficients():
    """Attention-like FLOPs 18432 L (L + 1) (4 x layers x hidden x L(L+1)/2 for 12 layers of 768): the law is
    quadratic with c1 = c2 = 18432 and no constant."""
    law = fit_law(SIZES, [18432 * L * (L + 1) for L in SIZES])
    assert law.name == "quadratic" and law.error_pct == 0
    assert law.coeffs == (0.0, 18432.0, 18432.0)
    assert law.at(2048) == 18432 * 2048 * 2049


def test_the_lowest_degree_within_tolerance_wins():
    """A constant stays constant (kernels per step) and a line stays a line, even though a cubic also fits."""
    assert fit_law(SIZES, [126] * 5).coeffs == (126.0,)
    line = fit_law(SIZES, [4.2e8 + 6144 * L for L in SIZES])
    assert line.name == "linear" and line.coeffs == (4.2e8, 6144.0)


def test_a_quantity_that_no_polynomial_fits_reports_its_miss():
    """2^L grows faster than any cubic: the closest law is returned with the size of its miss, above tolerance."""
    law = fit_law((1, 2, 4, 8, 16), [2.0 ** L for L in (1, 2, 4, 8, 16)], tolerance_pct=1.0)
    assert law.error_pct > 1.0 and law.error_pct == pytest.approx(max_miss_pct(law, (1, 2, 4, 8, 16)), rel=1e-6)


def test_a_degree_is_only_trusted_with_a_point_to_spare():
    """Three points never make a quadratic 'fit' by interpolation: with 3 sizes the highest degree tried is 1."""
    law = fit_law((10, 20, 30), [100, 400, 900])  # exactly L^2, but only 3 points
    assert law.degree <= 1 and law.error_pct > 1.0
    with pytest.raises(ValueError, match="at least 3 sizes"):
        fit_law((10, 20), [1, 2])


def test_small_relative_noise_is_tolerated_and_reported():
    values = [1000 * L * (1 + (0.002 if i % 2 else -0.002)) for i, L in enumerate(SIZES)]
    law = fit_law(SIZES, values, tolerance_pct=1.0)
    assert law.name == "linear" and 0 < law.error_pct <= 0.5


def test_the_peak_is_the_larger_of_two_moments():
    """GPT-2's training peak: a constant gradient buffer (463 MB + 0.2 MB/token) at small L, saved activations
    (1.4 MB/token) at large L. Neither line alone fits the peaks; their max does, exactly."""
    early = [463e6 + 2e5 * L for L in SIZES]
    late = [1.4e6 * L for L in SIZES]
    peaks = [max(a, b) for a, b in zip(early, late)]
    env = fit_envelope(SIZES, peaks, [early, late])
    assert env.error_pct == 0 and len(env.pieces) == 2
    assert env.at(2048) == pytest.approx(1.4e6 * 2048) and env.at(32) == pytest.approx(463e6 + 2e5 * 32)
    single = fit_envelope(SIZES, peaks, [])  # the step's ops differed between sizes: one law on the peaks
    assert len(single.pieces) == 1 and single.pieces[0].error_pct > 0  # no polynomial: through the points
    assert [single.at(L) for L in SIZES] == pytest.approx(peaks, rel=1e-12)


def _raw(sizes):
    """Measurements of a toy model: FLOPs 2 d f L per group, memory 4 d L, kernels 3."""
    line = [1000.0 * L for L in sizes]
    group = {"flops": line, "weight_bytes": [5e5] * len(sizes), "activation_bytes": line}
    steps = ("forward", "train", "train_checkpointed")
    groups = ("linear layers", "attention", "elementwise & norms")
    memory = {f"{m}_{d}": {"peaks": line, "moments": [line]}
              for m in ("inference", "train", "train_checkpointed") for d in ("fp32", "bf16")}
    return {"sizes": list(sizes), "params": 123, "work": {s: {g: group for g in groups} for s in steps},
            "kernels": {s: [3] * len(sizes) for s in steps}, "memory": memory, "ops": []}


META = {"id": "toy", "name": "Toy", "source": "tests", "input_size_name": "L", "default_input_size": 100,
        "trace": {"torch_version": "2.13.0", "date": "2026-11-21", "factory": "toy.py:build", "args": {}}}


def test_the_document_loads_back_as_the_profile_it_describes():
    doc, warnings = profile_document(META, _raw((8, 16, 32, 64)))
    text = document_text(doc)
    model = check_document(text, "toy.yaml")
    assert not warnings and model.kind == "traced" and model.params == 123
    assert model.law("forward", "linear layers", "flops").at(100) == pytest.approx(1e5)
    assert model.memory_law("train_bf16").at(100) == pytest.approx(1e5)
    assert "{law: linear" in text  # one law per line keeps the file (and a share link) small
    rows = {r["quantity"]: r for r in summary_rows(model)}
    assert rows["forward FLOPs"]["value"] == pytest.approx(3e5) and rows["forward kernels"]["value"] == 3


def test_a_memory_that_falls_with_the_size_is_refused_at_writing():
    raw = _raw((8, 16, 32, 64))
    raw["memory"]["train_fp32"] = {"peaks": [40.0, 30.0, 20.0, 10.0], "moments": []}
    doc, _ = profile_document(META, raw)
    with pytest.raises(ValueError, match="memory decreases from L=8"):
        check_document(document_text(doc), "toy.yaml")


def test_laws_round_trip_through_their_dict():
    law = Law((1.0, 2.0), (3.0, 5.0, 9.0), 0.0)
    env = Envelope((law,), law.points, 0.0)
    assert law.as_dict() == {"law": "linear", "coeffs": [1.0, 2.0], "points": [3.0, 5.0, 9.0], "error_pct": 0.0}
    assert env.as_dict()["pieces"] == [law.as_dict()] and env.formula() == "1 + 2 L"


def test_a_quantity_no_polynomial_fits_goes_through_its_points():
    """SEA's distinct edges saturate: K = M (1 - e^(-n/M)) with M = L(L-1), n = 10,000. No polynomial fits four
    sizes, so the law goes through the traced points, log-log between them (exact for a power law in between), and
    beyond the last point follows the closest polynomial scaled to meet it."""
    import math
    sizes = (50, 100, 200, 400)
    edges = [L * (L - 1) * (1 - math.exp(-10_000 / (L * (L - 1)))) for L in sizes]
    law = fit_law(sizes, edges)
    assert law.error_pct > 1.0
    assert [law.at(L) for L in sizes] == pytest.approx(edges, rel=1e-12)
    between = law.at(math.sqrt(100 * 200))  # geometric middle of 100 and 200: the geometric mean of their points
    assert between == pytest.approx(math.sqrt(edges[1] * edges[2]), rel=1e-9)
    assert law.at(800) == pytest.approx(law.poly(800) * edges[-1] / law.poly(400))
    assert "through the traced points" in law.formula()
