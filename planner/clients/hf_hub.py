"""Models by Hugging Face id ('meta-llama/Meta-Llama-3-8B'): fetch config.json with huggingface_hub and read it the
way an uploaded config.json is read (planner.inputs.models.hf_config).

huggingface_hub does the fetching, so its settings apply: HF_ENDPOINT (or `endpoint=`), HF_HUB_OFFLINE (answer from
the cache only), HF_TOKEN for gated repositories, and its cache (HF_HOME), which keeps each config for later runs.
Every failure is a HubError whose message says what happened and what to do.
"""

from __future__ import annotations

import re
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from huggingface_hub import constants as hub_constants
from huggingface_hub import hf_hub_download
from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)

from planner.base.deadline import in_background
from planner.base.safe_parse import ParseError, load_json_text
from planner.base.schema import DataFileError
from planner.inputs.models import ModelProfile, from_hf_config

# owner/name as the Hub allows them: letters, digits, '-', '_', '.'; each part at most 96 characters
REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")
MAX_CONFIG_BYTES = 200_000  # a config.json is a few kB; Mixtral's is 1 kB
FETCH_DEADLINE_S = 10.0  # the whole fetch, retries included


class HubError(ValueError):
    """A model id that could not be turned into a profile; the message says why and what to do."""


def is_repo_id(text: str) -> bool:
    """True for 'owner/name' (what a user types for a Hub model), False for paths and preset ids."""
    return bool(REPO_ID.fullmatch(str(text).strip())) and not Path(str(text)).exists()


def _download(repo_id: str, revision: str | None, endpoint: str | None, cache_dir: str | None,
              deadline_s: float) -> Path:
    offline = hub_constants.is_offline_mode()
    job = in_background(hf_hub_download, repo_id, "config.json", revision=revision, endpoint=endpoint,
                         cache_dir=cache_dir, etag_timeout=deadline_s, local_files_only=offline)
    try:  # huggingface_hub retries a refused connection for ~30 s: one total deadline instead
        return Path(job.result(timeout=deadline_s))
    except FutureTimeout:
        raise HubError(f"{repo_id}: the Hub could not be reached within {deadline_s:g} s; try again later or upload "
                       "the config.json") from None
    except LocalEntryNotFoundError:
        why = "offline mode (HF_HUB_OFFLINE) is on" if offline else "the Hub could not be reached"
        raise HubError(f"{repo_id}: {why} and its config.json is not in the local cache; connect once, or upload "
                       "the config.json") from None
    except GatedRepoError:
        raise HubError(f"{repo_id} is gated: accept its licence on the Hub and set HF_TOKEN, or upload its "
                       "config.json") from None
    except RepositoryNotFoundError:
        raise HubError(f"no model {repo_id} on the Hub (or it is private: set HF_TOKEN); check the spelling") from None
    except RevisionNotFoundError:
        raise HubError(f"{repo_id} has no revision {revision}") from None
    except EntryNotFoundError:
        raise HubError(f"{repo_id} has no config.json (an adapter or a GGUF-only repository?): use its base "
                       "model's id") from None
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        raise HubError(f"{repo_id}: the Hub answered HTTP {status}; try again later or upload the config.json") \
            from None
    except (OSError, ValueError) as exc:  # network and cache-folder errors; huggingface_hub's own messages vary
        raise HubError(f"{repo_id}: could not fetch config.json ({type(exc).__name__}); try again later or upload "
                       "it") from None


def fetch_config(repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
                 cache_dir: str | None = None, deadline_s: float = FETCH_DEADLINE_S) -> dict:
    """The repository's config.json as a mapping (cached by huggingface_hub); HubError otherwise."""
    if not REPO_ID.fullmatch(repo_id):
        raise HubError("a Hugging Face model id looks like owner/name, e.g. meta-llama/Meta-Llama-3-8B")
    path = _download(repo_id, revision, endpoint, cache_dir, deadline_s)
    data = path.read_bytes()[:MAX_CONFIG_BYTES + 1]
    try:
        config = load_json_text(data.decode("utf-8", errors="replace"), f"{repo_id} config.json", MAX_CONFIG_BYTES)
    except (ParseError, ValueError) as exc:
        raise HubError(f"{repo_id}: config.json is not usable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise HubError(f"{repo_id}: config.json is not a JSON object")
    return config


def model_from_hub(repo_id: str, **kwargs) -> ModelProfile:
    """A decoder profile from a Hub model id; HubError naming what is wrong (architectures that can't be modelled
    are refused by planner.inputs.models.hf_config, named)."""
    config = fetch_config(repo_id, **kwargs)
    try:
        return from_hf_config(config, repo_id, f"Hugging Face Hub {repo_id} config.json")
    except DataFileError as exc:
        raise HubError(f"{repo_id}: {exc.problem} (field '{exc.field}')") from None
