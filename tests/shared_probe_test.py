"""The shared-matrix probe (train/probes/shared.py) on a small tied model:
both sides of E replaced, its KLs and scale errors against a hand-built
forward in float64, the head-only variant beside it, bad input refused."""

from absl.testing import absltest
import jax
import numpy as np
from scipy import special

from bottleneck import encoding
from train.models import transformer
from train.probes import forward, shared, subjects
import tests  # pylint: disable=unused-import

V, PRESENT = 64, 48  # Tokens >= PRESENT never appear in the inputs.


def _subject(tied=True):
  cfg = transformer.TransformerConfig(
      vocab_size=V, n_layer=1, n_head=2, n_kv_head=1, n_embd=16, ffn_dim=32,
      context_length=32, block_size=32, tied=tied)
  params = jax.tree.map(np.array, cfg.init_params(0))
  # Larger rows than the initialisation's: peaked distributions, KLs well
  # above float32's noise.
  params["params"]["embed"]["embedding"] *= 20.0
  return subjects.Subject(params, cfg, None, "toy")


def _windows(seed):
  x = np.random.default_rng(seed).integers(0, PRESENT, (4, 16))
  return x.astype(np.int32), np.roll(x, -1, axis=1).astype(np.int32)


def _mean_p(subject, e_vxd, x, n):
  """Mean softmax over the first n positions of windows x, the model run
  with E replaced by hand (dict surgery, not replace_embeddings)."""
  p = jax.tree.map(lambda a: a, subject.params)  # A new tree, same leaves.
  p["params"]["embed"] = {"embedding": e_vxd}
  h = np.asarray(subject.model.apply(p, x, method=type(
      subject.model).hidden), np.float64).reshape(-1, e_vxd.shape[1])[:n]
  return special.softmax(h @ np.asarray(e_vxd, np.float64).T, axis=1).mean(0)


class SharedProbeTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.subject = _subject()
    cls.own = forward.run(cls.subject, *_windows(0), gradient_sums=False)
    cls.x, y = _windows(1)
    cls.ood = forward.run(cls.subject, cls.x, y, gradient_sums=False)
    cls.out, _ = shared.shared_probe(cls.subject, cls.own, cls.ood,
                                     positions=24, tokens=3, blocks=4,
                                     ratios=(0.25, 0.5), scales=(0.5, 2.0))

  def test_replace_embeddings_changes_both_sides_only(self):
    cfg, params = self.subject.cfg, self.subject.params
    e = np.ones_like(cfg.input_embeddings(params))
    new = cfg.replace_embeddings(params, e)
    self.assertIs(cfg.input_embeddings(new), e)  # The input side...
    self.assertIs(cfg.head_weights(new)[0], e)  # ... and the head.
    self.assertIsNot(cfg.input_embeddings(params), e)  # Original kept.
    for key in params["params"]:  # Every other leaf shared, not copied.
      if key != "embed":
        self.assertIs(new["params"][key], params["params"][key])

  def test_removal_against_a_hand_built_forward(self):
    e = np.asarray(self.subject.cfg.input_embeddings(self.subject.params))
    order = encoding.removal_order(encoding.mlr(
        -np.log(self.own.alpha), e)["slopes"])
    x = self.x[:2]  # 24 positions: two windows of 16.
    base = _mean_p(self.subject, e, x, 24)
    for i, r in enumerate((0.25, 0.5)):
      k = int(round(r * e.shape[1]))
      for label, cols in (("saliency", order[:k]),
                          ("adversarial", order[::-1][:k])):
        keep = np.ones(e.shape[1], np.float32)
        keep[cols] = 0
        want = encoding.kl(base, _mean_p(self.subject, e * keep, x, 24))
        self.assertAlmostEqual(self.out["removal"]["shared"][label][i],
                               want, delta=1e-4 * max(1.0, want))
    # The input side reaches the hidden states: shared != head only.
    got = self.out["removal"]
    shared_kl, head_kl = (got[v]["saliency"][1] for v in ("shared",
                                                          "head_only"))
    self.assertGreater(abs(shared_kl - head_kl), 0.05 * head_kl)
    self.assertEqual(np.shape(self.out["blocks"]["saliency"]), (4, 2))

  def test_edit_against_a_hand_built_forward(self):
    edit = self.out["edit"]
    inputs = self.x.reshape(-1)[:24]
    self.assertTrue(all(t in inputs for t in edit["tokens"]))
    self.assertEqual(edit["occurrences"],
                     [int(np.sum(inputs == t)) for t in edit["tokens"]])
    e = np.asarray(self.subject.cfg.input_embeddings(self.subject.params))
    fit = encoding.mlr(-np.log(self.own.alpha), e)
    token = edit["tokens"][0]
    base = _mean_p(self.subject, e, self.x[:2], 24)
    errs = []
    for r in (0.5, 2.0):
      e2 = e.copy()
      e2[token] += encoding.edit_delta(r, fit["slopes"], fit["p_values"], 2.0)
      after = _mean_p(self.subject, e2, self.x[:2], 24)
      errs.append(abs(np.log(r) - np.log(after[token] / base[token])))
    self.assertAlmostEqual(edit["shared"]["e_per_token"][0], np.mean(errs),
                           delta=1e-3)
    self.assertNotAlmostEqual(edit["shared"]["e_per_token"][0],
                              edit["head_only"]["e_per_token"][0], places=4)

  def test_untied_subject_is_not_applicable(self):
    out, figs = shared.shared_probe(_subject(tied=False), self.own, self.ood)
    self.assertFalse(out["applicable"])
    self.assertIn("untied", out["why"])
    self.assertEqual(figs, {})

  def test_bad_inputs_name_the_argument(self):
    for kw, msg in ((dict(ratios=(0.5, 1.5)), "`ratios` must lie in"),
                    (dict(scales=(0.0,)), "`scales` must be finite"),
                    (dict(scales=(np.inf,)), "`scales` must be finite"),
                    (dict(positions=-5), "`positions` must be an integer"),
                    (dict(positions=0), "`positions` must be an integer"),
                    (dict(tokens=0), "`tokens` must be an integer")):
      with self.assertRaisesRegex(ValueError, msg):
        shared.shared_probe(self.subject, self.own, self.ood, **kw)

  def test_special_tokens_are_never_edited(self):
    class Tok:  # pylint: disable=too-few-public-methods
      bos_id, eos_id = 3, 7
    sub = subjects.Subject(self.subject.params, self.subject.cfg, Tok(), "t")
    self.assertEqual(shared.editable(np.array([3, 5, 7, 5, 9]), sub).tolist(),
                     [5, 9])

  def test_variants_share_the_placed_weights(self):
    e = np.asarray(self.subject.cfg.input_embeddings(self.subject.params))
    sub = forward.with_embeddings(self.subject, e * 0.5)
    placed = self.subject._placed[1]["params"]  # pylint: disable=protected-access
    got = sub._placed[1]["params"]  # pylint: disable=protected-access
    for key in placed:
      if key != "embed":
        self.assertIs(got[key], placed[key])
    np.testing.assert_allclose(np.asarray(sub._placed[2]), e * 0.5)  # pylint: disable=protected-access


if __name__ == "__main__":
  absltest.main()
