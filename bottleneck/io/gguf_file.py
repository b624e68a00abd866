"""GGUF files (llama.cpp): metadata and dequantised tensors, as numpy.

`Reader` parses the header (memory-mapped; the gguf package's own
`GGUFReader` builds numpy views for every element of every metadata array,
which for Gemma 3's 262144-token vocabulary is about 50 times slower);
`tensor` dequantises one tensor to float32 with `gguf.quants.dequantize`
(F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K). GGUF lists shapes innermost
first, so a weight comes back as [out, in] (y = x W^T). `Metadata` reads
an architecture's keys with errors that name the file and the key. The
offline models (SmolLM2, Gemma 3) are found by bottleneck/io/zoo.py.
"""

from __future__ import annotations

import os
import struct
from typing import Any, NamedTuple

import numpy as np

from bottleneck import checks

SUPPORTED = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
             "Q4_K", "Q5_K", "Q6_K", "Q8_K")


def reader(path: str, arg: str = "model") -> "Reader":
  if not os.path.isfile(path):
    raise ValueError(f"`{arg}` GGUF file not found: {path!r}.")
  try:
    return Reader(path)
  except (ValueError, IndexError, struct.error, UnicodeDecodeError) as e:
    raise ValueError(f"`{arg}` {path!r} is not a readable GGUF file: "
                     f"{e}.") from None


class Field(NamedTuple):
  """One metadata value (`contents()`: a Python scalar, str or flat list,
  as `gguf.ReaderField.contents()` gives)."""
  name: str
  value: Any

  def contents(self):
    return self.value


class Tensor(NamedTuple):
  """One tensor's header and its bytes (as `gguf.ReaderTensor`: `shape`
  innermost first; `data` elements for float types, block bytes for
  quantised ones)."""
  name: str
  tensor_type: Any  # gguf.GGMLQuantizationType
  shape: np.ndarray
  data: np.ndarray


# GGUF value types -> little-endian numpy scalars (STRING = 8, ARRAY = 9).
_SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4",
            6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}
_ELEMENTS = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I8": "<i1",
             "I16": "<i2", "I32": "<i4", "I64": "<i8"}


