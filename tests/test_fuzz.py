"""Fuzzing the ways a user's or a server's text reaches the planner: share links, uploads, command-line arguments, a
Hugging Face Hub endpoint's answers and the price snapshot files on disk.

Seeded and bounded (a few hundred cases, well under a minute). For every case: no exception escapes except the
planner's own error types, each message names the parameter or field, stays short and never repeats a long user
value whole, and the case costs bounded time and memory.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import random
import time
import threading
import tracemalloc
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from planner.base.schema import DataFileError
from planner.cli import main
from planner.clients.hf_hub import HubError, model_from_hub
from planner.engine.estimate import estimate_all
from planner.inputs.bench_result import CalibrationError, parse_result
from planner.inputs.facts import load_facts
from planner.inputs.models import parse_model_text
from planner.inputs.price_snapshot import snapshot_table
from planner.views import plan_inputs, share

SEED = 20261122
# CPU seconds of this process for one case (the alias bomb took 33 s before the caps): CPU time, not the wall clock,
# so another process's load on the shared 2-core machine does not count against a case
MAX_CASE_S = 5.0
MAX_CASE_MB = 64.0  # peak Python allocation of one case (an alias bomb would take gigabytes)
MAX_MESSAGE_CHARS = 1500
LONG = "Z" * 5000  # a long user value: no message may carry it whole
FACTS = load_facts()

JUNK = ["", " ", "-1", "0", "1e300", "-1e300", "nan", "inf", "-inf", "1.9", "9" * 5000, "0x10", "1_000", "1,000",
        "auto", "true", "<script>alert(1)</script>", "[click](http://evil.example)", "![x](http://evil.example/p.png)",
        "**bold**", "$x$", ":red[x]", "\u202e\u0000\ufeff", "é" * 50, LONG, "h100-sxm", "rtx-4090:1e-300",
        "h100-sxm:0.5,,rtx-4090:2", "\ud800x", "\x1b[2Jx\x07", "fp16", "sdpa", "manual", "train", "generate", "custom",
        "v=1;dev=h100-sxm;cls=hbm;bw=9;mm=9;lo=1;path=bf16;pbw=20000;bf16=10000;mem=80;d=20261120"]


def _packed(text: str) -> str:
    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


BOMB_YAML = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n"
SPECS = [_packed(BOMB_YAML), _packed("[" * 5000 + "]" * 5000), _packed("#" * 5_000_000), "!!!not-base64",
         _packed("id: x\nkind: generic\n"), _packed("fwd_flops_per_sample: " + "+".join(["L"] * 3000))]


@contextlib.contextmanager
def bounded(case: str):
    tracemalloc.start()
    t0 = time.process_time()
    try:
        yield
    finally:
        elapsed = time.process_time() - t0
        peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    assert elapsed < MAX_CASE_S, f"{case}: {elapsed:.2f} s"
    assert peak_mb < MAX_CASE_MB, f"{case}: {peak_mb:.0f} MB"


def _check_message(text: str, case: str) -> None:
    assert len(text) <= MAX_MESSAGE_CHARS, f"{case}: message of {len(text)} characters"
    assert LONG not in text and "9" * 200 not in text, f"{case}: a long user value repeated whole"


def _links(rng: random.Random, n: int):
    params = sorted(share.KNOWN_PARAMS) + ["bogus", "m_spec"]
    for _ in range(n):
        link = {rng.choice(params): rng.choice(JUNK) for _ in range(rng.randint(1, 6))}
        if rng.random() < 0.3:
            link.update(model="custom", m_spec=rng.choice(SPECS))
        yield link


def test_links_never_raise_and_name_what_they_drop():
    rng = random.Random(SEED)
    for i, link in enumerate(_links(rng, 250)):
        case = f"link #{i} {str(link)[:120]}"
        with bounded(case):
            inputs, warnings = share.decode(link)
            for w in warnings:
                assert w.param in link, f"{case}: warning for '{w.param}', not in the link"
                _check_message(str(w), case)
            model = plan_inputs.resolve_model(inputs)
            plan = plan_inputs.to_plan(inputs, model)
            try:
                estimate_all(plan, FACTS, gpu_names=["h100-sxm", "rtx-4090"])
            except ValueError as exc:  # a plan no GPU could run is refused with a reason, never a traceback
                _check_message(str(exc), case)


MODEL_BASE = {"id": "fz", "kind": "generic", "name": "Fuzz", "input_size_name": "L", "default_input_size": 10,
              "params": "100", "fwd_flops_per_sample": "2*L", "activation_elems_per_sample": "L",
              "peak_inference_elems_per_sample": "L", "activation_traffic_elems_per_sample": "L",
              "kernels_per_forward": 10, "derivation": "d", "source": "s"}
CONFIG_BASE = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
               "vocab_size": 100, "max_position_embeddings": 128}
VALUES = [None, -1, 0, 1e308, float("inf"), 10**5000, "x", LONG, [], {}, [1] * 10, True, "L**99", "1/0", "-L",
          "__import__('os')", "+".join(["L"] * 2000)]


def _mutated(rng: random.Random, base: dict) -> dict:
    doc = dict(base)
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(list(doc) + ["extra_field"])
        doc[key] = rng.choice(VALUES)
    return doc


def _dump(doc: dict, as_json: bool) -> str:
    try:
        return json.dumps(doc)
    except ValueError:  # a number too long for json.dumps (Python's own int->str limit)
        return "{broken"


def test_model_uploads_fail_only_with_a_named_field():
    rng = random.Random(SEED + 1)
    for i in range(150):
        as_json = rng.random() < 0.4
        doc = _mutated(rng, CONFIG_BASE if as_json else MODEL_BASE)
        text = _dump(doc, as_json) if as_json or rng.random() < 0.5 else rng.choice([BOMB_YAML, "[" * 200, ": : :"])
        case = f"upload #{i} {text[:120]}"
        with bounded(case):
            try:
                parse_model_text(text, "config.json" if as_json else "model.yaml", "upload")
            except DataFileError as exc:
                _check_message(str(exc), case)
                assert exc.field or exc.problem


def test_bench_result_uploads_fail_only_with_a_calibration_error(example):
    rng = random.Random(SEED + 2)
    sections = ["environment", "micro", "workloads", "kind", "schema_version", "bench_version"]
    for i in range(60):
        doc = json.loads(json.dumps(example))
        for _ in range(rng.randint(1, 3)):
            section = rng.choice(sections)
            target = doc.get(section)
            if isinstance(target, dict) and target:
                target[rng.choice(list(target))] = rng.choice(VALUES)
            elif isinstance(target, list) and target:
                target[rng.randrange(len(target))] = rng.choice(VALUES)
            else:
                doc[section] = rng.choice(VALUES)
        text = _dump(doc, True)
        case = f"bench #{i}"
        with bounded(case):
            try:
                parse_result(text, "result.json")
            except CalibrationError as exc:
                _check_message(str(exc), case)


OPTIONS = ["--sequences", "--prompt-tokens", "--gen-tokens", "--samples", "--input-size", "--epochs", "--gpus",
           "--batch", "--grad-accum", "--precision", "--runtime", "--attention", "--kv-dtype", "--model", "--gpu",
           "--price-tier", "--workload", "--sharding", "--optimizer"]


@pytest.mark.parametrize("chunk", range(3))
def test_cli_arguments_exit_2_with_the_option_named_or_succeed(chunk):
    rng = random.Random(SEED + 3 + chunk)
    for _ in range(30):
        args = ["estimate", "--gpu", "h100-sxm", "--format", "json"]
        options = [rng.choice(OPTIONS) for _ in range(rng.randint(1, 3))]
        for option in options:
            args += [option, rng.choice(JUNK[:24])]
        out, err = io.StringIO(), io.StringIO()
        case = f"cli {args}"
        with bounded(case), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse refuses a value: exit 2 naming the option
                code = exc.code
        message = err.getvalue()
        assert code in (0, 2), f"{case}: exit {code}"
        if code == 2:
            assert message.strip() and "Traceback" not in message, case
            _check_message(message.strip().splitlines()[-1], case)
        else:
            json.loads(out.getvalue())


class _Hub(BaseHTTPRequestHandler):
    """A Hub whose next answer the test sets: status, headers and body."""
    answer: tuple[int, dict, bytes] = (200, {}, b"{}")

    def do_GET(self):  # noqa: N802 (http.server's name)
        status, headers, body = _Hub.answer
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def log_message(self, *args):
        pass


def _hub_answers(rng: random.Random, n: int):
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
              "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 128}
    codes = ["", "RepoNotFound", "EntryNotFound", "RevisionNotFound", "GatedRepo", LONG[:300], "\u202e"]
    for _ in range(n):
        doc = _mutated(rng, config)
        body = rng.choice([_dump(doc, True).encode(), rng.randbytes(rng.randint(0, 2000)), b"[" * 5000,
                           json.dumps({"hidden_size": 1, "x": LONG}).encode(), b"", b"null", b'"\xff"'])
        headers = rng.choice([{}, {"X-Error-Code": rng.choice(codes)}, {"ETag": '"/tmp/../x.pth"'},
                              {"Content-Length": str(rng.choice([0, 10**12, 300_001]))}])
        yield rng.choice([200, 200, 200, 401, 403, 404, 429, 500, 503]), headers, body


def test_hub_answers_become_a_profile_or_a_hub_error(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for i, answer in enumerate(_hub_answers(random.Random(SEED + 6), 80)):
            _Hub.answer = answer
            case = f"hub #{i} {answer[0]} {str(answer[1])[:60]} {answer[2][:60]!r}"
            with bounded(case):
                try:
                    model_from_hub("fuzz/model", endpoint=endpoint, cache_dir=str(tmp_path / str(i)),
                                   deadline_s=5.0)
                except HubError as exc:
                    _check_message(str(exc), case)
                    assert "\n" not in str(exc) and "x.pth" not in str(exc), case
            written = [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".json")]
            assert not written, f"{case}: wrote {written}"  # only the planner-named cache file, if anything
    finally:
        server.shutdown()


SNAPSHOT = ("schema_version: 1\ndate: 2026-11-20\nfetched_at: 2026-11-20T10:00:00Z\nsource: fuzz\nprices:\n"
            + "".join(f"- id: {g}\n  secure: 1.5\n  community: 0.9\n  spot: null\n" for g in ("h100-sxm", "rtx-4090")))


def test_price_snapshot_files_are_used_or_left_out_by_name(tmp_path):
    rng = random.Random(SEED + 7)
    catalog = FACTS.catalog
    for i in range(60):
        folder = tmp_path / str(i)
        folder.mkdir()
        text = SNAPSHOT
        cut = rng.choice(["truncate", "bytes", "value", "key"])
        if cut == "truncate":
            text = text[:rng.randrange(len(text))]
        elif cut == "value":
            text = text.replace("1.5", rng.choice(["-1", "0", "1e308", ".inf", "x", LONG, "[]", "{}", "9" * 5000]))
        elif cut == "key":
            text = text.replace("secure", rng.choice(["securee", LONG[:80], "\u202e", "id"]), 1)
        data = text.encode() if cut != "bytes" else rng.randbytes(rng.randint(0, 3000))
        (folder / "runpod-2026-11-20.yaml").write_bytes(data)
        case = f"snapshot #{i} {cut} {data[:80]!r}"
        with bounded(case):
            table = snapshot_table(catalog, directory=folder)  # never raises: a bad file is left out, by name
        for problem in table.problems:
            assert "runpod-2026-11-20.yaml was left out" in problem, case
            _check_message(problem, case)
        assert table.prices["h100-sxm"]["secure"] is not None, case  # the catalog's listing still prices it
