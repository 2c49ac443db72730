// Package gretriever is G-Retriever (He et al. 2024; seed 004 and anchors §C): a
// retrieved subgraph is encoded by a Graph Transformer, mean-pooled, projected into
// the embedding space of a frozen decoder LM and spliced into its input as one soft
// "graph token", followed by the textualised subgraph and the question; only the
// encoder and the projector are trained, by next-token cross-entropy on the answer
// through the frozen LM (models/lm). Variants reproduce seed 004's ablations: the graph
// token without the textualised subgraph, and a linear projection of mean-pooled node
// embeddings in place of the encoder.
//
// The subgraph itself (PCST over the index) and its node/edge features come from the
// caller (package retrieve); this package sees a kernels.Graph and its text.
package gretriever

import (
	"fmt"

	"github.com/graphloom/graphloom/models"
)

// Kind names G-Retriever checkpoints and executables.
const Kind = "gretriever"

// Variants (Config.Variant).
const (
	// VariantGRetriever is the paper's model: Graph Transformer + MLP projector, graph
	// token followed by the textualised subgraph and the question.
	VariantGRetriever = "g-retriever"
	// VariantGraphTokenOnly drops the textualised subgraph: graph token + question
	// (G-Retriever's "w/o textualized graph"; seed 004 Table 3 "without").
	VariantGraphTokenOnly = "graph-token-only"
	// VariantLinear replaces the encoder and the MLP by one linear projection of the
	// mean-pooled node embeddings (seed 004 Table 3 "Linear"), with the text.
	VariantLinear = "linear"
	// VariantLinearTokenOnly is VariantLinear without the textualised subgraph.
	VariantLinearTokenOnly = "linear-graph-token-only"
)

// Variants lists the variant names.
var Variants = []string{VariantGRetriever, VariantGraphTokenOnly, VariantLinear, VariantLinearTokenOnly}

