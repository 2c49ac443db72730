package kg

import (
	"context"
	"fmt"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
)

// EmbedGraph embeds an index whose graph came from elsewhere (an imported LightRAG,
// HippoRAG, … index): every chunk, entity, fact and hyperedge with emb (nil: the
// built-in hashed embedder fitted on the chunks), then adds synonym edges as Build
// does. It returns the number of synonym edges added.
func EmbedGraph(ctx context.Context, ix *graphio.Index, emb embed.Embedder, cfg Config, progress func(done, total int)) (int, error) {
	if len(ix.Chunks) == 0 {
		return 0, fmt.Errorf("kg: the index has no chunks")
	}
	if emb == nil {
		h, err := embed.NewHashed(embed.DefaultHashedConfig())
		if err != nil {
			return 0, err
		}
		texts := make([]string, len(ix.Chunks))
		for i := range ix.Chunks {
			texts[i] = ix.Chunks[i].Content()
		}
		h.Fit(texts)
		emb = h
	}
	if err := EmbedAll(ctx, ix, emb, cfg.EmbedBatch, progress); err != nil {
		return 0, err
	}
	return AddSynonyms(ix, "", 0, cfg)
}
