"""Imports point one way (issue 61): what a layer may not pull in, checked
in a fresh interpreter (sys.modules after importing the layer)."""

import ast
import os
import subprocess
import sys

from absl.testing import absltest, parameterized

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LP_CERTIFY = ("enclosure", "facts", "polish", "certificates", "verdicts",
              "bracket", "exact")
LP_DRIVER = ("driver", "stream", "host_checks", "chains", "chain_feed",
             "transitions", "finish", "mehrotra", "records")
LP_SPEED = ("placement", "precompile", "device_checks", "device_kernels",
            "ipm")


def modules(packages=("bottleneck", "train", "configs"), root=ROOT
            ) -> dict[str, str]:
  """Module name -> its file, for every .py file under `packages`."""
  files = {}
  for package in packages:
    for folder, _, names in os.walk(os.path.join(root, package)):
      for name in names:
        if name.endswith(".py"):
          rel = os.path.relpath(os.path.join(folder, name), root)[:-3]
          module = rel.replace(os.sep, ".").removesuffix(".__init__")
          files[module] = os.path.join(folder, name)
  return files


def import_graph(packages=("bottleneck", "train", "configs"), root=ROOT,
                 lazy: bool = True):
  """Module -> the project's modules it imports. `lazy`: every import
  statement, inside functions and methods too (they run when called);
  else the ones that run when it is imported (its top-level statements).
  Never those under `if TYPE_CHECKING:` (never run) or `if __name__ ==
  "__main__":` (run in a module of another name, `__main__`)."""
  files = modules(packages, root)
  graph = {}
  for module, path in files.items():
    with open(path) as f:
      body = ast.parse(f.read()).body
    package = module if path.endswith("__init__.py") else (
        module.rpartition(".")[0])
    deps, todo = set(), list(body)
    while todo:
      node = todo.pop()
      if isinstance(node, ast.If):
        test = ast.unparse(node.test)
        if "TYPE_CHECKING" not in test and "__main__" not in test:
          todo += node.body + node.orelse
      elif isinstance(node, ast.Try):
        todo += node.body + node.orelse + node.finalbody + [
            n for h in node.handlers for n in h.body]
      elif isinstance(node, ast.Import):
        for alias in node.names:  # `import a.b.c` imports a, a.b, a.b.c.
          parts = alias.name.split(".")
          deps |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)}
      elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # Relative: from the module's package upwards.
          up = package.split(".")[:len(package.split(".")) - node.level + 1]
          base = ".".join(up + ([base] if base else []))
        for alias in node.names:
          full = f"{base}.{alias.name}"
          deps.add(full if full in files else base)
      elif lazy and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                      ast.ClassDef)):
        todo += node.body
      elif lazy and isinstance(node, (ast.With, ast.AsyncWith, ast.For,
                                      ast.AsyncFor, ast.While)):
        todo += node.body + getattr(node, "orelse", [])
      elif lazy and isinstance(node, ast.Match):
        todo += [n for case in node.cases for n in case.body]
    graph[module] = {d for d in deps if d in files and d != module}
    if "." in module:  # Importing a submodule imports its package first.
      graph[module].add(module.rsplit(".", 1)[0])
  return graph


def import_time_graph(packages=("bottleneck", "train", "configs")):
  """`import_graph` without the imports inside functions."""
  return import_graph(packages, lazy=False)


def cycles(graph) -> list[list[str]]:
  """The strongly connected components of more than one module."""
  order, low, stack, found = {}, {}, [], []

  def visit(v):
    order[v] = low[v] = len(order)
    stack.append(v)
    for w in graph[v]:
      if w not in order:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in stack:
        low[v] = min(low[v], order[w])
    if low[v] == order[v]:
      component = []
      while True:
        w = stack.pop()
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for v in graph:
    if v not in order:
      visit(v)
  return found


def loaded_after(modules: list[str]) -> set[str]:
  code = ("import sys\n" + "".join(f"import {m}\n" for m in modules) +
          "print('\\n'.join(sorted(sys.modules)))")
  out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                       capture_output=True, text=True).stdout
  return set(out.split())


