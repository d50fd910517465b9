"""Uploads without Streamlit: a model file becomes an architecture or a profile's text, bench files a calibration."""

import json
import re
from pathlib import Path

from planner.views import uploads

BENCH = Path(__file__).resolve().parent.parent / "fixtures" / "bench_cpu_quick.json"
LLAMA = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 4, "intermediate_size": 1376, "vocab_size": 32000, "max_position_embeddings": 2048,
         "hidden_act": "silu"}


def _shown(markdown: str) -> str:
    """The text a reader sees: Markdown's backslash escapes removed."""
    return re.sub(r"\\(.)", r"\1", markdown)


def test_a_config_json_becomes_the_decoder_it_describes():
    up = uploads.model_upload(json.dumps(LLAMA).encode(), "config.json")
    assert up.ok and up.spec == ""
    assert (up.arch["layers"], up.arch["hidden"], up.arch["kv_heads"], up.arch["ffn"]) == (4, 512, 4, 1376)
    # embeddings 32000 x 512 twice (untied) + 4 layers x (q,o 512x512 + k,v 512x256 + 3 x 512x1376 + 2 norms of 512)
    params = 2 * 32000 * 512 + 4 * (2 * 512 * 512 + 2 * 512 * 256 + 3 * 512 * 1376 + 2 * 512) + 512  # 44,372,480
    assert _shown(up.message) == f"Loaded llama from config.json ({params / 1e6:.1f}M parameters)."


def test_a_broken_file_says_why_and_changes_nothing():
    up = uploads.model_upload(b"{not json", "config.json")
    assert not up.ok and up.arch is None and up.spec == ""
    assert "config.json could not be used: not valid JSON" in _shown(up.message)
    assert up.message.endswith("The plan is unchanged.")


def test_a_bench_result_uploaded_as_a_model_is_pointed_to_the_calibration_section():
    up = uploads.model_upload(BENCH.read_bytes(), "bench.json")
    assert not up.ok and "upload it under 6 · Calibration" in up.message


def test_user_text_in_a_message_is_escaped():
    up = uploads.model_upload(b"{not json", "**bold**[x](http://evil).json")
    assert not up.ok and "**bold**" not in up.message and "](http" not in up.message


def test_a_bench_result_becomes_a_calibration_and_a_bad_one_keeps_the_current():
    good = uploads.calibration_upload([("bench.json", BENCH.read_bytes())])
    assert good.ok and good.query.startswith("v=1;") and len(good.results) == 1
    assert uploads.cpu_results(good.results) == good.results  # the fixture was measured on a CPU
    bad = uploads.calibration_upload([("bench.json", BENCH.read_bytes()), ("other.json", b'{"kind": "other"}')])
    assert not bad.ok and bad.query == "" and "other.json could not be used" in _shown(bad.message)
    assert "bench.json" not in _shown(bad.message)  # only the bad file is named
    assert bad.message.endswith("The plan keeps its current calibration.")


def test_a_malformed_bench_file_is_named_once_with_what_is_wrong():
    bad = uploads.calibration_upload([("garbage.json", b'{"kind": "nonsense", "x": [1, 2')])
    assert not bad.ok and _shown(bad.message).startswith("garbage.json could not be used: not valid JSON")
    assert _shown(bad.message).count("garbage.json") == 1


def test_a_cpu_bench_refitted_for_the_measured_machine_only_names_no_catalog_row():
    good = uploads.calibration_upload([("bench.json", BENCH.read_bytes())])
    refit = uploads.refit_for_cpu(good.results, "", "")
    assert refit.ok and _shown(refit.message) == "The CPU bench now calibrates the measured machine only."
    assert "cls=cpu" in refit.query


def test_a_model_file_whose_name_holds_a_surrogate_or_a_control_character_is_refused_naming_the_field():
    for name in ("evil\\ud800", "evil\\u001b[2J", "evil\\u0007"):
        config = {**LLAMA, "_name_or_path": "NAME"}
        up = uploads.model_upload(json.dumps(config).replace('"NAME"', f'"{name}"').encode(), "config.json")
        assert not up.ok and up.arch is None and up.spec == ""
        assert "field '_name_or_path'" in _shown(up.message) and "U+" in _shown(up.message)
        up.message.encode("utf-8")  # the page can send it


def test_a_config_whose_heads_come_out_too_wide_is_refused_once_naming_the_field_and_its_bound():
    from planner.inputs.models.decoder_fields import ARCH
    up = uploads.model_upload(json.dumps({**LLAMA, "hidden_size": 1e6}).encode(), "config.json")
    # 1e6 / 8 heads = 125,000 per head, far past the widest head a decoder field allows: one outcome, refused
    assert not up.ok and up.arch is None and up.spec == "" and "Loaded" not in up.message
    shown = _shown(up.message)
    assert "field 'hidden'" in shown and f"{ARCH['head_dim'].hi:,}" in shown and "125,000" in shown


def test_every_accepted_config_is_a_valid_custom_model():
    from planner.views import plan_inputs
    for hidden in (512, 4096 * 8, 10**6 // 256 * 8):
        up = uploads.model_upload(json.dumps({**LLAMA, "hidden_size": hidden}).encode(), "config.json")
        if up.ok:  # what the page then builds from the widgets
            plan_inputs.custom_decoder(up.arch)
