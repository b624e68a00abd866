"""Everything beyond the pure math of `bottleneck`, in packages whose
imports point one way:

  text      corpora, tokenizers, token shards
  models    model families, loaders        (imports text)
  training  the trainer, run folders       (imports models, text)
  probes    one forward per subject + text, every probe, the comparison
            (imports models, text, and training.runs to read run folders)
  report    the main job                   (imports all of the above)

Binaries: python -m train.main | sample | probe | compare | export | report.
"""
