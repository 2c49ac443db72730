package graphio

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"
)

// IsWordRune reports whether r belongs to a word: a letter, a digit, a combining
// mark, or a zero-width non-joiner or joiner. A mark continues its word, as in
// Unicode's word boundaries (UAX #29, which also keeps ZWNJ and ZWJ inside a word, as
// Persian writes it): splitting there cuts Devanagari and Thai words at every vowel
// sign ("राम", Ram, and "रीमा", Reema, both became "र म") and a decomposed "u" +
// U+0308 out of "Zürich". A mark that follows no word character belongs to no word
// (UAX #29 attaches it to what precedes it): see Words.
func IsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || ContinuesWord(r)
}

// ContinuesWord reports whether r only continues a word (a mark, ZWNJ or ZWJ): it
// starts none.
func ContinuesWord(r rune) bool { return unicode.Is(unicode.M, r) || r == '\u200c' || r == '\u200d' }

// TextWords returns the words of text as the retrievers index them: Words of its
// lower case in Unicode NFC.
func TextWords(text string) []string { return Words(strings.ToLower(norm.NFC.String(text))) }

// Words returns the words of s as IsWordRune delimits them, case and form kept; a
// mark, ZWNJ or ZWJ after a non-word character is dropped.
func Words(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		switch {
		case !IsWordRune(r):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		case start < 0 && !ContinuesWord(r): // a word starts
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// NormalizeName is HippoRAG's node-identity normalisation: lower-case, every
// character that is not part of a word (IsWordRune) becomes a space, and runs of
// spaces collapse to one (HippoRAG strips only the ends; collapsing makes "New  York"
// and "New York" the same node). Unlike HippoRAG's ASCII-only regular expression,
// letters, digits and combining marks of any script are kept, in Unicode NFC, so
// "Zürich", precomposed or not, is "zürich" instead of "z rich"; for ASCII text the
// two agree. (Before combining marks were kept, a name holding one was cut there:
// `index --merge` normalises an older index's names again.)
func NormalizeName(s string) string {
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	word := false // inside a word
	for _, r := range s {
		if IsWordRune(r) {
			if !word && ContinuesWord(r) {
				continue // a mark after no word character belongs to no word
			}
			word = true
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		space, word = true, false
	}
	return b.String()
}

// AlnumLen counts the letters, digits and combining marks of s: HippoRAG skips
// synonym edges for names with two or fewer letters and digits, and the entity rules
// drop names of one (kg). A vowel sign, as in "राम", counts as the vowel it writes, so
// a consonant and its vowel ("का") count as "ka" does.
func AlnumLen(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r) {
			n++
		}
	}
	return n
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ChunkID is HippoRAG's passage id: "chunk-" + md5(title + "\n" + text).
func ChunkID(title, text string) string { return "chunk-" + md5Hex(title+"\n"+text) }

// DocumentID identifies an input passage by its title and text.
func DocumentID(title, text string) string { return "doc-" + md5Hex(title+"\n"+text) }

// EntityID is HippoRAG's entity id: "entity-" + md5(normalised name).
func EntityID(name string) string { return "entity-" + md5Hex(name) }

// FactID is HippoRAG's fact id: "fact-" + md5 of the Python tuple repr
// "('s', 'p', 'o')" of the normalised triple.
func FactID(s, p, o string) string { return "fact-" + md5Hex(FactString(s, p, o)) }

// FactString renders a triple as the Python tuple repr HippoRAG stores facts as.
func FactString(s, p, o string) string { return string(appendFactString(nil, s, p, o)) }

// appendFactString appends FactString(s, p, o) to dst.
func appendFactString(dst []byte, s, p, o string) []byte {
	dst = append(dst, '(')
	dst = appendPyRepr(dst, s)
	dst = append(dst, ", "...)
	dst = appendPyRepr(dst, p)
	dst = append(dst, ", "...)
	dst = appendPyRepr(dst, o)
	return append(dst, ')')
}

// appendPyRepr appends s quoted like Python's repr does for printable text: single
// quotes, or double quotes when the string holds a single quote and no double quote.
func appendPyRepr(dst []byte, s string) []byte {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	dst = append(dst, q)
	for _, r := range s {
		switch {
		case r == '\\':
			dst = append(dst, `\\`...)
		case r == rune(q):
			dst = append(dst, '\\', q)
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, q)
}

// idColumn returns the ids prefix + md5(content) of n records, content(buf, i)
// appending record i's hashed text to buf. The ids share one allocation: an index
// read from disk recomputes tens of thousands of them.
func idColumn(n int, prefix string, content func(buf []byte, i int) []byte) []string {
	size := len(prefix) + 2*md5.Size
	ids := make([]byte, 0, n*size)
	var buf []byte
	for i := range n {
		buf = content(buf[:0], i)
		sum := md5.Sum(buf)
		ids = append(ids, prefix...)
		ids = hex.AppendEncode(ids, sum[:])
	}
	out := make([]string, n)
	if n == 0 {
		return out
	}
	all := unsafe.String(unsafe.SliceData(ids), len(ids))
	for i := range out {
		out[i] = all[i*size : (i+1)*size]
	}
	return out
}

// HyperedgeID identifies a hyperedge by its text segment.
func HyperedgeID(text string) string { return "hyper-" + md5Hex(text) }

// Remap says how an index's records moved in a change: per kind, the new position of
// each old record (-1 when it went), old records keeping their order; records at
// positions no old one maps to are new.
type Remap struct {
	Chunks, Facts, Entities, Hyperedges []int32
}
