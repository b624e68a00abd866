"""What every loader of real checkpoints shares (train/models/loaders.py):
the parameter dtype, a memory estimate made from the config before any
tensor is read, and the check of the loaded tree against the config.

A model that cannot fit fails with one line naming the estimate and the
memory this machine has (a 7B model on a 24 GiB CPU box), not an OOM kill;
a tensor whose shape disagrees with the config names the config fields
that imply its shape.
"""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import checks

DTYPES = {"float32": np.float32, "bfloat16": jnp.bfloat16}
# Parameter module -> the config fields its shape follows from.
_FIELDS = {"embedding": ("vocab_size", "n_embd"),
           "lm_head": ("n_embd", "vocab_size"),
           "q": ("n_embd", "n_head", "head_dim"),
           "k": ("n_embd", "n_kv_head", "head_dim"),
           "v": ("n_embd", "n_kv_head", "head_dim"),
           "o": ("n_head", "head_dim", "n_embd"),
           "q_norm": ("head_dim",), "k_norm": ("head_dim",),
           "gate": ("n_embd", "ffn_dim"), "up": ("n_embd", "ffn_dim"),
           "down": ("ffn_dim", "n_embd"), "wpe": ("block_size", "n_embd")}


def np_dtype(dtype: str):
  if dtype not in DTYPES:
    raise ValueError(f"`dtype` must be one of {list(DTYPES)}; got {dtype!r}.")
  return DTYPES[dtype]


_LAYER = re.compile(r"^(layer|h)_(\d+)$")  # Transformer / GPT block names.


def expected_shapes(cfg) -> dict:
  """The parameter pytree the config implies, as shapes (nothing allocated).

  Traced at two blocks and the second block's shapes repeated: every block
  of these families has the same parameters, and a config that claims a
  billion blocks costs no more than one that claims two; on 4 tokens, as
  no shape depends on the input's length (16384 positions traced 64
  attention blocks for nothing)."""
  shallow = min(cfg.n_layer, 2)
  kw = {"n_layer": shallow}
  if getattr(cfg, "layer_types", ()):
    kw["layer_types"] = cfg.layer_types[:shallow]
  module = dataclasses.replace(cfg, **kw).module()
  tree = dict(jax.eval_shape(lambda: module.init(
      jax.random.key(0), jnp.zeros((1, min(4, cfg.block_size)),
                                   jnp.int32)))["params"])
  blocks = [k for k in tree if _LAYER.match(k)]
  if cfg.n_layer > shallow and blocks:
    prefix = _LAYER.match(blocks[-1]).group(1)
    last = tree[f"{prefix}_{shallow - 1}"]
    for i in range(shallow, cfg.n_layer):
      tree[f"{prefix}_{i}"] = last
  return tree


def param_count(shapes) -> int:
  return int(sum(np.prod(s.shape) for s in jax.tree.leaves(shapes)))


def check_memory(shapes, dtype: str, where: str) -> int:
  """Fails before loading when the parameters cannot fit: each is held once
  on the host while converting and once as a device array (2 x count x
  bytes, plus the largest tensor in float32 while it is dequantised).
  Returns the estimate in bytes."""
  count = param_count(shapes)
  largest = max(int(np.prod(s.shape)) for s in jax.tree.leaves(shapes))
  need = 2 * count * np.dtype(np_dtype(dtype)).itemsize + 4 * largest
  checks.fits_in_memory(
      need, f"{where}: {count / 1e9:.2f}B parameters in {dtype}",
      "Use dtype=bfloat16, a machine with more memory, or a GPU/TPU host.")
  return need


def _fields(cfg, name: str) -> str:
  module = name.split("/")[-2] if "/" in name else name
  module = "embedding" if name.endswith("embedding") else module
  keys = _FIELDS.get(module, ("n_embd",))
  return ", ".join(f"{k}={getattr(cfg, k)}" for k in keys if hasattr(cfg, k))


def check_tree(params: dict, expected: dict, cfg, where: str) -> None:
  """Every parameter the config implies is present with its shape, and no
  tensor is left over; errors name the config fields behind a shape."""
  got = {"/".join(k.key for k in key): v
         for key, v in jax.tree_util.tree_leaves_with_path(params)}
  want = {"/".join(k.key for k in key): s
          for key, s in jax.tree_util.tree_leaves_with_path(expected)}
  extra = sorted(set(got) - set(want))
  if extra:
    layers = sorted({int(n.split("/")[0][6:]) for n in extra
                     if n.startswith("layer_")})
    hint = (f" (layers up to {layers[-1]}: the config says n_layer="
            f"{cfg.n_layer})" if layers else "")
    raise ValueError(f"{where}: the weights hold tensors the config does not "
                     f"imply: {extra[:4]}{hint}.")
  for name, spec in want.items():
    if name not in got:
      raise ValueError(f"{where} lacks the tensor for {name} (config: "
                       f"{_fields(cfg, name)}, n_layer={cfg.n_layer}).")
    if tuple(got[name].shape) != tuple(spec.shape):
      raise ValueError(f"{where}: {name} has shape {tuple(got[name].shape)}; "
                       f"the config implies {tuple(spec.shape)} from "
                       f"{_fields(cfg, name)}.")
