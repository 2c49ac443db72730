package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/gretrieve"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/checkpoint"
	"github.com/graphloom/graphloom/models/gretriever"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/train"
	"github.com/graphloom/graphloom/retrieve"
)

// Files of a G-Retriever model directory (train gretriever --out DIR).
const (
	grBest    = "model.ckpt" // the weights of the best validation loss
	grLast    = "last.ckpt"  // the weights after the last epoch (for --resume)
	grState   = "last.state" // the trainer's state beside last.ckpt: AdamW's moments, random state, early stopping
	grLog     = "train.log.jsonl"
	grCurve   = "loss.png"
	grAdapter = "adapter" // LoRA variant: the LM's adapters in PEFT's layout
)

// lowerGCPercent sets the collector's GOGC to 25 unless the environment sets GOGC.
// An LM's weights are most of the live heap and hold no pointers: at the default 100
// garbage may grow to their size before a collection (≈ 1.8 GiB over Qwen2.5-0.5B's
// weights), while collecting more often costs little, since pointer-free buffers are
// not scanned.
func lowerGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
}

// lmDTypeFlag registers --lm-dtype on cmd.
func lmDTypeFlag(cmd *cobra.Command, dt *string) {
	cmd.Flags().StringVar(dt, "lm-dtype", "float32", "dtype the LM's weights are held in: float32, or bfloat16 (half the memory; on XLA the layers compute in bf16 as transformers' torch_dtype=bfloat16, on the pure-Go backend in float32, its bf16 products being slow)")
	limitChoices(cmd, "lm-dtype", lm.DTypeNames...)
}

// loadLM loads the frozen LM of a local Hugging Face directory into a fresh store,
// its weights and layers in dtype (an --lm-dtype choice; "" is float32).
func loadLM(dir, dtype string) (*lm.Model, error) {
	if dir == "" {
		return nil, usageError{errors.New("--lm: need a local Hugging Face model directory (config.json, *.safetensors, tokenizer.json); weights are never downloaded")}
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--lm %s: %w: want a local Hugging Face model directory (config.json, *.safetensors, tokenizer.json); weights are never downloaded", dir, err)
	}
	dt, err := lm.ParseDType(dtype)
	if err != nil {
		return nil, usageError{fmt.Errorf("--lm-dtype: %w", err)}
	}
	opts := lm.Options{DType: dt}
	if opts.DType == dtypes.BFloat16 {
		opts.ComputeDType = lm.ComputeFor(engine.ResolveBackend(""))
	}
	return lm.Load(dir, model.NewStore(), opts)
}

// gretrieverFlags are query's and eval's --model and --lm.
type gretrieverFlags struct {
	model, lm, lmDType string
	noGraphToken       bool
}

// inputs names the model files the flags read (for output guards: an output may go
// inside the model directory, not over its checkpoints).
func (g *gretrieverFlags) inputs() []inSpec {
	if g.model == "" {
		return nil
	}
	return []inSpec{{"--model " + grBest, filepath.Join(g.model, grBest)}, {"--model " + grLast, filepath.Join(g.model, grLast)}}
}

func (g *gretrieverFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&g.noGraphToken, "no-graph-token", false, "answer with the frozen LM alone, the graph token left out: the baseline a trained model must beat (retriever gretriever)")
	f.StringVar(&g.model, "model", "", "G-Retriever model directory written by 'graphloom train gretriever' (retriever gretriever)")
	f.StringVar(&g.lm, "lm", "", "local Hugging Face directory of the frozen LM the model was trained with (retriever gretriever)")
	lmDTypeFlag(cmd, &g.lmDType)
}

// Checkpoint metadata of the retrieval a G-Retriever model was trained with: the PCST
// settings its subgraphs came from, and its LM's config.json (SHA-256).
const (
	pcstMeta     = "pcst"
	lmConfigMeta = "lm_config_sha256"
)

// pcstFields are the PCST settings a model's subgraphs depend on: flag, metadata key
// and field of retrieve.Config (profile: set by --pcst-profile too).
func pcstFields(c *retrieve.Config) []struct {
	flag, key string
	val       any
	profile   bool
} {
	return []struct {
		flag, key string
		val       any
		profile   bool
	}{
		{"pcst-topk", "topk", &c.PCSTTopK, true}, {"pcst-topk-e", "topk_e", &c.PCSTTopKEdges, true},
		{"pcst-cost-e", "cost_e", &c.PCSTEdgeCost, true}, {"pcst-max-nodes", "max_nodes", &c.PCSTMaxNodes, false},
		{"", "seeds", &c.PCSTSeeds, false}, {"", "hops", &c.PCSTHops, false},
	}
}

