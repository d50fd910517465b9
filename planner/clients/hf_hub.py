"""Models by Hugging Face id ('meta-llama/Meta-Llama-3-8B'): fetch config.json over the Hub's resolve API and read
it the way an uploaded config.json is read (planner.inputs.models.hf_config).

The Hub's own settings apply: HF_ENDPOINT (or `endpoint=`), HF_HUB_OFFLINE (answer from the cache only), HF_TOKEN
(or the token file `huggingface-cli login` writes) for gated repositories, and HF_HOME / HF_HUB_CACHE for where the
cache lives. The planner, not the server, names every file it writes: a config is cached under a hash of endpoint,
id and revision, written atomically, and its size is capped before and while the body is read. Every failure is a
HubError whose message says what happened and what to do, in our words (a server's text is never shown).

The parameter cross-check reads the checkpoint's own tensor list the way huggingface_hub's get_safetensors_metadata
does: the first 100 kB of model.safetensors by an HTTP Range request (8 bytes of little-endian header length, then the
JSON header of tensor names, dtypes and shapes; a second Range request when the header is longer), or for a sharded
checkpoint model.safetensors.index.json's weight_map and each shard's header. The count is the sum of the tensors'
shape products, cached like the config, read from the cache alone in offline mode, and all of it within one deadline.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import struct
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import requests

from planner.base.files import UserFileError, read_regular, write_atomic
from planner.base.safe_parse import ParseError, load_json_text
from planner.base.schema import DataFileError
from planner.clients.http import TOO_LARGE, BodyError, read_capped
from planner.inputs.models import ModelProfile, from_hf_config

# owner/name as the Hub allows them: letters, digits, '-', '_', '.'; each part at most 96 characters
REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")
REVISION = re.compile(r"[\w.-]{1,96}")  # a branch, tag or commit hash; no '/' or '..' reaches a URL path
DEFAULT_ENDPOINT = "https://huggingface.co"
MAX_CONFIG_BYTES = 200_000  # a config.json is a few kB; Mixtral's is 1 kB
MAX_TOKEN_BYTES = 4_096  # an access token is ~40 characters
FETCH_DEADLINE_S = 10.0  # the whole fetch: connecting, redirects and the body
CACHE_FOLDER = "planner-configs"  # inside the Hub cache folder
TRUE_WORDS = {"1", "on", "yes", "true"}  # how huggingface_hub reads its boolean variables
# The checkpoint cross-check (huggingface_hub's constants: SAFETENSORS_SINGLE_FILE, SAFETENSORS_INDEX_FILE,
# SAFETENSORS_MAX_HEADER_LENGTH = 25,000,000; get_safetensors_metadata's first range of 100 kB)
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
FIRST_RANGE_BYTES = 100_000
MAX_HEADER_BYTES = 25_000_000
MAX_INDEX_BYTES = 20_000_000  # an index names each tensor once, ~100 bytes a line: room for 200,000 tensors
MAX_SHARDS = 256  # DeepSeek-V3's checkpoint has 163
MAX_COUNT_BYTES = 4_096  # the cached count: one small JSON object
MAX_PARAMS = 10**14  # a header claiming more parameters than this (100 trillion) is not a checkpoint's
CROSS_CHECK_DEADLINE_S = 30.0  # every request of the cross-check together
PARAMS_MISMATCH = 0.02  # a config's count further than this from the checkpoint's is shown


class HubError(ValueError):
    """A model id that could not be turned into a profile; the message says why and what to do."""


def is_repo_id(text: str) -> bool:
    """True for 'owner/name' (what a user types for a Hub model), False for paths and preset ids."""
    return bool(REPO_ID.fullmatch(str(text).strip())) and not Path(str(text)).exists()


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE_WORDS


def _hf_home() -> Path:
    """HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface: where huggingface_hub keeps its files."""
    return Path(os.environ.get("HF_HOME")
                or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface")


def default_cache_dir() -> Path:
    """HF_HUB_CACHE, else HF_HOME's hub folder (_hf_home)."""
    return Path(os.environ["HF_HUB_CACHE"]) if os.environ.get("HF_HUB_CACHE") else _hf_home() / "hub"


def _token() -> str | None:
    token = os.environ.get("HF_TOKEN", "").strip()
    if token:
        return token
    try:  # the file `huggingface-cli login` writes
        return read_regular(_hf_home() / "token", MAX_TOKEN_BYTES, "token file").decode("utf-8", "replace").strip() \
            or None
    except UserFileError:
        return None


