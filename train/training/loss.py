"""Next-token cross-entropy that never holds the [B, T, V] logits.

  loss = mean_n [ logsumexp(z_n) - z_n[y_n] ],
  z = cap tanh((h K + b) / cap)   (float32; no cap: z = h K + b)

`linear_xent` scans over chunks of `chunk` tokens. Its forward pass forms a
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
K = A^T.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

LOGIT_BYTES = 32 << 20  # Float32 logits one chunk may hold (chunk = 0):
# on the 2-core CPU, model1 (V = 50257) stepped fastest at 128-token chunks.


def chunk_tokens(vocab: int, n_tokens: int, chunk: int = 0) -> int:
  """Tokens per chunk: `chunk`, or as many as LOGIT_BYTES of float32 logits
  hold, evened out over the chunks that takes (at most one padded row per
  chunk); at most n_tokens."""
  if chunk < 0:
    raise ValueError(f"`train.loss_chunk` must be >= 0; got {chunk}.")
  chunk = min(chunk or max(1, LOGIT_BYTES // (4 * vocab)), n_tokens)
  pieces = -(-n_tokens // max(chunk, 1))
  return -(-n_tokens // pieces)


def _logits(h_cxd, k_dxv, b_v, cap: float):
  """(capped logits z, tanh of the cap or None) in float32."""
  z = jnp.dot(h_cxd.astype(jnp.float32), k_dxv.astype(jnp.float32))
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


def _scan(h_nxd, k_dxv, b_v, y_n, chunk: int, cap: float, grads: bool):
  """(mean loss, (dh [N, D], dK, db) of the mean loss, or None)."""
  n = y_n.shape[0]
  c = chunk_tokens(k_dxv.shape[1], n, chunk)
  h, y, w = _chunked(h_nxd, y_n, c)

  def body(carry, xs):
    total, dk, db = carry
    hc, yc, wc = xs
    z, t = _logits(hc, k_dxv, b_v, cap)
    lse = jax.nn.logsumexp(z, axis=-1)
    z_y = jnp.take_along_axis(z, yc[:, None], axis=-1)[:, 0]
    total = total + jnp.sum(wc * (lse - z_y))
    if not grads:
      return (total, dk, db), None
    g = jnp.exp(z - lse[:, None])
    g = g.at[jnp.arange(c), yc].add(-1.0) * (wc / n)[:, None]
    if t is not None:
      g = g * (1.0 - t * t)
    dh = jnp.dot(g, k_dxv.astype(jnp.float32).T).astype(h_nxd.dtype)
    dk = dk + jnp.dot(hc.astype(jnp.float32).T, g)
    db = db + g.sum(0)
    return (total, dk, db), dh

  zeros = (jnp.zeros((), jnp.float32),
           jnp.zeros(k_dxv.shape, jnp.float32) if grads else None,
           jnp.zeros(k_dxv.shape[1:], jnp.float32) if grads else None)
  (total, dk, db), dh = jax.lax.scan(body, zeros, (h, y, w))
  if not grads:
    return total / n, None
  return total / n, (dh.reshape(-1, h_nxd.shape[1])[:n], dk, db)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def _linear_xent(h_nxd, k_dxv, b_v, y_n, chunk, cap):
  return _scan(h_nxd, k_dxv, b_v, y_n, chunk, cap, grads=False)[0]


def _forward(h_nxd, k_dxv, b_v, y_n, chunk, cap):
  loss, (dh, dk, db) = _scan(h_nxd, k_dxv, b_v, y_n, chunk, cap, grads=True)
  return loss, (dh, dk.astype(k_dxv.dtype), db.astype(b_v.dtype), y_n)


def _backward(chunk, cap, res, ct):
  """The gradients formed in the forward pass, times the cotangent."""
  del chunk, cap
  dh, dk, db, y_n = res
  labels = jnp.zeros(y_n.shape, jax.dtypes.float0)  # Integer labels.
  return ((ct * dh).astype(dh.dtype), (ct * dk).astype(dk.dtype),
          (ct * db).astype(db.dtype), labels)


_linear_xent.defvjp(_forward, _backward)


def linear_xent(h_nxd, k_dxv, b_v, y_n, chunk: int = 0, cap: float = 0.0):
  """Mean cross-entropy of labels y [N] under z = cap tanh((h K + b) / cap)
  (module docstring); b may be None, cap 0 for none."""
  b = jnp.zeros(k_dxv.shape[1:], k_dxv.dtype) if b_v is None else b_v
  return _linear_xent(h_nxd, k_dxv, b, y_n, int(chunk), float(cap))


def model_xent(cfg, params, h_nxd, y_n, chunk: int = 0):
  """The cross-entropy of a model's head (`cfg.head_linear`) on hidden
  states h [N, D]."""
  project, k, b, cap = cfg.head_linear(params)
  h = h_nxd if project is None else project(h_nxd)
  return linear_xent(h, k, b, y_n, chunk, cap)


def naive_xent(head, h_nxd, y_n):
  """The reference: every logit of head(h) [N, V] formed at once."""
  z = head(h_nxd).astype(jnp.float32)
  lse = jax.nn.logsumexp(z, axis=-1)
  return jnp.mean(lse - jnp.take_along_axis(z, y_n[:, None], -1)[:, 0])
