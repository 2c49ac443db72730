package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/encoder/encodertest"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// The inputs a job reads, relative to its input folder.
const (
	lmLlama, lmQwen2, encoderDir = "lm-llama", "lm-qwen2", "encoder"
	rgcnFile, gtFile, grFile     = "rgcn_batches.json", "gt_batches.json", "gretriever.json"
	pprFile                      = "ppr_graph.json.gz"
)

// PPR graph size: HippoRAG 2's scale on a mid-sized corpus.
const pprNodes, pprEdges, pprBatch = 100_000, 300_000, 32

// encoderSpec is the local embedder folder: a BERT-layout sentence-transformers model
// small enough to ship (2 layers, 128 wide), mean pooling and normalisation.
var encoderSpec = encodertest.Spec{Layers: 2, Hidden: 128, Heads: 4, Intermediate: 512, MaxPositions: 256,
	SentenceTransformers: true, Pooling: []string{"mean"}, Normalize: true, MaxSeqLength: 256, Seed: 1}

// parityEncoders are the other architectures' folders, each compared with
// sentence-transformers on the same probe texts (the embed-NAME steps): MPNet's
// relative attention bias, DistilBERT with a Dense module in pytorch_model.bin
// (distiluse's layout; torch.load reads the archive encodertest.WriteTorchState lays
// out) and
// ModernBERT's rotary, sliding-window layers (a window of 32 tokens, so that the
// probes outgrow it).
var parityEncoders = map[string]encodertest.Spec{
	"encoder-mpnet": {ModelType: "mpnet", Layers: 2, Hidden: 128, Heads: 4, Intermediate: 512, MaxPositions: 258,
		SentenceTransformers: true, Pooling: []string{"mean"}, Normalize: true, MaxSeqLength: 256, Seed: 2},
	"encoder-distilbert": {ModelType: "distilbert", Layers: 2, Hidden: 128, Heads: 4, Intermediate: 512, MaxPositions: 256,
		SentenceTransformers: true, Pooling: []string{"mean"}, MaxSeqLength: 256, Seed: 3,
		Dense: []encodertest.DenseSpec{{Out: 64, Activation: "torch.nn.modules.activation.Tanh", PyTorchOnly: true}}},
	"encoder-modernbert": {ModelType: "modernbert", Layers: 3, Hidden: 128, Heads: 4, Intermediate: 256, MaxPositions: 256,
		Window: 32, GlobalEvery: 3, SentenceTransformers: true, Pooling: []string{"cls"}, Normalize: true, MaxSeqLength: 256, Seed: 4},
}

// runInputs writes every input of the job into DIR.
func runInputs(args []string) (map[string]any, error) {
	if len(args) != 1 {
		return nil, errors.New("need DIR")
	}
	dir := args[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := lmtest.Write(filepath.Join(dir, lmLlama), lmtest.Spec{Seed: 1}); err != nil {
		return nil, err
	}
	if _, err := lmtest.Write(filepath.Join(dir, lmQwen2), lmtest.Spec{ModelType: "qwen2", Tied: true, Seed: 2}); err != nil {
		return nil, err
	}
	if _, err := encodertest.Write(filepath.Join(dir, encoderDir), encoderSpec); err != nil {
		return nil, err
	}
	for name, spec := range parityEncoders {
		if _, err := encodertest.Write(filepath.Join(dir, name), spec); err != nil {
			return nil, err
		}
	}
	rg, labels := rgcnBatches()
	if err := writeJSON(filepath.Join(dir, rgcnFile), map[string]any{"feat": rgcnFeat, "hidden": rgcnHidden,
		"relations": rgcnRelations, "batches": structures(rg, labels)}); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, gtFile), map[string]any{"dim": gtDim, "layers": gtLayers, "heads": gtHeads,
		"batches": structures(gtBatches(), nil)}); err != nil {
		return nil, err
	}
	trainSet, val := grSets()
	cfg := grConfig()
	js := func(i int) exampleJSON {
		e := append(trainSet, val...)[i]
		return exampleJSON{Question: e.Question, Answer: e.Answer, Text: e.Text, N: e.Graph.NumNodes, Src: e.Graph.Src, Dst: e.Graph.Dst}
	}
	var exs []exampleJSON
	for i := range len(trainSet) {
		exs = append(exs, js(i))
	}
	if err := writeJSON(filepath.Join(dir, grFile), map[string]any{"dim": grDim, "gt_layers": cfg.GT.Layers, "gt_heads": cfg.GT.Heads,
		"projector_hidden": cfg.ProjectorHidden, "batch": grBatch, "steps": grSteps, "max_text_tokens": grTextTokens,
		"question": cfg.Question, "lr": cfg.LearningRate, "weight_decay": cfg.WeightDecay, "train": exs}); err != nil {
		return nil, err
	}
	if err := writePPRGraph(filepath.Join(dir, pprFile), makePPRGraph(pprNodes, pprEdges, pprBatch)); err != nil {
		return nil, err
	}
	return checkInputs(dir)
}

