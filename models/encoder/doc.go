// Package encoder runs a frozen BERT-family text encoder in GoMLX and pools its
// hidden states into sentence embeddings, as sentence-transformers does, from a local
// Hugging Face folder: config.json, the weights in *.safetensors (read tensor by
// tensor through lm.Checkpoint; bf16, f16 or f32, held as float32) or, in a folder
// saved before transformers 4.35 that has none, in pytorch_model.bin (a torch.save
// archive, readTorchState), and tokenizer.json (WordPiece, byte-level BPE or Unigram,
// lm.Tokenizer). Weights are never downloaded.
//
// Architectures (config.json model_type): "bert" (bge-*-en-v1.5, e5-*-v2,
// all-MiniLM-L6/L12-v2, gte-base/large), "roberta" (all-roberta-large-v1),
// "xlm-roberta" (bge-m3's dense part, multilingual-e5) and "mpnet" (all-mpnet-base-v2,
// multi-qa-mpnet-base-dot-v1). The forward pass is Hugging Face's BertModel /
// RobertaModel: word + absolute position + token type embeddings → LayerNorm → N ×
// post-LN layers (self-attention over the unpadded tokens → dense → residual →
// LayerNorm → dense → GELU (exact, erf) → dense → residual → LayerNorm). RoBERTa and
// XLM-R number positions from padding_idx + 1 (padding_idx = pad_token_id), as
// transformers' create_position_ids_from_input_ids does. MPNetModel is the same
// layer with its own tensor names, no token type embeddings, positions from padding
// index 1 + 1, and one table of relative attention biases shared by every layer and
// added to each head's scores: T5's bidirectional buckets of key − query position (32
// buckets, distances to 128; see relativeBucket). "distilbert" (msmarco-distilbert-*,
// multi-qa-distilbert-cos-v1, distiluse-base-multilingual-*) is DistilBertModel: the
// same post-LN layer under its own names (q_lin … out_lin, sa_layer_norm, ffn.lin1/2,
// output_layer_norm), no token types, LayerNorm epsilon fixed at 1e-12. "modernbert" (gte-modernbert-base,
// modernbert-embed-base, granite-embedding-*-r2) is transformers' ModernBertModel with
// its eager attention: pre-norm layers without biases (unless the config says so),
// q, k and v from one projection, rotary positions (rotate_half; one base for the
// global layers, one for the sliding ones), every GlobalEvery-th layer global and the
// others attending within Window/2 positions, a GeGLU MLP and a final LayerNorm
// (ModernBERTConfig, modernHidden). "nomic_bert" (nomic-embed-text-v1, -v1.5, -v2-moe) is
// Nomic's NomicBertModel, whose code lives in the model's remote code (auto_map) and is
// never run: graphloom's own implementation of it (NomicBERTConfig, flashHidden) is
// word + token type embeddings → LayerNorm → post-norm layers with q, k and v from one
// projection, rotary positions (rotate_half) and a SwiGLU MLP, without biases unless
// the config says so; nomic-embed-text-v2-moe's mixture-of-experts layers (every
// second one: a softmax router's top-k GELU experts) are computed densely, every
// expert for every token. jina-embeddings-v3 (model_type "xlm-roberta" with
// position_embedding_type "rotary", Jina's XLMRobertaLoRA, also remote code never run)
// is the same post-norm layout under its own names (mixer.Wqkv, a GELU MLP with
// biases) with one LoRA adapter per task on every linear layer and embedding table
// (JinaConfig): queries and passages are embedded with the adapters Pipeline.QueryTask
// and PassageTask name (retrieval.query and retrieval.passage by default) and those
// tasks' instructions as prompts. "new" (gte-base-en-v1.5, gte-large-en-v1.5,
// gte-multilingual-base) is Alibaba's NewModel, remote code too (GTEConfig): the same
// post-norm layout under its names (qkv_proj, o_proj, attn_ln, mlp_ln), a GeGLU MLP
// from one up_gate_proj, and rotary positions with fixed NTK scaling. "bert" with
// position_embedding_type "alibi" (jina-embeddings-v2-base-en, -small-en) is Jina's
// JinaBertModel, remote code too (JinaBERTConfig): BERT's
// post-LN layer without a position table, ALiBi biases on the attention scores
// (alibiBias), and a GEGLU MLP (JinaBertGLUMLP). Anything else
// (other model types, BERT's relative_key positions, other rotary encoders, RoPE
// scaled otherwise than these models say, other activations) is a load error naming
// architectures / model_type / the field.
//
// Decoder embedders (Qwen3-Embedding; config.json model_type llama, mistral, qwen2 or
// qwen3) run through package lm: the decoder's final-normalised hidden states are
// pooled (last token, as they are trained; mean, max, mean·√len also), see
// loadDecoder. Their "Instruct: …\nQuery:" prompts come from
// config_sentence_transformers.json or Options.QueryPrompt.
//
// Pooling follows sentence-transformers' Pooling module (1_Pooling/config.json): CLS
// token, mean, max, mean·√len, weighted mean (weights 1…n by position) or last token,
// several modes concatenated in sentence-transformers' order; include_prompt false
// leaves the prompt's tokens out of the pool. Dense modules (DenseModule) then map the
// pooled vector through their linear layers and activations; their weights are read
// from model.safetensors, or from the torch.save archive (pytorch_model.bin) older
// sentence-transformers wrote, as a plain state dict of float tensors (readTorchState). A Normalize module (2_Normalize), or a
// model compared by cosine (config_sentence_transformers.json's similarity_fn_name,
// cosine when absent), makes vectors unit length: graphloom ranks by dot product.
// config_sentence_transformers.json supplies the query and passage prompts. A plain Hugging Face folder has none of these: Options supply them
// (Options and Load's doc give the defaults).
//
// Texts are sorted by token count and run in batches padded to a few bucket shapes
// (sequence lengths lm.SeqBucket, batch sizes lm.BatchBucket), so that the number of
// compiled executables stays bounded whatever the corpus. A text longer than the
// model's maximum (sentence_bert_config.json max_seq_length, else
// max_position_embeddings less the position offset) is truncated at the end, as
// sentence-transformers truncates it; Stats counts the truncated texts.
package encoder