// pcstSettings writes c's PCST settings for the checkpoint ("topk=3,topk_e=5,…").
func pcstSettings(c retrieve.Config) string {
	var parts []string
	for _, f := range pcstFields(&c) {
		switch v := f.val.(type) {
		case *int:
			parts = append(parts, fmt.Sprintf("%s=%d", f.key, *v))
		case *float64:
			parts = append(parts, fmt.Sprintf("%s=%s", f.key, strconv.FormatFloat(*v, 'g', -1, 64)))
		}
	}
	return strings.Join(parts, ",")
}

// lmConfigHash is the SHA-256 of an LM folder's config.json: the LM a model's soft
// prompt was fitted to (another path to the same model has the same).
func lmConfigHash(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// trainedRetrieval gives cfg the PCST settings the --model was trained with, for each
// one the command line leaves at its default: a model answers from subgraphs like
// those it learned from. One given explicitly that differs is kept, with a warning.
func (g *gretrieverFlags) trainedRetrieval(cmd *cobra.Command, cfg *retrieve.Config) error {
	if g.model == "" {
		return nil
	}
	h, err := checkpoint.ReadHeader(filepath.Join(g.model, grBest))
	if err != nil {
		return nil // open reports a missing or broken model
	}
	rec := map[string]string{}
	for kv := range strings.SplitSeq(h.Meta[pcstMeta], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			rec[k] = v
		}
	}
	if len(rec) == 0 {
		return nil // trained before the settings were recorded
	}
	fl := cmd.Flags()
	var differ []string
	for _, f := range pcstFields(cfg) {
		v, ok := rec[f.key]
		if !ok {
			continue
		}
		given := f.flag != "" && fl.Lookup(f.flag) != nil && (fl.Changed(f.flag) || f.profile && fl.Changed("pcst-profile"))
		switch p := f.val.(type) {
		case *int:
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("--model %s: PCST setting %s=%q: %w", g.model, f.key, v, err)
			}
			if given && *p != n {
				differ = append(differ, fmt.Sprintf("--%s %d (trained with %d)", f.flag, *p, n))
			} else if !given {
				*p = n
			}
		case *float64:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("--model %s: PCST setting %s=%q: %w", g.model, f.key, v, err)
			}
			if given && *p != x {
				differ = append(differ, fmt.Sprintf("--%s %g (trained with %g)", f.flag, *p, x))
			} else if !given {
				*p = x
			}
		}
	}
	if len(differ) > 0 {
		cmd.PrintErrf("warning: the G-Retriever model %s was trained on subgraphs from other PCST settings: %s; it answers from subgraphs unlike those it learned from\n",
			g.model, strings.Join(differ, ", "))
	}
	return nil
}

// open returns the gretriever retriever over s, the searcher of ix, running on the
// command's engine (lf.engine). A model trained on another generation of ix is
// reported to stderr as stale.
func (g *gretrieverFlags) open(s *retrieve.Searcher, ix *graphio.Index, stderr io.Writer, lf *llmFlags) (*gretrieve.Retriever, error) {
	if g.model == "" {
		return nil, usageError{errors.New("the gretriever retriever needs --model DIR (from 'graphloom train gretriever') and --lm DIR")}
	}
	l, err := loadLM(g.lm, g.lmDType)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(g.model, grBest)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--model %s: %w: want a directory written by 'graphloom train gretriever'", g.model, err)
	}
	m, meta, err := gretriever.Load(path, l)
	if err != nil {
		return nil, err
	}
	if w := kg.StaleWarning(ix, meta[kg.GenerationMeta], "the G-Retriever model "+path); w != "" {
		fmt.Fprintln(stderr, w)
	}
	if was := meta[lmConfigMeta]; was != "" {
		if now, err := lmConfigHash(g.lm); err == nil && now != was {
			fmt.Fprintf(stderr, "warning: --lm %s is not the LM the G-Retriever model %s was trained with (%s; another config.json): its graph token was fitted to that LM's embeddings\n",
				g.lm, path, meta["lm"])
		}
	}
	b, err := gretrieve.NewBuilder(s, m.Config().TextForm) // the form it was trained on
	if err != nil {
		return nil, err
	}
	eng, err := lf.engine()
	if err != nil {
		return nil, err
	}
	r, err := gretrieve.NewRetriever(b, m, eng)
	if err != nil {
		return nil, err
	}
	r.NoGraphToken = g.noGraphToken
	return r, nil
}

