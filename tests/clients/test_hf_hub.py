"""Models by Hugging Face id, fetched from a local server that speaks the Hub's resolve API (and one that attacks)."""

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from pathlib import Path

from planner.clients.hf_hub import HubError, fetch_config, is_repo_id, model_from_hub
from tests.fixtures.local_http import serving

LLAMA3_8B = {  # meta-llama/Meta-Llama-3-8B config.json (hf.co, 2024-04-18), the fields the planner reads
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 8192, "tie_word_embeddings": False, "hidden_act": "silu"}
MIXTRAL = {  # mistralai/Mixtral-8x7B-v0.1 config.json (hf.co), the fields the planner reads
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "num_experts_per_tok": 2, "vocab_size": 32000, "max_position_embeddings": 32768, "sliding_window": None,
    "tie_word_embeddings": False, "hidden_act": "silu"}
BERT = {  # google-bert/bert-base-uncased config.json (hf.co), the fields that matter
    "architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768, "intermediate_size": 3072,
    "num_attention_heads": 12, "num_hidden_layers": 12, "vocab_size": 30522, "max_position_embeddings": 512}
REPOS = {"meta-llama/Meta-Llama-3-8B": json.dumps(LLAMA3_8B).encode(),
         "mistralai/Mixtral-8x7B-v0.1": json.dumps(MIXTRAL).encode(),
         "google-bert/bert-base-uncased": json.dumps(BERT).encode()}
COMMIT = "a" * 40


class FakeHub(BaseHTTPRequestHandler):
    hits = 0

    def _answer(self, with_body: bool) -> None:
        FakeHub.hits += 1
        parts = self.path.split("/")  # /owner/name/resolve/<revision>/config.json
        repo, body = "/".join(parts[1:3]), None
        if parts[3:4] != ["resolve"] or repo not in REPOS:
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.end_headers()
            return
        if parts[-1] != "config.json":
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            return
        body = REPOS[repo]
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha1(body).hexdigest()}"')
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def do_HEAD(self):  # noqa: N802 (http.server's name)
        self._answer(False)

    def do_GET(self):  # noqa: N802
        self._answer(True)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    with serving(FakeHub) as url:
        yield url


def test_a_hub_id_becomes_the_same_profile_as_the_preset(hub, tmp_path):
    m = model_from_hub("meta-llama/Meta-Llama-3-8B", endpoint=hub, cache_dir=str(tmp_path))
    assert m.params == 8_030_261_248  # Llama-3-8B's published parameter count (the llama-3-8b preset's)
    assert m.id == "meta-llama/Meta-Llama-3-8B" and m.kv_heads == 8 and m.context == 8192


def test_the_config_is_cached_and_read_offline(hub, tmp_path, monkeypatch):
    fetch_config("meta-llama/Meta-Llama-3-8B", endpoint=hub, cache_dir=str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = FakeHub.hits
    assert fetch_config("meta-llama/Meta-Llama-3-8B", endpoint=hub, cache_dir=str(tmp_path))["hidden_size"] == 4096
    assert FakeHub.hits == before  # answered from the cache, no request
    with pytest.raises(HubError, match="offline mode"):
        fetch_config("meta-llama/Meta-Llama-3-8B", endpoint=hub, cache_dir=str(tmp_path / "empty"))


@pytest.mark.parametrize("repo, needle", [("nobody/nothing", "no model nobody/nothing"), ("not-an-id", "owner/name")])
def test_unknown_or_malformed_ids_are_named(hub, tmp_path, repo, needle):
    with pytest.raises(HubError, match=needle):
        fetch_config(repo, endpoint=hub, cache_dir=str(tmp_path))


def test_an_unreachable_hub_is_one_line_naming_what_to_do(tmp_path):
    with pytest.raises(HubError, match="could not be reached .*upload the config.json") as info:
        fetch_config("meta-llama/Meta-Llama-3-8B", endpoint="http://127.0.0.1:9", cache_dir=str(tmp_path),
                     deadline_s=1.0)  # port 9 (discard) refuses the connection
    assert "\n" not in str(info.value) and "127.0.0.1" not in str(info.value)


def test_what_counts_as_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "models.yaml").write_text("models: []\n")  # a path that exists is a file, not a Hub id
    assert is_repo_id("meta-llama/Meta-Llama-3-8B") and is_repo_id("gpt2/gpt2")
    assert not is_repo_id("llama-3-8b") and not is_repo_id("data/models.yaml") and not is_repo_id("a/b/c")


