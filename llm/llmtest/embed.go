package llmtest

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// Embed returns the server's default embedding of text: a hashed bag of words, dim
// wide and L2-normalised. Words are maximal runs of letters and digits, lower-cased;
// each adds ±1 to the coordinate its FNV-1a hash picks. Equal texts get equal
// vectors, texts sharing words a positive cosine similarity. A text without words
// maps to the first unit vector. dim < 1 is treated as 1.
func Embed(text string, dim int) []float32 {
	dim = max(dim, 1)
	acc := make([]float64, dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		h := fnv.New64a()
		_, _ = h.Write([]byte(w))
		sum := h.Sum64()
		sign := 1.0
		if sum>>63 == 1 {
			sign = -1
		}
		acc[sum%uint64(dim)] += sign
	}
	var norm float64
	for _, x := range acc {
		norm += x * x
	}
	v := make([]float32, dim)
	if norm == 0 {
		v[0] = 1
		return v
	}
	norm = math.Sqrt(norm)
	for i, x := range acc {
		v[i] = float32(x / norm)
	}
	return v
}