def cache_path(cache_dir: Path, endpoint: str, repo_id: str, revision: str, what: str = "") -> Path:
    """Where a config (or, what='params', the checkpoint's parameter count) is kept: named by a hash the planner
    computes, never by anything the server sends."""
    key = hashlib.sha256(f"{endpoint}\0{repo_id}\0{revision}{'' if not what else chr(0) + what}".encode()).hexdigest()
    return cache_dir / CACHE_FOLDER / f"{key}.json"


def _refusal(resp: requests.Response, repo_id: str, revision: str) -> HubError:
    """A HubError for a non-200 answer, from the status and the Hub's X-Error-Code header (its documented codes)."""
    code, status = resp.headers.get("X-Error-Code", ""), resp.status_code
    if code == "GatedRepo" or (status == 403 and not code):
        return HubError(f"{repo_id} is gated: accept its licence on the Hub and set HF_TOKEN, or upload its "
                        "config.json")
    if code == "RevisionNotFound":
        return HubError(f"{repo_id} has no revision {revision}")
    if code == "EntryNotFound":
        return HubError(f"{repo_id} has no config.json (an adapter or a GGUF-only repository?): use its base model's "
                        "id")
    if code == "RepoNotFound" or status in (401, 404):
        return HubError(f"no model {repo_id} on the Hub (or it is private: set HF_TOKEN); check the spelling")
    return HubError(f"{repo_id}: the Hub answered HTTP {status}; try again later or upload the config.json")


