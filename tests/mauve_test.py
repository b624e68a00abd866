"""MAUVE (bottleneck/mauve_score.py) against its definition and the
package, the KV-cache decoder against the uncached one, and the MAUVE
probe (train/probes/generation.py) on a small tied model."""

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import mauve_score
from train.models import generate, transformer
from train.probes import forward, generation, subjects
import tests  # pylint: disable=unused-import


def _gemma_like(tied=True):
  """Every switch the cached step must honour: GQA, a sliding-window
  layer with its own RoPE base, q/k norms, score and logit soft-caps,
  post norms, an embedding scale."""
  return transformer.TransformerConfig(
      vocab_size=50, n_layer=2, n_head=4, n_kv_head=2, n_embd=32,
      ffn_dim=64, context_length=64, block_size=64,
      layer_types=("local", "global"), sliding_window=3, qk_norm=True,
      attn_softcap=20.0, final_softcap=15.0, embed_scale=2.0,
      rope_local_theta=100.0, post_attn_norm=True, post_mlp_norm=True,
      tied=tied)


class MauveScoreTest(absltest.TestCase):

  def test_identical_sets_score_one_and_disjoint_near_zero(self):
    a = np.random.default_rng(0).normal(size=(200, 16))
    self.assertAlmostEqual(mauve_score.mauve(a, a)["mauve"], 1.0, places=9)
    far = mauve_score.mauve(a, a + 10.0)  # Separate clusters.
    self.assertLess(far["mauve"], 0.05)

  def test_from_histograms_recomputes_the_package(self):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(300, 8)), rng.normal(0.4, 1.0, size=(300, 8))
    out = mauve_score.mauve(a, b, seed=3)
    self.assertEqual(out["buckets"], 30)  # The package's n / 10.
    self.assertAlmostEqual(mauve_score.from_histograms(
        out["p_hist"], out["q_hist"]), out["mauve"], places=12)
    self.assertBetween(out["mauve"], 0.05, 0.99)  # Neither end.

  def test_one_direction_is_refused(self):
    """Rows of one direction (one text for every prompt) leave MAUVE's
    clustering undefined (the package scores two such sets 0.75)."""
    ones = np.ones((30, 4))
    with self.assertRaisesRegex(ValueError, "same direction"):
      mauve_score.mauve(ones, 2.0 * ones)

  def test_bad_features_name_the_argument(self):
    a = np.random.default_rng(5).normal(size=(30, 4))
    with self.assertRaisesRegex(ValueError, "`p_features` has 8 rows"):
      mauve_score.mauve(a[:8], a)
    with self.assertRaisesRegex(ValueError, "same width"):
      mauve_score.mauve(a, np.random.default_rng(6).normal(size=(30, 5)))
    with self.assertRaisesRegex(ValueError, "q_features"):
      mauve_score.mauve(a, np.full((30, 4), np.nan))


class CachedDecodingTest(absltest.TestCase):

  def test_cached_steps_equal_the_whole_forward(self):
    cfg = _gemma_like()
    m, params = cfg.module(), cfg.init_params(0)
    x = np.random.default_rng(0).integers(0, 50, (3, 9)).astype(np.int32)
    full = np.asarray(m.apply(params, x, method=type(m).hidden))
    cache = m.apply(params, 3, 9, method=type(m).init_cache)
    for i in range(9):
      h, cache = m.apply(params, jnp.asarray(x[:, i]), i, cache,
                         method=type(m).hidden_step)
      np.testing.assert_allclose(np.asarray(h), full[:, i], atol=1e-5)

  def test_filters_off_is_the_plain_softmax(self):
    """sample_cached skips the filters when top_k = 0 and top_p = 1: they
    must then change nothing."""
    logits = jax.random.normal(jax.random.key(0), (3, 50))
    np.testing.assert_array_equal(
        np.asarray(generate._filter_logits(logits, 2.0, 0, 1.0)),  # pylint: disable=protected-access
        np.asarray(logits / 2.0))

  def test_greedy_cached_equals_uncached_decoding(self):
    cfg = _gemma_like()
    m, params = cfg.module(), cfg.init_params(1)
    x = np.random.default_rng(1).integers(0, 50, (3, 4)).astype(np.int32)
    got = generate.sample_cached(params, m, jnp.asarray(x),
                                 jax.random.key(0), 6, 0.0)
    buf = np.zeros((3, 64), np.int32)
    buf[:, :4] = x
    want, _ = generate.decode(params, m, jnp.asarray(buf),
                              jnp.full((3,), 4, jnp.int32),
                              jax.random.key(0), 6)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want)[:, :10])


class MauveProbeTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cfg = _gemma_like()
    params = jax.tree.map(np.array, cfg.init_params(0))
    params["params"]["embed"]["embedding"] *= 20.0  # Peaked outputs.
    cls.subject = subjects.Subject(params, cfg, None, "toy")
    x = np.random.default_rng(2).integers(0, 50, (4, 16)).astype(np.int32)
    cls.own = forward.run(cls.subject, x, np.roll(x, -1, 1),
                          gradient_sums=False)

  def test_probe_scores_its_variants_against_a_control(self):
    out, figs = generation.mauve_probe(self.subject, self.own, 20, 3,
                                       tokens=1)
    self.assertTrue(out["applicable"])
    self.assertLen(out["removal"]["saliency"], len(generation.RATIOS))
    self.assertLen(out["edits"], len(generation.EDIT_SCALES))
    for v in out["removal"]["saliency"] + [out["control"]["mauve"]]:
      self.assertBetween(v, 0.0, 1.0)
    # The edited tokens are the ones the model samples most often.
    self.assertTrue(all(e["sampled"] > 0 for e in out["edits"]))
    self.assertIn("mauve", figs)
    # Edits of tokens the model samples reach the texts; the control's
    # texts are its own (nothing changed).
    self.assertEqual(out["control"]["changed"], 0.0)
    self.assertGreater(max(e["changed"] for e in out["edits"]), 0.0)

  def test_prompts_start_with_bos_where_the_model_has_one(self):
    got = generation.prompts(self.own, 5, 4, bos=7)
    self.assertEqual(got.shape, (5, 4))
    self.assertTrue(np.all(got[:, 0] == 7))
    self.assertFalse(np.any(got[:, 1:] == 7))
    plain = generation.prompts(self.own, 5, 4)
    np.testing.assert_array_equal(plain[0], self.own.x.reshape(-1)[:4])

  def test_not_run_not_applicable_and_bad_input(self):
    out, _ = generation.mauve_probe(self.subject, self.own, 0)
    self.assertFalse(out["run"])
    untied = subjects.Subject(self.subject.params, _gemma_like(False), None,
                              "u")
    self.assertFalse(generation.mauve_probe(untied, self.own, 20)[0][
        "applicable"])
    for args, msg in (((20, 0), "mauve_new_tokens"),
                      ((20, 61), "mauve_new_tokens"),  # Past block 64.
                      ((-5,), "mauve_samples"), ((10,), "mauve_samples"),
                      ((100,), "mauve_samples"),  # Too few tokens.
                      ((20, 3, 0), "tokens")):
      with self.assertRaisesRegex(ValueError, msg, msg=str(args)):
        generation.mauve_probe(self.subject, self.own, *args)


if __name__ == "__main__":
  absltest.main()
