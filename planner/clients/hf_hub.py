"""Models by Hugging Face id ('meta-llama/Meta-Llama-3-8B'): fetch config.json over the Hub's resolve API and read
it the way an uploaded config.json is read (planner.inputs.models.hf_config).

The Hub's own settings apply: HF_ENDPOINT (or `endpoint=`), HF_HUB_OFFLINE (answer from the cache only), HF_TOKEN
(or the token file `huggingface-cli login` writes) for gated repositories, and HF_HOME / HF_HUB_CACHE for where the
cache lives. The planner, not the server, names every file it writes: a config is cached under a hash of endpoint,
id and revision, written atomically, and its size is capped before and while the body is read. Every failure is a
HubError whose message says what happened and what to do, in our words (a server's text is never shown).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

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


def cache_path(cache_dir: Path, endpoint: str, repo_id: str, revision: str) -> Path:
    """Where a config is kept: named by a hash the planner computes, never by anything the server sends."""
    key = hashlib.sha256(f"{endpoint}\0{repo_id}\0{revision}".encode()).hexdigest()
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
