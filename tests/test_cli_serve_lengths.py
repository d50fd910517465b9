"""`planner serve --rate --lengths`: a ShareGPT-like or uniform spread of lengths, and the inputs it refuses by name."""

import json

from tests.fixtures.cli_run import run

BASE = ("serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "5", "--runtimes", "vllm")


def test_a_spread_of_lengths_reaches_the_answer():
    """The spread's longest request (up to 2,048 tokens) sets --max-model-len; fixed 220 + 200 lengths set 420."""
    fixed = json.loads(run(*BASE, "--input-tokens", "220", "--output-tokens", "200", "--format", "json").stdout)
    spread = json.loads(run(*BASE, "--input-tokens", "220", "--output-tokens", "200", "--lengths", "sharegpt",
                            "--format", "json").stdout)
    assert "--max-model-len 420 " in fixed["launch_command"]
    max_len = int(spread["launch_command"].split("--max-model-len ")[1].split()[0])
    assert 1024 < max_len <= 2048
    # uniform: 512 rows at the quantiles (i + 0.5) / 512 of 0..440 and 0..400, rounded: prompts 1..440 (511.5 / 512 x
    # 440 = 439.6) and outputs 1..400, so the longest request holds the longest prompt and at least one output
    # token, and at most both longest
    even = json.loads(run(*BASE, "--input-tokens", "220", "--output-tokens", "200", "--lengths", "uniform",
                          "--format", "json").stdout)
    assert 440 + 1 <= int(even["launch_command"].split("--max-model-len ")[1].split()[0]) <= 440 + 400


def test_a_spread_with_a_trace_or_beyond_its_cut_is_refused_by_name(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("512,128\n")
    for extra, words in ((("--trace", str(trace)), "leave --lengths out"), (("--input-tokens", "2000"), "2,000")):
        out = run(*BASE, "--lengths", "sharegpt", *extra)
        assert out.returncode == 2 and "--lengths" in out.stderr and words in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
