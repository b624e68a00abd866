"""Checkpoints -> (params, config, tokenizer), for every registered family.

  load_hf(DIR)    config.json + model.safetensors (or a sharded index): the
                  family from `model_type`, names mapped by the family.
  load_gguf(PATH) a llama.cpp GGUF file: the family from
                  `general.architecture`, tensors dequantised one at a time,
                  the tokenizer rebuilt from the file's vocabulary.
  load(SPEC)      either, by spec: smollm2 | gemma3 | gguf:PATH | hf:DIR;
                  config_of(SPEC) reads its config alone (an architecture
                  to train from scratch).

Both validate the model before use (train/models/validate.py: the block
count against the tensor names, the config's fields, a memory estimate from
the config before any tensor is read, the tokenizer against the embedding,
every tensor finite), store parameters in `dtype` (float32 | bfloat16, also
the compute dtype) and check the tree against the config
(train/models/weights.py). Nothing is unpickled.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses

import numpy as np

from bottleneck.io import gguf_file, hf, zoo
from train.models import registry, validate, weights
from train.models.families import llamalike
from train.text import tokenizers, vocab


def _shapes(cfg, dtype: str, where: str) -> dict:
  """The tree the config implies, once the memory estimate made from it
  fits (before the first tensor is read)."""
  shapes = weights.expected_shapes(cfg)
  weights.check_memory(shapes, dtype, where)
  return shapes


def _build(pairs, to_tree, cfg, shapes, dtype: str, where: str,
           checked: bool = False) -> dict:
  """Parameter tree from (name, array) pairs through a family's mapper;
  every tensor checked finite as it is read (`checked`: by the reader
  already)."""
  tree, unknown, to = {}, [], weights.np_dtype(dtype)
  for name, w in pairs:
    w = np.asarray(w)
    if not checked:
      validate.finite(name, w, where)
    try:
      mapped = list(to_tree(name, w, cfg))
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


def _hf_layers(config: dict):
  """(value, field) of config.json's block count, wherever the family
  keeps it (Gemma 3 under text_config)."""
  for c in (config, config.get("text_config") or {}):
    if isinstance(c, dict):
      for key in ("num_hidden_layers", "n_layer"):
        if key in c:
          return c[key], f"config.json {key}"
  return None, None


def _hf_meta(directory: str, dtype: str):
  """(config.json, family, config) of an HF folder, validated (the block
  count against the weights' tensor names where there are weights)."""
  where = f"`hf_dir` {directory!r}"
  config = hf.read_config(directory, "hf_dir")
  if "model_type" not in config:
    raise ValueError(f"{where}: config.json has no model_type; supported: "
                     f"{', '.join(registry.hf_model_types())}.")
  family = registry.for_hf(config["model_type"], where)
  if hf.has_weights(directory):  # Else the memory estimate comes first.
    validate.layer_count(*_hf_layers(config),
                         lambda: hf.tensor_names(directory, "hf_dir"), where)
  cfg = validate.config(
      lambda: dataclasses.replace(family.config_from_hf(config, where),
                                  dtype=dtype),
      validate.HF_KEYS, "config.json ", where)
  return config, family, cfg


def _gguf_meta(path: str, dtype: str):
  """(metadata, family, config) of a GGUF file, validated."""
  where = f"`model` {path!r}"
  meta = gguf_file.Metadata(gguf_file.reader(path), path)
  family = registry.for_gguf(meta.arch, where)
  validate.layer_count(meta.integer("block_count"),
                       f"GGUF {meta.arch}.block_count", meta.tensors, where)
  cfg = validate.config(
      lambda: dataclasses.replace(family.config_from_gguf(meta, where),
                                  dtype=dtype),
      validate.GGUF_KEYS, f"GGUF {meta.arch}.", where)
  return meta, family, cfg


SPECS = "smollm2, gemma3, gguf:PATH or hf:DIR"


def path_of(spec: str) -> tuple[str, str]:
  """('gguf' | 'hf', path) of a checkpoint spec (SPECS)."""
  kind, _, rest = spec.partition(":")
  if kind in zoo.NAMES and not rest:
    return "gguf", zoo.path(kind)
  if kind in ("gguf", "hf") and rest:
    return kind, rest
  raise ValueError(f"a checkpoint must be {SPECS}; got {spec!r}.")


def config_of(spec: str, dtype: str = "float32"):
  """The model config a checkpoint's metadata describes (no tensor read):
  an architecture to train with fresh weights."""
  kind, path = path_of(spec)
  return (_gguf_meta(path, dtype) if kind == "gguf" else
          _hf_meta(path, dtype))[2]


def load(spec: str, dtype: str = "float32"):
  """(params, config, tokenizer) of a checkpoint spec (SPECS)."""
  kind, path = path_of(spec)
  if kind == "gguf":
    return load_gguf(path, dtype)
  tok = tokenizers.load("hf:" + path)
  return (*load_hf(path, dtype, tok), tok)


def load_hf(directory: str, dtype: str = "float32", tokenizer=None):
  """(params, config) of an HF folder of any registered family;
  `tokenizer`, if given, is checked against the embedding before any
  tensor is read."""
  where = f"`hf_dir` {directory!r}"
  _, family, cfg = _hf_meta(directory, dtype)
  shapes = _shapes(cfg, dtype, where)
  validate.tokenizer(tokenizer, cfg, where)
  return _build(hf.iter_tensors(directory, "hf_dir"), family.hf_tensors, cfg,
                shapes, dtype, where), cfg


def load_gguf(path: str, dtype: str = "float32"):
  """(params, config, tokenizer) of a GGUF file of any registered family."""
  where = f"`model` {path!r}"
  meta, family, cfg = _gguf_meta(path, dtype)
  shapes = _shapes(cfg, dtype, where)
  tensors = meta.reader.tensors
  # Every tensor's finiteness, read from its stored bytes on a second
  # thread while this one builds the tokenizer and dequantises (numpy
  # releases the GIL): the check costs the load almost no time.
  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    nonfinite = pool.submit(gguf_file.nonfinite_tensors, tensors)
    tok = vocab.from_gguf(meta)
    validate.tokenizer(tok, cfg, where)
    pairs = ((t.name, gguf_file.tensor(t, path, check=False))
             for t in tensors)
    params = _build(pairs, family.gguf_tensors, cfg, shapes, dtype, where,
                    checked=True)
    bad = nonfinite.result()
  if bad:
    raise gguf_file.nonfinite_error(meta.tensors[bad[0]], path)
  return params, cfg, tok