// withGRetriever adds the gretriever retriever to a searcher's.
type withGRetriever struct {
	*retrieve.Searcher
	gr retrieve.Retriever
}

func (w withGRetriever) Retriever(name string) (retrieve.Retriever, error) {
	if name == gretrieve.Name {
		return w.gr, nil
	}
	return w.Searcher.Retriever(name)
}

// trainGRetrieverSpec is what differs between the commands that train G-Retriever:
// `train gretriever` (any QA set, G-Retriever's CSV text by default) and `train
// selfgraphrag` (SelfGraphRAG's GraphLM: the synthetic set of 'graphloom synth',
// verbalised triples by default). Both run the same trainer.
type trainGRetrieverSpec struct {
	use, short, long, example string
	dataFlag, dataHelp        string // the training-set flag
	textForm                  string // the default --text
}

// newTrainGRetrieverCmd is `graphloom train gretriever`.
func newTrainGRetrieverCmd() *cobra.Command {
	return trainGRetrieverCmd(trainGRetrieverSpec{
		use:   "gretriever --index INDEX --train QA --lm DIR --out DIR [--val QA] [--variant V] [--resume]",
		short: "Train G-Retriever (graph encoder + projector through a frozen LM) on PCST subgraphs of the index",
		long: `Retrieve each question's PCST subgraph from the index (as 'query --retriever pcst'), encode
it with a Graph Transformer (node features: entity embeddings; edge features: relation
embeddings), project it to one soft graph token of the frozen LM in --lm, and train the
encoder and projector on the answer tokens (G-Retriever's recipe: AdamW, warm-up and
half-cycle cosine, clipping, early stopping on validation loss). QA files are any format
'graphloom eval' reads; without --val every fifth training question is held out.

--out DIR receives model.ckpt (best validation loss), last.ckpt and last.state (after every
epoch: the weights, and AdamW's moments, the random state and early stopping, from which
--resume continues exactly), train.log.jsonl, loss.png, model.lock and, with --lora, adapter/. Run the model with
'graphloom query --retriever gretriever --model DIR --lm DIR --answer'.`,
		example: `  graphloom train gretriever --index harbour.gl --train qa.json --lm ~/models/Llama-2-7b-chat-hf --out gr/
  graphloom train gretriever --index harbour.gl --train qa.json --lm LM --out gr/ --resume`,
		dataFlag: "train", dataHelp: "training questions with gold answers (any format 'graphloom eval' reads)",
		textForm: gretriever.DefaultConfig(0).TextForm,
	})
}

// newTrainSelfGraphRAGCmd is `graphloom train selfgraphrag`: SelfGraphRAG's GraphLM
// (seed 001), G-Retriever with its architecture unchanged trained on the synthetic QA of
// the same corpus graph.
func newTrainSelfGraphRAGCmd() *cobra.Command {
	return trainGRetrieverCmd(trainGRetrieverSpec{
		use:   "selfgraphrag --index INDEX --synth QA.jsonl --lm DIR --out DIR [--val QA] [--resume]",
		short: "Train SelfGraphRAG's GraphLM: G-Retriever on the synthetic QA of 'graphloom synth'",
		long: `SelfGraphRAG (seed 001) trains G-Retriever, its architecture unchanged, on questions
generated from the corpus graph itself: the two-hop and node-summary items that
'graphloom synth' writes (T^hop ∪ T^sum). This is 'train gretriever' with the synthetic set
as input and the subgraph handed to the frozen LM as verbalised "v_i [r] v_j" lines
(--text verbal, the paper's Eq. 3). As in the paper, no documents are held out: every
fifth synthetic question is the validation slice that stops training early (or --val).

--out DIR receives model.ckpt, last.ckpt, last.state, train.log.jsonl and loss.png. Answer with
'graphloom query --retriever gretriever --model DIR --lm DIR --answer'; compare with the
same frozen LM without the graph token through '--no-graph-token'.`,
		example: `  graphloom synth --index harbour.gl --out qa.jsonl
  graphloom train selfgraphrag --index harbour.gl --synth qa.jsonl --lm ~/models/Llama-2-7b-chat-hf --out graphlm/
  graphloom eval --index harbour.gl --dataset examples/harbour/questions.json --retrievers bm25,gretriever --model graphlm/ --lm LM_DIR --out report/`,
		dataFlag: "synth", dataHelp: "synthetic QA written by 'graphloom synth' (JSONL; any format 'graphloom eval' reads)",
		textForm: gretriever.TextVerbal,
	})
}

