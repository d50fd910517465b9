"""A calibration's fit in words: factors with their 95 % uncertainty, the reference each is a fraction of, problems."""

from planner.calibration.fit import Calibration
from planner.views.calibration_text import factor_rows, fit_lines, fit_markdown, fit_warnings_markdown

CPU = Calibration("My *CPU* [x](y)", None, "cpu", 0.44, 0.84, 4.1, "fp32", 25.0, (("fp32", 0.1),), 25.0,
                  "2026-11-22", 5.5, 10, (9.0, 9.3, 160.0), ("overhead",))
GPU = Calibration("NVIDIA GeForce RTX 4090", "rtx-4090", "gddr", 0.9, 0.6, 6.0, "bf16", 900.0,
                  (("fp32", 80.0), ("bf16", 150.0)), 25.3, "2026-11-20", 3.0, 6)


def test_rows_carry_value_uncertainty_and_reference():
    rows = {r["factor"]: r for r in factor_rows(CPU)}
    assert rows["bandwidth efficiency"] == {"factor": "bandwidth efficiency", "value": 0.44, "uncertainty_95_pct": 9.0,
                                            "pinned_down": True,
                                            "relative_to": "of the measured copy bandwidth, 25 GB/s"}
    assert rows["compute efficiency"]["relative_to"] == "of the measured fp32 matmul peak, 0.1 TFLOPS"
    assert rows["per-kernel overhead"]["pinned_down"] is False
    # a catalog GPU's efficiencies are fractions of its datasheet; a link from before uncertainties: none shown
    gpu = {r["factor"]: r for r in factor_rows(GPU)}
    assert gpu["compute efficiency"]["relative_to"] == "of the NVIDIA GeForce RTX 4090 datasheet (bf16)"
    assert gpu["bandwidth efficiency"]["uncertainty_95_pct"] is None


def test_lines_and_markdown_say_what_is_not_pinned_down():
    lines = fit_lines(CPU)
    assert lines[0] == "bandwidth efficiency 0.44 ± 9 % (95 %, of the measured copy bandwidth, 25 GB/s)"
    assert lines[2].startswith("per-kernel overhead 4.1 us per kernel ± more than 100 %") and "NOT pinned" in lines[2]
    assert lines[3] == "fit: rms error 5.5 % over 10 points"
    assert lines[4].startswith("warning: ill-conditioned: no point pins down the per-kernel overhead")
    assert fit_lines(GPU)[0].endswith("uncertainty not recorded (95 %, of the NVIDIA GeForce RTX 4090 datasheet)")
    md = fit_markdown(CPU)
    assert "**0.44** ± 9 %" in md
    assert "per-kernel overhead **4.1 us per kernel** ± more than 100 % (not pinned down)" in md
    assert "*CPU*" not in md and "[x](y)" not in md  # the device name is text, not markup
    assert len(fit_warnings_markdown(CPU)) == 1 and fit_warnings_markdown(GPU) == []
