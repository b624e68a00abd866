"""pytest runs the absltest cases: absl flags must count as parsed.

It also orders the collection for `pytest -n 2 --dist worksteal` (the
README's test command): worksteal hands each worker one contiguous half of
the list and later steals from the tails, so a long test collected late
could start last and leave the other worker idle for a minute. The
heaviest tests (tens of seconds each from empty caches) go first in each
half, split so the halves carry about equal work, and tests that compile
the same programs or build the same data caches run one after another on
one worker (the second then hits XLA's persistent cache). Order only:
every test still runs, each in its own state.
"""

from absl import flags
from absl.testing import absltest  # noqa: F401  (defines --test_tmpdir)

if not flags.FLAGS.is_parsed():
  flags.FLAGS.mark_as_parsed()

# Substrings of node ids, heaviest first within each half (seconds from
# empty caches on a 2-core CPU).
FIRST_HALF = (
    "small_04_gradient_bottleneck",  # 63 s: probe model, low-rank, SpamLang
    "test_tiny_report_training_and_probe_sections",  # 52 s: the same runs
    "small_05_probability_encoding",  # 22 s: the same probe model
    "small_03_train_small_lm",  # 16 s: Model 1, as the report's `training`
    "test_two_processes_match_one",  # 27 s
    "test_sigkill_then_restart_reproduces_the_losses",  # 17 s
)
SECOND_HALF = (
    "test_tiny_report_paper_one_sections",  # 69 s: bounds and LP sections
    "small_02_topm_lp",  # 30 s: the LP sweeps
    "test_offline_llms_load_and_predict_english",  # 46 s: SmolLM2, Gemma 3
    "small_06_real_llm",  # 34 s: SmolLM2
    "test_real_llm_section_compares_two_small_ggufs",  # 29 s
    "test_ctrl_c_is_one_line_and_exit_130",  # 17 s
)


def _rank(item, names):
  return next((k for k, name in enumerate(names) if name in item.nodeid),
              None)


def pytest_collection_modifyitems(items):
  if len(items) < 2 * (len(FIRST_HALF) + len(SECOND_HALF)):
    return  # A few selected tests: the order does not matter.
  halves = ([], [])
  rest = []
  for item in items:
    for half, names in zip(halves, (FIRST_HALF, SECOND_HALF)):
      rank = _rank(item, names)
      if rank is not None:
        half.append((rank, item))
        break
    else:
      rest.append(item)
  first, second = ([item for _, item in sorted(h, key=lambda p: p[0])]
                   for h in halves)
  cut = max(0, len(items) // 2 - len(first))
  items[:] = first + rest[:cut] + second + rest[cut:]