// trainGRetrieverCmd builds a command that trains G-Retriever as spec says.
func trainGRetrieverCmd(spec trainGRetrieverSpec) *cobra.Command {
	cfg := gretriever.DefaultConfig(0)
	cfg.TextForm = spec.textForm
	rcfg := retrieve.DefaultConfig()
	var indexPath, trainPath, valPath, lmDir, lmDType, out string
	var gtHidden int
	var resume, force bool
	var lf llmFlags
	encoder := models.GTProfileGRetriever
	promptFormat := "auto" // gretriever.Config.PromptFormat "" (resolved by New)
	cmd := &cobra.Command{
		Use:     spec.use,
		Short:   spec.short,
		Long:    spec.long,
		Example: spec.example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "index", spec.dataFlag, "lm", "out"); err != nil {
				return err
			}
			lowerGCPercent()
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outDir, what: "model directory",
				files: []string{grBest, grLast, grState, grLog, grCurve, "model.lock",
					filepath.Join(grAdapter, "adapter_config.json"), filepath.Join(grAdapter, "adapter_model.safetensors")}},
				inSpec{"--index", indexPath}, inSpec{"--" + spec.dataFlag, trainPath}, inSpec{"--val", valPath}, inSpec{"--lm", lmDir}); err != nil {
				return err
			}
			ix, err := graphio.ReadFile(indexPath)
			if err != nil {
				return err
			}
			api, err := lf.apiEmbedder(cmd.Context()) // the embedder the index was built with
			if err != nil {
				return err
			}
			s, err := retrieve.Open(ix, api, rcfg, nil)
			if err != nil {
				return err
			}
			b, err := gretrieve.NewBuilder(s, cfg.TextForm)
			if err != nil {
				return err
			}
			l, err := loadLM(lmDir, lmDType)
			if err != nil {
				return err
			}
			trainSet, val, err := grExamples(cmd, b, spec.dataFlag, trainPath, valPath)
			if err != nil {
				return err
			}
			if promptFormat != "auto" {
				cfg.PromptFormat = promptFormat
			}
			layers := cfg.GT.Layers
			if cfg.GT, err = models.GTProfile(encoder, b.Dim()); err != nil {
				return usageError{err}
			}
			if cmd.Flags().Changed("gt-layers") {
				cfg.GT.Layers = layers
			}
			if resume { // a run goes on in the chat-turn form it started in (no flag sets it), and its prompt format unless one is given
				var prev gretriever.Config
				if err := models.ConfigOf(filepath.Join(out, grLast), gretriever.Kind, &prev); err == nil {
					cfg.ChatTurn = prev.ChatTurn
					if promptFormat == "auto" {
						cfg.PromptFormat = cmp.Or(prev.PromptFormat, lm.PromptLlama2) // written before the field: llama2
					}
				}
			}
			if gtHidden > 0 {
				cfg.GT.Hidden, cfg.GT.Out = gtHidden, gtHidden
			}
			m, err := gretriever.New(l, cfg)
			if err != nil {
				return usageError{err}
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			// One training run per --out: two would interleave their checkpoints.
			lockPath := filepath.Join(out, "model")
			lock, err := graphio.LockWriter(cmd.Context(), lockPath, lockHolder(cmd, lockPath), false, nil)
			if errors.Is(err, graphio.ErrLocked) {
				return fmt.Errorf("another training run writes to %s: %w; wait for it to finish or choose another --out", out, err)
			}
			if err != nil {
				return err
			}
			defer func() { _ = lock.Unlock() }()
			for _, f := range []string{grBest, grLast, grState, grLog, grCurve} { // a killed run's half-written files
				if _, err := graphio.RemoveStaleTemps(filepath.Join(out, f)); err != nil {
					return err
				}
			}
			var opts gretriever.TrainOptions
			var oldLog []byte
			lmHash, _ := lmConfigHash(lmDir) // "" when unreadable: not recorded, not compared
			last := filepath.Join(out, grLast)
			if _, err := os.Stat(last); err == nil && !resume && !force {
				return usageError{fmt.Errorf("%s holds a training run (%s): continue it with --resume, or start over with --force (which replaces it)", out, grLast)}
			}
			if !resume { // starting over: nothing of an earlier run may be resumed into this one, or served as its model if it is killed
				for _, f := range []string{grBest, grLast, grState} {
					if err := os.Remove(filepath.Join(out, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return err
					}
				}
				if err := os.RemoveAll(filepath.Join(out, grAdapter)); err != nil { // an earlier --lora run's adapters
					return err
				}
			}
			if resume {
				meta, err := m.LoadInto(last)
				if err != nil {
					return fmt.Errorf("--resume: %w", err)
				}
				if opts.Resume, err = strconv.Atoi(meta["step"]); err != nil {
					return fmt.Errorf("--resume: %s has no step count", last)
				}
				// The run goes on over the same data, or its epochs would not be the
				// uninterrupted run's.
				for _, c := range []struct {
					key, flag, now string
					file           bool
				}{
					{"index", "--index", indexPath, true}, {"train", "--" + spec.dataFlag, trainPath, true},
					{"examples", "training questions", strconv.Itoa(len(trainSet)), false}, {kg.GenerationMeta, "an index of generation", kg.Generation(ix), false},
					{pcstMeta, "PCST settings", pcstSettings(rcfg), false}, {lmConfigMeta, "an LM whose config.json hashes to", lmHash, false},
				} {
					was, ok := meta[c.key]
					if !ok || was == c.now || c.file && samePath(was, c.now) || c.now == "" {
						continue
					}
					return usageError{fmt.Errorf("--resume: %s was trained with %s %s, this run has %s: resume with the same data, or start over with --force", last, c.flag, was, c.now)}
				}
				if oldLog, err = os.ReadFile(filepath.Join(out, grLog)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
			meta := map[string]string{"index": absPath(indexPath), "lm": absPath(lmDir), "train": absPath(trainPath), "examples": strconv.Itoa(len(trainSet)),
				kg.GenerationMeta: kg.Generation(ix), pcstMeta: pcstSettings(rcfg)}
			if lmHash != "" {
				meta[lmConfigMeta] = lmHash
			}
			// The log so far is written with every checkpoint, so that a killed run's
			// log reaches the step its resume starts from.
			var logBuf bytes.Buffer
			logBuf.Write(oldLog)
			writeLog := func() error {
				return graphio.AtomicWrite(filepath.Join(out, grLog), func(w io.Writer) error {
					_, err := w.Write(logBuf.Bytes())
					return err
				})
			}
			opts.OnEpoch = func(step int) error {
				meta["step"] = strconv.Itoa(step)
				if err := m.Save(filepath.Join(out, grLast), meta); err != nil {
					return err
				}
				return writeLog()
			}
			opts.State, opts.Log = filepath.Join(out, grState), &logBuf
			eng, err := lf.engine()
			if err != nil {
				return err
			}
			progress, finish := bar(cmd, "training")
			opts.Progress = progress
			res, err := m.Train(cmd.Context(), eng, trainSet, val, opts)
			finish()
			if err != nil {
				return err
			}
			if err := writeLog(); err != nil {
				return err
			}
			if res.ScheduleChanged != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "--resume: %s: the run goes on from its state, but does not end as the uninterrupted one would\n", res.ScheduleChanged)
			}
			if res.Approximate != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "--resume: %s: resumed from the weights alone (AdamW's moments start afresh, early stopping counts from this run)\n", res.Approximate)
			}
			// The trainer counts this run's steps; the checkpoints count from the start.
			done, best := opts.Resume+res.Steps, opts.Resume+res.BestStep
			meta["step"], meta["best_step"] = strconv.Itoa(done), strconv.Itoa(best)
			if err := m.Save(filepath.Join(out, grBest), meta); err != nil {
				return err
			}
			if cfg.LoRA > 0 { // the best weights are restored: their adapters, alone, in PEFT's layout
				if err := m.SaveLoRA(filepath.Join(out, grAdapter)); err != nil {
					return err
				}
			}
			if err := train.WriteCurves(filepath.Join(out, grCurve), "G-Retriever ("+cfg.Variant+")", res.Result); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trained %s on %d questions (%d held out), steps %d→%d of %d (best %d): validation loss %.4f → %.4f\n%s (%s, %s, %s, %s)\n",
				cfg.Variant, len(trainSet), len(val), opts.Resume, done, res.Plan.TotalSteps, best, res.InitialLoss, res.Best.Loss,
				out, grBest, grLast, grLog, grCurve)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&indexPath, "index", "", "index file (with facts and entity and fact embeddings)")
	f.StringVar(&trainPath, spec.dataFlag, "", spec.dataHelp)
	f.StringVar(&valPath, "val", "", "validation questions (default: every fifth training question)")
	f.StringVar(&lmDir, "lm", "", "local Hugging Face directory of the frozen decoder LM (Llama 2/3.x, Mistral, Qwen2/2.5, Qwen3)")
	lmDTypeFlag(cmd, &lmDType)
	f.StringVar(&out, "out", "", "model directory to write")
	f.BoolVar(&force, "force", false, "start over in an --out that holds a training run (its checkpoints are replaced)")
	f.BoolVar(&resume, "resume", false, "continue from --out's last.ckpt and last.state (the optimizer's moments, random state and early stopping: with the same settings the run ends as the uninterrupted one would; without a last.state of that step, from the weights alone, with a warning)")
	f.StringVar(&cfg.TextForm, "text", cfg.TextForm, "subgraph text: csv (G-Retriever's node and edge tables) or verbal (SelfGraphRAG's \"v_i [r] v_j\" lines, its GraphLM)")
	f.StringVar(&cfg.Variant, "variant", cfg.Variant, "g-retriever, graph-token-only (no textualised subgraph), linear (mean-pooled nodes, one projection), linear-graph-token-only")
	f.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "training epochs")
	f.IntVar(&cfg.WarmupEpochs, "warmup-epochs", cfg.WarmupEpochs, "linear warm-up epochs")
	f.Float64Var(&cfg.LearningRate, "lr", cfg.LearningRate, "peak learning rate (AdamW)")
	f.Float64Var(&cfg.MinLearningRate, "min-lr", cfg.MinLearningRate, "learning rate at the end of the half-cycle cosine")
	f.IntVar(&cfg.BatchSize, "batch-size", cfg.BatchSize, "questions per micro-batch")
	f.IntVar(&cfg.GradSteps, "grad-steps", cfg.GradSteps, "batches between learning-rate updates (train.py grad_steps; the optimizer steps after every batch)")
	f.IntVar(&cfg.Patience, "patience", cfg.Patience, "epochs without a lower validation loss before stopping (0 = never)")
	f.StringVar(&encoder, "encoder", encoder, `Graph Transformer as a source sets it: "g-retriever" (4 layers, 4 heads, BatchNorm, dropout 0) or "seed004" (4 layers, 8 heads, residual, LayerNorm, dropout 0.1)`)
	f.StringVar(&promptFormat, "prompt-format", "auto", "how the LM's user turn is written: auto (the LM's chat template, else llama2), template (the LM's chat template), llama2 (G-Retriever's [INST]), chatml, plain")
	f.IntVar(&cfg.LoRA, "lora", 0, "rank of LoRA adapters trained in the LM (G-Retriever's LoRA variant: α 16, dropout 0.05, q_proj and v_proj; 0 = frozen LM); saved also in PEFT's layout under --out/adapter")
	f.IntVar(&cfg.GT.Layers, "gt-layers", cfg.GT.Layers, "Graph Transformer layers")
	f.IntVar(&gtHidden, "gt-hidden", 0, "Graph Transformer width (default: the embedding width, as G-Retriever)")
	f.IntVar(&cfg.ProjectorHidden, "projector-hidden", cfg.ProjectorHidden, "projector's middle width")
	f.IntVar(&cfg.MaxTextTokens, "max-text-tokens", cfg.MaxTextTokens, "tokens of the textualised subgraph kept")
	f.IntVar(&cfg.MaxNewTokens, "max-new-tokens", cfg.MaxNewTokens, "answer tokens trained on and generated")
	f.BoolVar(&cfg.GradientCheckpointing, "gradient-checkpointing", cfg.GradientCheckpointing, "recompute each LM layer's activations in the backward pass instead of keeping them (same gradients; less memory, about one more LM forward per step)")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "initialisation and shuffling seed")
	f.IntVar(&rcfg.PCSTTopK, "pcst-topk", rcfg.PCSTTopK, "nodes given prizes (G-Retriever topk)")
	f.IntVar(&rcfg.PCSTTopKEdges, "pcst-topk-e", rcfg.PCSTTopKEdges, "distinct edge similarities given prizes (topk_e)")
	f.Float64Var(&rcfg.PCSTEdgeCost, "pcst-cost-e", rcfg.PCSTEdgeCost, "edge cost (cost_e)")
	pcstProfileFlag(cmd, &rcfg)
	lf.register(cmd)
	lf.registerOpen(cmd)
	limitChoices(cmd, "variant", gretriever.Variants...)
	limitChoices(cmd, "encoder", models.GTProfileGRetriever, models.GTProfileSeed004)
	limitChoices(cmd, "prompt-format", append([]string{"auto"}, lm.PromptFormats...)...)
	limitChoices(cmd, "text", gretriever.TextCSV, gretriever.TextVerbal)
	limitFlag(cmd, "epochs", atLeast1(1e4))
	limitFlag(cmd, "warmup-epochs", atLeast0(1e4))
	limitFlag(cmd, "lr", flagRange{lo: 0, hi: 10, loOpen: true})
	limitFlag(cmd, "min-lr", atLeast0(10))
	limitFlag(cmd, "batch-size", atLeast1(4096))
	limitFlag(cmd, "grad-steps", atLeast1(1e4))
	limitFlag(cmd, "patience", atLeast0(1e4))
	limitFlag(cmd, "gt-layers", atLeast1(64))
	limitFlag(cmd, "lora", atLeast0(4096))
	limitFlag(cmd, "gt-hidden", atLeast0(1<<16))
	limitFlag(cmd, "projector-hidden", atLeast1(1<<16))
	limitFlag(cmd, "max-text-tokens", atLeast0(1<<20))
	limitFlag(cmd, "max-new-tokens", atLeast1(4096))
	limitFlag(cmd, "pcst-topk", atLeast1(1e5))
	limitFlag(cmd, "pcst-topk-e", atLeast1(1e5))
	limitFlag(cmd, "pcst-cost-e", atLeast0(1e6))
	return cmd
}

