package encoder

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/lm"
)

// DenseModule is a sentence-transformers Dense module (sentence_transformers.models.Dense,
// as in LaBSE and the distiluse models): activation(W·x + b) applied to
// the pooled vector, after Pooling and before Normalize. Its folder holds config.json
// and the weights linear.weight [Out, In] and linear.bias [Out] in model.safetensors,
// or, as sentence-transformers before 3.0.1 saved them (LaBSE and the distiluse
// models still ship so), in pytorch_model.bin (readTorchState).
type DenseModule struct {
	Dir        string // the module's folder
	Weights    string // its weights file: model.safetensors, else pytorch_model.bin
	In, Out    int    // in_features, out_features
	Bias       bool   // bias (default true)
	Activation string // activation_function as sentence-transformers records it (default Tanh)
}

// denseActivations are the activation functions a Dense module may name
// (activation_function, the torch class's full name), by their short name.
var denseActivations = map[string]string{
	"torch.nn.modules.activation.Tanh":    "tanh",
	"torch.nn.modules.linear.Identity":    "identity",
	"torch.nn.modules.activation.ReLU":    "relu",
	"torch.nn.modules.activation.Sigmoid": "sigmoid",
	"torch.nn.modules.activation.GELU":    "gelu", // nn.GELU(): exact (approximate="none")
}

// readDense reads a Dense module's config.json in dir; where names it in errors.
func readDense(dir, where string) (DenseModule, error) {
	var c struct {
		In         int     `json:"in_features"`
		Out        int     `json:"out_features"`
		Bias       *bool   `json:"bias"`
		Activation *string `json:"activation_function"`
		InputName  *string `json:"module_input_name"`
		OutputName *string `json:"module_output_name"`
	}
	path := filepath.Join(dir, "config.json")
	ok, err := readJSON(dir, "config.json", &c)
	if err != nil {
		return DenseModule{}, err
	}
	if !ok {
		return DenseModule{}, fmt.Errorf("encoder: %s not found (modules.json names a Dense module at %q)", path, where)
	}
	d := DenseModule{Dir: dir, In: c.In, Out: c.Out, Bias: true, Activation: "torch.nn.modules.activation.Tanh"}
	if c.Bias != nil {
		d.Bias = *c.Bias
	}
	if c.Activation != nil {
		d.Activation = *c.Activation
	}
	if _, ok := denseActivations[d.Activation]; !ok {
		var names []string
		for _, n := range slices.Sorted(maps.Keys(denseActivations)) {
			names = append(names, strings.TrimPrefix(n, "torch.nn.modules."))
		}
		return DenseModule{}, fmt.Errorf("encoder: %s: activation_function %q is not supported (want one of %s)", path, d.Activation, strings.Join(names, ", "))
	}
	for _, f := range []struct {
		field string
		v     *string
	}{{"module_input_name", c.InputName}, {"module_output_name", c.OutputName}} {
		if f.v != nil && *f.v != "sentence_embedding" {
			return DenseModule{}, fmt.Errorf("encoder: %s: %s %q: only a Dense module over the sentence embedding is supported", path, f.field, *f.v)
		}
	}
	if d.In < 1 || d.Out < 1 {
		return DenseModule{}, fmt.Errorf("encoder: %s: in_features %d, out_features %d", path, d.In, d.Out)
	}
	for _, name := range []string{lm.SingleFile, torchWeights} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			d.Weights = filepath.Join(dir, name)
			return d, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return DenseModule{}, fmt.Errorf("encoder: %w", err)
		}
	}
	return DenseModule{}, fmt.Errorf("encoder: %s: the Dense module's weights (%s or %s) are missing", dir, lm.SingleFile, torchWeights)
}

// torchWeights is the weights file torch.save wrote for sentence-transformers' modules.
const torchWeights = "pytorch_model.bin"

// denseLayer is a loaded Dense module.
type denseLayer struct {
	w, b *model.Variable // [Out, In] and [Out] (nil without bias), float32
	act  string          // denseActivations' short name
}

// loadDense creates the variables of the pipeline's Dense modules in m's store, each
// checked against the dimension before it, and freezes them.
func (m *Model) loadDense() error {
	dim := m.hidden * len(m.pipe.Pooling)
	root := m.store.RootScope().At("%s", m.scope)
	var vars []*model.Variable
	for i, d := range m.pipe.Dense {
		if d.In != dim {
			return fmt.Errorf("encoder: %s: in_features %d, but the modules before it give vectors of %d", filepath.Join(d.Dir, "config.json"), d.In, dim)
		}
		ckpt, release, err := openWeights(d.Dir)
		if err != nil {
			return fmt.Errorf("encoder: Dense module: %w", err)
		}
		scope := root.At("dense%d", i)
		l := denseLayer{act: denseActivations[d.Activation]}
		l.w, err = lm.NewWeightVariableAs(scope, ckpt, "linear.weight", "linear.weight", dtypes.Float32, d.Out, d.In)
		if err == nil && d.Bias {
			l.b, err = lm.NewWeightVariableAs(scope, ckpt, "linear.bias", "linear.bias", dtypes.Float32, d.Out)
		}
		release()
		if err != nil {
			return fmt.Errorf("encoder: Dense module %s: %w", d.Dir, err)
		}
		vars = append(vars, l.w)
		if l.b != nil {
			vars = append(vars, l.b)
		}
		m.dense = append(m.dense, l)
		dim = d.Out
	}
	models.Freeze(m.store, vars)
	return nil
}

// applyDense runs the Dense modules over pooled vectors x [B, D] (float32).
func (m *Model) applyDense(x *graph.Node) *graph.Node {
	g := x.Graph()
	for _, l := range m.dense {
		var b *graph.Node
		if l.b != nil {
			b = l.b.NodeValue(g)
		}
		x = linear(x, l.w.NodeValue(g), b)
		switch l.act {
		case "tanh":
			x = graph.Tanh(x)
		case "relu":
			x = graph.Max(x, graph.ScalarZero(g, x.DType()))
		case "sigmoid":
			x = graph.Sigmoid(x)
		case "gelu":
			x = gelu(x)
		}
	}
	return x
}
