"""The page's shared caches are keyed by content: equal plans share one entry, any changed input gets its own."""

from dataclasses import replace

import pandas as pd

from planner.views import plan_inputs
from planner.views.cache_key import content_key


def _plan(**inputs):
    chosen = replace(plan_inputs.Inputs(), **inputs)
    return plan_inputs.to_plan(chosen, plan_inputs.resolve_model(chosen))


def test_equal_plans_built_apart_share_a_key():
    assert _plan() is not _plan()
    assert content_key(_plan(), "secure") == content_key(_plan(), "secure")


def test_every_changed_input_changes_the_key():
    base = content_key(_plan())
    changed = [_plan(seqs=123_457), _plan(prec="fp16"), _plan(gpus=2), _plan(mem=80)]
    keys = {content_key(p) for p in changed}
    assert base not in keys and len(keys) == len(changed)


def test_dataframes_are_keyed_by_their_values():
    a = pd.DataFrame({"gpu": ["a", "b"], "s": [1.0, 2.0]})
    assert content_key("chart", (a,)) == content_key("chart", (a.copy(),))
    assert content_key("chart", (a,)) != content_key("chart", (a.assign(s=[1.0, 2.5]),))
    assert content_key("chart", (a,)) != content_key("other chart", (a,))
