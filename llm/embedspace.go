package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// kindEmbedSpaces is the cache entry that records, for one server and embedding model
// name, the models seen answering under that name (their probe vectors).
const kindEmbedSpaces = "embedspaces"

// embedSpacesKey is the key material of that record.
type embedSpacesKey struct {
	V       int    `json:"v"`
	Kind    string `json:"kind"`
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
}

// cachedSpace is one model seen under a name: the key space its vectors are cached in
// ("" for the first one, whose keys are those written before spaces existed) and the
// vector it gave the probe text.
type cachedSpace struct {
	ID    string    `json:"id"`
	Text  string    `json:"text"`
	Probe string    `json:"probe"` // base64 of little-endian float32s
	Dim   int       `json:"dim"`
	Seen  time.Time `json:"seen"`
}

// EmbedProbe asks the server for text's embedding past the cache — what the model now
// behind the configured name answers — and from then on keys the client's embedding
// cache by that model: vectors cached under the name by another model (one re-pulled
// or replaced on the same server) are not served, and come back into use when that
// model does. Two answers are one model when same says so (embed: their cosine). changed
// reports that the cache held vectors of another model under the name and none of
// this one (it is then filled anew). Without a cache it only asks.
func (c *Client) EmbedProbe(ctx context.Context, text string, same func(old, now []float32) bool) (vec []float32, changed bool, err error) {
	c.usage.add(kindEmbed, func(u *Counters) { u.Requests++ })
	if !c.cfg.EmbedConfigured() {
		return nil, false, fmt.Errorf("llm: embed: %w", ErrNotConfigured)
	}
	vs, err := c.sendEmbed(ctx, kindEmbed, []string{text})
	if err != nil {
		return nil, false, err
	}
	vec = vs[0]
	if c.cache == nil {
		return vec, false, nil
	}
	base := canonicalBaseURL(c.cfg.embedBaseURL())
	recKey, err := hashKey(embedSpacesKey{V: cacheVersion, Kind: kindEmbedSpaces, BaseURL: base, Model: c.cfg.EmbedModel})
	if err != nil {
		return nil, false, err
	}
	var spaces []cachedSpace
	recorded := false
	if e, st := c.cache.get(recKey, kindEmbedSpaces); st == cacheHit {
		spaces, recorded = e.Spaces, true
	} else if old, ok := c.cachedLegacyVector(base, text); ok {
		// A cache written before spaces were recorded: its probe answer tells which
		// model its vectors came from.
		spaces = []cachedSpace{{ID: "", Text: text, Probe: encodeVector(old), Dim: len(old), Seen: time.Now().UTC()}}
	}
	id, found := "", false
	for _, s := range spaces {
		if s.Text != text || s.Dim != len(vec) {
			continue
		}
		if p, err := decodeVector(s.Probe, s.Dim); err == nil && same(p, vec) {
			id, found = s.ID, true
			break
		}
	}
	if !found {
		changed = len(spaces) > 0
		if changed {
			sum := sha256.Sum256([]byte(encodeVector(vec)))
			id = hex.EncodeToString(sum[:8])
		}
		spaces = append(spaces, cachedSpace{ID: id, Text: text, Probe: encodeVector(vec), Dim: len(vec), Seen: time.Now().UTC()})
	}
	// Recorded once: later probes compare with the first answer of each model, not
	// with the last one (which a chain of small changes could walk away from).
	if !found || !recorded {
		if err := c.cache.put(cacheEntry{Kind: kindEmbedSpaces, Key: recKey, Model: c.cfg.EmbedModel, Spaces: spaces}); err != nil {
			c.cacheWriteFailed(kindEmbed, err)
		}
	}
	c.mu.Lock()
	c.embedSpace = id
	c.mu.Unlock()
	// The probe's own answer serves an Embed of the same text.
	key, err := c.embedKey(base, id, text)
	if err == nil {
		if err := c.cache.put(cacheEntry{Kind: kindEmbed, Key: key, Model: c.cfg.EmbedModel, Embedding: encodeVector(vec), Dim: len(vec)}); err != nil {
			c.cacheWriteFailed(kindEmbed, err)
		}
	}
	return vec, changed, nil
}

// embedKey is the cache key of text's embedding in a model's key space.
func (c *Client) embedKey(base, space, text string) (string, error) {
	return hashKey(embedKey{V: cacheVersion, Kind: kindEmbed, BaseURL: base, Model: c.cfg.EmbedModel, Space: space, Input: text})
}

// currentSpace is the embedding cache's key space (EmbedProbe).
func (c *Client) currentSpace() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.embedSpace
}

// cachedLegacyVector reads text's embedding from the keys written before model spaces
// were recorded.
func (c *Client) cachedLegacyVector(base, text string) ([]float32, bool) {
	key, err := c.embedKey(base, "", text) // the space of keys written before spaces
	if err != nil {
		return nil, false
	}
	e, st := c.cache.get(key, kindEmbed)
	if st != cacheHit {
		return nil, false
	}
	v, err := decodeVector(e.Embedding, e.Dim)
	return v, err == nil
}
