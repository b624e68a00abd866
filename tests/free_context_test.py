"""The expressivity control (train/training/free_context.py, issue 78):
the same objective and AdamW updates against a float64 numpy loop,
Prop. 2.4's rank-2 sufficiency against rank 1's two argmaxes, jit and vmap,
the head against the model's, and bad input."""

import dataclasses
import math

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

from configs import spamlang as spamlang_config
from train.models import build
from train.training import free_context as fc
import tests  # pylint: disable=unused-import

# Tiny enough to follow every step: a warm-up, the cosine decay, weight
# decay and (ReferenceTest's thresholds) clipping on some steps, not all.
TINY = fc.Settings(steps=30, batch_size=4, lr=5e-2, warmup=5, b2=0.99,
                   weight_decay=0.1, grad_clip=0.3, eval_every=1)


def _schedule(s, t):
  """optax's warm-up + cosine (optim.schedule), in float64."""
  if t < s.warmup:
    return s.lr * t / s.warmup
  span = s.steps - s.warmup
  cos = 0.5 * (1 + math.cos(math.pi * min(t - s.warmup, span) / span))
  return s.lr * ((1 - s.min_lr_ratio) * cos + s.min_lr_ratio)


def _reference(state, features, targets, eval_x, eval_y, s, ids=None):
  """Float64 numpy: the objective, its gradients by hand, and AdamW as
  optax chains it (clip by global norm, Adam with bias correction,
  decoupled decay on A, B / W (and C if s.decay_contexts), p -= lr d).
  Pair i's context: features[i], or free row ids[i] (None: i).
  Returns (batch losses, eval losses after each step, clip fired per step)."""
  p = {k: np.asarray(v, np.float64) for k, v in state.params.items()}
  m = {k: np.zeros_like(v) for k, v in p.items()}
  v2 = {k: np.zeros_like(v) for k, v in p.items()}
  n, width = len(targets), (p["head_b"] if "head_b" in p else p["lm_head"]
                            ).shape[0]
  ids = np.arange(n) if ids is None else ids
  ctx = lambda: p["contexts"].reshape(-1, width)[ids] if features is None \
      else features
  head = lambda h: (h @ p["head_b"] @ p["lm_head"] if "head_b" in p
                    else h @ p["lm_head"])
  nll = lambda z, y: special.logsumexp(z, axis=1) - z[np.arange(len(y)), y]
  train, evals, fired = [], [], []
  for t in range(s.steps):
    idx = np.asarray(fc.batch_indices(state.key, t, n, s.batch_size))
    h, y = ctx()[idx], targets[idx]
    z = head(h)
    train.append(np.mean(nll(z, y)))
    g_z = special.softmax(z, axis=1)
    g_z[np.arange(len(y)), y] -= 1.0
    g_z /= len(y)
    g = {}
    if "head_b" in p:
      u = h @ p["head_b"]
      g["lm_head"] = u.T @ g_z
      g_u = g_z @ p["lm_head"].T
      g["head_b"] = h.T @ g_u
      g_h = g_u @ p["head_b"].T
    else:
      g["lm_head"] = h.T @ g_z
      g_h = g_z @ p["lm_head"].T
    if features is None:
      g_c = np.zeros((ids.max() + 1, width))
      np.add.at(g_c, ids[idx], g_h)
      g["contexts"] = g_c.reshape(p["contexts"].shape)
    norm = math.sqrt(sum(np.sum(x * x) for x in g.values()))
    fired.append(not norm < s.grad_clip)
    if fired[-1]:
      g = {k: x / norm * s.grad_clip for k, x in g.items()}
    lr = _schedule(s, t)
    for k in p:
      m[k] = s.b1 * m[k] + (1 - s.b1) * g[k]
      v2[k] = s.b2 * v2[k] + (1 - s.b2) * g[k] ** 2
      d = (m[k] / (1 - s.b1 ** (t + 1))) / (
          np.sqrt(v2[k] / (1 - s.b2 ** (t + 1))) + s.eps)
      if k != "contexts" or s.decay_contexts:
        d = d + s.weight_decay * p[k]
      p[k] = p[k] - lr * d
    hx = ctx() if eval_x is None else eval_x
    evals.append(np.mean(nll(head(hx), eval_y)))
  return np.array(train), np.array(evals), np.array(fired)


