"""The page's session state holds a key for each widget it draws and little else: every selectbox, radio, number or
text input and slider reads the whole session state once per run (Streamlit 1.67's filtered_state), so a key nobody
draws costs every widget (ui/state.py: PAGE_KEY, HIDEABLE)."""

from streamlit.testing.v1 import AppTest

from planner.inputs.catalog import load_catalog
from tests.fixtures.app_page import open_page

# Not widgets: the page's own dict, the run's time (benchmarks read it), and the plan's three values no widget holds
# (an uploaded profile's text, a calibration's query, a GPU described in the sidebar)
NOT_WIDGETS = {"_page", "_run_ms", "spec", "cal", "mygpu"}
VRAM_GB = {g.id: g.vram_gb for g in load_catalog().gpus}


def _drawn_keys(at: AppTest) -> set[str]:
    """The keys of every element drawn in the last run (widgets and keyed containers)."""
    keys, todo = set(), [at.main, at.sidebar]
    while todo:
        node = todo.pop()
        if getattr(node, "key", None):
            keys.add(node.key)
        todo.extend((getattr(node, "children", None) or {}).values())
    return keys


def test_the_default_page_keeps_no_key_for_a_widget_it_does_not_draw():
    at = open_page(timeout_s=60)
    assert not at.exception
    extra = set(at.session_state) - _drawn_keys(at)
    assert extra <= NOT_WIDGETS, extra
    # the Filters popover is closed, the job is not training, the model is a preset, the assumptions are folded
    assert not {"minvram", "vendor", "epochs", "m_layers", "jc_pod_start_s", "sttft"} & set(at.session_state)


def test_a_linked_value_for_a_hidden_widget_applies_and_shows_when_drawn():
    at = open_page({"minvram": "40", "job": "train", "epochs": "3.5"}, timeout_s=60)
    assert not at.exception and "minvram" not in at.session_state  # the Filters popover is closed: held
    table = next(d.value for d in at.dataframe if "gpu_id" in d.value.columns)
    assert len(table) and all(VRAM_GB[g] >= 40 for g in table.gpu_id)  # the filter applies while hidden
    assert at.number_input(key="epochs").value == 3.5  # drawn on a training plan: the link's value
    at.session_state["filters_open"] = True  # a click on 'Filters'
    at.run()
    assert at.number_input(key="minvram").value == 40.0
    at.number_input(key="minvram").set_value(80.0).run()
    assert at.query_params["minvram"] == "80" and at.query_params["epochs"] == "3.5"


def test_explaining_gpus_in_turn_keeps_one_price_box_key():
    at = open_page({"tier": "secure", "gpu": "h100-sxm"}, timeout_s=60)
    box = "price_in_h100-sxm_secure"
    listed = at.number_input(key=box).value
    at.number_input(key=box).set_value(listed + 1.0).run()  # typed, not used ('Use this price' not clicked)
    for gpu in ("rtx-4090", "a40", "h100-sxm"):
        at.selectbox(key="gpu").set_value(gpu).run()
        assert not at.exception
    assert [k for k in at.session_state if k.startswith("price_in_")] == [box]
    assert at.number_input(key=box).value == listed  # the listed price again, not the one typed and left