class Reader:
  """A little-endian GGUF file, version 2 or 3: `fields` (key -> Field) and
  `tensors` (Tensor list, data memory-mapped)."""

  def __init__(self, path: str):
    from gguf import constants  # pylint: disable=g-import-not-at-top
    self.data = np.memmap(path, np.uint8, mode="r")
    self._buf = memoryview(self.data)
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", self._buf)
    if magic != b"GGUF":
      raise ValueError("GGUF magic invalid")
    if version not in (2, 3):
      raise ValueError(f"GGUF version {version} (big-endian or unknown) is "
                       "not supported; versions 2 and 3 are")
    offs = 24
    self.fields = {}
    for _ in range(n_kv):
      key, offs = self._string(offs)
      (kind,), offs = struct.unpack_from("<I", self._buf, offs), offs + 4
      value, offs = self._value(kind, offs)
      self.fields[key] = Field(key, value)
    infos = []
    for _ in range(n_tensors):
      name, offs = self._string(offs)
      (n_dims,), offs = struct.unpack_from("<I", self._buf, offs), offs + 4
      dims = np.frombuffer(self._buf, "<u8", n_dims, offs)
      kind, start = struct.unpack_from("<IQ", self._buf, offs + 8 * n_dims)
      infos.append((name, dims, constants.GGMLQuantizationType(kind), start))
      offs += 8 * n_dims + 12
    align = self.fields.get("general.alignment", Field("", 32)).value
    if isinstance(align, bool) or not isinstance(align, int) or (
        align <= 0 or align & (align - 1)):
      raise ValueError(f"general.alignment = {align!r} is not a power of "
                       "two")
    base = -(-offs // align) * align
    self.tensors = []
    for name, dims, kind, start in infos:
      n = int(np.prod(dims, dtype=np.int64))
      block, size = constants.GGML_QUANT_SIZES[kind]
      at = base + int(start)
      elem = _ELEMENTS.get(kind.name)
      if elem is not None:
        data = self.data[at:at + n * size // block].view(elem)
        shape = tuple(int(d) for d in dims[::-1])
      else:  # Quantised: rows of block bytes.
        data = self.data[at:at + n * size // block]
        shape = tuple(int(d) for d in dims[:0:-1]) + (
            int(dims[0]) * size // block,)
      if data.nbytes != n * size // block:
        raise ValueError(f"tensor {name} runs past the end of the file")
      self.tensors.append(Tensor(name, kind, dims, data.reshape(shape)))

  def _string(self, offs: int):
    (n,) = struct.unpack_from("<Q", self._buf, offs)
    end = offs + 8 + n
    if end > len(self._buf):
      raise ValueError("a string runs past the end of the file")
    return str(self._buf[offs + 8:end], "utf-8"), end

  def _value(self, kind: int, offs: int):
    if kind in _SCALARS:
      value = np.frombuffer(self._buf, _SCALARS[kind], 1, offs)
      return value.item(), offs + value.itemsize
    if kind == 8:
      return self._string(offs)
    if kind != 9:
      raise ValueError(f"unknown metadata value type {kind}")
    inner, n = struct.unpack_from("<IQ", self._buf, offs)
    offs += 12
    if inner in _SCALARS:  # One view for the whole array.
      values = np.frombuffer(self._buf, _SCALARS[inner], n, offs)
      return values.tolist(), offs + values.nbytes
    out = []
    for _ in range(n):  # Strings (or nested arrays: flattened, as gguf).
      value, offs = self._value(inner, offs)
      out += value if inner == 9 else [value]
    return out, offs


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

  def integer(self, key: str, default=_REQUIRED, lo: int = 1) -> int:
    """'<architecture>.key' as an integer >= lo; an error naming the file,
    the key and the value otherwise."""
    value = self.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
      raise ValueError(f"`model` {self.path!r}: GGUF {self.arch}.{key} = "
                       f"{value!r} must be an integer >= {lo}.")
    return value

  def number(self, key: str, default=_REQUIRED) -> float:
    """'<architecture>.key' as a float (its range is the config's check)."""
    value = self.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
      raise ValueError(f"`model` {self.path!r}: GGUF {self.arch}.{key} = "
                       f"{value!r} must be a number.")
    return float(value)

  def raw_list(self, key: str, kind=str, default=_REQUIRED) -> list:
    """A metadata array whose entries are all `kind` (str, int or float);
    an error naming the file and the key otherwise."""
    value = self.raw(key, default)
    if value is default and default is not _REQUIRED:
      return value
    kinds = (int, float) if kind is float else kind
    if not isinstance(value, list):
      got = f"a {type(value).__name__}"
    elif not all(isinstance(v, kinds) and not isinstance(v, bool)
                 for v in value):
      got = "an array of other types"
    else:
      return value
    raise ValueError(f"`model` {self.path!r}: GGUF {key} must be an array "
                     f"of {kind.__name__}; got {got}.")

  def token_id(self, key: str, n_tokens: int, default=_REQUIRED):
    """A special token's id (e.g. tokenizer.ggml.bos_token_id) in [0,
    n_tokens); None if absent and the default is None."""
    value = self.raw(key, default)
    if value is None:
      return None
    if isinstance(value, bool) or not isinstance(value, int) or not (
        0 <= value < n_tokens):
      raise ValueError(f"`model` {self.path!r}: GGUF {key} = {value!r} must "
                       f"be a token id in [0, {n_tokens - 1}] (the "
                       f"vocabulary has {n_tokens} tokens).")
    return value

  def tensor(self, name: str) -> np.ndarray:
    return tensor(self.tensors[name], self.path)


_DEQUANT_ROWS = 8192  # Rows dequantised at a time by `tensor`.
# Byte offsets of each quantisation block's float16 scales (llama.cpp's
# block layouts; gguf.quants reads them the same way). A block's values are
# finite iff these are: the rest are small integers (Q8_K's float32 scale
# times int8 can overflow, so its output is checked instead).
F16_SCALES = {"Q8_0": (0,), "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,),
              "Q5_1": (0, 2), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}


# Exponent bits of the float types a GGUF stores elements in: a value is
# inf or NaN iff all of them are set.
_EXPONENT = {"F16": ("<u2", 0x7C00), "BF16": ("<u2", 0x7F80)}


def _scales_finite(raw: np.ndarray, kind: str, block: int) -> bool:
  """Whether every float16 scale of these `block`-byte quantisation
  blocks is finite: one strided read per block of its scales (both at once
  where there are two, d and m)."""
  flat = np.asarray(raw).reshape(-1)
  n, offsets = flat.size // block, F16_SCALES[kind]
  if len(offsets) == 2:  # d, m adjacent: one 32-bit read.
    pair = np.ndarray((n,), "<u4", flat, offsets[0], (block,))
    bad = (pair & 0x7C00) == 0x7C00
    bad |= (pair & 0x7C000000) == 0x7C000000
    return not bad.any()
  scale = np.ndarray((n,), "<u2", flat, offsets[0], (block,))
  return not ((scale & 0x7C00) == 0x7C00).any()


def finite(t) -> bool:
  """Whether a tensor's dequantised values are all finite, read from its
  stored bytes: a quantised tensor's float16 scales (2-4 bytes of every
  18-210-byte block; the rest are small integers), a float tensor's
  values. Only Q8_K (a float32 scale times int8 can overflow) is
  dequantised for it."""
  import gguf  # pylint: disable=g-import-not-at-top
  kind = t.tensor_type.name
  data = np.asarray(t.data)
  if kind in F16_SCALES:
    return _scales_finite(data, kind,
                          gguf.constants.GGML_QUANT_SIZES[t.tensor_type][1])
  if kind in _EXPONENT:
    dtype, mask = _EXPONENT[kind]
    bits = data.reshape(-1).view(dtype)
    return not ((bits & mask) == mask).any()
  if data.dtype.kind == "f":
    return not checks.nonfinite_count(data)
  return not checks.nonfinite_count(tensor(t, "", check=False))


def nonfinite_tensors(tensors) -> list[str]:
  """Names of the tensors (Reader.tensors) holding a NaN or inf."""
  return [t.name for t in tensors if not finite(t)]


def nonfinite_error(t, path: str) -> ValueError:
  out = tensor(t, path, check=False)
  return ValueError(f"`model` {path!r}: tensor {t.name} holds "
                    f"{checks.nonfinite_count(out)} NaN/inf value(s) of "
                    f"{out.size}.")


def tensor(t, path: str, check: bool = True) -> np.ndarray:
  """One tensor, dequantised to float32 in numpy's (outer-first) shape; with
  `check`, one holding NaN or inf is an error naming the file and the
  tensor (`finite`, read from the stored bytes first)."""
  import gguf  # pylint: disable=g-import-not-at-top
  kind = t.tensor_type.name
  if kind not in SUPPORTED:
    raise ValueError(f"`model` {path!r}: tensor {t.name} has quantisation "
                     f"type {kind}, not supported ({', '.join(SUPPORTED)}).")
  if check and not finite(t):
    raise nonfinite_error(t, path)
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


# Q8_0: each block of 32 values is a float16 scale d and 32 int8 q, value
# d q. llama.cpp rounds x / d_32 to the nearest q with d_32 = max|x| / 127
# in float32 and then stores d_32 rounded to float16, so each stored value
# is within d / 2 + 127 |d - d_32| <= (1/2 + 127 / 2048) d of the original
# (float16's relative rounding: at most 2^-11).
Q8_0_ERROR_PER_SCALE = 0.5 + 127 / 2048


def _q8_0_scales(t) -> np.ndarray | None:
  """A Q8_0 matrix tensor's float16 block scales d_b as float64 [n_rows,
  blocks] (one strided read of its 34-byte blocks); None for other storage
  types."""
  if t.tensor_type.name != "Q8_0":
    return None
  n_rows = int(np.prod(t.shape[1:], dtype=np.int64))
  raw = np.asarray(t.data).reshape(n_rows, -1)
  return np.ndarray((n_rows, raw.shape[1] // 34), "<f2", raw, 0,
                    (raw.strides[0], 34)).astype(np.float64)


def row_error_bounds(t) -> np.ndarray | None:
  """For a Q8_0 matrix tensor, per row [n_rows] float64: a bound on the
  Euclidean distance between the stored row and the row it quantised
  (sqrt(32 sum_b (c d_b)^2), c = Q8_0_ERROR_PER_SCALE, over the row's
  blocks b); None for other storage types."""
  scales = _q8_0_scales(t)
  if scales is None:
    return None
  return Q8_0_ERROR_PER_SCALE * np.sqrt(32.0 * np.sum(scales**2, axis=1))


def row_norm_noise(t, w_vxd) -> np.ndarray | None:
  """For a Q8_0 matrix tensor and its dequantised rows w [n_rows, D]: per
  row, the standard deviation that rounding to the nearest q adds to the
  row's norm, relative to the norm, to first order: errors uniform on
  +-d_b / 2 move |w| by sum_i w_i e_i / |w|, variance sum_b d_b^2 / 12
  sum_(i in b) w_i^2 / |w|^2. None for other storage types."""
  scales = _q8_0_scales(t)
  if scales is None:
    return None
  n_rows, blocks = scales.shape
  out = np.empty(n_rows)
  for i in range(0, n_rows, _DEQUANT_ROWS):
    w = np.asarray(w_vxd[i:i + _DEQUANT_ROWS], np.float64)
    per_block = (w.reshape(len(w), blocks, 32) ** 2).sum(-1)
    sq = per_block.sum(1)
    var = (scales[i:i + len(w)] ** 2 / 12 * per_block).sum(1) / sq
    out[i:i + len(w)] = np.sqrt(var / sq)
  return out


def head_tensor(path: str, arg: str = "matrix") -> Tensor:
  """The output projection's tensor as stored: output.weight, else the
  tied token_embd.weight."""
  by_name = {t.name: t for t in reader(path, arg).tensors}
  for name in ("output.weight", "token_embd.weight"):
    if name in by_name:
      return by_name[name]
  raise ValueError(f"`{arg}` {path!r} has neither output.weight nor "
                   "token_embd.weight.")


def head_matrix(path: str, arg: str = "matrix") -> tuple[np.ndarray, str]:
  """The output projection [V, D] (`head_tensor`, dequantised) and its
  tensor's name."""
  t = head_tensor(path, arg)
  return tensor(t, path), t.name
