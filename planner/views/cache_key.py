"""Keys for the page's shared caches: the content a result depends on, so that sessions asking the same share it."""

from __future__ import annotations

import hashlib
import pickle

KEY_BYTES = 16  # 128-bit digest: collisions among a cache's few hundred entries are out of reach


def content_key(*parts: object) -> str:
    """Hex digest of the parts' pickled content (plans, price keys, DataFrames, dicts): equal content gives an
    equal key. Pickling a plan takes ~10 us; Streamlit's own argument hashing walks every field and costs
    milliseconds a DataFrame, which twenty sessions rerunning at once pay twenty times."""
    return hashlib.blake2b(pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL), digest_size=KEY_BYTES).hexdigest()
