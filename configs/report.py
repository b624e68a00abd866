"""The main job: one report of every reproduced result (`python -m train.report`).

Scales (the `--scale` flag of train.report picks one):
  quick  2 CPU cores, ~11 minutes (11.4 measured on 2026-11-21, sections
         timed in the report); GPT-2-size closed forms and simulation
         (projected sampler), small sign-rank sweeps, CPU-sized LPs and
         small trained models.
  paper  the papers' sizes, for a GPU/TPU: Figure 5 with the materialised
         matrix, larger sweeps.
  tiny   seconds; what the test suite runs.

Launch:
  python -m train.report --scale=quick --outdir=report
Expected (quick): Table 1 reproduced on 22/22 rows by the Gumbel form;
Figure 5 simulation m* = 28 +- 1 at 0.99 against 26 (closed form) and 28
(row-space exact law); the sign-rank construction certified in float64 for
every subset of the exhaustive cases; LP m* ~ d/5 (Figures 1 and 3), the
'probs' curve slightly left of 'logits', natural and uniform targets alike,
MiniLM's trained matrix close to a random one of its size.
"""

from ml_collections import config_dict


def get_config(scale: str = "quick") -> config_dict.ConfigDict:
  if scale not in ("tiny", "quick", "paper"):
    raise ValueError(f"`scale` must be 'tiny', 'quick' or 'paper'; got "
                     f"{scale!r}.")
  tiny, paper = scale == "tiny", scale == "paper"
  c = config_dict.ConfigDict()
  c.scale = scale  # Name of this preset, recorded in the report.
  c.seed = 0  # Base seed of every random draw in the report.
  c.threshold = 0.99  # m* = largest m whose probability stays >= threshold.

  # Figure 5 / Appendix B: row-space simulation vs the closed forms.
  c.figure5 = config_dict.ConfigDict()
  c.figure5.N = 2000 if tiny else 50257  # Vocabulary (rows of A).
  c.figure5.d = 64 if tiny else 768  # Width (columns of A).
  c.figure5.m = "2..10" if tiny else ("16..40" if paper else "20..36")
  c.figure5.trials = 300 if tiny else (2000 if paper else 800)  # Per m.
  # 'projected' samples the other logits from their exact law (fast);
  # 'matrix' materialises A (the literal experiment).
  c.figure5.method = "matrix" if paper else "projected"
  # A cross-check with the other method on fewer trials (0 to skip).
  c.figure5.check_trials = 40 if tiny else (400 if paper else 20)

  # Proposition 2 / eq. (17): prescribed probabilities on a random matrix.
  c.prescribed = config_dict.ConfigDict()
  c.prescribed.N = 3000 if tiny else 50257  # Vocabulary.
  c.prescribed.d = 128 if tiny else 768  # Width.
  c.prescribed.m = "4,8,16" if tiny else "10,20,26,40,60"  # Subset sizes.
  c.prescribed.subsets = 3 if tiny else (20 if paper else 5)  # Per m.
  c.prescribed.eps = 0.05  # Relative logit gap of Prop. 2 (paper: 0.05).
  c.prescribed.delta = 0.1  # Allowed mass off the subset (paper: 0.1).

  # Corollary 3: sign-rank construction, float64 certification.
  c.signrank = config_dict.ConfigDict()
  # Exhaustive (N, m) cases: every m-subset is checked.
  c.signrank.exhaustive = ([(7, 2), (10, 3)] if tiny else
                           [(7, 2), (10, 3), (13, 4), (16, 5), (19, 6)])
  c.signrank.m = [2, 4, 8] if tiny else [2, 4, 8, 16, 24, 32, 48, 64]
  c.signrank.N = [1000] if tiny else [1000, 50257]  # Plus N = 3m + 1.
  c.signrank.subsets = 5 if tiny else (100 if paper else 20)  # Random, per m.
  # Exact-margin-only sizes (no float64 matrix): the paper's GPT-2 figure.
  c.signrank.exact_only = ([] if tiny else
                           [(50257, 128), (50257, 256), (50257, 383)])
  # Random Gaussian N x (2m+1) matrices, for comparison (trials per m).
  c.signrank.random_trials = 20 if tiny else 100

  # Section 6: the top-m LP (bottleneck.topm), shared solver fields.
  def lp_block(**fields):
    b = config_dict.ConfigDict()
    b.eps = 0.05  # Prescribed-probability gap (paper: 0.05).
    b.delta = 0.1  # Mass allowed off the subset (paper: 0.1).
    b.max_iters = 5000  # ADMM cap; instances still open are 'undecided'.
    b.batch = 64 if paper else 32  # LP instances iterated together.
    b.exact_fallback = False  # Settle undecided ones with HiGHS (slow).
    b.update(fields)
    return b

  # Figure 1: random OPM, equal logits ('logits') and prescribed 'probs'.
  c.figure1 = lp_block(
      N=1000 if tiny else (50257 if paper else 8192),  # Vocabulary.
      d=32 if tiny else (768 if paper else 256),  # Width.
      m="2..12:2" if tiny else ("5..150:5" if paper else "10..90:10"),
      trials=6 if tiny else (100 if paper else 20),  # Subsets per m.
      problems=("logits", "probs"))  # Which LPs to draw.
  # Figure 3: LP m* against d at fixed N, and against N at fixed d.
  c.figure3 = lp_block(
      N_fixed=600 if tiny else (32000 if paper else 2000),
      d_values=[16, 24] if tiny else ([128, 256, 512, 1024, 2048] if paper
                                      else [32, 64, 128, 256]),
      d_fixed=16 if tiny else (1000 if paper else 64),
      N_values=[300] if tiny else ([2000, 4000, 8000, 16000, 32000]
                                   if paper else [250, 500, 1000, 2000]),
      trials=5 if tiny else (100 if paper else 20))  # Subsets per probe.
  # Appendix D: natural next-word probabilities vs uniform targets.
  c.natural = lp_block(
      N=1000 if tiny else (50257 if paper else 8192),
      d=32 if tiny else (768 if paper else 256),
      m="2..8:3" if tiny else ("10..120:10" if paper else "20..70:10"),
      trials=4 if tiny else (100 if paper else 20),
      contexts=200,  # Most frequent context words kept.
      files=2 if tiny else 10)  # Shakespeare plays read.
  # Trained vs random OPMs of the same size (specs of bottleneck.matrices).
  c.trained = lp_block(
      matrices=("minilm",),  # Add e.g. 'hf:/path/to/gpt2' when available.
      m="40,80" if tiny else ("20..160:10" if paper else "30..70:5"),
      trials=2 if tiny else (100 if paper else 10))

  # Seed 004: thesis architectures trained briefly on the embedded default.
  c.training = config_dict.ConfigDict()
  c.training.runs = (tuple(f"model{i},cpu" for i in range(1, 9)) if paper
                     else ("model1,cpu",))  # configs/thesis.py names.
  c.training.steps = 20 if tiny else (3000 if paper else 500)  # Per run.
  c.training.stories = 3 if tiny else 5  # Held-out stories completed.
  c.training.tokens = (10,) if tiny else (10, 20)  # Completion lengths.

  # Trained-head probes (seeds 002, 003; seed 001 App. A, D, E). Subject:
  # Model 1's architecture on Shakespeare with a 4096-token BPE (D/V = 1/64).
  c.probes = config_dict.ConfigDict()
  c.probes.steps = 16 if tiny else (3000 if paper else 400)  # Its training.
  c.probes.windows = 4 if tiny else 64  # Text windows probed (x block size).
  c.probes.edit_tokens = 3 if tiny else 10  # Tokens edited (Algorithm 1).
  c.probes.hf_dir = ""  # An HF GPT-2 folder to probe as well (real LMs).
  c.probes.lp_N = 1000 if tiny else (50257 if paper else 8192)  # App. D LP.
  c.probes.lp_d = 32 if tiny else (768 if paper else 256)
  c.probes.lp_m = "2,6" if tiny else ("10..120:10" if paper else "20..60:10")
  c.probes.lp_trials = 3 if tiny else (100 if paper else 12)

  # Seed 002 Fig. 1: low-rank heads on one backbone (configs/lowrank.py).
  c.lowrank = config_dict.ConfigDict()
  c.lowrank.ranks = (2, 64) if tiny else ((2, 4, 8, 16, 32, 64) if paper
                                           else (2, 8, 64))  # D values.
  c.lowrank.steps = 10 if tiny else (3000 if paper else 200)

  # Seed 002 Fig. 14: SpamLang over V for a low-rank and a full head.
  c.spamlang = config_dict.ConfigDict()
  c.spamlang.vocabs = (32,) if tiny else (32, 256, 2048)  # V values.
  c.spamlang.ranks = (2, 64)  # D = 2 and full width (64).
  c.spamlang.steps = 10 if tiny else (3000 if paper else 120)
  return c
