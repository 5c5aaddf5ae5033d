"""The local model's own forward pass (``kb_resources.embedding.minilm``) against the
sentence-transformers library it replaces: the same vectors, for texts of every length, so
vectors stored by either compare under one model id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kb_resources.embedding.local import LocalEmbedder, model_path
from kb_resources.embedding.minilm import MiniLM
from kb_resources.embedding.port import EmbedderUnavailableError

ROOT = Path(__file__).resolve().parent.parent


def _texts() -> list[str]:
    """Short, long (past the 256-token cut), empty, blank, non-ASCII and code texts, from this
    repository's own sources so that they are real code and prose."""
    sources = sorted((ROOT / "kb_assets" / "core").rglob("*.py"))[:40]
    texts: list[str] = []
    for n, path in enumerate(sources):
        lines = path.read_text(encoding="utf-8").splitlines()
        texts.append("\n".join(lines[: (1, 4, 15, 60, 200)[n % 5]]))
    return [
        *texts,
        "",
        "   \n\t",
        "how does a user sign up?",
        "émoji 🎉 ünïcode straße 東京",
        "word " * 600,
        "  padded on both sides  ",
    ]


def test_vectors_are_the_sentence_transformers_library_s() -> None:
    from sentence_transformers import SentenceTransformer

    texts = _texts()
    reference = SentenceTransformer(str(model_path()), device="cpu").encode(
        texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    ours = MiniLM(model_path()).encode(texts, batch_size=16)
    assert len(ours) == len(texts)
    for text, theirs, mine in zip(texts, reference.tolist(), ours, strict=True):
        assert len(mine) == 384
        assert max(abs(a - b) for a, b in zip(theirs, mine, strict=True)) < 1e-5, text[:40]


def test_a_vector_does_not_depend_on_its_batch() -> None:
    texts = _texts()
    model = MiniLM(model_path())
    alone = [model.encode([t], batch_size=1)[0] for t in texts[:12]]
    together = model.encode(texts[:12], batch_size=64)
    for a, b in zip(alone, together, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
        assert sum(x * x for x in a) == pytest.approx(1.0, abs=1e-5)


def test_a_model_folder_of_another_kind_is_refused_with_the_reason(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))  # read last
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config["pooling_mode_cls_token"] = True
    pooling.write_text(json.dumps(config))
    with pytest.raises(EmbedderUnavailableError, match="pooling"):
        LocalEmbedder(path=folder).embed(["text"])
    config["pooling_mode_cls_token"] = False
    pooling.write_text(json.dumps(config))
    (folder / "model.safetensors").symlink_to(model_path() / "model.safetensors")
    layers = folder / "config.json"
    layers.write_text(layers.read_text().replace('"num_hidden_layers": 6', '"num_hidden_layers": 7'))
    with pytest.raises(EmbedderUnavailableError, match=r"weights lack encoder\.layer\.6"):
        LocalEmbedder(path=folder).embed(["text"])
    (folder / "config.json").unlink()
    with pytest.raises(EmbedderUnavailableError, match=r"config\.json"):
        LocalEmbedder(path=folder).embed(["text"])
