"""Growth laws for traced models: fit how a measured quantity grows with the input size L, and assemble the profile.

Pure Python (no torch): `planner.profiling.tracer` measures, this module fits and writes. A law is the lowest-degree
polynomial in L (constant, linear, quadratic, cubic) whose weighted least-squares fit reproduces every traced point;
when none does (a model whose shapes aren't polynomial in L), the lowest-degree one that misses no point by more than
the tolerance (relative). A degree is only accepted when at least one point more than it needs was traced, so
the fit is tested and not just interpolated.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping, Sequence

import yaml

from planner.inputs.models.traced import (GROUPS, LAW_NAMES, MEMORY, QUANTITIES, STEPS, Envelope, Law, TracedProfile,
                                          parse_traced)
from planner.base.schema import Record, parse_yaml

DEFAULT_TOLERANCE_PCT = 1.0
EXACT_PCT = 1e-6  # a law within a millionth of a percent of every point reproduces it (float rounding only)
HEADER = ("# A traced model profile written by `python -m planner profile` (planner.profiling.tracer). Load it with\n"
          "# `python -m planner estimate --model THIS.yaml` or upload it in the app. "
          "Every law is per sample (batch 1)\n"
          "# at input size L: coeffs c0, c1, ... of c0 + c1 L + c2 L^2 + c3 L^3, fitted to the traced points (one per\n"
          "# size in trace.sizes). Bytes were counted with fp32 tensors; memory is the peak of live activations.\n")


def solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting on a small square system."""
    n = len(rhs)
    a = [row[:] + [r] for row, r in zip(matrix, rhs)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if a[pivot][col] == 0:
            raise ZeroDivisionError("singular")
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= f * a[col][c]
    out = [0.0] * n
    for r in reversed(range(n)):
        out[r] = (a[r][n] - sum(a[r][c] * out[c] for c in range(r + 1, n))) / a[r][r]
    return out


def _fit_degree(sizes: Sequence[float], values: Sequence[float], degree: int) -> tuple[float, ...] | None:
    """Coefficients (in L) of the degree-`degree` polynomial minimising the squared relative misses."""
    top = float(max(sizes))
    scale = max(abs(v) for v in values)
    weights = [1.0 / max(abs(v), 1e-9 * scale) ** 2 for v in values]
    us = [s / top for s in sizes]  # scaled to (0, 1] so the normal equations stay well conditioned
    k = degree + 1
    matrix = [[sum(w * u ** (i + j) for w, u in zip(weights, us)) for j in range(k)] for i in range(k)]
    rhs = [sum(w * u ** i * v for w, u, v in zip(weights, us, values)) for i in range(k)]
    try:
        scaled = solve(matrix, rhs)
    except ZeroDivisionError:
        return None
    return tuple(c / top ** i for i, c in enumerate(scaled))


def _tidy(coeffs: tuple[float, ...], sizes: Sequence[float], points: Sequence[float]) -> tuple[float, ...]:
    """Coefficients rounded to 12 significant digits, and those that change no point by a billionth dropped, so
    an exact law reads as one (207188, not 207188.00000000006)."""
    top, scale = float(max(sizes)), max(abs(p) for p in points) or 1.0
    return tuple(0.0 if abs(c) * top ** k < 1e-9 * scale else float(f"{c:.12g}") for k, c in enumerate(coeffs))


def max_miss_pct(law: Law | Envelope, sizes: Sequence[float]) -> float:
    """Largest relative miss of the law (a Law's polynomial) at its own points, percent."""
    scale = max((abs(p) for p in law.points), default=0.0) or 1.0
    value = law.poly if isinstance(law, Law) else law.at
    return max(abs(value(s) - p) / max(abs(p), 1e-9 * scale) * 100 for s, p in zip(sizes, law.points))


def fit_law(sizes: Sequence[int], values: Sequence[float], tolerance_pct: float = DEFAULT_TOLERANCE_PCT) -> Law:
    """The lowest-degree law that reproduces every point exactly (traced counts are exact polynomials when the
    model's shapes are); else the lowest-degree one within `tolerance_pct`; else the one that misses least (its
    error_pct says by how much). Needs at least 3 sizes; a degree d is tried only with d + 2 points or more."""
    if len(sizes) != len(values) or len(sizes) < 3:
        raise ValueError("fit_law needs one value per size and at least 3 sizes")
    points = tuple(float(v) for v in values)
    if not any(points):
        return Law((0.0,), points, 0.0, tuple(sizes))
    laws = []
    for degree in range(min(len(LAW_NAMES) - 1, len(sizes) - 2) + 1):
        coeffs = _fit_degree(sizes, points, degree)
        if coeffs is not None:
            coeffs = _tidy(coeffs, sizes, points)
            miss = max_miss_pct(Law(coeffs, points, 0.0), sizes)
            laws.append(Law(coeffs, points, round(miss, 6) if miss > EXACT_PCT else 0.0, tuple(sizes)))
    for limit in (0.0, tolerance_pct):
        for law in laws:
            if law.error_pct <= limit:
                return law
    return min(laws, key=lambda law: law.error_pct)


def fit_envelope(sizes: Sequence[int], peaks: Sequence[float], moments: Sequence[Sequence[float]],
                 tolerance_pct: float = DEFAULT_TOLERANCE_PCT) -> Envelope:
    """Peak memory as the max of one law per candidate moment (live bytes at the same point of the step at every
    size); with no moments (the step's ops differ between sizes) one law fitted to the peaks."""
    series = [tuple(m) for m in moments] or [tuple(peaks)]
    unique = list(dict.fromkeys(series))  # the same moment values twice need one law
    pieces = tuple(fit_law(sizes, m, tolerance_pct) for m in unique)
    envelope = Envelope(pieces, tuple(float(p) for p in peaks), 0.0)
    miss = max_miss_pct(envelope, sizes)
    return Envelope(pieces, envelope.points, round(miss, 6) if miss > 1e-6 else 0.0)


def profile_document(meta: Mapping[str, Any], raw: Mapping[str, Any],
                     tolerance_pct: float = DEFAULT_TOLERANCE_PCT) -> tuple[dict[str, Any], list[str]]:
    """The profile (kind: traced) for the measurements `raw` (sizes, params, work, kernels, memory, ops) and the
    metadata `meta` (id, name, source, input_size_name, default_input_size, trace, notes); and the laws that miss
    their points by more than the tolerance, as warnings."""
    sizes = list(raw["sizes"])
    warnings: list[str] = []

    def law(path: str, values: Sequence[float]) -> dict[str, Any]:
        fitted = fit_law(sizes, values, tolerance_pct)
        if fitted.error_pct > tolerance_pct:
            warnings.append(f"{path}: no law up to cubic fits within {tolerance_pct:g} % (the closest, "
                            f"{fitted.name}, misses a traced point by {fitted.error_pct:.1f} %): the profile goes "
                            "through the traced points and follows that law beyond them")
        return fitted.as_dict()

    def envelope(path: str, measured: Mapping[str, Any]) -> dict[str, Any]:
        fitted = fit_envelope(sizes, measured["peaks"], measured["moments"], tolerance_pct)
        if fitted.error_pct > tolerance_pct:
            warnings.append(f"{path}: the peak-memory law misses a traced peak by {fitted.error_pct:.1f} %")
        return fitted.as_dict()

    work = {step: {group: {q: law(f"work.{step}.{group}.{q}", raw["work"][step][group][q]) for q in QUANTITIES}
                   for group in GROUPS} for step in STEPS}
    doc = {
        "kind": "traced", "id": meta["id"], "name": meta["name"], "source": meta["source"],
        "input_size_name": meta["input_size_name"], "default_input_size": int(meta["default_input_size"]),
        "params": int(raw["params"]),
        "trace": dict(meta["trace"], sizes=sizes, tolerance_pct=tolerance_pct),
        "work": work,
        "kernels": {step: law(f"kernels.{step}", raw["kernels"][step]) for step in STEPS},
        "memory": {name: envelope(f"memory.{name}", raw["memory"][name]) for name in MEMORY},
        "ops": list(raw.get("ops", ())),
        "notes": "\n".join([meta.get("notes", "")] + warnings).strip() or "traced; every law fits its points",
    }
    return doc, warnings


class _Dumper(yaml.SafeDumper):
    """Block style, except that each law is one line: {law: linear, coeffs: [...], points: [...], error_pct: 0}; no
    aliases (the planner's YAML reader refuses them)."""

    def ignore_aliases(self, data) -> bool:
        return True


def _represent(dumper: yaml.SafeDumper, data: dict) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style="coeffs" in data)


