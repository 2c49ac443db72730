package models

import (
	"encoding/json"
	"fmt"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/models/checkpoint"
)

// Checkpointable is a model whose weights and configuration can be saved.
type Checkpointable interface {
	Kind() string                 // model kind stored in the checkpoint
	ConfigValue() any             // configuration, stored as JSON
	Variables() []*model.Variable // weights, in a fixed order
}

// scopePrefix is the variable path prefix of each model kind.
func scopePrefix(kind string) (string, error) {
	switch kind {
	case RGCNKind:
		return "/rgcn/", nil
	case GTKind:
		return "/gt/", nil
	}
	return "", fmt.Errorf("models: unknown model kind %q", kind)
}

// Save writes m's weights and configuration to path atomically (see package
// checkpoint), with optional metadata.
func Save(path string, m Checkpointable, meta map[string]string) error {
	prefix, err := scopePrefix(m.Kind())
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(m.ConfigValue())
	if err != nil {
		return fmt.Errorf("models: encoding %s config: %w", m.Kind(), err)
	}
	ts, err := checkpoint.FromVariables(m.Variables(), prefix)
	if err != nil {
		return err
	}
	return checkpoint.Save(path, &checkpoint.File{Kind: m.Kind(), Config: cfg, Meta: meta, Tensors: ts})
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
	if err := f.Assign(m.Variables(), "/rgcn/"); err != nil {
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
	if err := f.Assign(m.Variables(), "/gt/"); err != nil {
		return nil, nil, fmt.Errorf("models: %s: %w", path, err)
	}
	return m, f.Meta, nil
}
