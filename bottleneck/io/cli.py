"""Helpers shared by the absl binaries: lists of m, output formats, progress."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from typing import Any, Sequence

import numpy as np

FORMATS = ("json", "table", "csv", "markdown")


def parse_int_list(name: str, text: str) -> list[int]:
  """Parses '5', '1,2,8', '20..36' (inclusive) or '5..150:5', comma-joined.

  Returns the sorted distinct integers; raises ValueError naming `name`.
  """
  values: set[int] = set()
  try:
    for part in str(text).split(","):
      part = part.strip()
      if ".." in part:
        lo, rest = part.split("..", 1)
        hi, _, step = rest.partition(":")
        step = int(step) if step else 1
        if step < 1 or int(hi) < int(lo):
          raise ValueError
        values.update(range(int(lo), int(hi) + 1, step))
      else:
        values.add(int(part))
  except ValueError:
    raise ValueError(
        f"`{name}` must be integers like '20', '1,2,8', '20..36' or "
        f"'5..150:5' (inclusive ranges, optional step); got {text!r}."
    ) from None
  return sorted(values)


def writable_dir(name: str, path: str) -> str:
  """Creates folder `path` if needed; raises naming `name` if it is a file
  or cannot be written."""
  if os.path.exists(path) and not os.path.isdir(path):
    raise ValueError(f"`{name}` {path!r} is a file, not a folder.")
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as e:
    raise ValueError(f"`{name}` {path!r} cannot be created: "
                     f"{e.strerror}.") from None
  if not os.access(path, os.W_OK | os.X_OK):
    raise ValueError(f"`{name}` {path!r} is not writable.")
  return path


def output_file(name: str, path: str) -> str:
  """Checks, before any computation, that file `path` can be written (its
  folder is created); raises naming `name`."""
  if os.path.isdir(path):
    raise ValueError(f"`{name}` {path!r} is a folder, not a file.")
  folder = os.path.dirname(os.path.abspath(path))
  writable_dir(name, folder)
  if os.path.exists(path) and not os.access(path, os.W_OK):
    raise ValueError(f"`{name}` {path!r} is not writable.")
  return path


def write_atomic(path: str, text: str) -> None:
  """Writes `text` to `path` through a temporary file and a rename: a
  reader, or a run killed mid-write, never sees half a file."""
  tmp = os.path.join(os.path.dirname(path) or ".",
                     f".{os.path.basename(path)}.tmp{os.getpid()}")
  with open(tmp, "w") as f:
    f.write(text)
  os.replace(tmp, path)


def readable_text(name: str, path: str) -> str:
  """A non-empty UTF-8 text file; raises naming `name` otherwise."""
  if not os.path.isfile(path):
    raise ValueError(f"`{name}` {path!r} is not a file.")
  try:
    with open(path, encoding="utf-8") as f:
      text = f.read()
  except UnicodeDecodeError as e:
    raise ValueError(f"`{name}` {path!r} is not UTF-8 text (byte "
                     f"{e.start}: {e.reason}).") from None
  except OSError as e:
    raise ValueError(f"`{name}` {path!r} cannot be read: {e.strerror}."
                     ) from None
  if not text.strip():
    raise ValueError(f"`{name}` {path!r} is empty.")
  return path


def figure_paths(name: str, spec: str | None, figures) -> dict[str, str]:
  """Where each named figure goes: `spec` a folder (NAME.png inside) or one
  .png path when there is exactly one figure. Checked before computing."""
  if not spec:
    return {}
  figures = list(figures)
  if spec.lower().endswith(".png"):
    if len(figures) != 1:
      raise ValueError(
          f"`{name}` {spec!r} names one file, but this run draws "
          f"{len(figures)} figures ({', '.join(figures) or 'none'}): give a "
          "folder instead.")
    return {figures[0]: output_file(name, spec)}
  writable_dir(name, spec)
  return {f: os.path.join(spec, f"{f}.png") for f in figures}


def save_figures(figures: dict, paths: dict[str, str]) -> list[str]:
  """Saves the figures that have a path; closes every one."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  saved = []
  for fig_name, fig in figures.items():
    if fig_name in paths:
      fig.savefig(paths[fig_name], dpi=120, bbox_inches="tight")
      saved.append(paths[fig_name])
    plt.close(fig)
  return saved