// runCheck loads every input of DIR on the CPU: the model folders through the same
// loaders the GPU steps use (no backend, no device), the batch and graph files.
func runCheck(args []string) (map[string]any, error) {
	if len(args) != 1 {
		return nil, errors.New("need DIR")
	}
	return checkInputs(args[0])
}

func checkInputs(dir string) (map[string]any, error) {
	rec := map[string]any{"dir": dir}
	for _, name := range []string{lmLlama, lmQwen2} {
		l, err := lm.Load(filepath.Join(dir, name), model.NewStore(), lm.Options{})
		if err != nil {
			return nil, err
		}
		c := l.Config()
		rec[name] = fmt.Sprintf("%s, %d layers, hidden %d, vocab %d", c.ModelType, c.Layers, c.Hidden, c.VocabSize)
	}
	for _, name := range append([]string{encoderDir}, slices.Sorted(maps.Keys(parityEncoders))...) {
		enc, err := encoder.Load(filepath.Join(dir, name), encoder.Options{})
		if err != nil {
			return nil, err
		}
		rec[name] = fmt.Sprintf("%s, dim %d, max tokens %d", enc.Config().ModelType, enc.Dim(), enc.Config().MaxTokens())
	}
	for _, name := range []string{rgcnFile, gtFile} {
		var v struct {
			Batches [][]graphJSON `json:"batches"`
		}
		if err := readJSON(filepath.Join(dir, name), &v); err != nil {
			return nil, err
		}
		if len(v.Batches) != numBatches {
			return nil, fmt.Errorf("%s: %d batches, want %d", name, len(v.Batches), numBatches)
		}
	}
	var gr struct {
		Train []exampleJSON `json:"train"`
	}
	if err := readJSON(filepath.Join(dir, grFile), &gr); err != nil {
		return nil, err
	}
	if len(gr.Train) != grSteps*grBatch {
		return nil, fmt.Errorf("%s: %d examples, want %d", grFile, len(gr.Train), grSteps*grBatch)
	}
	g, err := readPPRGraph(filepath.Join(dir, pprFile))
	if err != nil {
		return nil, err
	}
	if _, _, err := g.csr(); err != nil {
		return nil, fmt.Errorf("%s: %w", pprFile, err)
	}
	rec["ppr"] = fmt.Sprintf("%d nodes, %d edges, %d resets", g.N, len(g.U), len(g.Resets))
	return rec, nil
}

// runGlibc reports the newest GLIBC_x.y version among the dynamic symbols FILE imports.
func runGlibc(args []string) (map[string]any, error) {
	if len(args) != 1 {
		return nil, errors.New("need FILE")
	}
	newest, libs, err := newestGlibc(args[0])
	if err != nil {
		return nil, err
	}
	return map[string]any{"file": args[0], "glibc": newest, "libraries": libs}, nil
}

// newestGlibc reads the ELF file's imported symbol versions and returns the newest
// GLIBC_ one ("" for a static binary) and the shared libraries it needs.
func newestGlibc(path string) (string, []string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	syms, err := f.ImportedSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	newest := ""
	for _, s := range syms {
		if strings.HasPrefix(s.Version, "GLIBC_") && s.Version != "GLIBC_PRIVATE" && glibcLess(newest, s.Version) {
			newest = s.Version
		}
	}
	slices.Sort(libs)
	return newest, append([]string{}, libs...), nil
}

// glibcLess orders GLIBC_x.y[.z] versions numerically ("" first).
func glibcLess(a, b string) bool {
	parse := func(v string) []int {
		if v == "" {
			return nil
		}
		var out []int
		for _, p := range strings.Split(strings.TrimPrefix(v, "GLIBC_"), ".") {
			n, err := strconv.Atoi(p)
			if err != nil {
				n = 1 << 30
			}
			out = append(out, n)
		}
		return out
	}
	return slices.Compare(parse(a), parse(b)) < 0
}
