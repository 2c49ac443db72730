// Package embed turns text into vectors: the built-in hashed TF-IDF embedder that
// needs no download, a local BERT-family model folder run on GoMLX ([Local]), and an
// embedder backed by an OpenAI-compatible /embeddings endpoint. An index records which
// embedder made its vectors; [ForIndex] reopens that embedder and refuses a different
// one.
package embed

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/graphloom/graphloom/graphio"
)

// An Embedder maps texts to L2-normalised vectors of a fixed dimension.
type Embedder interface {
	// Identity names the embedder and its parameters; vectors are only comparable
	// between embedders of equal identity.
	Identity() string
	Dim() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// blobKey is where an embedder keeps its state in an index.
const blobKey = "embedder"

// ErrMismatch is returned when an index was embedded by another embedder.
var ErrMismatch = fmt.Errorf("embedder mismatch")

// IsHashed reports whether an embedder identity (graphio.Meta.Embedder) is the
// built-in hashed embedder's: vectors that match words, not meanings.
func IsHashed(identity string) bool { return strings.HasPrefix(identity, hashedPrefix) }

// ForIndex returns the embedder that made ix's vectors: the hashed embedder is rebuilt
// from the state stored in the index; a local model is reopened from the folder the
// index records, unless one is supplied; an API embedder must be supplied. A supplied
// embedder (api, possibly nil) must have the identity the index records (an API
// embedder supplied for a hashed index is ignored: it is passed in case one is
// needed; a local one is an explicit choice and refused). An API embedder must also
// embed a probe text as the one that built the index did (MinProbeCosine), when the
// index stored that probe.
func ForIndex(ix *graphio.Index, api Embedder) (Embedder, error) {
	id := ix.Meta.Embedder
	if l, ok := api.(*Local); ok && l.Identity() != id && id != "" {
		eng := l.eng
		if l.own {
			eng = nil // l's own engine goes when its owner closes l
		}
		if old := legacyLocal(l.Config(), id, eng); old != nil {
			return old, nil // the same folder, as it was read when the index was embedded
		}
		return nil, fmt.Errorf("embed: %w: the index was embedded with %q, the requested embedder is %q (%s); query with the embedder that built the index, or rebuild it",
			ErrMismatch, id, l.Identity(), l.Config().Dir)
	}
	switch {
	case id == "":
		return nil, fmt.Errorf("embed: the index has no embeddings; rebuild it with `graphloom index`")
	case IsLocal(id):
		if l, ok := api.(*Local); ok {
			return l, nil // of this identity (checked above)
		}
		return openLocal(id, ix.Blobs[blobKey])
	case IsHashed(id):
		h, err := UnmarshalHashed(ix.Blobs[blobKey])
		if err != nil {
			return nil, fmt.Errorf("embed: index embedder state: %w", err)
		}
		if h.Identity() != id {
			return nil, fmt.Errorf("embed: %w: index records %q but its stored state is %q", ErrMismatch, id, h.Identity())
		}
		return h, nil
	default:
		if api == nil {
			return nil, fmt.Errorf("embed: %w: the index was embedded with %q; configure that embedding model (GRAPHLOOM_EMBED_BASE_URL, GRAPHLOOM_EMBED_MODEL)", ErrMismatch, id)
		}
		if err := Verify(ix, api); err != nil {
			return nil, err
		}
		return api, nil
	}
}

// Verify checks that e is the embedder ix records: the same identity and, for an API
// embedder, a probe text embedded as the index's model did (MinProbeCosine), when the
// index stored that probe.
func Verify(ix *graphio.Index, e Embedder) error {
	id := ix.Meta.Embedder
	if e.Identity() != id {
		return fmt.Errorf("embed: %w: the index was embedded with %q, the configured embedder is %q", ErrMismatch, id, e.Identity())
	}
	if a, ok := e.(*API); ok {
		return a.checkProbe(id, ix.Blobs[blobKey])
	}
	return nil
}

// StateHolder is an embedder that stands in for the one an index records (answering
// from the index's own vectors, say) and keeps that embedder's stored state, which
// Store writes back as it was.
type StateHolder interface {
	Embedder
	IndexState() []byte
}

// Store records e as the embedder of ix (its identity, and its state if it has any).
//
// An API embedder's probe is written only when the index records none of that model:
// the stored one is the model that built the index, which later changes are checked
// against (Verify), not the probe of whichever verified server embedded them.
func Store(ix *graphio.Index, e Embedder) error {
	same := ix.Meta.Embedder == e.Identity()
	ix.Meta.Embedder = e.Identity()
	var b []byte
	var err error
	switch e := e.(type) {
	case *Hashed:
		b, err = e.MarshalBinary()
	case *Local:
		b, err = e.localBlob()
	case *API:
		if kept := ix.Blobs[blobKey]; same && kept != nil {
			return nil
		}
		b, err = e.apiBlob()
	case StateHolder:
		b = e.IndexState()
	}
	if err != nil {
		return err
	}
	if b != nil {
		if ix.Blobs == nil {
			ix.Blobs = map[string][]byte{}
		}
		ix.Blobs[blobKey] = b
	} else {
		delete(ix.Blobs, blobKey)
	}
	return nil
}

// Matrix embeds texts in batches into a matrix, calling progress after each. The
// built-in hashed embedder's vectors are kept in compressed rows unless more than
// graphio.SparseStorageDensity of their entries are non-zero (long passages); an API
// embedder's are dense.
func Matrix(ctx context.Context, e Embedder, texts []string, batch int, progress func(done, total int)) (*graphio.Embedding, error) {
	// The built-in embedder's vectors are kept in compressed rows, built a batch at a
	// time and joined once (graphio.ConcatSparse); other embedders' in one dense array.
	sparse := IsHashed(e.Identity()) && e.Dim() <= 1<<16
	var m *graphio.Embedding
	var parts []*graphio.Embedding
	if !sparse {
		m = &graphio.Embedding{Dim: e.Dim(), Data: make([]float32, 0, len(texts)*e.Dim())}
	}
	if batch <= 0 {
		batch = 256
	}
	for lo := 0; lo < len(texts); lo += batch {
		hi := min(lo+batch, len(texts))
		vs, err := e.Embed(ctx, texts[lo:hi])
		if err != nil {
			return nil, err
		}
		if len(vs) != hi-lo {
			return nil, fmt.Errorf("embed: %s returned %d vectors for %d texts", e.Identity(), len(vs), hi-lo)
		}
		dst := m
		if sparse {
			nnz := 0
			for _, v := range vs {
				for _, x := range v {
					if x != 0 {
						nnz++
					}
				}
			}
			dst = &graphio.Embedding{Dim: e.Dim(), Sparse: &graphio.SparseRows{
				Ptr: make([]int64, 1, len(vs)+1), Idx: make([]uint16, 0, nnz), Val: make([]float32, 0, nnz)}}
			parts = append(parts, dst)
		}
		for _, v := range vs {
			if len(v) != e.Dim() {
				return nil, fmt.Errorf("embed: %s returned a vector of dimension %d, want %d", e.Identity(), len(v), e.Dim())
			}
			dst.AppendDense(v)
		}
		if progress != nil {
			progress(hi, len(texts))
		}
	}
	if sparse {
		m = graphio.ConcatSparse(e.Dim(), parts)
	}
	if m.Sparse != nil && m.Density() > graphio.SparseStorageDensity {
		m = &graphio.Embedding{Dim: m.Dim, Data: m.Dense()}
	}
	return m, nil
}

// Deferred stands for the embedder an index records, opened only when a text must be
// embedded: a change that seldom embeds anything new (a delete, whose rebuilt graph
// holds new texts only when a filter keeps a name it dropped before) loads no model
// and calls no API unless it must. Identity and Dim are the index's; Close closes
// what was opened.
type Deferred struct {
	id   string
	dim  int
	open func() (Embedder, error)

	once sync.Once
	e    Embedder
	err  error
}

// Defer returns the embedder ix records, to be opened by open on first use; nil for
// the built-in embedder (restored from the index itself) or an index without
// embeddings.
func Defer(ix *graphio.Index, open func() (Embedder, error)) *Deferred {
	if ix.Meta.Embedder == "" || IsHashed(ix.Meta.Embedder) {
		return nil
	}
	dim := 0
	for _, m := range ix.Embeddings {
		if m != nil {
			dim = m.Dim
			break
		}
	}
	return &Deferred{id: ix.Meta.Embedder, dim: dim, open: open}
}

// Identity implements Embedder.
func (d *Deferred) Identity() string { return d.id }

// Dim implements Embedder.
func (d *Deferred) Dim() int { return d.dim }

// Embed implements Embedder, opening the embedder on its first call.
func (d *Deferred) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	d.once.Do(func() {
		d.e, d.err = d.open()
		if d.err == nil && d.e.Identity() != d.id {
			d.err = fmt.Errorf("embed: %w: the index was embedded with %q, the embedder opened is %q", ErrMismatch, d.id, d.e.Identity())
		}
	})
	if d.err != nil {
		return nil, d.err
	}
	return d.e.Embed(ctx, texts)
}

// Close closes the embedder if one was opened and holds resources (a local model).
func (d *Deferred) Close() {
	if c, ok := d.e.(interface{ Close() }); ok {
		c.Close()
	}
}