def check_seed(name: str, seed: int) -> int:
  if not isinstance(seed, int) or seed < 0:
    raise ValueError(f"`{name}` must be an integer >= 0; got {seed!r}.")
  return seed


def _jsonable(value: Any) -> Any:
  if isinstance(value, dict):
    return {k: _jsonable(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_jsonable(v) for v in value]
  if isinstance(value, np.ndarray):
    return _jsonable(value.tolist())
  if isinstance(value, np.integer):
    return int(value)
  if isinstance(value, np.floating):
    value = float(value)
  if isinstance(value, float) and np.isnan(value):
    return None  # JSON has no NaN; None marks "undefined here".
  if isinstance(value, float) and np.isinf(value):
    return "-inf" if value < 0 else "inf"  # e.g. t* of an unbounded LP.
  if isinstance(value, np.bool_):
    return bool(value)
  return value


def to_json(obj: Any) -> str:
  return json.dumps(_jsonable(obj), indent=1)


def format_records(records: Sequence[dict], fmt: str,
                   columns: Sequence[str] | None = None) -> str:
  """Renders a list of flat dicts as json, an aligned table, csv or markdown."""
  if fmt == "json":
    return to_json(list(records))
  columns = list(columns or (records[0].keys() if records else []))
  rows = [[_cell(r.get(c)) for c in columns] for r in records]
  if fmt == "csv":
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue().rstrip("\n")
  if fmt == "markdown":  # A '|' or a newline inside a cell is escaped.
    esc = lambda v: v.replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(map(esc, columns)) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
    return "\n".join(lines)
  if fmt == "table":
    widths = [max([len(c)] + [len(r[i]) for r in rows])
              for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)
  raise ValueError(f"`format` must be one of {FORMATS}; got {fmt!r}.")


def _cell(value: Any) -> str:
  value = _jsonable(value)
  if value is None:
    return "-"
  if isinstance(value, float):
    return f"{value:.6g}"
  return str(value)


def persistent_compile_cache() -> str | None:
  """Compiled XLA programs kept across runs (the LP's loops compile for
  seconds): $JAX_COMPILATION_CACHE_DIR if set, else
  $BOTTLENECK_CACHE/jax (default ~/.cache/bottleneck/jax), programs that
  compile for 0.5 s or more unless $JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS
  says otherwise; BOTTLENECK_JAX_CACHE=0 turns it off (cold-start timings)."""
  import jax  # pylint: disable=g-import-not-at-top
  if os.environ.get("BOTTLENECK_JAX_CACHE", "1") == "0":
    return None
  path = os.environ.get("JAX_COMPILATION_CACHE_DIR") or os.path.join(
      os.environ.get("BOTTLENECK_CACHE") or os.path.join(
          os.path.expanduser("~"), ".cache", "bottleneck"), "jax")
  jax.config.update("jax_compilation_cache_dir", path)
  if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
  return path


def _last_line(error: Exception) -> str:
  """The last non-empty line of an error's message (ml_collections wraps a
  config file's own error in several)."""
  lines = [line.strip() for line in str(error).splitlines() if line.strip()]
  return lines[-1] if lines else repr(error)


def run_binary(main, define_flags) -> None:
  """absl entry point: defines flags, runs `main`, turns bad input into
  'error: ...' on stderr with exit status 2 (no traceback); a run that
  stops on non-finite numbers (FloatingPointError) exits with status 3;
  Ctrl-C prints one line and exits with status 130."""
  from absl import app, logging  # pylint: disable=g-import-not-at-top

  def wrapped(argv):
    if logging.get_verbosity() == logging.INFO:  # Default: hide JAX chatter.
      logging.set_verbosity(logging.WARNING)
    persistent_compile_cache()
    try:
      if len(argv) > 1:  # absl leaves what is not a flag in argv.
        raise ValueError(f"unexpected argument(s) {argv[1:]}: every input "
                         "is a flag, --name=value (see --help).")
      return main(argv)
    except ValueError as e:
      sys.stderr.write(f"error: {e}\n")
      sys.exit(2)
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback.
      sys.stderr.write("interrupted\n")
      sys.exit(130)
    except OSError as e:  # A file a flag names (e.g. --config) is unusable.
      sys.stderr.write(f"error: {_last_line(e)}\n")
      sys.exit(2)
    except FloatingPointError as e:
      sys.stderr.write(f"error: {e}\n")
      sys.exit(3)

  def parse_flags(argv):  # A malformed flag is bad input too: exit 2.
    from absl import flags  # pylint: disable=g-import-not-at-top
    try:
      return flags.FLAGS(argv)
    except flags.Error as e:  # Config files' own errors come as tracebacks.
      lines = [line for line in str(e).splitlines() if line.strip()]
      message = (f"{lines[0]} {lines[-1]}" if "Traceback" in str(e)
                 else str(e))
    except (AttributeError, KeyError) as e:  # --config.NAME=... overrides.
      message = (f"a --config.* flag names a field the config does not "
                 f"have: {e}")
    except OSError as e:  # A --config file that cannot be read.
      message = f"a --config file could not be loaded: {_last_line(e)}"
    sys.stderr.write(f"error: {message}\n")
    sys.exit(2)

  define_flags()
  app.run(wrapped, flags_parser=parse_flags)


def peak_rss_gb() -> float:
  """This process's peak resident memory so far in GB (10^9 bytes; Linux
  ru_maxrss is in KiB)."""
  import resource  # pylint: disable=g-import-not-at-top
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def release_memory() -> None:
  """Hands freed memory back to the OS between stages of a long run:
  Python garbage, JAX's compiled executables, and glibc's free heap pages
  (malloc_trim; without it a process's RSS keeps every earlier stage's
  peak). A no-op where libc has no malloc_trim."""
  import gc  # pylint: disable=g-import-not-at-top
  import jax  # pylint: disable=g-import-not-at-top
  gc.collect()
  jax.clear_caches()
  trim_heap()


def trim_heap() -> None:
  """glibc's free heap pages back to the OS (malloc_trim), e.g. after a
  stage's large temporaries; a no-op where libc has no malloc_trim."""
  import ctypes  # pylint: disable=g-import-not-at-top
  try:
    ctypes.CDLL("libc.so.6").malloc_trim(0)
  except (OSError, AttributeError):
    pass


def say(message: str) -> None:
  """One progress line on stderr."""
  sys.stderr.write(message + "\n")
  sys.stderr.flush()


def progress_callback(label: str, stream=None):
  """A (done, total) callback printing Progress lines, one Progress per
  distinct total (a probe's passes over two texts)."""
  bars: dict[int, Progress] = {}

  def update(done: int, total: int) -> None:
    if total not in bars:
      bars[total] = Progress(total, label, stream)
    bars[total].update(done)
  return update


class Progress:
  """Prints 'label done/total (pct) elapsed ETA' to stderr, rate-limited."""

  def __init__(self, total: int, label: str = "trials", stream=None,
               min_interval_s: float = 2.0):
    self.total, self.label = total, label
    self.stream = sys.stderr if stream is None else stream
    self.min_interval_s = min_interval_s
    self.start = time.perf_counter()
    self._last = -float("inf")

  def update(self, done: int, eta: float | None = None) -> None:
    """`eta`: the caller's own estimate of the seconds left (else the
    linear extrapolation of the time per item)."""
    now = time.perf_counter()
    interval = max(self.min_interval_s, 0.02 * (now - self.start))
    if done < self.total and now - self._last < interval:
      return  # Intervals grow with the run: ~200 lines in an hour.
    self._last = now
    elapsed = now - self.start
    if eta is None:
      eta = elapsed / done * (self.total - done) if done else float("nan")
    self.stream.write(
        f"{self.label} {done}/{self.total} ({100.0 * done / self.total:.0f}%)"
        f" elapsed {elapsed:.1f}s ETA {eta:.1f}s\n")
    self.stream.flush()