class ReferenceTest(parameterized.TestCase):
  """Losses along the whole trajectory equal a float64 numpy optimisation
  of the same objective from the same parameters on the same batches."""

  @parameterized.named_parameters(
      ("lowrank_free_f64", 2, "free", False, "float64", 1e-7),
      ("lowrank_shared_contexts_f64", 2, "shared", False, "float64", 1e-7),
      ("full_free_decayed_f64", 0, "free", True, "float64", 1e-7),
      ("lowrank_frozen_f64", 2, "frozen", False, "float64", 1e-7),
      ("lowrank_free_f32", 2, "free", False, "float32", 1e-5),
      ("lowrank_frozen_f32", 2, "frozen", False, "float32", 1e-5))
  def test_trajectory_matches_numpy(self, rank, kind, decay, dtype, rtol):
    v, width, seed = 6, 3, 3
    # Free contexts' gradients are larger: clipped on 10-20 % of the steps
    # at 1.0, frozen features' on about half at 0.3.
    s = dataclasses.replace(TINY, decay_contexts=decay, dtype=dtype,
                            grad_clip=0.3 if kind == "frozen" else 1.0)
    rng = np.random.default_rng(0)
    with jax.enable_x64(dtype == "float64"):
      if kind == "free":
        targets = rng.integers(0, v, 8)
        fit = fc.fit_free_contexts(targets, vocab=v, width=width, rank=rank,
                                   settings=s, seed=seed)
        x = ex = ids = None
        ey, n = targets, len(targets)
      elif kind == "shared":  # 3 contexts, each with several next tokens.
        ids, targets = np.array([0, 1, 2, 0, 1, 2, 0, 2]), \
            rng.integers(0, v, 8)
        fit = fc.fit_free_contexts(targets, vocab=v, width=width, rank=rank,
                                   settings=s, seed=seed, contexts_t=ids)
        x = ex = None
        ey, n = targets, 3
      else:
        x = rng.standard_normal((10, width)).astype(dtype)
        targets = rng.integers(0, v, 10)
        ex, ey = rng.standard_normal((5, width)).astype(dtype), \
            rng.integers(0, v, 5)
        fit = fc.fit_frozen_features(x, targets, rank, vocab=v, settings=s,
                                     heldout=(ex, ey), seed=seed)
        ids, n = None, len(targets)
      state = fc.init(jnp.uint32(seed), n=n, width=width, vocab=v,
                      rank=rank, s=s, free=kind != "frozen")
      train, evals, fired = _reference(state, x, targets, ex, ey, s, ids)
    self.assertTrue(fired.any() and not fired.all(), fired)  # Both sides.
    np.testing.assert_array_equal(fit.eval_steps, np.arange(1, 31))
    np.testing.assert_allclose(fit.train_losses, train, rtol=rtol)
    np.testing.assert_allclose(fit.eval_losses, evals, rtol=rtol)
    self.assertAlmostEqual(float(fit.loss), evals[-1], delta=rtol * evals[-1])
    self.assertAlmostEqual(float(fit.best_loss), evals.min(),
                           delta=rtol * evals[-1])
    self.assertLess(evals[-1], evals[0])  # It learns.


class ExpressivityTest(absltest.TestCase):
  """Prop. 2.4 (seed 002, App. A.1): rank 2 makes every token its own
  argmax; rank 1's logits a_j s are monotone in s: two argmaxes at most."""

  S = fc.Settings(steps=400, batch_size=32, lr=3e-2, warmup=20,
                  eval_every=100)

  def test_rank_two_reaches_accuracy_one(self):
    r = fc.spamlang_ceiling(8, 2, 4, self.S)
    self.assertEqual(r["accuracy"], 1.0)
    self.assertLess(r["final_loss"], 0.05)
    self.assertEqual((r["V"], r["D"], r["steps"], r["b2"]),
                     (8, 2, 400, 0.999))

  def test_rank_one_has_two_argmaxes_at_most(self):
    r = fc.spamlang_ceiling(6, 1, 4, self.S)
    self.assertLessEqual(r["accuracy"], 2 / 6 + 1e-6)
    self.assertGreater(r["final_loss"], 0.5)


