"""The parameter cross-check against a local server on 127.0.0.1 that speaks the Hub's resolve API with HTTP Range
requests, as huggingface_hub's get_safetensors_metadata reads it: one safetensors file, a sharded checkpoint with its
index, a header longer than the first range, no checkpoint at all, offline mode and the deadline."""

import json
import struct
from http.server import BaseHTTPRequestHandler

import pytest

from planner.cli import main
from planner.clients.hf_hub import HubError, checkpoint_params, model_with_cross_check, params_note
from tests.fixtures.local_http import serving

# A one-layer LLaMA: by hand, attention 4 x 8 x 8 = 256, MLP 3 x 8 x 16 = 384, two norms 16, embeddings and an untied
# LM head 2 x 10 x 8 = 160, the final norm 8: 824 parameters
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8, "intermediate_size": 16,
        "num_attention_heads": 2, "num_hidden_layers": 1, "num_key_value_heads": 2, "vocab_size": 10,
        "max_position_embeddings": 64, "tie_word_embeddings": False}
TINY_TENSORS = {"q": [8, 8], "k": [8, 8], "v": [8, 8], "o": [8, 8], "gate": [16, 8], "up": [16, 8], "down": [8, 16],
                "norm1": [8], "norm2": [8], "embed": [10, 8], "head": [10, 8], "final": [8]}


def safetensors(tensors: dict[str, list[int]], pad_header_to: int = 0) -> bytes:
    """A safetensors file as the format defines it: an 8-byte little-endian header length, the JSON header (tensor ->
    dtype, shape, data offsets), then the bytes (BF16: 2 per element)."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * max(0, pad_header_to - len(text))  # the format allows trailing spaces in the header
    return struct.pack("<Q", len(text)) + text + bytes(offset)


def header_only(header: dict) -> bytes:
    """A safetensors header without its data (a server may claim anything)."""
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text


# TINY with its MLP in MXFP4 as gpt-oss's checkpoints store experts: `_blocks` bytes of two E2M1 values each (gate
# 16 x 8 = 128 values in 16 x 4 bytes) and `_scales`, one E8M0 byte per block of up to 32 values (not parameters)
MXFP4_HEADER = {"__metadata__": {"format": "pt"}}
for _name, _shape in TINY_TENSORS.items():
    if _name in ("gate", "up", "down"):
        MXFP4_HEADER[f"{_name}_blocks"] = {"dtype": "U8", "shape": [_shape[0], _shape[1] // 2], "data_offsets": [0, 0]}
        MXFP4_HEADER[f"{_name}_scales"] = {"dtype": "U8", "shape": [_shape[0], 1], "data_offsets": [0, 0]}
    else:
        MXFP4_HEADER[_name] = {"dtype": "BF16", "shape": _shape, "data_offsets": [0, 0]}
SHARD_A = {k: v for k, v in list(TINY_TENSORS.items())[:6]}
SHARD_B = {**{k: v for k, v in list(TINY_TENSORS.items())[6:]}, "extra": [10, 8]}  # 80 more: +9.7 %
FILES = {
    "tiny/one": {"config.json": json.dumps(TINY).encode(), "model.safetensors": safetensors(TINY_TENSORS)},
    "tiny/sharded": {"config.json": json.dumps(TINY).encode(),
                     "model.safetensors.index.json": json.dumps({"metadata": {"total_size": 1808}, "weight_map": {
                         **{k: "model-00001-of-00002.safetensors" for k in SHARD_A},
                         **{k: "model-00002-of-00002.safetensors" for k in SHARD_B}}}).encode(),
                     "model-00001-of-00002.safetensors": safetensors(SHARD_A),
                     "model-00002-of-00002.safetensors": safetensors(SHARD_B)},
    "tiny/long-header": {"config.json": json.dumps(TINY).encode(),
                         "model.safetensors": safetensors(TINY_TENSORS, pad_header_to=150_000)},
    "tiny/no-weights": {"config.json": json.dumps(TINY).encode()},
    "tiny/mxfp4": {"config.json": json.dumps(TINY).encode(), "model.safetensors": header_only(MXFP4_HEADER)},
}


class RangeHub(BaseHTTPRequestHandler):
    ranges: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        parts = self.path.split("/")  # /owner/name/resolve/<revision>/<file>
        body = FILES.get("/".join(parts[1:3]), {}).get(parts[-1])
        if parts[3:4] != ["resolve"] or body is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        wanted = self.headers.get("Range")
        status = 200
        if wanted:
            RangeHub.ranges.append(f"{parts[-1]} {wanted}")
            first, last = (int(x) for x in wanted.removeprefix("bytes=").split("-"))
            body, status = body[first:last + 1], 206
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    RangeHub.ranges = []
    with serving(RangeHub) as url:
        yield url


def test_one_file_is_read_from_its_first_range_and_agrees_with_the_config(hub, tmp_path):
    assert checkpoint_params("tiny/one", endpoint=hub, cache_dir=tmp_path) == 824
    assert RangeHub.ranges == ["model.safetensors bytes=0-99999"]  # the header fits the first 100 kB
    m, skipped = model_with_cross_check("tiny/one", endpoint=hub, cache_dir=tmp_path)
    assert m.params == 824 and m.cross_check == "" and skipped == ""


def test_a_sharded_checkpoint_sums_its_shards_and_a_mismatch_over_2_percent_is_said(hub, tmp_path):
    assert checkpoint_params("tiny/sharded", endpoint=hub, cache_dir=tmp_path) == 824 + 80
    m, _ = model_with_cross_check("tiny/sharded", endpoint=hub, cache_dir=tmp_path)
    assert "824 parameters, the checkpoint's own tensors 904 (-8.8%)" in m.cross_check  # 824 / 904 - 1


def test_mxfp4_blocks_count_two_values_a_byte_and_their_scales_none(hub, tmp_path):
    """Counted as elements, the MLP's 384 weights would be 192 bytes + 40 scales: 824 - 384 + 232 = 672, -18 %."""
    assert checkpoint_params("tiny/mxfp4", endpoint=hub, cache_dir=tmp_path) == 824


