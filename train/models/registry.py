"""Model families by HF `model_type` and GGUF `general.architecture`.

Adding a family: one module in train/models/families/ meeting
train.models.protocol.Family, and one entry in FAMILIES.
"""

from __future__ import annotations

from train.models.families import gemma, gpt2, llama, neox, qwen

FAMILIES = (llama, qwen, gemma, neox, gpt2)


def hf_model_types() -> tuple[str, ...]:
  return tuple(t for f in FAMILIES for t in f.HF_MODEL_TYPES)


def gguf_archs() -> tuple[str, ...]:
  return tuple(a for f in FAMILIES for a in f.GGUF_ARCHS)


def for_hf(model_type: str, where: str):
  """The family of an HF config.json's model_type."""
  for family in FAMILIES:
    if model_type in family.HF_MODEL_TYPES:
      return family
  raise ValueError(f"{where}: model_type={model_type!r} is not supported; "
                   f"supported: {', '.join(hf_model_types())}.")


def for_gguf(arch: str, where: str):
  """The family of a GGUF file's general.architecture."""
  for family in FAMILIES:
    if arch in family.GGUF_ARCHS:
      return family
  raise ValueError(f"{where}: general.architecture={arch!r} is not "
                   f"supported; supported: {', '.join(gguf_archs())}.")