class LayersTest(parameterized.TestCase):

  @parameterized.named_parameters(
      # The probes restore a run's parameters through its model and state
      # shapes, never through the training loop.
      ("probes_not_the_trainer",
       ["train.probes.subjects", "train.probes.encoding",
        "train.probes.compare"], ["train.training.trainer"]),
      # The LP's layers (bottleneck/lp/__init__.py): the algorithm knows
      # none of the others; certification neither the driver nor the
      # accelerator-only speed.
      ("lp_algorithm", [f"bottleneck.lp.{m}" for m in
                        ("instances", "rotation", "admm_state", "admm_step",
                         "admm")],
       [f"bottleneck.lp.{m}" for m in LP_CERTIFY + LP_DRIVER + LP_SPEED]),
      ("lp_certification", [f"bottleneck.lp.{m}" for m in LP_CERTIFY],
       [f"bottleneck.lp.{m}" for m in LP_DRIVER + LP_SPEED]),
      # The pure math does not know the trainer, the probes or the report.
      ("bottleneck_alone", ["bottleneck.topm", "bottleneck.gradient",
                            "bottleneck.encoding", "bottleneck.stats"],
       ["train", "configs"]),
  )
  def test_layer_does_not_import(self, layer, forbidden):
    loaded = loaded_after(layer)
    bad = sorted(m for m in loaded for f in forbidden
                 if m == f or m.startswith(f + "."))
    self.assertEmpty(bad, f"{layer} pulled in {bad}")

  def test_no_import_cycle(self):
    # None at all, the imports inside functions included (a lazy import
    # back is a cycle that waits for its first call).
    graph = import_graph()
    self.assertIn("bottleneck.lp.admm_state", graph["bottleneck.lp.admm"])
    self.assertIn("bottleneck.lp.placement",  # Inside driver._placement.
                  graph["bottleneck.lp.driver"])
    found = cycles(graph)
    self.assertEmpty(found, "import cycles (each: the modules that import "
                     "each other, lazy imports included): " + "; ".join(
                         " <-> ".join(c) for c in found))
    self.assertEmpty(cycles(import_time_graph()))
    # The check sees one: two modules importing each other at import time.
    self.assertEqual(cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}),
                     [["a", "b"]])

  def test_a_lazy_import_back_is_a_cycle(self):
    # The shape train/text had: tokenizers imported vocab inside a
    # function, vocab imported tokenizers at the top.
    root = self.create_tempdir().full_path
    os.makedirs(os.path.join(root, "pkg", "sub"))
    sources = {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/tokenizers.py": ("def _gguf():\n"
                                  "  from pkg.sub import vocab\n"
                                  "  return vocab\n"),
        "pkg/sub/vocab.py": "from pkg.sub import tokenizers\n",
        "pkg/sub/data.py": ("class Loader:\n"
                            "  def load(self):\n"
                            "    with open('x'):\n"
                            "      from . import tokenizers\n"),
    }
    for name, text in sources.items():
      with open(os.path.join(root, name), "w") as f:
        f.write(text)
    lazy = import_graph(("pkg",), root)
    self.assertEqual(cycles(lazy), [["pkg.sub.tokenizers", "pkg.sub.vocab"]])
    self.assertIn("pkg.sub.tokenizers", lazy["pkg.sub.data"])
    self.assertEmpty(cycles(import_graph(("pkg",), root, lazy=False)))

  def test_the_trainer_never_imports_configs(self):
    # train/training is the trainer: a run's config comes in as an
    # argument; the experiments' configs are the report's (lazy imports
    # included).
    graph = import_graph()
    bad = sorted((m, d) for m, deps in graph.items()
                 if m.startswith("train.training") for d in deps
                 if d == "configs" or d.startswith("configs."))
    self.assertNotEmpty([m for m in graph if m.startswith("train.training.")])
    self.assertEmpty(bad, f"train/training imports configs: {bad}")

  def test_a_cpu_solve_runs_with_the_accelerator_layer_deleted(self):
    # Its modules made unimportable (as if deleted): a CPU solve still
    # decides every instance, its verdicts certified as usual.
    blocked = [f"bottleneck.lp.{m}" for m in LP_SPEED]
    code = ("import os, sys\n"
            "for name in os.environ.copy():\n"
            "  if name.startswith('BOTTLENECK_DEVICE'): os.environ.pop(name)\n"
            f"for name in {blocked!r}: sys.modules[name] = None\n"
            "from bottleneck import topm\n"
            "from bottleneck.io import matrices\n"
            "out = topm.sweep(matrices.random(400, 16, 0), [3, 6], 10,\n"
            "                 batch=4, finish_after=100)\n"
            "print(sum(r['feasible'] + r['infeasible'] for r in out))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         capture_output=True, text=True)
    self.assertEqual(out.returncode, 0, out.stderr[-2000:])
    self.assertEqual(out.stdout.split()[-1], "20")

  def test_the_driver_knows_the_accelerator_layers_overrides(self):
    from bottleneck.lp import driver, placement  # pylint: disable=g-import-not-at-top
    self.assertEqual(driver.ACCELERATOR_OVERRIDES, placement.OVERRIDES)

  def test_a_cpu_solve_never_loads_the_accelerator_layer(self):
    # The driver imports lp.device_checks (and lp.finish lp.ipm) only where
    # their work goes to a device: deleting them leaves a CPU solver.
    code = ("import os, sys\n"
            "os.environ.pop('BOTTLENECK_DEVICE_CHECKS', None)\n"
            "from bottleneck import topm\n"
            "from bottleneck.io import matrices\n"
            "out = topm.sweep(matrices.random(400, 16, 0), [3, 6], 10,\n"
            "                 batch=4, finish_after=100)\n"
            "assert sum(r['feasible'] + r['infeasible'] for r in out) == 20\n"
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    loaded = set(out.split())
    self.assertIn("bottleneck.lp.driver", loaded)
    self.assertEmpty(sorted(f"bottleneck.lp.{m}" for m in LP_SPEED
                            if f"bottleneck.lp.{m}" in loaded))


if __name__ == "__main__":
  absltest.main()