def test_a_header_longer_than_the_first_range_is_read_by_a_second(hub, tmp_path):
    assert checkpoint_params("tiny/long-header", endpoint=hub, cache_dir=tmp_path) == 824
    assert RangeHub.ranges[1].startswith("model.safetensors bytes=8-")


def test_a_repository_without_safetensors_has_nothing_to_cross_check(hub, tmp_path):
    assert checkpoint_params("tiny/no-weights", endpoint=hub, cache_dir=tmp_path) is None
    assert model_with_cross_check("tiny/no-weights", endpoint=hub, cache_dir=tmp_path)[0].cross_check == ""


def test_the_count_is_cached_and_read_offline(hub, tmp_path, monkeypatch):
    checkpoint_params("tiny/sharded", endpoint=hub, cache_dir=tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(RangeHub.ranges)
    assert checkpoint_params("tiny/sharded", endpoint=hub, cache_dir=tmp_path) == 904
    assert len(RangeHub.ranges) == before  # no request
    with pytest.raises(HubError, match="offline mode"):
        checkpoint_params("tiny/one", endpoint=hub, cache_dir=tmp_path)


def test_an_unreachable_hub_skips_the_cross_check_in_one_line(tmp_path):
    with pytest.raises(HubError, match="could not be reached"):
        checkpoint_params("tiny/one", endpoint="http://127.0.0.1:9", cache_dir=tmp_path, deadline_s=1.0)


def test_within_2_percent_says_nothing():
    assert params_note(1_000, 1_019) == "" and params_note(1_000, 981) == ""
    assert "+2.1%" in params_note(1_021, 1_000) and params_note(1_000, None) == ""


def test_the_cli_prints_the_mismatch(hub, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    code = main(["estimate", "--model", "tiny/sharded", "--gpu", "h100-sxm", "--batch", "1", "--sequences", "1",
                 "--format", "json"])
    err = capsys.readouterr().err
    assert code in (0, None) and "tiny/sharded: the config.json's architecture counts 824" in err


HOSTILE = {
    "evil/huge-shape": {"config.json": json.dumps(TINY).encode(),
                        "model.safetensors": header_only({"w": {"dtype": "F16", "shape": [10**12, 10**12, 10**12],
                                                                "data_offsets": [0, 0]}})},
    "evil/bad-shape": {"config.json": json.dumps(TINY).encode(),
                       "model.safetensors": struct.pack("<Q", 40) + b'{"w": {"dtype": "F16", "shape": "many"}}   '},
    "evil/huge-header": {"config.json": json.dumps(TINY).encode(),
                         "model.safetensors": struct.pack("<Q", 10**12) + b"{}"},
    "evil/short": {"config.json": json.dumps(TINY).encode(), "model.safetensors": b"\x01\x02"},
    "evil/shards": {"config.json": json.dumps(TINY).encode(),
                    "model.safetensors.index.json": json.dumps({"weight_map": {"a": "../../etc/passwd"}}).encode()},
}


@pytest.mark.parametrize("repo, needle", [
    ("evil/huge-shape", "claims more than"), ("evil/bad-shape", "not the format's JSON"),
    ("evil/huge-header", "over the format's"), ("evil/short", "shorter than its 8-byte"),
    ("evil/shards", "names files the planner will not fetch"),
])
def test_a_hostile_checkpoint_header_is_one_line_and_the_plan_goes_on(hub, tmp_path, monkeypatch, repo, needle):
    monkeypatch.setitem(FILES, repo, HOSTILE[repo])
    with pytest.raises(HubError, match=needle):
        checkpoint_params(repo, endpoint=hub, cache_dir=tmp_path)
    m, skipped = model_with_cross_check(repo, endpoint=hub, cache_dir=tmp_path)
    assert m.params == 824 and skipped.startswith("parameter cross-check skipped") and "\n" not in skipped


def test_a_tampered_cached_count_is_not_trusted_offline(hub, tmp_path, monkeypatch):
    from planner.clients.hf_hub import cache_path
    checkpoint_params("tiny/one", endpoint=hub, cache_dir=tmp_path)
    cache_path(tmp_path, hub, "tiny/one", "main", "params").write_text('{"parameters": "lots"}')
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError, match="offline mode"):
        checkpoint_params("tiny/one", endpoint=hub, cache_dir=tmp_path)