def test_a_mixture_of_experts_counts_all_experts_and_top_k_active(hub, tmp_path):
    m = model_from_hub("mistralai/Mixtral-8x7B-v0.1", endpoint=hub, cache_dir=str(tmp_path))
    # Mistral AI, "Mixtral of experts" (2023-12-11): 46.7B total parameters, 12.9B used per token; by hand in
    # tests/inputs/test_models.py: 46,702,792,704 and 12,879,925,248
    assert (m.params, m.active_params) == (46_702_792_704, 12_879_925_248)


def test_an_encoder_from_the_hub_is_an_encoder_profile(hub, tmp_path):
    m = model_from_hub("google-bert/bert-base-uncased", endpoint=hub, cache_dir=str(tmp_path))
    # BertModel's 109,482,240 parameters, derived by hand in tests/inputs/test_layer_kinds.py (BERT paper: 110M)
    assert (m.kind, m.can_generate, m.params) == ("encoder", False, 109_482_240)


def test_the_cli_plans_a_hub_mixture_of_experts_and_refuses_to_generate_with_a_hub_encoder(hub, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path
    for repo in ("mistralai/Mixtral-8x7B-v0.1", "google-bert/bert-base-uncased"):  # into the cache HF_HOME names
        fetch_config(repo, endpoint=hub, cache_dir=str(tmp_path / "hub"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path), "HF_ENDPOINT": hub}
    cli = lambda model: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "planner", "estimate", "--model", model, "--gpu", "h200-sxm", "--precision", "bf16",
         "--batch", "1", "--sequences", "10", "--format", "json"],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120, env=env)
    ok = cli("mistralai/Mixtral-8x7B-v0.1")
    assert ok.returncode == 0, ok.stderr
    row = json.loads(ok.stdout)[0]
    assert row["feasible"] and row["memory_gb"]["weights"] == pytest.approx(46_702_792_704 * 2 / 1e9, rel=1e-3)
    refused = cli("google-bert/bert-base-uncased")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "cannot (encoder profile): use infer or train" in refused.stderr


class HostileHub(BaseHTTPRequestHandler):
    """A Hub that attacks: server-chosen paths in its headers, huge or endless bodies, a drip, refusals."""
    protocol_version = "HTTP/1.1"
    planted = ""  # the absolute path the ETag attack aims at

    def do_GET(self):  # noqa: N802 (http.server's name)
        repo = "/".join(self.path.split("/")[1:3])
        body = json.dumps(LLAMA3_8B).encode()
        if repo == "evil/etag":  # huggingface_hub once named the cached blob by this header
            self.send_response(200)
            self.send_header("ETag", f'"{HostileHub.planted}"')
            self.send_header("X-Repo-Commit", "../../../../tmp/planted")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif repo == "evil/declared-huge":
            self.send_response(200)
            self.send_header("Content-Length", str(300_000_000))
            self.end_headers()
            self.wfile.write(b"{" * 1000)
        elif repo == "evil/endless":  # no length: an endless body, closed by the client once past the cap
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for _ in range(10_000):
                    self.wfile.write(b" " * 65536)
            except OSError:
                pass
        elif repo == "evil/drip":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    threading.Event().wait(0.05)
            except OSError:
                pass
        elif repo == "gated/model":
            self._refuse(403, "GatedRepo")
        else:  # a 500 whose body echoes a secret: never shown
            self._refuse(500, "", b"token hf_SECRETSECRET at /etc/passwd")

    def _refuse(self, status: int, code: str, body: bytes = b"") -> None:
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile():
    with serving(HostileHub) as url:
        yield url


def test_the_server_cannot_choose_where_the_config_is_written(hostile, tmp_path):
    HostileHub.planted = str(tmp_path / "site-packages" / "x.pth")
    cache = tmp_path / "cache"
    config = fetch_config("evil/etag", endpoint=hostile, cache_dir=str(cache))
    assert config["hidden_size"] == 4096
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == 1 and written[0].parent == cache / "planner-configs", written
    assert not (tmp_path / "site-packages").exists() and not Path("/tmp/planted").exists()


@pytest.mark.parametrize("repo, needle", [
    ("evil/declared-huge", "larger than 200,000 bytes"),  # refused from its Content-Length, before the body
    ("evil/endless", "larger than 200,000 bytes"),  # refused once the body passes the cap
    ("evil/drip", "too slow"),  # one byte every 50 ms past a 1 s deadline
    ("gated/model", "is gated: accept its licence"),
    ("other/thing", "answered HTTP 500"),
])
def test_a_hostile_hub_gets_a_bounded_read_and_a_message_in_our_words(hostile, tmp_path, repo, needle):
    with pytest.raises(HubError, match=needle) as info:
        fetch_config(repo, endpoint=hostile, cache_dir=str(tmp_path), deadline_s=1.0)
    assert "SECRET" not in str(info.value) and "passwd" not in str(info.value)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))  # nothing cached from a refused answer
