"""What validating a model before use costs (issue 58's goal: under 1 % of
loading SmolLM2-135M and Gemma 3 270M).

  .venv/bin/python benchmarks/load_validation.py --repeats=15

Loads each GGUF with train.models.loaders.load_gguf in interleaved pairs,
validation on and every check replaced by a no-op (same process, same warm
file cache). Reported per model (one JSON line):
  check_s   the seconds spent inside the checks (block count, tokenizer,
            every tensor's finiteness: a quantised tensor's float16 scales,
            a float tensor's values), and check_share = check_s over the
            unvalidated load;
  added_s   the median of the pairs' load-time differences (the whole
            effect, but this VM's noise is several times 1 %: its
            quartiles are printed beside it).
"""

import collections
import json
import statistics
import time
from unittest import mock

from absl import app, flags

from bottleneck import checks
from bottleneck.io import gguf_file, zoo
from train.models import loaders, validate

FLAGS = flags.FLAGS
flags.DEFINE_integer("repeats", 15, "Load pairs per model.")
flags.DEFINE_list("models", ["smollm2", "gemma3"], "Offline models.")

# (module, name, what its no-op returns). validate.config wraps the
# family's own config reader, which ran before validation existed (the
# range checks it adds are the configs' __post_init__: microseconds).
CHECKS = ((validate, "layer_count", None), (validate, "tokenizer", None),
          (validate, "finite", None), (gguf_file, "_scales_finite", True),
          (checks, "nonfinite_count", 0))


def _instrumented(seconds):
  """Patches adding each check's seconds to seconds[name]."""
  patches = []
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
    on, off, spent = [], [], []
    for _ in range(FLAGS.repeats):  # Interleaved: the VM's speed drifts.
      seconds = collections.Counter()
      on.append(_load(path, _instrumented(seconds)))
      spent.append(sum(seconds.values()))
      off.append(_load(path, [mock.patch.object(m, n, lambda *a, _v=v, **k:
                                                _v) for m, n, v in CHECKS]))
    diffs = sorted(a - b for a, b in zip(on, off))
    base = statistics.median(off)
    print(json.dumps({
        "model": name, "runs": FLAGS.repeats,
        "load_s_validated": round(statistics.median(on), 4),
        "load_s_unvalidated": round(base, 4),
        "check_s": round(statistics.median(spent), 4),
        "check_share": round(statistics.median(spent) / base, 5),
        "added_s": round(statistics.median(diffs), 4),
        "added_s_quartiles": [round(diffs[len(diffs) // 4], 4),
                              round(diffs[(3 * len(diffs)) // 4], 4)]}))


if __name__ == "__main__":
  app.run(main)
