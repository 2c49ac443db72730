package retrieve

// BM25Scores scores texts against query q with Okapi BM25 over those texts alone (a
// question's own passage pool, for `graphloom eval --pool question`), with the
// Searcher's analyzer and parameters from cfg.
func BM25Scores(texts []string, q string, cfg Config) []float64 {
	return newLexIndex(texts, Analyzer{Stem: cfg.Stem}, cfg.BM25K1, cfg.BM25B).scores(q)
}