// Config holds every knob of the model and its training. DefaultConfig gives
// G-Retriever's values (src/config.py, src/model/graph_llm.py; anchors §C.3–C.5).
//
// Deviations: sequences are right-padded (G-Retriever left-pads; the outputs are the
// same because rotary positions come from the padding mask). Resuming with the
// trainer's state (TrainOptions.State: train gretriever's last.state) continues
// exactly; without it, from the weights and the step alone (AdamW's moments afresh).
type Config struct {
	Variant string `json:"variant"` // one of Variants; default VariantGRetriever

	// GT is the encoder (variants g-retriever, graph-token-only): 4 layers, 4 heads,
	// hidden = output = the node embedding width, edge features = the edge-text
	// embeddings, dropout 0. InputDim and EdgeDim are the index's embedding width.
	GT models.GTConfig `json:"gt"`
	// ProjectorHidden is the projector's middle width: Linear(d→2048) → Sigmoid →
	// Linear(2048→LM hidden).
	ProjectorHidden int `json:"projector_hidden"`
	// LMHidden is the frozen LM's embedding width (set from the LM; checked on load).
	LMHidden int `json:"lm_hidden"`

	// PromptFormat is how the user turn is written (lm.PromptFormats): the LM's own
	// chat template (lm.PromptTemplate), or a built-in format for base models —
	// lm.PromptLlama2 is G-Retriever's BOS "[INST]" … "[/INST]" (src/model/graph_llm.py,
	// read by Llama-2). The graph token opens the user turn: the rendered text up to
	// the user's content, the graph token, the textualised subgraph and the question,
	// then the rest of the rendered prompt (the turn's end and the assistant's
	// opening); the label is the answer and the turn's end (see ChatTurn). Empty: the LM's chat
	// template when it has one (seed 004's Qwen2.5-3B-Instruct), else llama2. New
	// stores the resolved format, so a reload prompts as training did; checkpoints
	// written before the field read as llama2.
	PromptFormat string `json:"prompt_format"`
	// ChatTurn says how a chat template's turn is written (PromptTemplate only):
	// ChatTurnAnswer (new models) renders it with enable_thinking false — a direct
	// answer: Qwen3's template then opens the assistant's turn with an empty think
	// block, as it writes a finished answer — strips the content's white space where
	// the template trims it (Llama 3), and ends the label as the template ends an
	// assistant's turn (Llama 3's <|eot_id|>, not tokenizer_config.json's
	// eos_token <|end_of_text|>); generation stops there too. "" (checkpoints written
	// before the field): no template variables, the label ends with eos_token.
	ChatTurn string `json:"chat_turn,omitempty"`
	// Question formats the question: "Question: %s\nAnswer: " (WebQSP).
	Question string `json:"question"`
	// TextForm is how the subgraph is written for the LM: TextCSV, G-Retriever's node
	// and edge tables (default), or TextVerbal, SelfGraphRAG's "v_i [r] v_j" lines, the
	// form its GraphLM is trained on. Empty (checkpoints written before the field)
	// means TextCSV.
	TextForm string `json:"text_form"`
	// MaxTextTokens truncates the textualised subgraph's tokens; max_txt_len 512.
	MaxTextTokens int `json:"max_text_tokens"`
	// LoRA, when > 0, is the rank of G-Retriever's LoRA variant: trainable low-rank
	// adapters in the frozen LM (lm.DefaultLoRA: α 16, dropout 0.05 on q_proj and
	// v_proj, as src/model/graph_llm.py), trained with the encoder and projector and
	// saved with them (and alone, in PEFT's layout, by `graphloom train`). 0 = the
	// LM stays frozen (G-Retriever's default).
	LoRA int `json:"lora,omitempty"`
	// MaxNewTokens bounds generated answers (and truncates training labels); 32.
	// Answers are decoded greedily, so evaluations repeat exactly. A deviation:
	// graph_llm.py calls transformers' generate(), which decodes as the LM's
	// generation_config.json says (sampling, for Llama 3.x and Qwen Instruct models).
	MaxNewTokens int `json:"max_new_tokens"`
	// GradientCheckpointing recomputes each LM layer's activations in the backward
	// pass instead of keeping them (lm.Model.HiddenCheckpointed, as transformers'
	// gradient_checkpointing_enable): the same gradients, about one more forward pass
	// of the LM per step, and a step's memory grows by one layer's input per layer
	// instead of all its activations. On by default here; the reference train.py
	// keeps every activation (PyTorch's default), which at Qwen2.5-0.5B's shapes
	// (B 4, T 512) costs ≈ 0.67 GiB per layer on the pure-Go backend. Checkpoints
	// written before the field read false.
	GradientCheckpointing bool `json:"gradient_checkpointing,omitempty"`

	// Training (src/config.py, train.py, src/utils/lr_schedule.py): AdamW lr 1e-5,
	// weight decay 0.05, batch 8, 10 epochs, 1 warm-up epoch, half-cycle cosine to
	// 5e-6, gradient clip norm 0.1, early stopping after 2 epochs without a lower
	// validation loss, evaluation batch 16, seed 0. As in train.py, the optimizer steps
	// after every batch (no gradient accumulation) and GradSteps (2) paces the
	// learning rate: it is set after batches s of an epoch with (s+1) % GradSteps == 0,
	// from the fractional epoch epoch + s/len(loader), and held in between (the first
	// batch runs at the initial lr). Two deviations: an epoch's last, partial batch is
	// trained on (train.py's loader drops it, drop_last=True; small training sets
	// would otherwise lose up to BatchSize−1 questions an epoch), and the validation
	// loss is the mean over every answer token of the held-out questions, in batches
	// of 16, where train.py averages its batches' means (batches of BatchSize).
	LearningRate    float64 `json:"lr"`
	MinLearningRate float64 `json:"min_lr"`
	WeightDecay     float64 `json:"weight_decay"`
	BatchSize       int     `json:"batch_size"`
	GradSteps       int     `json:"grad_steps"`
	Epochs          int     `json:"epochs"`
	WarmupEpochs    int     `json:"warmup_epochs"`
	ClipNorm        float64 `json:"clip_norm"`
	Patience        int     `json:"patience"`
	EvalBatchSize   int     `json:"eval_batch_size"`
	Seed            uint64  `json:"seed"`
}

// ChatTurnAnswer is Config.ChatTurn's current form.
const ChatTurnAnswer = "answer"

