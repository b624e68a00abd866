"""Next-token cross-entropy that never holds the [B, T, V] logits.

  loss = mean_n [ logsumexp(z_n) - z_n[y_n] ],
  z = cap tanh((h K + b) / cap)   (float32; no cap: z = h K + b)

`linear_xent` scans over chunks of `chunk` tokens (by default as many as
`logit_bytes()` of float32 logits hold: 32 MiB on a CPU, 512 MiB on an
accelerator, where 166-token chunks at V = 50257 left a 16384-token step a
sequential scan of ~100 small products). Its forward pass forms a
chunk's logits, reduces them to the chunk's loss and, when a gradient is
asked for (a custom VJP), also to the chunk's share of the gradients: with
g = (softmax(z) - onehot(y)) / N (times the cap's 1 - tanh^2), dh = g K^T,
dK += h^T g, db += sum g; the logits are then dropped. The backward pass
only scales those by the incoming cotangent. Peak memory is one chunk's
[chunk, V] logits instead of the batch's (SpamLang at seed 002 Table 3's
batch, 128 x 64 tokens, V = 131072: 4.3 GB of float32 logits before the
gradient), at the cost of the naive loss: one logits product forward, two
gradient products, no recomputation. A low-rank head W = A B enters as
h' = h B^T (the model's `head_linear` project, differentiated by JAX) and
K = A^T. The products take their operands in the model's compute dtype
(bfloat16 under mixed precision) and accumulate in float32; the logits, the
log-sum-exp and the gradient sums are float32.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

LOGIT_BYTES = 32 << 20  # Float32 logits one chunk may hold (chunk = 0) on
# a CPU: on the 2-core CPU, model1 (V = 50257) stepped fastest at 128-token
# chunks.
ACCELERATOR_LOGIT_BYTES = 512 << 20  # The same on a GPU or TPU.


def logit_bytes() -> int:
  """The default chunk's float32 logits, in bytes, on the default backend."""
  return LOGIT_BYTES if jax.default_backend() == "cpu" else (
      ACCELERATOR_LOGIT_BYTES)


