"""Where a traced step's device time goes: a summary of a JAX profiler trace.

  python tools/trace_summary.py DIR_OR_perfetto_trace.json.gz [--steps=3]

Reads the perfetto trace that `jax.profiler.trace(dir,
create_perfetto_trace=True)` writes (benchmarks/train_throughput.py
--trace=DIR) and prints one JSON object: per device (a process named
/device:...), the kernels' summed time per step, how much of it is matrix
products (kernel names of cuBLAS / CUTLASS / XLA's GEMM fusions), the busy
time (the union of the kernels' intervals) against the span from the first
kernel to the last, and the top kernels and top JAX ops (the `long_name` /
`tf_op` / `hlo_op` argument where the trace has one) by time. On a CPU-only
trace there is no device process: it summarises the host's events instead.
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import re
import sys

GEMM = re.compile(r"gemm|xmma|cutlass|nvjet|cublas|matmul|sm90_|dot",
                  re.IGNORECASE)
OP_ARGS = ("long_name", "tf_op", "hlo_op")  # The first an event has.


def load(path: str) -> list[dict]:
  if os.path.isdir(path):
    found = sorted(glob.glob(os.path.join(path, "**", "perfetto_trace.json.gz"),
                             recursive=True))
    if not found:
      raise SystemExit(f"error: no perfetto_trace.json.gz under {path!r}")
    path = found[-1]
  with gzip.open(path) as f:
    data = json.load(f)
  return data["traceEvents"] if isinstance(data, dict) else data


def busy_us(intervals: list[tuple[float, float]]) -> float:
  """The length of the union of [start, end) intervals."""
  total, end = 0.0, float("-inf")
  for s, e in sorted(intervals):
    if e <= end:
      continue
    total += e - max(s, end)
    end = e
  return total


def op_name(event: dict) -> str:
  args = event.get("args") or {}
  for key in OP_ARGS:
    if key in args:
      # The op's path without the jit wrapper and numeric suffixes.
      return re.sub(r"\.\d+$", "", str(args[key]))[:160]
  return event["name"]


def summarise(events: list[dict], steps: int, top: int = 25) -> dict:
  names = {e["pid"]: e["args"]["name"] for e in events
           if e.get("ph") == "M" and e.get("name") == "process_name"}
  devices = [p for p, n in names.items() if "/device:" in n]
  pids = devices or list(names)
  out = {"processes": names, "steps": steps, "devices": {}}
  for pid in pids:
    xs = [e for e in events if e.get("pid") == pid and e.get("ph") == "X"
          and "dur" in e]
    if not xs:
      continue
    kernel_us = sum(e["dur"] for e in xs)
    gemm_us = sum(e["dur"] for e in xs if GEMM.search(e["name"]))
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in xs]
    by_kernel = collections.defaultdict(lambda: [0.0, 0])
    by_op = collections.defaultdict(lambda: [0.0, 0])
    for e in xs:
      by_kernel[e["name"][:120]][0] += e["dur"]
      by_kernel[e["name"][:120]][1] += 1
      by_op[op_name(e)][0] += e["dur"]
      by_op[op_name(e)][1] += 1
    rank = lambda d: [{"name": k, "ms_per_step": v[0] / steps / 1e3,
                       "calls_per_step": v[1] / steps}
                      for k, v in sorted(d.items(), key=lambda kv: -kv[1][0])
                      [:top]]
    out["devices"][names.get(pid, str(pid))] = {
        "events_per_step": len(xs) / steps,
        "kernel_ms_per_step": kernel_us / steps / 1e3,
        "gemm_ms_per_step": gemm_us / steps / 1e3,
        "busy_ms_per_step": busy_us(spans) / steps / 1e3,
        "span_ms_per_step": (max(e for _, e in spans) -
                             min(s for s, _ in spans)) / steps / 1e3,
        "arg_keys": sorted({k for e in xs[:2000]
                            for k in (e.get("args") or {})}),
        "top_kernels": rank(by_kernel), "top_ops": rank(by_op)}
  return out


def main(argv: list[str]) -> None:
  paths = [a for a in argv[1:] if not a.startswith("--")]
  flags = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--"))
  if len(paths) != 1:
    raise SystemExit("usage: trace_summary.py DIR_OR_TRACE [--steps=N]")
  steps = int(flags.get("steps", 1))
  if steps < 1:
    raise SystemExit(f"error: --steps must be >= 1; got {steps}")
  print(json.dumps(summarise(load(paths[0]), steps), indent=1))


if __name__ == "__main__":
  main(sys.argv)
