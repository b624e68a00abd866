"""What the loaders of real checkpoints share (train/hf_llama, neox,
gguf_llama): the parameter dtype, a memory estimate made from the config
before any tensor is read, and the shape check after.

A model that cannot fit fails with one line naming the estimate and the
memory this machine has (a 7B model on a 24 GiB CPU box), not an OOM kill.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import checks

DTYPES = {"float32": np.float32, "bfloat16": jnp.bfloat16}


def np_dtype(dtype: str):
  if dtype not in DTYPES:
    raise ValueError(f"`dtype` must be one of {list(DTYPES)}; got {dtype!r}.")
  return DTYPES[dtype]


def expected_shapes(init_params, cfg) -> dict:
  """The parameter pytree the config implies, as shapes (nothing allocated)."""
  return jax.eval_shape(lambda: init_params(cfg))["params"]


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


def check_shapes(params: dict, expected: dict, where: str) -> None:
  """Every parameter of `expected` exists in `params` with its shape;
  `where` names the file or folder in the error."""
  got = dict(jax.tree_util.tree_leaves_with_path(params))
  for key, spec in jax.tree_util.tree_leaves_with_path(expected):
    name = "/".join(k.key for k in key)
    if key not in got:
      raise ValueError(f"{where} lacks the tensor for {name}.")
    if tuple(got[key].shape) != tuple(spec.shape):
      raise ValueError(f"{where}: {name} has shape {tuple(got[key].shape)}, "
                       f"the config implies {tuple(spec.shape)}.")


def require_int_fields(config: dict, path: str) -> None:
  """Raises naming `hf_dir` unless config.json has the decoder's integer
  sizes (shared by the Llama-family and NeoX readers)."""
  need = ("vocab_size", "num_hidden_layers", "num_attention_heads",
          "hidden_size", "intermediate_size")
  missing = [k for k in need if not isinstance(config.get(k), int)]
  if missing:
    raise ValueError(f"`hf_dir` {path!r}: config.json lacks the integer "
                     f"field(s) {missing}.")
