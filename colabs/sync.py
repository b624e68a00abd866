"""Regenerates colabs/*.ipynb from their jupytext .py pairs and executes them.

  python colabs/sync.py [--small] [--keep-outputs] [NAME.py ...]

The .py files are the source of truth (readable diffs); the .ipynb files are
committed executed, so their plots show on GitHub and in Colab.
--keep-outputs executes nothing: each .ipynb takes its .py's cells, the
outputs of cells whose source is unchanged kept (for an edit that changes
no result, such as the setup cell every notebook opens with).
"""

import glob
import os
import sys

import jupytext
from jupytext import combine
import nbclient
import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))


def build(py_path: str, execute: bool = True, timeout: int = 1200):
  nb = jupytext.read(py_path)
  if execute:
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": HERE}}).execute()
    # The setup cell's output names this machine's checkout: not committed.
    setup = next(c for c in nb.cells if c.cell_type == "code")
    setup.outputs, setup.execution_count = [], None
  return nb


def main(argv):
  small = "--small" in argv
  keep = "--keep-outputs" in argv
  names = [a for a in argv if a.endswith(".py")]
  if small:
    os.environ["BOTTLENECK_SMALL"] = "1"
  for py_path in names or sorted(glob.glob(os.path.join(HERE, "[0-9]*.py"))):
    out = os.path.splitext(py_path)[0] + ".ipynb"
    nb = build(py_path, execute=not keep)
    if keep and os.path.exists(out):
      nb = combine.combine_inputs_with_outputs(
          nb, nbformat.read(out, as_version=4))
    jupytext.write(nb, out)
    print("wrote", out)


if __name__ == "__main__":
  main(sys.argv[1:])
