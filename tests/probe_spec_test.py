"""One spec per probe (train/probes/spec.py): a probe added as one Probe
and one registry line reaches the probe binary's figures, the comparison's
tables, overlays, captions, papers' numbers and progress shares, with no
other change."""

from unittest import mock

from absl.testing import absltest
import matplotlib.pyplot as plt

from train.probes import compare, registry, spec


def _toy_overlay(by_model):
  fig, ax = plt.subplots()
  ax.bar(list(by_model), [n["value"] for n in by_model.values()])
  return fig


TOY = spec.Probe(
    "toy", "pass", lambda ctx: ({"value": 2.0}, {}),
    figures=(spec.Figure("toy_bars", "One bar per model.", _toy_overlay),
             spec.Figure("toy_single", "One model only.")),
    rows=(spec.Row("seed002", "toy value", "3 (a paper)",
                   lambda n: spec.fmt(n["toy"]["value"])),),
    share=0.01)


class ProbeSpecTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    specs = dict(registry.SPECS, toy=TOY)
    patcher = mock.patch.object(registry, "SPECS", specs)
    patcher.start()
    self.addCleanup(patcher.stop)
    self.addCleanup(plt.close, "all")

  def test_one_registry_line_reaches_every_consumer(self):
    self.assertEqual(registry.figures_of("toy"), ("toy_bars", "toy_single"))
    self.assertIn(TOY, registry.compared())
    self.assertIn("toy_bars", compare.figure_names())
    self.assertNotIn("toy_single", compare.figure_names())  # No overlay.
    self.assertEqual(compare.captions()["toy_bars"], "One bar per model.")
    self.assertEqual(compare.paper()["toy value"], "3 (a paper)")
    share = compare.phase_share()  # The spec's share, renormalised.
    self.assertAlmostEqual(share["toy"] / share["forward"], 0.01 / 0.43)
    self.assertAlmostEqual(sum(share.values()), 1.0)
    results = {"a": {"toy": {"value": 2.0}}, "b": {"toy": {"value": 5.0}}}
    row = next(r for r in compare.tables(results)["seed002"]
               if r["result"] == "toy value")
    self.assertEqual((row["a"], row["b"], row["paper"]), ("2", "5", "3 (a paper)"))
    self.assertEqual(list(compare.figures(results)), ["toy_bars"])

  def test_without_the_line_it_is_gone(self):
    registry.SPECS.pop("toy")
    self.assertNotIn("toy_bars", compare.figure_names())
    self.assertNotIn("toy value", compare.paper())

  def test_reads_is_checked(self):
    with self.assertRaisesRegex(ValueError, "reads"):
      spec.Probe("bad", "weights", lambda ctx: ({}, {}))

  def test_every_probe_declares_its_figures_once(self):
    names = [f.name for p in registry.SPECS.values() for f in p.figures]
    self.assertLen(set(names), len(names))
    for p in registry.SPECS.values():
      for f in p.figures:
        self.assertNotEmpty(f.caption, f.name)


if __name__ == "__main__":
  absltest.main()
