"""FlashAttention-2 on datacenter Blackwell (data/precisions.yaml flash-attn-2): flash-attn 2.7.3+ runs on SM 10.0
(B200, GB200; Transformer Engine's version_required_blackwell, flash-attention issue #1589), no source runs it on SM
10.3 or 12.x; and Megatron-LM's deterministic CI rows on GB200 read as FlashAttention-2 (conditions_read_after)."""

from planner.engine.feasibility import resolve_attention
from planner.inputs.precisions import load_rules
from planner.validation.measured import conditions_read_after

RULES = load_rules()
CI_GB200 = ("megatron-ci-gpt3-7b-gb200-x8-tp1-pp4-vpp8-dp2-seq8192", "megatron-ci-gpt3-7b-gb200-x8-tp4-pp1-dp2-seq8192")


def _runs(cc: tuple[int, int]) -> bool:
    fa2, sdpa = RULES.attention("flash-attn-2"), RULES.attention("sdpa")
    return resolve_attention(fa2, sdpa, cc, "cuda", "bf16", 128, None).kernel is not None


def test_flash_attention_2_runs_on_b200_and_gb200_only_among_blackwell():
    # B200 / GB200 are SM 10.0; B300 / GB300 SM 10.3 and the RTX 50 series SM 12.0 have no source
    assert [_runs(cc) for cc in ((9, 0), (10, 0), (10, 3), (12, 0))] == [True, True, False, False]


def test_megatron_ci_gb200_rows_read_as_flash_attention_2_and_the_h100_rows_keep_their_default():
    # deterministic mode with dropout 0.1: no cuDNN kernel on SM >= 10.0 in TE 2.18, no FlashAttention 3 / 4
    cond = conditions_read_after()
    assert all(cond[i]["attention"] == "flash-attn-2" and cond[i]["refines_assumed"] for i in CI_GB200)
    assert "attention" not in cond.get("megatron-ci-gpt3-7b-h100sxm-x8-tp4-pp1-dp2-seq8192", {})
