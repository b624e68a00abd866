"""A recorded `python -m bottleneck.topm --format=json` run, kept small.

  python3 tools/summarize_topm.py RUN.json --out=benchmarks/NAME.json \
      --log=gpu_out/log.txt --label=fig1_6000 --machine="..." \
      --date=2026-11-26 --commit=d2f6fa5 --note="..."

A run's JSON lists every instance (its subset, bounds and certificate):
7.7 MB for paper-size Figure 1. What benchmarks/RESULTS.md cites is kept
per (matrix, problem, m): the verdict counts and fractions, how many
instances ADMM, the exact finish (`ipm`) and the chains settled, the
iterations, and the seconds of the host's float64 checks. With `--log`
(tools/on_gpu.sh's log.txt), the stage `--label`'s command, wall
seconds and peak RSS, and each matrix's LP stream seconds (its last
progress line) come from the log.
"""

from __future__ import annotations

import collections
import json
import re
import sys

KEPT = ("matrix", "problem", "m", "trials", "feasible", "infeasible",
        "undecided", "fraction", "fraction_upper", "fraction_of_decided")


def summary(record: dict) -> dict:
  """One (matrix, problem, m) row of a topm run without its instances."""
  out = {k: record[k] for k in KEPT if k in record}
  sources = collections.Counter()
  iterations, seconds = 0, 0.0
  for trial in record.get("trials_detail", ()):
    sources[trial["source"]] += 1
    iterations += int(trial.get("iterations") or 0)
    seconds += float(trial.get("verify_seconds") or 0.0)
  out.update(solved_by_admm=sources["admm"], solved_by_ipm=sources["ipm"],
             carried_from_chain=sources["chain"], iterations_total=iterations,
             host_check_seconds=round(seconds, 2))
  return out


def from_log(log: str, label: str) -> dict:
  """The stage's command, wall, peak RSS and LP stream seconds per matrix
  (on_gpu.sh's `timed` lines and topm's progress lines in between)."""
  text = open(log).read()
  start = text.index(f"== {label}: ")
  end = text.index(f"[timed] {label}: ", start)
  stage = text[start:text.index("\n", end)]
  timed = re.search(r"rc (\d+), wall ([\d.]+) s, peak RSS (\d+) KiB", stage)
  stream = {}
  for name, elapsed in re.findall(
      r"^(?:\[\d+/\d+\] (.*?): )?LP instances (?:\d+)/(?:\d+) \(100%\) "
      r"elapsed ([\d.]+)s", stage, re.M):
    stream[name or "all"] = float(elapsed)
  return {"command": stage.splitlines()[0][len(f"== {label}: "):],
          "rc": int(timed[1]), "wall_seconds": float(timed[2]),
          "peak_rss_kib": int(timed[3]), "lp_stream_seconds": stream}


def main(argv):
  args = dict(a.lstrip("-").split("=", 1) for a in argv[2:])
  unknown = set(args) - {"out", "log", "label", "machine", "date", "commit",
                         "note", "command"}
  if unknown or "out" not in args or len(argv) < 2:
    raise SystemExit("usage: summarize_topm.py RUN.json --out=OUT.json "
                     "[--log=LOG --label=STAGE] [--machine= --date= "
                     f"--commit= --note= --command=] (unknown: {unknown})")
  head = {k: args[k] for k in ("command", "machine", "date", "commit", "note")
          if k in args}
  if "log" in args:
    head = {**from_log(args["log"], args.get("label", "")), **head}
  records = json.load(open(argv[1]))
  with open(args["out"], "w") as f:
    json.dump({**head, "records": [summary(r) for r in records]}, f,
              indent=1)
    f.write("\n")


if __name__ == "__main__":
  main(sys.argv)
