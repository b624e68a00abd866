"""The main job's runner: every reproduced result in one folder.

`run(config, outdir)` calls each section (a function (config, outdir) ->
Section, one module per paper) and, after every section, rewrites
results.json (every number, each section's markdown) and report.md
(text, tables, captioned figures; marked partial until the last section is
done), so a killed or interrupted run leaves a valid partial report. Nothing
is written before the first section is done, and a run merges with the
report the folder holds: `only=[...]` re-runs those sections (all by
default) and keeps the others. A folder holding a report of another scale,
a results.json or report.md this project did not write, or a saved section
of the wrong shape (one not re-run) is refused before any work, naming
`--overwrite` (which replaces it). One overall progress line per event and
at least every 10 s: section k/n, elapsed, an ETA from per-section
estimates scaled by the time measured so far. One report per folder at a
time (a lock).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import sys
import threading
import time
from typing import NamedTuple

from bottleneck.io import cli, lock
from train.report import (ledger, lowrank, real_llm, seed001_bounds,
                          seed001_lp, seed001_lp_trained, seed001_trained,
                          seed002, seed002_theory, seed003, seed004,
                          spamlang)
from train.report import section as section_lib

class Spec(NamedTuple):
  """A report section: its function, its estimated seconds on the 2-core
  CPU at `quick` and at `full` (None: quick's), which the ETA starts from,
  and the blocks of configs/report.py it reads (None: the one named as
  the section); GLOBAL_FIELDS are read by all."""
  fn: section_lib.SectionFn
  quick_s: float
  full_s: float | None = None
  blocks: tuple | None = None


GLOBAL_FIELDS = ("seed", "threshold")  # Read by every section.


SECTIONS = {  # In report order; adding a section is one line here.
    "table1": Spec(seed001_bounds.table1, 3, blocks=()),
    "figure5": Spec(seed001_bounds.figure5, 57),
    "prescribed": Spec(seed001_bounds.prescribed_probabilities, 5, 15),
    "signrank": Spec(seed001_bounds.signrank_construction, 27),
    "figure1": Spec(seed001_lp.figure1, 50, 240),
    "figure3": Spec(seed001_lp.figure3, 25, 340),
    "natural": Spec(seed001_lp.natural_targets, 7),
    "trained": Spec(seed001_lp_trained.trained_vs_random, 38, 220),
    "training": Spec(seed004.training, 144, 1480),
    "gradient": Spec(seed002.gradient_bottleneck, 92, blocks=("probes",)),
    "gradient_theory": Spec(seed002_theory.section, 26, 200,
                           blocks=("probes",)),
    "lowrank": Spec(lowrank.section, 95, 900),
    "spamlang": Spec(spamlang.section, 123, 2100),
    "encoding": Spec(seed003.encoding_section, 23,
                    blocks=("probes", "lowrank")),
    "appendices": Spec(seed001_trained.appendices, 11, blocks=("probes",)),
    "real_llm": Spec(real_llm.real_llm, 290, 1150),
}

# Estimated seconds per section at each scale (ETA priors).
ESTIMATE_S = {
    "tiny": dict.fromkeys(SECTIONS, 10.0),
    "quick": {n: s.quick_s for n, s in SECTIONS.items()},
    "full": {n: s.full_s or s.quick_s for n, s in SECTIONS.items()},
    "paper": dict.fromkeys(SECTIONS, 600.0),
}
HEARTBEAT_S = 10.0
PRIOR_S = 120.0  # Weight of the estimates against measured section times.


def environment() -> dict:
  """Machine, versions and commit: recorded next to every number."""
  import jax  # pylint: disable=g-import-not-at-top
  here = os.path.dirname(__file__)
  git = lambda *a: subprocess.run(["git", *a], capture_output=True,
                                  text=True, check=True,
                                  cwd=here).stdout.strip()
  try:
    commit = git("rev-parse", "--short", "HEAD")
    # Tracked files changed since the commit: the numbers are not its.
    if git("status", "--porcelain", "--untracked-files=no"):
      commit += "-dirty"
  except (OSError, subprocess.CalledProcessError):
    commit = None
  return {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
      timespec="seconds"), "command": " ".join([sys.executable] + sys.argv),
          "machine": f"{platform.node()} {platform.machine()} "
                     f"{os.cpu_count()} cpus",
          "backend": jax.default_backend(),
          "devices": [str(d) for d in jax.devices()],
          "python": platform.python_version(), "jax": jax.__version__,
          "commit": commit}


def default_outdir(scale: str) -> str:
  """Each scale writes to its own folder: report (quick), report_paper..."""
  return "report" if scale == "quick" else f"report_{scale}"


def check_sections(only) -> list[str]:
  names = list(SECTIONS) if only is None else list(only)
  if not names:
    raise ValueError(f"`sections` names no section; allowed: "
                     f"{list(SECTIONS)} (or leave it out for all).")
  for name in names:
    if name not in SECTIONS:
      raise ValueError(f"`sections` entry {name!r} unknown; allowed: "
                       f"{list(SECTIONS)}.")
  return names


class Eta:
  """Overall progress: section k/n, elapsed, ETA (per-section estimates
  scaled by measured / estimated over the finished sections)."""

  def __init__(self, names, scale: str, stream=None):
    self.names, self.est = names, ESTIMATE_S.get(scale, ESTIMATE_S["quick"])
    self.stream = stream or sys.stderr
    self.start = time.perf_counter()
    self.done_est = self.done_s = 0.0
    self.current, self.current_start = None, self.start
    self.fraction = 0.0  # The current section's own progress, if it says,
    self.fraction_at = 0.0  # and when (seconds into the section).

  def total_estimate(self) -> float:
    return sum(self.est[n] for n in self.names)

  def remaining(self) -> float:
    # Measured / estimated, shrunk toward 1 by PRIOR_S of pseudo-time: one
    # short section that ran several times faster than estimated must not
    # shrink the whole ETA as much.
    ratio = (self.done_s + PRIOR_S) / (self.done_est + PRIOR_S)
    k = self.names.index(self.current) if self.current else len(self.names)
    rest = sum(self.est[n] for n in self.names[k + 1:]) * ratio
    in_section = time.perf_counter() - self.current_start
    if self.current and self.fraction > 0:
      # Its total: the estimate and the pace when it last said (t_f / f),
      # weighted by how far it was (f), counted down since.
      f, prior = self.fraction, self.est[self.current] * ratio
      total = (1 - f) * prior + self.fraction_at
      rest += max(total - in_section, 0.1 * (1 - f) * prior)
    elif self.current:
      rest += max(self.est[self.current] * ratio - in_section,
                  0.1 * self.est[self.current] * ratio)
    return rest

  def section_progress(self, fraction: float) -> None:
    self.fraction = fraction
    self.fraction_at = time.perf_counter() - self.current_start

  def line(self, what: str = "") -> str:
    k = self.names.index(self.current) + 1 if self.current else len(
        self.names)
    now = time.perf_counter()
    return (f"[report {k}/{len(self.names)} {self.current or 'done'}] "
            f"{what}{' ' if what else ''}section {now - self.current_start:.0f}"
            f"s, elapsed {_hms(now - self.start)}, ETA {_hms(self.remaining())}")

  def say(self, what: str = "") -> None:
    self.stream.write(self.line(what) + "\n")
    self.stream.flush()

  def begin(self, name: str) -> None:
    self.current, self.current_start = name, time.perf_counter()
    self.fraction = self.fraction_at = 0.0
    self.say("starting,")

  def end(self, seconds: float) -> None:
    self.done_s += seconds
    self.done_est += self.est[self.current]
    self.fraction = 1.0  # Nothing of it is left.


def _hms(seconds: float) -> str:
  m, s = divmod(int(round(seconds)), 60)
  return f"{m}m{s:02d}s" if m else f"{s}s"


def _heartbeat(eta: Eta, stop: threading.Event) -> None:
  while not stop.wait(HEARTBEAT_S):
    eta.say("running,")


def _is_number(x) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool) and (
      math.isfinite(x))


def _time_problem(name: str, section: dict) -> str | None:
  """Why `_write` or the time table cannot read a saved section, or None."""
  for field in ("title", "markdown"):
    if not isinstance(section.get(field), str):
      return f"has no {field!r} of type str"
  peak = section.get("peak_rss_gb_so_far")
  if not _is_number(section.get("seconds")) or section["seconds"] < 0 or (
      peak is not None and not _is_number(peak)):
    return (f"has 'seconds' {section.get('seconds')!r} or "
            f"'peak_rss_gb_so_far' {peak!r}, not numbers >= 0")
  models = section.get("models", {}) if name == "real_llm" else {}
  if not isinstance(models, dict):
    return "has 'models' that is not an object"
  for model, numbers in models.items():
    seconds = numbers.get("seconds", {}) if isinstance(numbers, dict) else 0
    if not (isinstance(seconds, dict) and all(map(_is_number,
                                                   seconds.values()))):
      return f"has 'models.{model}' without a 'seconds' object of numbers"
  return None


def _ours(report_md: str) -> bool:
  """Whether report.md opens as this project's reports do."""
  try:
    with open(report_md, encoding="utf-8") as f:
      return f.readline().startswith("# bottleneck report (")
  except (OSError, UnicodeDecodeError):
    return False


def config_change(name: str, saved: dict, config: dict) -> str | None:
  """The first field section `name` reads (Spec.blocks, GLOBAL_FIELDS)
  whose value differs between a saved report's config and this run's, as
  'field: saved -> now'; None when it reads none that differ."""
  blocks = SECTIONS[name].blocks
  config = json.loads(json.dumps(config))  # As saved: tuples are lists.
  for key in GLOBAL_FIELDS + ((name,) if blocks is None else tuple(blocks)):
    was, now = saved.get(key), config.get(key)
    if was != now:
      if isinstance(was, dict) and isinstance(now, dict):
        inner = next(k for k in sorted(set(was) | set(now))
                     if was.get(k) != now.get(k))
        return f"{key}.{inner}: {was.get(inner)!r} -> {now.get(inner)!r}"
      return f"{key}: {was!r} -> {now!r}"
  return None


def _load(outdir: str, scale: str, rerun=(), config: dict | None = None
          ) -> dict:
  """The sections of the folder's report, to merge with the ones this run
  makes. Refused (ValueError naming the file, the field and --overwrite)
  before any section runs: a results.json or report.md not a report's, a
  report of another scale, a section `_write` or the ledger cannot read
  (under `config`, default the saved one) unless `rerun` names it (then it
  is left out: this run replaces it)."""
  path, md = (os.path.join(outdir, f) for f in ("results.json", "report.md"))
  fix = "give a new --outdir, or --overwrite to replace it."
  if not os.path.isfile(path):
    if os.path.exists(md):
      raise ValueError(f"`outdir` {outdir!r} holds a report.md but no "
                       f"results.json (not this project's report): {fix}")
    return {}
  saved = ledger.read_results(path, fix)
  if os.path.exists(md) and not _ours(md):
    raise ValueError(f"`outdir` {md!r} was not written by this project (it "
                     f"does not open with '# bottleneck report'): {fix}")
  if saved["config"]["scale"] != scale:
    raise ValueError(
        f"`outdir` {outdir!r} holds a report at scale "
        f"{saved['config']['scale']!r}, not {scale!r}: its sections would be "
        f"dropped; give a new --outdir (the default at {scale}: "
        f"{default_outdir(scale)!r}), or --overwrite to replace it.")
  kept = {}
  for name, section in saved["sections"].items():
    why = (_time_problem(name, section) or ledger.problem(
        name, section, config or saved["config"])) if name in SECTIONS else None
    if why and name not in rerun:
      raise ValueError(f"`outdir` {path!r} is not a report's results.json "
                       f"(section {name!r} {why}): re-run it with "
                       f"--sections={name}, or --overwrite to replace it.")
    change = (config_change(name, saved["config"], config)
              if config and name in SECTIONS and not why else None)
    if change and name not in rerun:
      raise ValueError(
          f"`outdir` {outdir!r}: section {name!r} was computed with another "
          f"config ({change}): its numbers would sit beside this run's as "
          f"if of one config. Re-run it with --sections={name}, give a new "
          "--outdir, or --overwrite to replace the report.")
    if not why and not change:
      kept[name] = section
      if "commit" not in section:  # Written before sections recorded it.
        prior = (saved.get("environment") or {}).get("commit")
        section["commit"] = ledger.BEFORE + str(prior or "unknown")
  return kept


def _write(outdir, config, env, sections: dict, state: str) -> None:
  """report.md and results.json from every section present."""
  order = [n for n in SECTIONS if n in sections]
  missing = [n for n in SECTIONS if n not in sections]
  header = [f"# bottleneck report ({config.scale})",
            "Generated by `" + env["command"] + f"` on {env['machine']}, "
            f"{env['backend']} ({len(env['devices'])} devices), jax "
            f"{env['jax']}, {env['date_utc']}, "
            f"{ledger.commits_said(sections, env['commit'])}."]
  if state != "complete":
    header.append(f"**Partial report ({state})**: {len(order)} of "
                  f"{len(SECTIONS)} sections; not yet written: "
                  f"{', '.join(missing) or 'none'}.")
  ledger_rows = ledger.rows(sections, config.to_dict())
  parts = header + [ledger.markdown(ledger_rows, config.scale)]
  parts += [f"## {sections[n]['title']}\n\n{sections[n]['markdown']}"
                    f"\n\n_Section `{n}` ran in {sections[n]['seconds']:.1f}"
                    f" s{_peak(sections[n])}._" for n in order]
  if order:
    parts.append(_costs(sections, order, config.scale))
  for name, text in (("results.json", cli.to_json(
      {"version": ledger.RESULTS_VERSION, "environment": env,
       "config": config.to_dict(), "state": state, "ledger": ledger_rows,
       "sections": {
           n: sections[n] for n in order + [n for n in sections
                                            if n not in SECTIONS]}})
                       + "\n"), ("report.md", "\n\n".join(parts) + "\n")):
    cli.write_atomic(os.path.join(outdir, name), text)  # Never half a file.


# Each CPU scale's budget on the 2-core CPU (seconds, GB).
BUDGET = {"quick": (1200.0, 4.0), "full": (7200.0, 4.0)}


def _costs(sections: dict, order, scale: str) -> str:
  """Where the time and memory went: a row per section, the costliest
  phases of each real LLM, and the verdict against the scale's budget."""
  total = sum(sections[n]["seconds"] for n in order)
  peak = max(sections[n].get("peak_rss_gb_so_far") or 0.0 for n in order)
  rows = ["| section | seconds | share | peak RSS so far (GB) |",
          "|---|---|---|---|"] + [
              f"| {n} | {sections[n]['seconds']:.0f} | "
              f"{sections[n]['seconds'] / total if total else 0:.0%} | "
              f"{sections[n].get('peak_rss_gb_so_far', '-')} |"
              for n in order]
  text = [f"## Time and memory\n\n{len(order)} sections in "
          f"{_hms(total)}, peak RSS {peak:.2f} GB (10^9 bytes).", "\n".join(
              rows)]
  for name, numbers in sections.get("real_llm", {}).get("models", {}).items():
    phases = sorted(((k, v) for k, v in numbers.get("seconds", {}).items()
                     if k != "total"), key=lambda kv: -kv[1])[:4]
    text.append(f"`real_llm` on {name}: " + ", ".join(
        f"{k} {v:.0f} s" for k, v in phases) + ".")
  if scale in BUDGET and len(order) == len(SECTIONS):
    seconds, gb = BUDGET[scale]
    costliest = sorted(order, key=lambda n: -sections[n]["seconds"])[:3]
    text.append(
        f"Budget at this scale: {_hms(seconds)} and {gb:g} GB on 2 cores. "
        f"Time: {_hms(total)}, "
        + ("within it." if total <= seconds else
           f"over it by {_hms(total - seconds)}; the costliest sections are "
           + ", ".join(f"`{n}` ({sections[n]['seconds']:.0f} s)"
                       for n in costliest) + ".")
        + f" Memory: {peak:.2f} GB, "
        + ("within it." if peak <= gb else "over it."))
  return "\n\n".join(text)


def _peak(section: dict) -> str:
  gb = section.get("peak_rss_gb_so_far")
  return "" if gb is None else f"; the process's peak RSS so far {gb:.2f} GB"


def _state(sections: dict, names, done) -> str:
  """'complete', or this run's sections written so far and those still to
  run (the folder's earlier results of them shown until then)."""
  left = [n for n in names if n not in done]
  if not left and all(n in sections for n in SECTIONS):
    return "complete"
  return "sections run: " + ", ".join(done) + (
      f"; still to run: {', '.join(left)}" if left else "")


def run(config, outdir: str, only: list[str] | None = None,
        overwrite: bool = False) -> dict:
  """Runs the selected sections, merged with the folder's report (none with
  `overwrite`); rewrites results.json and report.md after each, never
  before the first is done. Ctrl-C writes the partial report (if a section
  is done) and exits with status 130."""
  names = check_sections(only)
  cli.writable_dir("outdir", outdir)
  with lock.FolderLock(outdir, "report.lock", "outdir"):
    sections = {} if overwrite else _load(outdir, config.scale, names,
                                          config.to_dict())
    env = environment()
    eta = Eta(names, config.scale)
    sys.stderr.write(f"[report] {len(names)} section(s) at scale "
                     f"{config.scale} into {outdir}/: estimated "
                     f"{_hms(eta.total_estimate())} on a 2-core CPU.\n")
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(eta, stop), daemon=True)
    beat.start()
    done = []
    with section_lib.progress_to(eta.section_progress):
      try:
        for name in names:
          eta.begin(name)
          start = time.perf_counter()
          section = SECTIONS[name].fn(config, outdir)
          cli.release_memory()  # Each section starts from a trimmed heap.
          seconds = time.perf_counter() - start
          eta.end(seconds)
          peak_gb = cli.peak_rss_gb()
          sections[name] = dict(section.numbers, seconds=seconds,
                                peak_rss_gb_so_far=round(peak_gb, 2),
                                title=section.title, markdown=section.body,
                                commit=env["commit"])
          done.append(name)
          _write(outdir, config, env, sections, _state(sections, names, done))
          eta.say(f"wrote {name} ({seconds:.0f} s, peak RSS so far "
                  f"{peak_gb:.1f} GB),")
      except (KeyboardInterrupt, SystemExit) as e:
        if isinstance(e, SystemExit) and e.code != 130:
          raise  # 130: a trainer that stopped on Ctrl-C (its own line said).
        if done:
          _write(outdir, config, env, sections,
                 "interrupted; " + _state(sections, names, done))
        sys.stderr.write(
            f"interrupted; partial report written to {outdir}/report.md "
            f"({len(sections)} of {len(SECTIONS)} sections)\n" if done else
            f"interrupted before the first section was done; {outdir}/ "
            "left as it was\n")
        raise SystemExit(130) from None
      finally:
        stop.set()
  sys.stderr.write(f"[report] wrote {outdir}/report.md and results.json in "
                   f"{_hms(time.perf_counter() - eta.start)}\n")
  return {"environment": env, "config": config.to_dict(),
          "sections": sections}