// grExamples reads the training (and validation) questions and builds their examples;
// without a validation file every fifth training example is held out.
func grExamples(cmd *cobra.Command, b *gretrieve.Builder, dataFlag, trainPath, valPath string) (trainSet, val []gretriever.Example, err error) {
	read := func(path string) ([]gretriever.Example, error) {
		ds, err := eval.ReadDataset(path)
		if err != nil {
			return nil, err
		}
		warnDataset(cmd, ds)
		progress, finish := bar(cmd, "subgraphs")
		exs, skipped, err := b.Examples(cmd.Context(), ds, progress)
		finish()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if skipped > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d questions without gold answers skipped\n", path, skipped)
		}
		return exs, nil
	}
	all, err := read(trainPath)
	if err != nil {
		return nil, nil, err
	}
	if valPath != "" {
		if val, err = read(valPath); err != nil {
			return nil, nil, err
		}
		return all, val, nil
	}
	if len(all) < 2 {
		return nil, nil, usageError{fmt.Errorf("--%s %s: %d usable question; give --val or at least 2 questions", dataFlag, trainPath, len(all))}
	}
	for i, ex := range all {
		if i%5 == 4 || (len(all) < 5 && i == len(all)-1) {
			val = append(val, ex)
		} else {
			trainSet = append(trainSet, ex)
		}
	}
	return trainSet, val, nil
}

// absPath returns path made absolute (as given when that fails), for checkpoint
// metadata a run resumed from another directory compares.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// samePath reports whether a and b name the same existing file.
func samePath(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