def _get(url: str, repo_id: str, revision: str, deadline_s: float) -> bytes:
    """The body at url within deadline_s in total, capped at MAX_CONFIG_BYTES; HubError otherwise."""
    end_s = time.monotonic() + deadline_s
    token = _token()
    headers = {"Accept": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    try:  # requests drops the Authorization header on a redirect to another host
        resp = requests.get(url, headers=headers, timeout=deadline_s, stream=True, allow_redirects=True)
    except requests.Timeout:
        raise HubError(f"{repo_id}: the Hub could not be reached within {deadline_s:g} s; try again later or upload "
                       "the config.json") from None
    except requests.RequestException:
        raise HubError(f"{repo_id}: the Hub could not be reached (no network, or the server is down); try again "
                       "later or upload the config.json") from None
    if resp.status_code != 200:
        resp.close()
        raise _refusal(resp, repo_id, revision)
    try:
        return read_capped(resp, end_s, MAX_CONFIG_BYTES)
    except BodyError as exc:
        if exc.why == TOO_LARGE:
            raise HubError(f"{repo_id}: config.json is larger than {MAX_CONFIG_BYTES:,} bytes; a model's config is a "
                           "few kB: upload the right file") from None
        raise HubError(f"{repo_id}: the Hub's answer was {exc.why} (deadline {deadline_s:g} s); try again later or "
                       "upload the config.json") from None


def _parse(data: bytes, repo_id: str) -> dict:
    try:
        config = load_json_text(data.decode("utf-8", errors="replace"), f"{repo_id} config.json", MAX_CONFIG_BYTES)
    except (ParseError, ValueError) as exc:
        raise HubError(f"{repo_id}: config.json is not usable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise HubError(f"{repo_id}: config.json is not a JSON object")
    return config


def fetch_config(repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
                 cache_dir: str | Path | None = None, deadline_s: float = FETCH_DEADLINE_S) -> dict:
    """The repository's config.json as a mapping: from the Hub (then cached), or from the cache in offline mode;
    HubError otherwise."""
    if not REPO_ID.fullmatch(repo_id):
        raise HubError("a Hugging Face model id looks like owner/name, e.g. meta-llama/Meta-Llama-3-8B")
    revision = revision or "main"
    if not REVISION.fullmatch(revision):
        raise HubError("a revision is a branch, tag or commit hash: letters, digits, '-', '_' and '.'")
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    cached = cache_path(Path(cache_dir) if cache_dir else default_cache_dir(), endpoint, repo_id, revision)
    if offline():
        try:
            return _parse(read_regular(cached, MAX_CONFIG_BYTES, "cached config.json"), repo_id)
        except UserFileError:
            raise HubError(f"{repo_id}: offline mode (HF_HUB_OFFLINE) is on and its config.json is not in the local "
                           "cache; connect once, or upload the config.json") from None
    data = _get(f"{endpoint}/{repo_id}/resolve/{revision}/config.json", repo_id, revision, deadline_s)
    config = _parse(data, repo_id)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, data)
    except OSError:
        pass  # a read-only cache costs the next run a fetch; this run has its config
    return config


def model_from_hub(repo_id: str, **kwargs) -> ModelProfile:
    """A decoder profile from a Hub model id; HubError naming what is wrong (architectures that can't be modelled
    are refused by planner.inputs.models.hf_config, named)."""
    config = fetch_config(repo_id, **kwargs)
    try:
        return from_hf_config(config, repo_id, f"Hugging Face Hub {repo_id} config.json")
    except DataFileError as exc:
        raise HubError(f"{repo_id}: {exc.problem} (field '{exc.field}')") from None


# ---------------------------------------------------------------- the checkpoint's own parameter count


def _ranged(url: str, first: int, last: int, repo_id: str, end_s: float, cap: int) -> bytes | None:
    """Bytes first..last (inclusive) of a Hub file within the deadline end_s; None when the file does not exist;
    HubError otherwise. A server that ignores the range must still send at most `cap` bytes."""
    left = end_s - time.monotonic()
    if left <= 0:
        raise HubError(f"{repo_id}: the checkpoint's metadata was not read within {CROSS_CHECK_DEADLINE_S:g} s")
    token = _token()
    headers = {"Range": f"bytes={first}-{last}", **({"Authorization": f"Bearer {token}"} if token else {})}
    try:
        resp = requests.get(url, headers=headers, timeout=left, stream=True, allow_redirects=True)
    except requests.RequestException:
        raise HubError(f"{repo_id}: the Hub could not be reached for the checkpoint's metadata") from None
    if resp.status_code == 404:
        resp.close()
        return None
    if resp.status_code not in (200, 206):
        resp.close()
        raise HubError(f"{repo_id}: the Hub answered HTTP {resp.status_code} for the checkpoint's metadata")
    try:
        return read_capped(resp, end_s, cap)
    except BodyError as exc:
        raise HubError(f"{repo_id}: the checkpoint's metadata was {exc.why}") from None


def _header_params(url: str, repo_id: str, end_s: float) -> int | None:
    """Parameters a safetensors file holds, from its header (None: no such file)."""
    head = _ranged(url, 0, FIRST_RANGE_BYTES - 1, repo_id, end_s, FIRST_RANGE_BYTES)
    if head is None:
        return None
    if len(head) < 8:
        raise HubError(f"{repo_id}: a safetensors file shorter than its 8-byte header length")
    size = struct.unpack("<Q", head[:8])[0]
    if size > MAX_HEADER_BYTES:
        raise HubError(f"{repo_id}: a safetensors header of {size:,} bytes, over the format's "
                       f"{MAX_HEADER_BYTES:,}")
    body = head[8:8 + size] if len(head) >= 8 + size else _ranged(url, 8, 7 + size, repo_id, end_s, size)
    if body is None or len(body) != size:
        raise HubError(f"{repo_id}: a safetensors header was cut short")
    try:
        header = load_json_text(body.decode("utf-8", "replace"), f"{repo_id} safetensors header", MAX_HEADER_BYTES)
        count = sum(_tensor_params(name, t) for name, t in header.items() if name != "__metadata__")
    except (ParseError, ValueError, TypeError, KeyError, AttributeError):
        raise HubError(f"{repo_id}: a safetensors header is not the format's JSON (names -> dtype, shape, "
                       "offsets)") from None
    if count > MAX_PARAMS:
        raise HubError(f"{repo_id}: a safetensors header claims more than {MAX_PARAMS:,} parameters")
    return count


# MXFP4 tensors as transformers and gpt-oss store them (Mxfp4HfQuantizer): `<name>_blocks`, bytes of two packed E2M1
# values each, and `<name>_scales`, one E8M0 exponent per block of 32 values (not parameters of their own)
MXFP4_BLOCKS, MXFP4_SCALES, PACKED_DTYPE = "_blocks", "_scales", "U8"
FP4_PER_BYTE = 2


def _tensor_params(name: str, tensor: Any) -> int:
    """Parameters one header entry holds: its elements, or for an MXFP4 tensor the values it packs (2 per byte of
    its blocks; none in its scales)."""
    n = _elements(tensor["shape"])
    if tensor.get("dtype") == PACKED_DTYPE and name.endswith(MXFP4_BLOCKS):
        return FP4_PER_BYTE * n
    return 0 if tensor.get("dtype") == PACKED_DTYPE and name.endswith(MXFP4_SCALES) else n


def _elements(shape: Any) -> int:
    """Elements of a tensor of `shape` (a list of whole non-negative numbers); ValueError otherwise."""
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_PARAMS
                                              for d in shape):
        raise ValueError("a tensor's shape is not a list of sizes")
    return min(math.prod(shape), MAX_PARAMS + 1)


