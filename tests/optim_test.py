"""The optimizer (train/training/optim.py): AdamW's step against optax's
parts, the schedules, weight decay on matrices only, clipping."""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from configs import thesis
from train.training import optim


class OptimizerTest(parameterized.TestCase):
  """The schedule, the decay mask and clipping against closed forms."""

  def _train(self, **kw):
    t = thesis.get_config("model1,cpu").train
    t.update(kw)
    return t

  def test_schedules_at_key_steps(self):
    t = self._train(lr=1e-3, warmup=10, steps=100, min_lr_ratio=0.1)
    for name, want in (
        ("cosine", {0: 0.0, 5: 5e-4, 10: 1e-3, 55: 1e-4 + 0.9e-3 * 0.5,
                    100: 1e-4}),
        ("constant", {0: 0.0, 5: 5e-4, 10: 1e-3, 99: 1e-3}),
        # wsd: decay = 10 steps (decay_fraction 0.1), stable until 90.
        ("wsd", {0: 0.0, 10: 1e-3, 89: 1e-3, 95: 1e-4 + 0.9e-3 * 0.5,
                 100: 1e-4})):
      t.schedule = name
      sched = optim.schedule(t)
      for step, lr in want.items():
        self.assertAlmostEqual(float(sched(step)), lr, delta=1e-9,
                               msg=f"{name} step {step}")

  def test_weight_decay_only_on_matrices(self):
    t = self._train(lr=1e-2, warmup=0, weight_decay=0.5, grad_clip=0.0,
                    schedule="constant")
    tx = optim.optimizer(t)
    params = {"kernel": jnp.ones((3, 4)), "bias": jnp.ones(4),
              "scale": jnp.ones(4)}
    zeros = jax.tree.map(jnp.zeros_like, params)
    direction, _ = tx.update(zeros, tx.init(params), params)
    # AdamW with zero gradients: only the decoupled decay, -lr * wd * p.
    lr0 = optim.learning_rates(t)[0]
    moved = optim.apply(params, direction, lr0)
    np.testing.assert_allclose(moved["kernel"], 1.0 - lr0 * 0.5, rtol=1e-6)
    np.testing.assert_array_equal(moved["bias"], 1.0)
    np.testing.assert_array_equal(moved["scale"], 1.0)
    self.assertGreater(lr0, 0.0)

  @parameterized.parameters("cosine", "wsd")
  def test_host_learning_rates_reproduce_optax_adamw(self, name):
    # The step scales the direction by lr read on the host; optax.adamw
    # evaluates the schedule inside: the parameters must agree step by step.
    t = self._train(lr=1e-2, warmup=2, steps=12, weight_decay=0.1,
                    grad_clip=1.0, schedule=name)
    lrs = optim.learning_rates(t)
    self.assertEqual(lrs.shape, (12,))
    np.testing.assert_allclose(  # Up to float32 rounding (fused or not).
        lrs, [float(optim.schedule(t)(k)) for k in range(12)], rtol=1e-6)
    reference = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(
        optim.schedule(t), b1=t.b1, b2=t.b2, eps=t.eps, weight_decay=0.1,
        mask=lambda p: jax.tree.map(lambda x: x.ndim >= 2, p)))
    tx = optim.optimizer(t)
    rng = np.random.default_rng(0)
    params = {"kernel": jnp.asarray(rng.standard_normal((4, 3)), jnp.float32),
              "bias": jnp.asarray(rng.standard_normal(3), jnp.float32)}
    ours, theirs = params, params
    s_ours, s_theirs = tx.init(params), reference.init(params)
    for step in range(12):
      grads = jax.tree.map(
          lambda p: jnp.asarray(rng.standard_normal(p.shape), jnp.float32),
          params)
      direction, s_ours = tx.update(grads, s_ours, ours)
      ours = optim.apply(ours, direction, lrs[step])
      updates, s_theirs = reference.update(grads, s_theirs, theirs)
      theirs = optax.apply_updates(theirs, updates)
    for key in params:
      np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6,
                                 atol=1e-7, err_msg=key)
    self.assertGreater(float(jnp.abs(ours["kernel"] - params["kernel"]).max()),
                       1e-3)

  def test_clipping_bounds_the_gradient_adam_sees(self):
    t = self._train(grad_clip=1.0, b1=0.9)
    tx = optim.optimizer(t)
    params = {"w": jnp.zeros((10, 10))}
    grads = {"w": jnp.full((10, 10), 100.0)}  # Global norm 1000.
    _, state = tx.update(grads, tx.init(params), params)
    adam_mu = [s for s in jax.tree.leaves(state) if s.shape == (10, 10)][0]
    # mu = (1 - b1) * clipped g: norm (1 - 0.9) * 1.
    self.assertAlmostEqual(float(jnp.linalg.norm(adam_mu)), 0.1, places=5)
    unclipped = optim.optimizer(self._train(grad_clip=0.0, b1=0.9))
    _, state = unclipped.update(grads, unclipped.init(params), params)
    adam_mu = [s for s in jax.tree.leaves(state) if s.shape == (10, 10)][0]
    self.assertAlmostEqual(float(jnp.linalg.norm(adam_mu)), 100.0, places=3)


if __name__ == "__main__":
  absltest.main()
