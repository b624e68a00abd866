"""A real LLM (any subject spec) loaded through the family registry and run
in Flax: load time, forward tokens/s in float32 and bfloat16, perplexity of
real English and a greedy continuation, peak RSS.

  PYTHONPATH=. .venv/bin/python benchmarks/llm_forward.py --model=gemma3 \
      --out=benchmarks/gemma3_forward.json

Forward: one window of --tokens tokens of the packaged Shakespeare (BOS
first where the model uses one), jitted, compile excluded (best of 3);
perplexity on that window and on the modern paragraph of
train/probes/head.PROSE.
"""

import argparse
import json
import platform
import resource
import time

import jax
import numpy as np

from train.probes import head, subjects
from train.text import corpora


def perplexity(fn, params, ids) -> float:
  logp = jax.nn.log_softmax(fn(params, ids[None])[0], -1)
  return float(np.exp(-np.mean(np.asarray(logp)[np.arange(len(ids) - 1),
                                                 ids[1:]])))


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--model", default="smollm2")
  ap.add_argument("--out", default=None)
  ap.add_argument("--tokens", type=int, default=1024)
  args = ap.parse_args()
  out = {"model": args.model, "window": args.tokens}
  for dtype in ("float32", "bfloat16"):
    t0 = time.perf_counter()
    subject = subjects.load_subject(model=args.model, dtype=dtype)
    load_s = time.perf_counter() - t0
    tok, params = subject.tokenizer, subject.params
    fn = jax.jit(subject.model.apply)
    text = corpora.read_texts(corpora.shakespeare_files()[:1])
    bos = [] if tok.bos_id is None else [tok.bos_id]
    ids = np.array(bos + tok.encode(text[5000:60000]))[:args.tokens]
    t0 = time.perf_counter()
    jax.block_until_ready(fn(params, ids[None]))
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(3):
      t0 = time.perf_counter()
      jax.block_until_ready(fn(params, ids[None]))
      times.append(time.perf_counter() - t0)
    prose = np.array(bos + tok.encode(head.PROSE))
    out[dtype] = {
        "load_s": load_s, "first_call_s_incl_compile": first_s,
        "forward_tokens_per_s": len(ids) / min(times),
        "ppl_modern_paragraph": perplexity(fn, params, prose),
        "ppl_shakespeare_first_folio": perplexity(fn, params, ids),
        "greedy": head.continuation(subject, "The capital of France is",
                                    16)}
    out["config"] = str(subject.cfg)
    del subject, params, fn
  out.update(peak_rss_gb=resource.getrusage(  # GB (ru_maxrss: KiB)
      resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
             machine=f"{platform.node()} {platform.machine()}",
             jax=jax.__version__, backend=jax.default_backend(),
             date=time.strftime("%Y-%m-%d"))
  print(json.dumps(out, indent=1))
  if args.out:
    with open(args.out, "w") as f:
      json.dump(out, f, indent=1)


if __name__ == "__main__":
  main()