class TransformTest(absltest.TestCase):

  def _fit(self, seed):
    s = dataclasses.replace(TINY, steps=6, eval_every=4)
    return fc.fit_free_contexts(np.arange(5), vocab=5, width=3, rank=2,
                                settings=s, seed=seed)

  def test_jit_equals_eager(self):
    jitted = self._fit(1)
    with jax.disable_jit():
      eager = self._fit(1)
    np.testing.assert_array_equal(jitted.eval_steps, [4, 6])
    for a, b in zip(jitted, eager):
      np.testing.assert_allclose(a, b, rtol=2e-5)

  def test_vmap_over_seeds_equals_loop(self):
    together = self._fit([0, 1, 2])
    for i in range(3):
      alone = self._fit(i)
      for a, b in zip(together, alone):
        np.testing.assert_allclose(a[i], b, rtol=2e-5)
    self.assertGreater(np.ptp(together.loss), 0.0)  # Seeds differ.

  def test_heldout_fraction_is_the_tail(self):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((20, 3)), rng.integers(0, 5, 20)
    s = dataclasses.replace(TINY, steps=4, warmup=1)
    split = fc.fit_frozen_features(x, y, 2, vocab=5, settings=s,
                                   heldout_fraction=0.25)
    given = fc.fit_frozen_features(x[:15], y[:15], 2, vocab=5, settings=s,
                                   heldout=(x[15:], y[15:]))
    np.testing.assert_allclose(split.eval_losses, given.eval_losses)


class MirrorTest(absltest.TestCase):
  """The head is the model's: same kernels, same logits; the optimiser
  fields are the config's."""

  def test_logits_and_shapes_match_the_lowrank_model(self):
    cfg = spamlang_config.get_config("V=64,D=8,cpu")
    mcfg = build.model_config(cfg.model)
    params = mcfg.init_params(0)["params"]
    state = fc.init(0, n=64, width=128, vocab=64, rank=8,
                    s=fc.Settings(), free=True)
    for k in ("head_b", "lm_head"):
      self.assertEqual(state.params[k].shape, params[k]["kernel"].shape)
      self.assertAlmostEqual(float(jnp.std(state.params[k])),
                             float(jnp.std(params[k]["kernel"])), delta=3e-3)
    h = jax.random.normal(jax.random.key(1), (5, 128))
    head = {k: params[k]["kernel"] for k in ("head_b", "lm_head")}
    want = mcfg.module().apply({"params": params}, h, method="head")
    np.testing.assert_allclose(fc.logits(head, h), want, rtol=1e-5,
                               atol=1e-7)

  def test_settings_from_train_block(self):
    t = spamlang_config.get_config("V=64,cpu").train
    s = fc.Settings.from_train(t, eval_every=7)
    for k in fc.TRAIN_FIELDS:
      self.assertEqual(getattr(s, k), t[k], k)
    self.assertEqual(s.eval_every, 7)


class BadInputTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("vocab_below_2", lambda: fc.spamlang_ceiling(1, 2, 3),
       r"`vocab` must be an integer in \[2, "),
      ("rank_negative", lambda: fc.spamlang_ceiling(8, -1, 3),
       r"`rank` must be an integer in \[0, 3\]"),
      ("rank_over_width", lambda: fc.spamlang_ceiling(8, 4, 3),
       r"`rank` must be an integer in \[0, 3\]"),
      ("steps_zero", lambda: fc.Settings(steps=0),
       r"`steps` must be an integer >= 1"),
      ("b2_one", lambda: fc.Settings(b2=1.0),
       r"`b2` must be a number in \(0.0, 1.0\)"),
      ("b2_zero", lambda: fc.Settings(b2=0.0),
       r"`b2` must be a number in \(0.0, 1.0\)"),
      ("lengths_differ", lambda: fc.fit_frozen_features(
          np.zeros((5, 3)), np.zeros(4, int), 2, vocab=6,
          settings=TINY), r"`targets_n` must have one entry per row of "
       r"`features_nxw` \(5\)"),
      ("target_out_of_range", lambda: fc.fit_free_contexts(
          np.array([0, 6]), vocab=6, width=3, rank=2, settings=TINY),
       r"`targets_t` must be .* entries in \[0, vocab = 6\)"),
      ("contexts_length", lambda: fc.fit_free_contexts(
          np.array([0, 1]), vocab=6, width=3, rank=2, settings=TINY,
          contexts_t=np.array([0])), r"`contexts_t` must be integers >= 0, "
       r"one per entry of `targets_t` \(2\)"),
      ("no_training_rows", lambda: fc.fit_frozen_features(
          np.zeros((1, 3)), np.zeros(1, int), 2, vocab=6, settings=TINY),
       r"`heldout_fraction` .* leaves no training rows"),
      ("float64_without_x64", lambda: fc.spamlang_ceiling(
          4, 2, 3, dataclasses.replace(TINY, dtype="float64")),
       r"`dtype` float64 needs jax_enable_x64"))
  def test_refused(self, call, message):
    with self.assertRaisesRegex(ValueError, message):
      call()


if __name__ == "__main__":
  absltest.main()
