"""The interfaces a model family must meet, written down.

`ModelConfig`: what the probes, the sampler, the forward pass and the
comparison read of a model (train/models/gpt.GPTConfig and
train/models/transformer.TransformerConfig implement it). The module it
builds has `hidden(idx_bt) -> H [B, T, D]` (float32, the head's input) and
`head(H) -> logits [.., V]` (float32), and `__call__ = head . hidden`.

`Family`: how a checkpoint of one architecture becomes (config, parameter
tree). A family is a module of train/models/families/ with these names; the
registry (train/models/registry.py) maps HF `model_type`s and GGUF
`general.architecture`s to it. Adding a family is one module there and one
line in `registry.FAMILIES`.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol


class ModelConfig(Protocol):
  vocab_size: int  # V: rows of the head.
  n_embd: int  # D: the head's input width.
  n_layer: int
  block_size: int  # Longest window fed at once.
  dtype: str  # Parameter / compute dtype: float32 | bfloat16.

  @property
  def compute_dtype(self) -> Any:  # jnp dtype of the products (`dtype`).
    ...

  @property
  def tied(self) -> bool:  # Head = input embedding.
    ...

  @property
  def head(self) -> str:  # 'tied' | 'untied' | 'lowrank'.
    ...

  @property
  def logit_softcap(self) -> float:  # c in c tanh(z / c); 0 = none.
    ...

  @property
  def context_length(self) -> int:  # Longest context it was trained on.
    ...

  @property
  def family(self) -> str:  # Registry name.
    ...

  def module(self) -> Any:  # The flax module (hidden / head / __call__).
    ...

  def init_params(self, seed: int = 0) -> dict:
    ...

  def head_weights(self, params) -> tuple[Any, Any]:  # (W [V, D], b or None)
    ...

  def input_embeddings(self, params) -> Any:  # [V, D]
    ...

  def head_linear(self, params) -> tuple[Any, Any, Any, float]:
    """(project or None, K [D', V], b [V] or None, soft-cap): the head as
    logits = cap tanh((project(h) K + b) / cap) (training's loss)."""
    ...


class Family(Protocol):
  """A module of train/models/families/ (module-level names)."""
  NAME: str
  HF_MODEL_TYPES: tuple[str, ...]  # config.json model_type values.
  GGUF_ARCHS: tuple[str, ...]  # GGUF general.architecture values.

  def config_from_hf(self, config: dict, where: str) -> ModelConfig:
    """config.json (a dict) -> config; errors name `where` and the field."""

  def config_from_gguf(self, meta, where: str) -> ModelConfig:
    """GGUF metadata (io.gguf_file.Metadata) -> config."""

  def hf_tensors(self, name: str, w, cfg) -> Iterator[tuple[str, Any]]:
    """One HF tensor -> (parameter path 'a/b/c', array) pairs; none to skip
    buffers the model does not use."""

  def gguf_tensors(self, name: str, w, cfg) -> Iterator[tuple[str, Any]]:
    """One dequantised GGUF tensor -> (parameter path, array) pairs."""
