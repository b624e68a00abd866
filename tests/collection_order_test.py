"""tests/conftest.py's collection order for xdist's worksteal: a
permutation that starts each worker's share with its group of heavy
tests, read from the worker's own input (xdist sets `numprocesses` to None
on the workers, where collection happens)."""

import types

from absl.testing import absltest

from tests import conftest


def _items(n: int):
  items = [types.SimpleNamespace(nodeid=f"tests/t.py::T::test_{i}")
           for i in range(n)]
  names = [name for group in conftest.GROUPS for name in group]
  for k, name in enumerate(names):  # Heavy tests scattered through the list.
    items[n - 1 - 7 * k].nodeid = f"tests/x.py::X::{name}"
  return items


def _config(workers=None, numprocesses=None):
  c = types.SimpleNamespace(option=types.SimpleNamespace(
      numprocesses=numprocesses))
  if workers is not None:
    c.workerinput = {"workercount": workers, "workerid": "gw0"}
  return c


class OrderTest(absltest.TestCase):

  def test_each_worker_starts_with_its_group(self):
    for n, size in ((3, 902), (2, 900), (4, 301)):
      items = _items(size)
      before = sorted(i.nodeid for i in items)
      conftest.pytest_collection_modifyitems(_config(n), items)
      self.assertEqual(sorted(i.nodeid for i in items), before)
      left, start = size, 0
      for w in range(n):  # worksteal: len(left) // workers left, in order.
        first = items[start].nodeid
        groups = conftest.GROUPS[w::n]
        if groups:
          self.assertIn(groups[0][0], first, (n, w))
        share = left // (n - w)
        start, left = start + share, left - share

  def test_the_main_process_and_one_worker_keep_the_order(self):
    for config in (_config(numprocesses=3), _config(1), _config()):
      items = _items(900)
      before = [i.nodeid for i in items]
      conftest.pytest_collection_modifyitems(config, items)
      self.assertEqual([i.nodeid for i in items], before)


if __name__ == "__main__":
  absltest.main()
