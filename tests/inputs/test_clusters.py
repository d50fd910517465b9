"""The providers' multi-node offers (data/clusters.yaml): loaded, checked, and matched to a plan's GPUs."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.clusters import CLUSTERS_FILE, load_cluster_offers


def test_runpod_instant_clusters_are_16_to_256_gpus_of_four_kinds():
    # docs.runpod.io/instant-clusters: 'Clusters range from 2 to 16 nodes (16-256 GPUs)', H200, B200, H100, A100
    runpod = next(o for o in load_cluster_offers().offers if o.provider == "runpod")
    assert (runpod.min_gpus, runpod.max_gpus) == (16, 256) and runpod.terms == "self-service"
    assert set(runpod.gpus) == {"h200-sxm", "b200", "h100-sxm", "a100-sxm-80gb"}


def test_a_plan_gets_the_offers_that_fit_other_sizes_and_the_providers_without_one():
    offers = load_cluster_offers()
    fit, other, none = offers.for_plan("h100-sxm", 512)  # past RunPod's 256
    assert "runpod" not in {o.provider for o in fit} and [o.provider for o in other] == ["runpod"]
    assert none == ()
    fit, other, none = offers.for_plan("a100-sxm-80gb", 32)
    assert {o.provider for o in fit} == {"runpod", "vast.ai"} and set(none) == {"lambda", "nebius"}
    assert offers.for_plan("rtx-4090", 16) == ((), (), ("runpod", "lambda", "nebius", "vast.ai"))


@pytest.mark.parametrize("old, new, field", [
    ("gpus: [h100-sxm, b200]", "gpus: [h100-sxm, b2000]", "gpus"),
    ("max_gpus: 256", "max_gpus: 8", "max_gpus"),
    ("terms: reserved", "terms: forever", "terms"),
])
def test_bad_records_are_named_with_their_field(tmp_path, old, new, field):
    text = CLUSTERS_FILE.read_text()
    assert old in text
    path = tmp_path / "clusters.yaml"
    path.write_text(text.replace(old, new))
    with pytest.raises(DataFileError, match=field):
        load_cluster_offers(path)
