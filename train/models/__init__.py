"""Models and their loaders: what a checkpoint is, not how it is trained.

  layers        the one RMSNorm, RoPE and attention core every family uses
  gpt           this project's trainable GPT (seed 004's models, low-rank
                heads); GPT-2 checkpoints load into it
  transformer   one llama-like decoder with switches (Llama, Mistral,
                Qwen2/3, Gemma 2/3, GPT-NeoX)
  protocol      the written interfaces: ModelConfig, Family
  families/     thin per-family mappers (config + tensor names)
  registry      HF model_type / GGUF architecture -> family
  loaders       HF folders and GGUF files -> (params, config, tokenizer)
  build         a run config's `model` block -> GPT or Transformer config
  validate      one validation of a loaded model before use
  weights       dtype, memory estimate and tree checks the loaders share
  generate      jitted decoding

Imports bottleneck and train.text only.
"""
