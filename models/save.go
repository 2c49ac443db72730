package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/models/checkpoint"
)

// Checkpointable is a model whose weights and configuration can be saved.
type Checkpointable interface {
	Kind() string                 // model kind stored in the checkpoint
	ConfigValue() any             // configuration, stored as JSON
	Variables() []*model.Variable // weights, in a fixed order
}

// Save writes m's weights and configuration to path atomically (see package
// checkpoint), with optional metadata. See SaveVariables.
func Save(path string, m Checkpointable, meta map[string]string) error {
	var store *model.Store
	if st, ok := m.(interface{ Store() *model.Store }); ok {
		store = st.Store()
	}
	return SaveVariables(path, m.Kind(), m.ConfigValue(), store, m.Variables(), meta)
}

// frozenParam is the store parameter that marks a variable frozen.
const frozenParam = "graphloom.frozen:"

// Freeze marks variables of store as frozen: not trainable (no gradient, no update:
// see package train) and not saved again by SaveVariables, which leaves them to
// whatever they were loaded from (e.g. a pretrained encoder).
func Freeze(store *model.Store, vars []*model.Variable) {
	for _, v := range vars {
		v.SetTrainable(false)
		store.RootScope().SetParam(frozenParam+v.Path(), true)
	}
}

// IsFrozen reports whether Freeze marked v in store.
func IsFrozen(store *model.Store, v *model.Variable) bool {
	if store == nil {
		return false
	}
	return model.GetParamOr(store.RootScope(), frozenParam+v.Path(), false)
}

// SaveVariables writes any model to path atomically: its kind, its configuration as
// JSON and its variables, named relative to their common scope. Frozen variables
// (see Freeze) are loaded from elsewhere and are not saved again; store may be nil
// when nothing is frozen.
func SaveVariables(path, kind string, cfg any, store *model.Store, vars []*model.Variable, meta map[string]string) error {
	if kind == "" {
		return fmt.Errorf("models: saving %s: empty model kind", path)
	}
	prefix, err := commonScope(vars)
	if err != nil {
		return err
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("models: encoding %s config: %w", kind, err)
	}
	var saved []*model.Variable
	for _, v := range vars {
		if !IsFrozen(store, v) {
			saved = append(saved, v)
		}
	}
	ts, err := checkpoint.FromVariables(saved, prefix)
	if err != nil {
		return err
	}
	return checkpoint.Save(path, &checkpoint.File{Kind: kind, Config: data, Meta: meta, Tensors: ts})
}

// LoadVariables reads a checkpoint of kind written by SaveVariables into vars (the
// same model built from the checkpoint's configuration, which is decoded into cfg when
// cfg is not nil) and returns its metadata. Values are restored bit for bit. A frozen
// variable of store absent from the file keeps its value; any other absent variable
// is an error.
func LoadVariables(path, kind string, store *model.Store, vars []*model.Variable, cfg any) (map[string]string, error) {
	f, err := checkpoint.Load(path)
	if err != nil {
		return nil, err
	}
	if f.Kind != kind {
		return nil, fmt.Errorf("models: %s holds a %q model, want %q", path, f.Kind, kind)
	}
	if cfg != nil {
		if err := json.Unmarshal(f.Config, cfg); err != nil {
			return nil, fmt.Errorf("models: %s: config: %w", path, err)
		}
	}
	prefix, err := commonScope(vars)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, t := range f.Tensors {
		have[t.Name] = true
	}
	var assign []*model.Variable
	for _, v := range vars {
		if !have[v.Path()[len(prefix):]] && IsFrozen(store, v) {
			continue
		}
		assign = append(assign, v)
	}
	if err := f.Assign(assign, prefix); err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	return f.Meta, nil
}

// ConfigOf decodes the configuration of a checkpoint of kind into cfg, so that the
// model can be built before LoadVariables fills it.
func ConfigOf(path, kind string, cfg any) error {
	_, err := readCheckpoint(path, kind, cfg)
	return err
}

// commonScope returns the scope prefix shared by every variable ("/rgcn/" for
// "/rgcn/conv0/root", "/rgcn/head1/w", …).
func commonScope(vars []*model.Variable) (string, error) {
	if len(vars) == 0 {
		return "", errors.New("models: no variables")
	}
	prefix := vars[0].Path()
	for _, v := range vars[1:] {
		p := v.Path()
		n := 0
		for n < len(prefix) && n < len(p) && prefix[n] == p[n] {
			n++
		}
		prefix = prefix[:n]
	}
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return "", fmt.Errorf("models: variables share no scope (%s)", vars[0].Path())
	}
	return prefix[:i+1], nil
}

// assignAll assigns f's tensors to vars, named relative to the variables' common
// scope as SaveVariables names them (not a fixed model scope: a one-layer Graph
// Transformer's variables all lie under /gt/conv0/, and that is the prefix its
// checkpoint's names leave out).
func assignAll(f *checkpoint.File, vars []*model.Variable) error {
	prefix, err := commonScope(vars)
	if err != nil {
		return err
	}
	return f.Assign(vars, prefix)
}

// readCheckpoint loads path and checks its kind.
func readCheckpoint(path, kind string, cfg any) (*checkpoint.File, error) {
	f, err := checkpoint.Load(path)
	if err != nil {
		return nil, err
	}
	if f.Kind != kind {
		return nil, fmt.Errorf("models: %s holds a %q model, want %q", path, f.Kind, kind)
	}
	if err := json.Unmarshal(f.Config, cfg); err != nil {
		return nil, fmt.Errorf("models: %s: config: %w", path, err)
	}
	return f, nil
}

// LoadRGCNClassifier rebuilds an RGCNClassifier from a checkpoint into store (which
// must not already hold one) and returns it with the checkpoint's metadata.
func LoadRGCNClassifier(path string, store *model.Store) (*RGCNClassifier, map[string]string, error) {
	var cfg RGCNConfig
	f, err := readCheckpoint(path, RGCNKind, &cfg)
	if err != nil {
		return nil, nil, err
	}
	m, err := NewRGCNClassifier(store, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("models: %s: %w", path, err)
	}
	if err := assignAll(f, m.Variables()); err != nil {
		return nil, nil, fmt.Errorf("models: %s: %w", path, err)
	}
	return m, f.Meta, nil
}

// LoadGraphTransformer rebuilds a GraphTransformer from a checkpoint into store.
func LoadGraphTransformer(path string, store *model.Store) (*GraphTransformer, map[string]string, error) {
	var cfg GTConfig
	f, err := readCheckpoint(path, GTKind, &cfg)
	if err != nil {
		return nil, nil, err
	}
	m, err := NewGraphTransformer(store, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("models: %s: %w", path, err)
	}
	if err := assignAll(f, m.Variables()); err != nil {
		return nil, nil, fmt.Errorf("models: %s: %w", path, err)
	}
	return m, f.Meta, nil
}
