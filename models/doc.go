// Package models assembles graphloom's trainable GNNs from package kernels: layers that
// own their GoMLX variables (Linear, Embedding, RGCN, Transformer, LayerNorm,
// BatchNorm) and two architectures:
//
//   - RGCNClassifier: the CrossAug subgraph-missingness scorer shape (linear input
//     projection + node-type embedding, R-GCN layers with GELU and LayerNorm, mean‖max
//     pooling, MLP head, one logit per graph). CAGE-style encoders reuse its Embed.
//   - GraphTransformer: G-Retriever's graph encoder (TransformerConv layers with edge
//     features, BatchNorm + ReLU between layers, mean readout).
//
// Weights are created eagerly with deterministic, PyTorch/PyG-style initialisation from
// a seed, so two models built with the same config are identical. Subpackages train
// (training loop, schedules, metrics) and checkpoint (weight files) work with any
// model here; subpackage lm runs a frozen pretrained decoder LM (Llama family,
// Qwen2) that such models drive with soft prompts.
package models
