"""A deterministic stand-in embedder (``KB_EMBED_PROVIDER=hash``) for fast tests of the plumbing.

Each lower-cased word piece of a text (``create_user`` and ``createUser`` both give ``create``,
``user``) is hashed to a signed coordinate; the vector is the normalized sum. Texts that share words
are close, so ranking is meaningful for keyword-like queries, but it is no language model: it
exists so that storage, idempotence and serving can be tested in milliseconds without torch.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from kb_resources.embedding.port import STORE_DIM

MODEL_ID = "knowbase/hash-v1"
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _pieces(text: str) -> list[str]:
    """The lower-cased word pieces of ``text``."""
    return [w.lower() for w in _WORDS.findall(text)]


def hash_vector(text: str, dim: int = STORE_DIM) -> list[float]:
    """The unit vector of ``text`` (a fixed axis for a text without words: never the zero vector)."""
    vector = [0.0] * dim
    for piece in _pieces(text):
        digest = hashlib.blake2b(piece.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "big") % dim
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


class HashEmbedder:
    """Bag-of-word-pieces vectors through a hash: deterministic, instant, dependency-free."""

    @property
    def model_id(self) -> str:
        """Names the hashing scheme (a change to it needs a new id)."""
        return MODEL_ID

    @property
    def dim(self) -> int:
        """The store's width."""
        return STORE_DIM

    def load(self) -> None:
        """Nothing to load."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One hashed vector per text."""
        return [hash_vector(t) for t in texts]
