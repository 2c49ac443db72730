// Package lm runs a frozen decoder-only language model (Llama 2/3.x, Mistral,
// Qwen2/2.5, Qwen3) in GoMLX, loaded from a local Hugging Face directory:
// config.json, the weights in *.safetensors (one file or shards listed by
// model.safetensors.index.json; bf16, f16 or f32, read tensor by tensor from a
// memory map and held as float32), tokenizer.json (byte-level BPE or
// SentencePiece-style BPE with byte fallback), and, when present,
// tokenizer_config.json / chat_template.jinja (the chat template, special tokens,
// add_bos_token) and generation_config.json (EOS ids). Weights are never downloaded.
//
// Prompts are rendered from the model's own chat template (ChatTemplate, with
// github.com/ardanlabs/jinja in Hugging Face's trim_blocks/lstrip_blocks mode), or a
// built-in format for base models (PromptFormats).
//
// The forward pass is the Hugging Face LlamaForCausalLM / MistralForCausalLM /
// Qwen2ForCausalLM / Qwen3ForCausalLM one: token embeddings → N × (RMSNorm →
// grouped-query attention with rotary position embeddings (rotate_half convention,
// the config's theta and RoPE scaling; q/k/v biases for Qwen2, per-head q/k RMSNorm
// for Qwen3, Mistral's sliding window) → residual → RMSNorm → SwiGLU MLP → residual)
// → RMSNorm → LM head (tied to the embeddings or not). It accepts input embeddings instead of token
// ids, so that soft-prompt vectors (G-Retriever's graph token) can be spliced into a
// prompt, and a padding mask for batched sequences.
//
// Every variable of the model is frozen (models.Freeze): training steps of a task
// that includes the model compute no gradient for it, and checkpoints do not save it.
//
// Positions come from the padding mask (cumsum(mask) − 1, as Hugging Face's generate
// computes them), so right- and left-padded batches get the positions of unpadded
// sequences; the host-side helpers (ForwardEmbeds, Generate) right-pad.
//
// Weights are held in float32 by default whatever their stored dtype (a 7B model then
// needs about 28 GB of memory), or in bf16 with Options.DType (G-Retriever runs
// Llama-2-7B in fp16): computed in bf16 on XLA, widened to float32 where used on the
// pure-Go backend.
//
// The tokenizer also reads BERT's WordPiece tokenizer.json (BertNormalizer,
// BertPreTokenizer, [CLS] … [SEP]) and RoBERTa's byte-level BPE with <s> … </s>, for
// the sentence encoders of package models/encoder, and SentencePiece Unigram files
// (XLM-RoBERTa, ALBERT, T5: the Precompiled normaliser's charsmap, Metaspace).
//
// The tokenizer is implemented here rather than with github.com/sugarme/tokenizer
// v0.3.0 (which builds with our pins): its ByteLevel pre-tokenizer drops GPT-2's
// `\s+(?!\S)` alternative (wrong ids on runs of spaces), its Split pre-tokenizer
// compiles patterns with Go's regexp (a look-ahead pattern such as Qwen2's or Llama
// 3's panics at load) and it has no ignore_merges (Llama 3). Added tokens are matched
// as tokenizers matches them (lstrip, rstrip, single_word and normalized honoured).
//
// Generation is greedy (or sampled: temperature, top-p, seed) with a key/value
// cache. Sequence lengths, cache lengths and batch sizes are padded to a few buckets
// (SeqBucket, BatchBucket) so that the number of compiled executables stays bounded.
package lm
