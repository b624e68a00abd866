"""pytest runs the absltest cases: absl flags must count as parsed.

It also orders the collection for `pytest -n 3 --dist worksteal` (the
README's test command): worksteal hands each of n workers one contiguous
n-th of the list and later steals from the tails, so a long test collected
late could start last and leave the other workers idle for a minute. The
heaviest tests go first in each worker's share, grouped so the shares carry
about equal work, and tests that compile the same programs or build the
same data caches run one after another on one worker (the second then hits
XLA's persistent cache). Order only: every test still runs, each in its own
state.
"""

from absl import flags
from absl.testing import absltest  # noqa: F401  (defines --test_tmpdir)

if not flags.FLAGS.is_parsed():
  flags.FLAGS.mark_as_parsed()

# Substrings of node ids, one group per worker, heaviest first (by their
# --durations in the 3-worker suite). With n workers group i goes to
# worker i mod n.
GROUPS = (
    ("small_04_gradient_bottleneck",  # probe model, low-rank, SpamLang
     "test_tiny_report_probe_sections",  # the same probe model and sweep
     "small_05_probability_encoding",  # the same probe model
     "test_ctrl_c_is_one_line_and_exit_130"),
    ("test_two_processes_stop_resume_and_recover_like_one",
     "test_tiny_report_training_sections",  # thesis runs, SpamLang
     "small_03_train_small_lm",  # Model 1, as the report's `training`
     "test_sigkill_then_restart_reproduces_the_losses"),
    ("small_06_real_llm",  # SmolLM2
     "test_tiny_report_paper_one_sections",  # bounds and LP sections
     "test_offline_llms_load_and_predict_english",  # SmolLM2, Gemma 3
     "test_real_llm_section_compares_two_small_ggufs",
     "small_02_topm_lp"),  # the LP sweeps
)


def _rank(item, names):
  return next((k for k, name in enumerate(names) if name in item.nodeid),
              None)


def _workers(config) -> int:
  """xdist's worker count: only the workers collect (and xdist sets their
  `numprocesses` to None), so it is read from the worker's input."""
  n = getattr(config, "workerinput", {}).get("workercount")
  return n if isinstance(n, int) and n > 1 else 1


def pytest_collection_modifyitems(config, items):
  n = _workers(config)
  if n == 1 or len(items) < 4 * sum(map(len, GROUPS)):
    return  # One process, or a few selected tests: the order does not matter.
  shares = [[] for _ in range(n)]
  rest = []
  for item in items:
    for g, names in enumerate(GROUPS):
      rank = _rank(item, names)
      if rank is not None:
        shares[g % n].append((g, rank, item))
        break
    else:
      rest.append(item)
  shares = [[item for *_, item in sorted(sh, key=lambda p: p[:2])]
            for sh in shares]
  # Worksteal's initial split: each worker in turn gets len(left) // (the
  # workers left) of the items left, in order.
  bounds, left = [], len(items)
  for i in range(n):
    bounds.append(left // (n - i))
    left -= bounds[-1]
  ordered, k = [], 0
  for share, size in zip(shares, bounds):
    take = max(0, size - len(share))
    ordered += share + rest[k:k + take]
    k += take
  items[:] = ordered + rest[k:]
