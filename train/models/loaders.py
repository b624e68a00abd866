"""Checkpoints -> (params, config, tokenizer), for every registered family.

  load_hf(DIR)    config.json + model.safetensors (or a sharded index): the
                  family from `model_type`, names mapped by the family.
  load_gguf(PATH) a llama.cpp GGUF file: the family from
                  `general.architecture`, tensors dequantised one at a time,
                  the tokenizer rebuilt from the file's vocabulary.

Both estimate the memory from the config before reading any tensor, store
parameters in `dtype` (float32 | bfloat16, also the compute dtype) and
check the tree against the config (train/models/weights.py). Nothing is
unpickled.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from bottleneck.io import gguf_file, hf
from train.models import registry, weights
from train.models.families import llamalike
from train.text import vocab


def _build(pairs, to_tree, cfg, dtype: str, where: str) -> dict:
  """Parameter tree from (name, array) pairs through a family's mapper."""
  shapes = weights.expected_shapes(cfg)
  weights.check_memory(shapes, dtype, where)  # Before the first tensor.
  tree, unknown, to = {}, [], weights.np_dtype(dtype)
  for name, w in pairs:
    try:
      mapped = list(to_tree(name, np.asarray(w), cfg))
    except llamalike.UnknownTensor:
      unknown.append(name)
      continue
    for path, arr in mapped:
      node = tree
      *parents, last = path.split("/")
      for key in parents:
        node = node.setdefault(key, {})
      node[last] = np.asarray(arr, to)
  if unknown:
    raise ValueError(f"{where}: tensor(s) {unknown[:4]} have no place in a "
                     f"{cfg.family} model (wrong model_type or "
                     "architecture for these weights?).")
  weights.check_tree(tree, shapes, cfg, where)
  return {"params": tree}


def load_hf(directory: str, dtype: str = "float32"):
  """(params, config) of an HF folder of any registered family."""
  where = f"`hf_dir` {directory!r}"
  config = hf.read_config(directory, "hf_dir")
  family = registry.for_hf(config.get("model_type", "gpt2"), where)
  cfg = dataclasses.replace(family.config_from_hf(config, where), dtype=dtype)
  weights.check_memory(weights.expected_shapes(cfg), dtype, where)
  return _build(hf.iter_tensors(directory, "hf_dir"), family.hf_tensors, cfg,
                dtype, where), cfg


def load_gguf(path: str, dtype: str = "float32"):
  """(params, config, tokenizer) of a GGUF file of any registered family."""
  where = f"`model` {path!r}"
  meta = gguf_file.Metadata(gguf_file.reader(path), path)
  family = registry.for_gguf(meta.arch, where)
  cfg = dataclasses.replace(family.config_from_gguf(meta, where), dtype=dtype)
  pairs = ((t.name, gguf_file.tensor(t, path)) for t in meta.reader.tensors)
  params = _build(pairs, family.gguf_tensors, cfg, dtype, where)
  return params, cfg, gguf_tokenizer(meta)


def gguf_tokenizer(meta):
  """The tokenizer the file describes: byte-level BPE ('gpt2') or
  SentencePiece-style ('llama'), with its BOS convention."""
  kind = meta.raw("tokenizer.ggml.model")
  name = f"gguf:{os.path.basename(meta.path)}"
  tokens = meta.raw("tokenizer.ggml.tokens")
  eos = int(meta.raw("tokenizer.ggml.eos_token_id", 0))
  bos = meta.raw("tokenizer.ggml.bos_token_id", None)
  add_bos = bool(meta.raw("tokenizer.ggml.add_bos_token", kind == "llama"))
  bos = int(bos) if add_bos and bos is not None else None
  if kind == "gpt2":
    return vocab.bpe_tokenizer(name, tokens,
                               meta.raw("tokenizer.ggml.merges"), eos, bos,
                               meta.raw("tokenizer.ggml.pre", "default"),
                               f"`model` {meta.path!r}")
  if kind == "llama":
    unk = meta.raw("tokenizer.ggml.unknown_token_id", None)
    return vocab.spm_tokenizer(
        name, tokens, meta.raw("tokenizer.ggml.scores"),
        meta.raw("tokenizer.ggml.token_type"), eos, bos,
        None if unk is None else int(unk),
        bool(meta.raw("tokenizer.ggml.add_space_prefix", True)))
  raise ValueError(f"`model` {meta.path!r}: tokenizer.ggml.model={kind!r} is "
                   "not supported (gpt2: byte-level BPE; llama: "
                   "SentencePiece-style).")
