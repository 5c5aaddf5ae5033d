"""The local model's forward pass in plain torch: a BERT encoder, mean pooling, unit length.

``all-MiniLM-L6-v2`` is a sentence-transformers pipeline of three modules (``modules.json``): a
BERT ``Transformer`` that truncates at ``max_seq_length`` (256), mean ``Pooling`` over the
attention mask, ``Normalize``. Importing ``sentence_transformers`` to run it imports
``transformers`` and scikit-learn as well: ~10 s of a 2-core machine's start-up before the first
vector (stop 36: 10.8 s with the model's load), which every ``kb embed`` process and the MCP
server's first semantic search paid, against ~2.3 s for torch, the Rust tokenizer and the
weights. This module runs the same three steps from the packaged files with ``torch`` and
``tokenizers`` alone. Its vectors are the library's to float32 rounding (largest difference
~2e-7 over Django snippets of every length, ``tests/test_minilm.py``), so vectors stored by
either are compared with each other under the same model id.

Only what this model uses is supported, and a model folder laid out otherwise is refused with
the reason (``UnsupportedModelError``) instead of being run wrongly: absolute positions, the
exact (erf) GELU, mean pooling, a ``Normalize`` module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


class UnsupportedModelError(ValueError):
    """The model folder is not a BERT mean-pooling, normalizing sentence encoder."""


@dataclass(frozen=True, slots=True)
class Shape:
    """What the forward pass needs from the model's configuration files."""

    width: int
    heads: int
    layers: int
    eps: float
    max_tokens: int

    @classmethod
    def read(cls, folder: Path) -> Shape:
        """The shape of the model in ``folder``, or ``UnsupportedModelError`` saying what differs."""
        config = _json(folder / "config.json")
        modules = [m.get("type", "") for m in _json(folder / "modules.json")]
        pooling = _json(folder / "1_Pooling" / "config.json")
        pooled_by = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True)
        wanted = {
            "model_type": ("bert", config.get("model_type")),
            "hidden_act": ("gelu", config.get("hidden_act")),
            "position_embedding_type": ("absolute", config.get("position_embedding_type", "absolute")),
            "pooling": (["pooling_mode_mean_tokens"], pooled_by),
            "Normalize module": (True, any(m.endswith(".Normalize") for m in modules)),
        }
        for name, (expected, found) in wanted.items():
            if found != expected:
                raise UnsupportedModelError(f"{folder}: {name} is {found!r}, this encoder runs {expected!r}")
        sentence = _json(folder / "sentence_bert_config.json")
        return cls(
            width=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            layers=int(config["num_hidden_layers"]),
            eps=float(config["layer_norm_eps"]),
            max_tokens=min(
                int(sentence.get("max_seq_length", config["max_position_embeddings"])),
                int(config["max_position_embeddings"]),
            ),
        )


def _weight_names(shape: Shape) -> set[str]:
    """Every weight the forward pass reads, by its name in a ``BertModel``'s state dict."""
    tables = {f"embeddings.{n}_embeddings" for n in ("word", "position", "token_type")}
    parts = {"embeddings.LayerNorm"}
    for layer in range(shape.layers):
        p = f"encoder.layer.{layer}"
        parts |= {f"{p}.attention.self.{n}" for n in ("query", "key", "value")}
        parts |= {f"{p}.{n}" for n in ("attention.output.dense", "attention.output.LayerNorm")}
        parts |= {f"{p}.{n}" for n in ("intermediate.dense", "output.dense", "output.LayerNorm")}
    return {f"{n}.weight" for n in tables | parts} | {f"{n}.bias" for n in parts}


def _json(path: Path) -> Any:
    """A configuration file's content; a missing or broken one makes the folder unsupported."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UnsupportedModelError(f"cannot read {path}: {err}") from None


class MiniLM:
    """The encoder of one model folder, weights in memory; ``encode`` is not thread-safe (the
    caller, ``LocalEmbedder``, holds a lock)."""

    def __init__(self, folder: Path) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self.shape = Shape.read(folder)
        self._weights: dict[str, torch.Tensor] = load_file(str(folder / "model.safetensors"))
        missing = sorted(_weight_names(self.shape) - self._weights.keys())
        if missing:
            raise UnsupportedModelError(f"{folder}: the weights lack {', '.join(missing[:3])}")
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()  # padded per batch, to its longest text
        self._tokenizer.enable_truncation(self.shape.max_tokens)

    def encode(self, texts: Sequence[str], batch_size: int) -> list[list[float]]:
        """Unit-length vectors of ``texts``, in order. Texts are stripped (as the library does) and
        batched longest first, so a batch pads little; the order of batching does not change a
        vector beyond float rounding (padding is masked)."""
        import torch

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            encoded = self._tokenizer.encode_batch([texts[i].strip() for i in batch])
            longest = max(len(e.ids) for e in encoded)
            ids = torch.zeros((len(batch), longest), dtype=torch.long)
            mask = torch.zeros((len(batch), longest), dtype=torch.long)
            for row, e in enumerate(encoded):
                ids[row, : len(e.ids)] = torch.tensor(e.ids, dtype=torch.long)
                mask[row, : len(e.ids)] = 1
            for i, vector in zip(batch, self._forward(ids, mask).tolist(), strict=True):
                vectors[i] = vector
        return vectors

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """BERT's encoder (post-LayerNorm blocks), then the mean of the unmasked tokens, unit length."""
        import torch

        w, s = self._weights, self.shape
        f = torch.nn.functional
        rows, length = ids.shape
        head = s.width // s.heads

        def norm(x: torch.Tensor, name: str) -> torch.Tensor:
            return f.layer_norm(x, (s.width,), w[f"{name}.weight"], w[f"{name}.bias"], s.eps)

        def dense(x: torch.Tensor, name: str) -> torch.Tensor:
            return f.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

        def split(x: torch.Tensor) -> torch.Tensor:
            return x.view(rows, length, s.heads, head).transpose(1, 2)

        with torch.inference_mode():
            x = (
                w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][:length]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
            x = norm(x, "embeddings.LayerNorm")
            keys = mask[:, None, None, :].bool()
            for layer in range(s.layers):
                p = f"encoder.layer.{layer}"
                q, k, v = (split(dense(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value"))
                mixed = f.scaled_dot_product_attention(q, k, v, attn_mask=keys)
                mixed = mixed.transpose(1, 2).reshape(rows, length, s.width)
                x = norm(dense(mixed, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
                inner = f.gelu(dense(x, f"{p}.intermediate.dense"))
                x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
            weights = mask[:, :, None].to(x.dtype)
            pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            unit: torch.Tensor = f.normalize(pooled, p=2.0, dim=1)
            return unit