def chunk_tokens(vocab: int, n_tokens: int, chunk: int = 0,
                 budget: int = LOGIT_BYTES) -> int:
  """Tokens per chunk: `chunk`, or as many as `budget` bytes of float32
  logits hold, evened out over the chunks that takes (at most one padded row
  per chunk); at most n_tokens."""
  if chunk < 0:
    raise ValueError(f"`train.loss_chunk` must be >= 0; got {chunk}.")
  chunk = min(chunk or max(1, budget // (4 * vocab)), n_tokens)
  pieces = -(-n_tokens // max(chunk, 1))
  return -(-n_tokens // pieces)


def _dot(a, b, dtype):
  """a b with operands in `dtype`, accumulated and returned in float32."""
  return jnp.dot(a.astype(dtype), b.astype(dtype),
                 preferred_element_type=jnp.float32)


class _Static(NamedTuple):
  """The loss's non-differentiable settings (custom_vjp's nondiff arg)."""
  chunk: int  # Tokens per chunk (0: as many as `budget` bytes hold).
  budget: int  # Bytes of float32 logits a default chunk holds.
  cap: float  # Logit soft-cap (0: none).
  dtype: Any  # The products' operand dtype.
  multiple: int  # V is padded (masked) to a multiple of this.
  bias: bool  # Whether b is the head's (else zeros: no db).


def _logits(h_cxd, k_dxv, b_v, cap: float, dtype):
  """(capped logits z, tanh of the cap or None) in float32."""
  z = _dot(h_cxd, k_dxv, dtype)
  if b_v is not None:
    z = z + b_v.astype(jnp.float32)[None, :]
  if not cap:
    return z, None
  t = jnp.tanh(z / cap)
  return cap * t, t


def _chunked(h_nxd, y_n, chunk):
  """h, y and 0/1 weights as [k, c, ...] chunks (the tail padded)."""
  n = y_n.shape[0]
  k = -(-n // chunk)
  pad = k * chunk - n
  h = jnp.pad(h_nxd, ((0, pad), (0, 0))).reshape(k, chunk, -1)
  y = jnp.pad(y_n, (0, pad)).reshape(k, chunk)
  w = jnp.pad(jnp.ones((n,), jnp.float32), (0, pad)).reshape(k, chunk)
  return h, y, w


def _scan(h_nxd, k_dxv, b_v, y_n, st: _Static, grads: bool):
  """(mean loss, (dh [N, D], dK, db) of the mean loss, or None).

  V is padded to a multiple of `st.multiple` with logits of -inf (an odd V
  such as 50257 leaves the products unaligned: on an H200 cuBLAS then fell
  back to an sm75 kernel), and the gradient of the logits is formed in one
  element-wise pass, softmax minus the one-hot of the label compared
  against an iota (in place of a scatter, which XLA does not fuse into
  that pass)."""
  n, v = y_n.shape[0], k_dxv.shape[1]
  vp = -(-v // st.multiple) * st.multiple
  c = chunk_tokens(vp, n, st.chunk, st.budget)
  h, y, w = _chunked(h_nxd, y_n, c)
  k_c = jnp.pad(k_dxv.astype(st.dtype), ((0, 0), (0, vp - v)))  # Cast once.
  b = jnp.pad(b_v, (0, vp - v)) if st.bias else None
  column = jnp.arange(vp)[None, :]

  def body(carry, xs):
    total, dk, db = carry
    hc, yc, wc = xs
    z, t = _logits(hc, k_c, b, st.cap, st.dtype)
    if vp != v:
      z = jnp.where(column < v, z, -jnp.inf)
    lse = jax.nn.logsumexp(z, axis=-1)
    z_y = jnp.take_along_axis(z, yc[:, None], axis=-1)[:, 0]
    total = total + jnp.sum(wc * (lse - z_y))
    if not grads:
      return (total, dk, db), None
    g = (jnp.exp(z - lse[:, None]) - (column == yc[:, None])) * (
        wc / n)[:, None]
    if t is not None:
      g = g * (1.0 - t * t)
    g_c = g.astype(st.dtype)
    dh = _dot(g_c, k_c.T, st.dtype).astype(h_nxd.dtype)
    dk = dk + _dot(hc.T, g_c, st.dtype)
    if st.bias:
      db = db + g.sum(0)
    return (total, dk, db), dh

  zeros = (jnp.zeros((), jnp.float32),
           jnp.zeros((k_dxv.shape[0], vp), jnp.float32) if grads else None,
           jnp.zeros((vp,), jnp.float32) if grads else None)
  (total, dk, db), dh = jax.lax.scan(body, zeros, (h, y, w))
  if not grads:
    return total / n, None
  return total / n, (dh.reshape(-1, h_nxd.shape[1])[:n], dk[:, :v], db[:v])


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _linear_xent(h_nxd, k_dxv, b_v, y_n, st):
  return _scan(h_nxd, k_dxv, b_v, y_n, st, grads=False)[0]


def _forward(h_nxd, k_dxv, b_v, y_n, st):
  loss, (dh, dk, db) = _scan(h_nxd, k_dxv, b_v, y_n, st, grads=True)
  return loss, (dh, dk.astype(k_dxv.dtype), db.astype(b_v.dtype), y_n)


def _backward(st, res, ct):
  """The gradients formed in the forward pass, times the cotangent."""
  del st
  dh, dk, db, y_n = res
  labels = jnp.zeros(y_n.shape, jax.dtypes.float0)  # Integer labels.
  return ((ct * dh).astype(dh.dtype), (ct * dk).astype(dk.dtype),
          (ct * db).astype(db.dtype), labels)


_linear_xent.defvjp(_forward, _backward)


def vocab_multiple() -> int:
  """What V is padded to a multiple of: 1 on a CPU, else 128."""
  return 1 if jax.default_backend() == "cpu" else 128


def linear_xent(h_nxd, k_dxv, b_v, y_n, chunk: int = 0, cap: float = 0.0,
                dtype=jnp.float32, multiple: int = 0):
  """Mean cross-entropy of labels y [N] under z = cap tanh((h K + b) / cap)
  (module docstring); b may be None, cap 0 for none; the products' operands
  in `dtype`; V padded to a multiple of `multiple` (0: vocab_multiple())."""
  if multiple < 0:
    raise ValueError(f"`multiple` must be >= 0; got {multiple}.")
  b = jnp.zeros(k_dxv.shape[1:], k_dxv.dtype) if b_v is None else b_v
  st = _Static(int(chunk), logit_bytes(), float(cap), jnp.dtype(dtype),
               int(multiple) or vocab_multiple(), b_v is not None)
  return _linear_xent(h_nxd, k_dxv, b, y_n, st)


def model_xent(cfg, params, h_nxd, y_n, chunk: int = 0):
  """The cross-entropy of a model's head (`cfg.head_linear`) on hidden
  states h [N, D], its products in the model's compute dtype."""
  project, k, b, cap = cfg.head_linear(params)
  h = h_nxd if project is None else project(h_nxd)
  return linear_xent(h, k, b, y_n, chunk, cap, cfg.compute_dtype)


def naive_xent(head, h_nxd, y_n):
  """The reference: every logit of head(h) [N, V] formed at once."""
  z = head(h_nxd).astype(jnp.float32)
  lse = jax.nn.logsumexp(z, axis=-1)
  return jnp.mean(lse - jnp.take_along_axis(z, y_n[:, None], -1)[:, 0])
