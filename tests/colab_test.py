"""Every notebook in colabs/ is in sync with its .py pair and executes."""

import glob
import os

from absl.testing import absltest, parameterized
import jupytext
import nbclient
import nbformat
import tests

COLABS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "colabs")
NOTEBOOKS = sorted(glob.glob(os.path.join(COLABS, "[0-9]*.ipynb")))


def _sources(nb):
  return [(c.cell_type, c.source.strip()) for c in nb.cells]


class ColabTest(parameterized.TestCase):

  def test_every_py_has_a_notebook(self):
    pys = sorted(glob.glob(os.path.join(COLABS, "[0-9]*.py")))
    self.assertNotEmpty(pys)
    self.assertEqual([p[:-3] for p in pys], [n[:-6] for n in NOTEBOOKS])

  @parameterized.named_parameters(
      (os.path.basename(p)[:-6], p) for p in NOTEBOOKS)
  def test_notebook_in_sync_and_runs_small(self, path):
    nb = nbformat.read(path, as_version=4)
    self.assertEqual(_sources(nb), _sources(jupytext.read(path[:-6] + ".py")),
                     "stale: run `python colabs/sync.py`")
    saved = dict(os.environ)
    os.environ["BOTTLENECK_SMALL"] = "1"
    # The kernel inherits this process's environment: draw inline, not Agg,
    # and one CPU device (the 8 fake ones of the tests only slow it down).
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ["XLA_FLAGS"] = tests.one_device_env()["XLA_FLAGS"]
    try:
      nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                              resources={"metadata": {"path": COLABS}}
                              ).execute()
    finally:
      os.environ.clear()
      os.environ.update(saved)
    images = sum("image/png" in o.get("data", {})
                 for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    self.assertGreaterEqual(images, 3)


if __name__ == "__main__":
  absltest.main()