_Dumper.add_representer(dict, _represent)


def document_text(doc: Mapping[str, Any]) -> str:
    """The profile as YAML with a header comment (each law and each list of numbers on one line)."""
    return HEADER + yaml.dump(dict(doc), Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=200,
                              allow_unicode=True)


def check_document(text: str, where: str):
    """Parse the written text back as a model profile: what the profiler writes must load everywhere (DataFileError
    naming the field otherwise, e.g. memory that falls as the input grows)."""
    return parse_traced(Record.of(where, 0, parse_yaml(text, where)))


def summary_rows(m: TracedProfile) -> list[dict[str, Any]]:
    """What the profile says at its default size, per sample: FLOPs, kernels and peak memory, with their laws."""
    L = m.default_input_size
    rows: list[dict[str, Any]] = [{"quantity": "parameters", "value": float(m.params), "unit": "", "law": "-"}]
    for step in STEPS:
        laws = [m.law(step, g, "flops") for g in GROUPS]
        rows.append({"quantity": f"{step} FLOPs", "value": float(f"{sum(x.at(L) for x in laws):.4g}"), "unit": "FLOP",
                     "law": " | ".join(f"{g}: {x.formula()}" for g, x in zip(GROUPS, laws))})
    for step, law in m.kernels:
        rows.append({"quantity": f"{step} kernels", "value": round(law.at(L)), "unit": "", "law": law.formula()})
    for name, env in m.memory:
        rows.append({"quantity": f"peak memory {name}", "value": round(env.at(L) / 1e9, 4), "unit": "GB",
                     "law": env.formula()})
    return [dict(r, at=f"{m.input_size_name}={L:,}") for r in rows]
