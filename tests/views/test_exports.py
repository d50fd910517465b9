"""Exports carry their context: the inputs, the link, the price dates, your own cards first."""

import csv
import io
import json

import pytest

from planner.engine.estimate import estimate_all
from planner.engine.ranking import my_gpus
from planner.inputs.facts import load_facts
from planner.inputs.ownership import Owned, load_ownership
from planner.views import exports, plan_inputs, share
from planner.views.plan_inputs import Inputs
from planner.views.share import encode

FACTS = load_facts()


def test_exports_carry_inputs_link_and_dates():
    inputs = Inputs(tier="community", gen=20, seqs=1000)
    model = plan_inputs.resolve_model(inputs)
    ests = estimate_all(plan_inputs.to_plan(inputs, model), FACTS, gpu_names=["rtx-4090", "t4", "h100-sxm"])
    ctx = exports.ExportContext("http://x/?" + share.query_string(inputs), "data/gpus.yaml", "snapshot", "2026-11-09",
                                {"rtx-4090": {"seconds_low": 1.0}})
    doc = json.loads(exports.export_json(inputs, model, ests, ctx))
    assert doc["inputs"] == encode(inputs) and doc["link"] == ctx.link and doc["prices_as_of"] == "2026-11-09"
    assert [r["gpu_id"] for r in doc["ranking"]] == [e.gpu.id for e in ests]
    assert next(r for r in doc["ranking"] if r["gpu_id"] == "rtx-4090")["seconds_low"] == 1.0
    text = exports.export_csv(inputs, model, ests, ctx)
    assert text.startswith("gpu_id,")  # a plain CSV: the header row first, no comment lines
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["gpu_id"] for r in rows] == [e.gpu.id for e in ests]
    assert all(r["plan_link"] == ctx.link and "tier=community" in r["plan_link"] for r in rows)
    priced = [r for r in rows if r["usd_per_hr"]]
    assert priced and all(r["price_date"] and r["price_origin"] == "snapshot" for r in priced)


def test_exports_put_your_cards_first_and_follow_the_pages_stale_threshold():
    inputs = Inputs(tier="community", gen=20, seqs=1000, own=(Owned("rtx-a5000", 3),), stale=1000)
    model = plan_inputs.resolve_model(inputs)
    plan = plan_inputs.to_plan(inputs, model)
    ests = estimate_all(plan, FACTS, gpu_names=["rtx-4090"])
    mine = my_gpus(plan, inputs.own, FACTS, load_ownership(), None)
    ctx = exports.ExportContext("http://x/", "data/gpus.yaml", "snapshot", "2026-11-09", mine=mine)
    doc = json.loads(exports.export_json(inputs, model, ests, ctx))
    assert doc["my_gpus"][0]["owned"] == "rtx-a5000:3" and doc["my_gpus"][0]["gpus"] == 3
    rows = list(csv.DictReader(io.StringIO(exports.export_csv(inputs, model, ests, ctx))))
    assert [r["yours"] for r in rows] == ["rtx-a5000:3", ""] and rows[0]["own_count"] == "3"
    # a threshold of 1,000 days: the snapshot's prices (read in 2025-2026) are not stale, as the page then shows
    assert rows[1]["price_stale"] == "False" and doc["ranking"][0]["price_stale"]["community"] is False
    strict = json.loads(exports.export_json(Inputs(tier="community", gen=20, seqs=1000, stale=1), model, ests, ctx))
    assert strict["ranking"][0]["price_stale"]["community"] is True


# ESC, BEL and NUL make YAML that `sky launch` refuses; U+2028 is a line break to YAML; the last text is printable
# but written to break a YAML document that pastes it in (a mapping, a comment, an alias, a tag, a document end)
ATTACKS = ["evil\x1b[2Jname", "evil\x07name", "evil\x00name", "evil\u2028name: x",
           "name: evil\" # ' - &a *a !!python/object/apply:os.system ['id'] --- ... | >"]
LINK_TEXT = ("m_name", "own", "myprice", "cmp", "gpu", "cal", "m_spec", "junk")  # every parameter that takes text


@pytest.mark.parametrize("attack", ATTACKS)
def test_user_text_reaches_every_export_as_text_that_parses(attack):
    import yaml

    from planner.inputs.launch_names import load_skypilot_names
    from planner.views import launch

    for param in LINK_TEXT:
        inputs, warnings = share.decode({"model": "custom", param: attack})
        model = plan_inputs.resolve_model(inputs)
        ests = estimate_all(plan_inputs.to_plan(inputs, model), FACTS, gpu_names=["h100-sxm", "rtx-4090"])
        link = share.link("http://x/", inputs)
        ctx = exports.ExportContext(link, "data/gpus.yaml", "snapshot", "2026-11-09")
        words = plan_inputs.plan_sentence(inputs, model)
        json_text = exports.export_json(inputs, model, ests, ctx)
        csv_text = exports.export_csv(inputs, model, ests, ctx)
        sky_text = launch.skypilot_text(ests, load_skypilot_names(), False, link, words)
        for text in (json_text, csv_text, sky_text, link, words, *map(str, warnings)):
            text.encode("utf-8")
            assert not any(c in text for c in "\x1b\x07\x00\u2028"), (param, text[:200])
        assert json.loads(json_text)["link"] == link
        assert {r["plan_link"] for r in csv.DictReader(io.StringIO(csv_text))} == {link}
        task = yaml.safe_load(sky_text)
        # the page's task: no workdir (no script to send), the runtime's setup, the secret of a gated model
        assert {"name", "resources", "envs", "run"} <= set(task) <= {"name", "resources", "envs", "setup", "secrets",
                                                                    "run"}
        assert task["envs"] == {"PLANNER_PLAN": link}
        if param == "m_name":
            shown = attack if attack.isprintable() else None  # printable text is a fine name; the rest refused
            assert dict(inputs.arch)["name"] == shown if shown else [w.param for w in warnings] == ["m_name"]
            assert shown is None or shown in words