// Text forms of Config.TextForm (the values of retrieve.PCSTTextCSV and
// retrieve.PCSTTextVerbal).
const (
	TextCSV    = "csv"
	TextVerbal = "verbal"
)

// DefaultConfig returns G-Retriever's settings for node/edge embeddings of width dim.
func DefaultConfig(dim int) Config {
	gt := models.DefaultGTConfig()
	gt.InputDim, gt.Hidden, gt.Out, gt.EdgeDim = dim, dim, dim, dim
	return Config{
		Variant: VariantGRetriever, GT: gt, ProjectorHidden: 2048,
		ChatTurn: ChatTurnAnswer, Question: "Question: %s\nAnswer: ", TextForm: TextCSV, MaxTextTokens: 512, MaxNewTokens: 32, GradientCheckpointing: true,
		LearningRate: 1e-5, MinLearningRate: 5e-6, WeightDecay: 0.05, BatchSize: 8, GradSteps: 2, Epochs: 10,
		WarmupEpochs: 1, ClipNorm: 0.1, Patience: 2, EvalBatchSize: 16,
	}
}

// encoder reports whether the variant runs the Graph Transformer (else the linear
// projection of mean-pooled node features).
func (c Config) encoder() bool {
	return c.Variant == VariantGRetriever || c.Variant == VariantGraphTokenOnly
}

// WithText reports whether the variant feeds the textualised subgraph to the LM.
func (c Config) WithText() bool { return c.Variant == VariantGRetriever || c.Variant == VariantLinear }

// Validate checks the configuration.
func (c Config) Validate() error {
	known := false
	for _, v := range Variants {
		known = known || v == c.Variant
	}
	switch {
	case !known:
		return fmt.Errorf("gretriever: variant %q: want one of %v", c.Variant, Variants)
	case c.TextForm != "" && c.TextForm != TextCSV && c.TextForm != TextVerbal:
		return fmt.Errorf("gretriever: text form %q: want %s or %s", c.TextForm, TextCSV, TextVerbal)
	case c.LoRA < 0:
		return fmt.Errorf("gretriever: LoRA rank %d < 0", c.LoRA)
	case c.ProjectorHidden < 1 || c.LMHidden < 0 || c.MaxTextTokens < 0 || c.MaxNewTokens < 1:
		return fmt.Errorf("gretriever: need ProjectorHidden ≥ 1, MaxTextTokens ≥ 0, MaxNewTokens ≥ 1 (got %d, %d, %d)", c.ProjectorHidden, c.MaxTextTokens, c.MaxNewTokens)
	case !(c.LearningRate > 0) || c.MinLearningRate < 0 || c.MinLearningRate > c.LearningRate || c.WeightDecay < 0:
		return fmt.Errorf("gretriever: need 0 ≤ min lr ≤ lr, lr > 0, weight decay ≥ 0 (got %g, %g, %g)", c.MinLearningRate, c.LearningRate, c.WeightDecay)
	case c.BatchSize < 1 || c.GradSteps < 1 || c.Epochs < 1 || c.WarmupEpochs < 0 || c.WarmupEpochs >= c.Epochs+1 || c.EvalBatchSize < 1:
		return fmt.Errorf("gretriever: need batch, grad steps, epochs, eval batch ≥ 1 and 0 ≤ warm-up epochs ≤ epochs (got %d, %d, %d, %d, %d)",
			c.BatchSize, c.GradSteps, c.Epochs, c.EvalBatchSize, c.WarmupEpochs)
	case c.ClipNorm < 0 || c.Patience < 0:
		return fmt.Errorf("gretriever: clip norm and patience must be ≥ 0")
	}
	if c.encoder() {
		if err := c.GT.Validate(); err != nil {
			return fmt.Errorf("gretriever: %w", err)
		}
		if c.GT.EdgeDim != 0 && c.GT.EdgeDim != c.GT.InputDim {
			return fmt.Errorf("gretriever: edge features (%d) must have the node features' width (%d)", c.GT.EdgeDim, c.GT.InputDim)
		}
	} else if c.GT.InputDim < 1 {
		return fmt.Errorf("gretriever: node feature width %d < 1", c.GT.InputDim)
	}
	return nil
}
