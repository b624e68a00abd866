"""What validating a model before use costs (issue 58's goal: under 1 % of
loading SmolLM2-135M and Gemma 3 270M).

  .venv/bin/python benchmarks/load_validation.py --repeats=15

Loads each GGUF with train.models.loaders.load_gguf in interleaved pairs,
validation on and every check replaced by a no-op (same process, same warm
file cache). Reported per model (one JSON line):
  check_s         the seconds inside the checks: block count, tokenizer,
                  every tensor's finiteness (gguf_file.nonfinite_tensors: a
                  quantised tensor's float16 scales, a float tensor's
                  values), the last on a second thread beside the load;
  load_thread_s   what the load's own thread spends on them: the checks it
                  runs itself plus its wait for the second thread's answer
                  (load_thread_share: over the unvalidated load);
  added_s         the median of the pairs' load-time differences (the
                  whole effect, but this VM's noise is several times 1 %:
                  its quartiles are printed beside it).
"""

import collections
import concurrent.futures
import json
import statistics
import time
from unittest import mock

from absl import app, flags

from bottleneck.io import gguf_file, zoo
from train.models import loaders, validate

FLAGS = flags.FLAGS
flags.DEFINE_integer("repeats", 15, "Load pairs per model.")
flags.DEFINE_list("models", ["smollm2", "gemma3"], "Offline models.")

# (module, name, what its no-op returns). validate.config wraps the
# family's own config reader, which ran before validation existed (the
# range checks it adds are the configs' __post_init__: microseconds).
CHECKS = ((validate, "layer_count", None), (validate, "tokenizer", None),
          (validate, "finite", None), (gguf_file, "nonfinite_tensors", []))


class _TimedPool(concurrent.futures.ThreadPoolExecutor):
  """The loader's pool, the load thread's wait in result() added to
  SECONDS['wait']."""

  def __init__(self, *args, **kw):
    super().__init__(*args, **kw)

  def submit(self, *args, **kw):
    future = super().submit(*args, **kw)
    result = future.result

    def timed(*a, **k):
      start = time.perf_counter()
      try:
        return result(*a, **k)
      finally:
        SECONDS["wait"] += time.perf_counter() - start
    future.result = timed
    return future


SECONDS = collections.Counter()


def _instrumented(seconds):
  """Patches adding each check's seconds to seconds[name]."""
  patches = [mock.patch.object(loaders.concurrent.futures,
                               "ThreadPoolExecutor", _TimedPool)]
  for module, name, _ in CHECKS:
    real = getattr(module, name)

    def wrapper(*args, _real=real, _name=name, **kw):
      start = time.perf_counter()
      try:
        return _real(*args, **kw)
      finally:
        seconds[_name] += time.perf_counter() - start
    patches.append(mock.patch.object(module, name, wrapper))
  return patches


def _load(path, patches=()):
  for p in patches:
    p.start()
  start = time.perf_counter()
  try:
    loaders.load_gguf(path)
    return time.perf_counter() - start
  finally:
    for p in patches:
      p.stop()


def main(argv):
  del argv
  for name in FLAGS.models:
    path = zoo.path(name)
    _load(path)  # Warm the file cache and the tokenizer code.
    on, off, spent, thread = [], [], [], []
    for _ in range(FLAGS.repeats):  # Interleaved: the VM's speed drifts.
      SECONDS.clear()
      on.append(_load(path, _instrumented(SECONDS)))
      spent.append(sum(v for k, v in SECONDS.items() if k != "wait"))
      thread.append(sum(v for k, v in SECONDS.items()
                        if k not in ("wait", "nonfinite_tensors")) +
                    SECONDS["wait"])
      off.append(_load(path, [mock.patch.object(m, n, lambda *a, _v=v, **k:
                                                _v) for m, n, v in CHECKS]))
    diffs = sorted(a - b for a, b in zip(on, off))
    base = statistics.median(off)
    print(json.dumps({
        "model": name, "runs": FLAGS.repeats,
        "load_s_validated": round(statistics.median(on), 4),
        "load_s_unvalidated": round(base, 4),
        "check_s": round(statistics.median(spent), 4),
        "load_thread_s": round(statistics.median(thread), 4),
        "load_thread_share": round(statistics.median(thread) / base, 5),
        "added_s": round(statistics.median(diffs), 4),
        "added_s_quartiles": [round(diffs[len(diffs) // 4], 4),
                              round(diffs[(3 * len(diffs)) // 4], 4)]}))


if __name__ == "__main__":
  app.run(main)
