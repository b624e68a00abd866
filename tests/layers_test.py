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


def import_time_graph(packages=("bottleneck", "train", "configs")):
  """Module -> the project's modules it imports when it is imported (its
  top-level statements; imports inside functions and under
  `if TYPE_CHECKING:` or `if __name__ == "__main__":` run later, never, or
  in a module of another name)."""
  files = {}
  for package in packages:
    for folder, _, names in os.walk(os.path.join(ROOT, package)):
      for name in names:
        if name.endswith(".py"):
          rel = os.path.relpath(os.path.join(folder, name), ROOT)[:-3]
          module = rel.replace(os.sep, ".").removesuffix(".__init__")
          files[module] = os.path.join(folder, name)
  graph = {}
  for module, path in files.items():
    with open(path) as f:
      body = ast.parse(f.read()).body
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
        deps |= {a.name for a in node.names if a.name in files}
      elif isinstance(node, ast.ImportFrom) and node.module and not (
          node.level):
        for alias in node.names:
          full = f"{node.module}.{alias.name}"
          deps.add(full if full in files else node.module)
    graph[module] = {d for d in deps if d in files and d != module}
    if "." in module:  # Importing a submodule imports its package first.
      graph[module].add(module.rsplit(".", 1)[0])
  return graph


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
    graph = import_time_graph()
    self.assertIn("bottleneck.lp.admm_state", graph["bottleneck.lp.admm"])
    self.assertEmpty(cycles(graph))
    # The check sees one: two modules importing each other at import time.
    self.assertEqual(cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}),
                     [["a", "b"]])

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