def _shards(data: bytes, repo_id: str) -> list[str]:
    """The shard files a model.safetensors.index.json names (its weight_map's values), each once."""
    try:
        index = load_json_text(data.decode("utf-8", "replace"), f"{repo_id} {SAFETENSORS_INDEX}", MAX_INDEX_BYTES)
        files = sorted({str(f) for f in index["weight_map"].values()})
    except (ParseError, ValueError, TypeError, KeyError, AttributeError):
        raise HubError(f"{repo_id}: {SAFETENSORS_INDEX} has no weight_map") from None
    if len(files) > MAX_SHARDS or not all(re.fullmatch(r"[\w.-]{1,200}\.safetensors", f) for f in files):
        raise HubError(f"{repo_id}: {SAFETENSORS_INDEX} names files the planner will not fetch (more than "
                       f"{MAX_SHARDS}, or not plain .safetensors names)")
    return files


def checkpoint_params(repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
                      cache_dir: str | Path | None = None, deadline_s: float = CROSS_CHECK_DEADLINE_S) -> int | None:
    """Parameters in the repository's safetensors checkpoint (one file or shards), from the tensors' shapes; None
    when it has no safetensors checkpoint. Cached; from the cache alone in offline mode (HubError when absent)."""
    revision = revision or "main"
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    cached = cache_path(Path(cache_dir) if cache_dir else default_cache_dir(), endpoint, repo_id, revision, "params")
    if offline():
        try:
            count = json.loads(read_regular(cached, MAX_COUNT_BYTES, "cached parameter count"))["parameters"]
            if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_PARAMS:
                raise ValueError("not a count")
            return count
        except (UserFileError, ValueError, KeyError, TypeError):
            raise HubError(f"{repo_id}: offline mode (HF_HUB_OFFLINE) is on and the checkpoint's parameter count is "
                           "not in the local cache") from None
    end_s = time.monotonic() + deadline_s
    base = f"{endpoint}/{repo_id}/resolve/{revision}/"
    count = _header_params(base + SAFETENSORS_FILE, repo_id, end_s)
    if count is None:
        index = _ranged(base + SAFETENSORS_INDEX, 0, MAX_INDEX_BYTES, repo_id, end_s, MAX_INDEX_BYTES)
        if index is None:
            return None
        counts = [_header_params(base + f, repo_id, end_s) for f in _shards(index, repo_id)]
        if any(c is None for c in counts):
            raise HubError(f"{repo_id}: {SAFETENSORS_INDEX} names a shard the repository lacks")
        count = sum(counts)  # type: ignore[arg-type]
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, json.dumps({"parameters": count}).encode())
    except OSError:
        pass
    return count


def params_note(config_params: int, checkpoint: int | None) -> str:
    """The cross-check in a sentence: '' when the checkpoint agrees within PARAMS_MISMATCH (or has none)."""
    if not checkpoint:
        return ""
    off = config_params / checkpoint - 1
    if abs(off) <= PARAMS_MISMATCH:
        return ""
    return (f"the config.json's architecture counts {config_params:,} parameters, the checkpoint's own tensors "
            f"{checkpoint:,} ({off:+.1%}): quantized weights packed several to an element, extra modules (vision, "
            f"speculative-decoding heads) or fields the planner reads differently; memory and speed follow the "
            f"config's count")


def model_with_cross_check(repo_id: str, **kwargs) -> tuple[ModelProfile, str]:
    """model_from_hub, then its parameter count against the checkpoint's: (the profile with any mismatch in its
    cross_check note, a line saying what the cross-check could not do, '' when it ran)."""
    m = model_from_hub(repo_id, **kwargs)
    try:
        note = params_note(m.params, checkpoint_params(repo_id, **kwargs))
    except HubError as exc:
        return m, f"parameter cross-check skipped: {exc}"
    if note:
        m = replace(m, cross_check="; ".join(x for x in (m.cross_check, note) if x))  # type: ignore[type-var]
    return m, ""
