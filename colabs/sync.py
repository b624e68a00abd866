"""Regenerates colabs/*.ipynb from their jupytext .py pairs and executes them.

  python colabs/sync.py [--small] [NAME.py ...]

The .py files are the source of truth (readable diffs); the .ipynb files are
committed executed, so their plots show on GitHub and in Colab.
"""

import glob
import os
import sys

import jupytext
import nbclient

HERE = os.path.dirname(os.path.abspath(__file__))


def build(py_path: str, execute: bool = True, timeout: int = 1200):
  nb = jupytext.read(py_path)
  if execute:
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": HERE}}).execute()
  return nb


def main(argv):
  small = "--small" in argv
  names = [a for a in argv if a.endswith(".py")]
  if small:
    os.environ["BOTTLENECK_SMALL"] = "1"
  for py_path in names or sorted(glob.glob(os.path.join(HERE, "[0-9]*.py"))):
    nb = build(py_path)
    out = os.path.splitext(py_path)[0] + ".ipynb"
    jupytext.write(nb, out)
    print("wrote", out)


if __name__ == "__main__":
  main(sys.argv[1:])
