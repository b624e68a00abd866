"""GGUF files (llama.cpp): metadata and dequantised tensors, as numpy.

`gguf.GGUFReader` reads the file (memory-mapped); `tensor` dequantises one
tensor to float32 with `gguf.quants.dequantize` (F32, F16, BF16, Q8_0, Q4_0,
Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K). GGUF lists shapes innermost
first, so a weight comes back as [out, in] (y = x W^T). `Metadata` reads
an architecture's keys with errors that name the file and the key. The
offline models (SmolLM2, Gemma 3) are found by bottleneck/io/zoo.py.
"""

from __future__ import annotations

import os

import numpy as np

SUPPORTED = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
             "Q4_K", "Q5_K", "Q6_K", "Q8_K")


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


_REQUIRED = object()


class Metadata:
  """Metadata of one GGUF file: `get('block_count')` reads
  '<architecture>.block_count'; `raw(key)` reads a key as written."""

  def __init__(self, gguf_reader, path: str):
    self.reader, self.path = gguf_reader, path
    self.arch = field(gguf_reader, "general.architecture", path)
    self.tensors = {t.name: t for t in gguf_reader.tensors}

  def raw(self, key: str, default=_REQUIRED):
    if key in self.reader.fields:
      return self.reader.fields[key].contents()
    if default is _REQUIRED:
      raise ValueError(f"`model` {self.path!r}: GGUF metadata lacks "
                       f"{key!r}.")
    return default

  def get(self, key: str, default=_REQUIRED):
    return self.raw(f"{self.arch}.{key}", default)

  def tensor(self, name: str) -> np.ndarray:
    return tensor(self.tensors[name], self.path)


_DEQUANT_ROWS = 8192  # Rows dequantised at a time by `tensor`.


def tensor(t, path: str) -> np.ndarray:
  """One tensor, dequantised to float32 in numpy's (outer-first) shape."""
  import gguf  # pylint: disable=g-import-not-at-top
  kind = t.tensor_type.name
  if kind not in SUPPORTED:
    raise ValueError(f"`model` {path!r}: tensor {t.name} has quantisation "
                     f"type {kind}, not supported ({', '.join(SUPPORTED)}).")
  shape = tuple(int(s) for s in t.shape[::-1])
  row_len, n_rows = shape[-1], int(np.prod(shape[:-1], dtype=np.int64))
  rows = np.asarray(t.data).reshape(n_rows, -1)  # Elements or block bytes.
  out = np.empty((n_rows, row_len), np.float32)
  for i in range(0, n_rows, _DEQUANT_ROWS):  # By row blocks: dequantize's
    # temporaries are several times its output (a 262144 x 640 Q6_K
    # embedding: +1.5 GB at once).
    out[i:i + _DEQUANT_ROWS] = np.asarray(gguf.quants.dequantize(
        rows[i:i + _DEQUANT_ROWS], t.tensor_type), np.float32).reshape(
            -1, row_len)
  return out.reshape(shape)


def head_matrix(path: str, arg: str = "matrix") -> tuple[np.ndarray, str]:
  """The output projection [V, D]: output.weight, else (tied) token_embd."""
  by_name = {t.name: t for t in reader(path, arg).tensors}
  for name in ("output.weight", "token_embd.weight"):
    if name in by_name:
      return tensor(by_name[name], path), name
  raise ValueError(f"`{arg}` {path!r} has neither output.weight nor "
                   "token_embd.weight.")
