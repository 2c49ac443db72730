package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestLoadFormats(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, content string
		titles              []string
		keys                []string // document keys (Passage.Key)
		skipped             int
	}{
		{"json array", "a.json", `[{"title":"A","text":"Alpha text."},{"title":"B","text":"Beta text."}]`, []string{"A", "B"}, []string{"A", "B"}, 0},
		{"jsonl with optional fields", "b.jsonl", "{\"id\":\"x1\",\"text\":\"One.\"}\n\n{\"title\":\"T\",\"text\":\"Two.\"}\n{\"text\":\"Three.\"}\n", []string{"x1", "T", ""}, []string{"x1", "T", ":4"}, 0},
		{"jsonl in .json", "c.json", "{\"title\":\"A\",\"text\":\"a\"}\n{\"title\":\"B\",\"text\":\"b\"}\n", []string{"A", "B"}, []string{"A", "B"}, 0},
		{"gfm-rag object", "d.json", `{"Paris": "Capital of France.", "Lyon": "A city."}`, []string{"Paris", "Lyon"}, []string{"Paris", "Lyon"}, 0},
		{"gfm-rag object, pretty-printed", "d2.json", "{\n  \"Paris\": \"Capital of France.\",\n  \"Lyon\": \"A city.\"\n}\n", []string{"Paris", "Lyon"}, []string{"Paris", "Lyon"}, 0},
		{"jsonl in .json, first line without text", "c2.json", "{\"title\":\"A\",\"body\":\"a\"}\n{\"title\":\"B\",\"text\":\"b\"}\n{\"title\":\"C\",\"text\":\"c\"}\n", []string{"B", "C"}, []string{"B", "C"}, 1},
		{"one record, pretty-printed", "c3.json", "{\n  \"title\": \"A\",\n  \"text\": \"Alpha text.\"\n}\n", []string{"A"}, []string{"A"}, 0},
		{"one record with other fields", "c4.json", "{\n  \"title\": \"A\",\n  \"text\": \"Alpha text.\",\n  \"url\": \"http://x\"\n}\n", []string{"A"}, []string{"A"}, 0},
		{"bom and bad records", "e.json", "\ufeff[{\"title\":\"A\",\"text\":\"ok\"},{\"title\":\"B\"},{\"title\":\"C\",\"text\":\"  \"},{\"title\":\"D\",\"text\":\"bad \xff\xfe\"}]", []string{"A"}, []string{"A"}, 3},
		{"jsonl malformed line", "f.jsonl", "{\"text\":\"ok\"}\n{\"text\": oops}\n", []string{""}, []string{":1"}, 1},
		{"id is the key, not the title", "g.json", `[{"id":7,"title":"A","text":"a"},{"id":"k","title":"A","text":"b"}]`, []string{"A", "A"}, []string{"7", "k"}, 0},
		{"a repeated key of another text is numbered", "h.json", `[{"title":"A","text":"a"},{"title":"A","text":"b"},{"title":"A","text":"a"},{"title":"A","text":"c"}]`, []string{"A", "A", "A", "A"}, []string{"A", "A #2", "A", "A #3"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, dir, tc.file, tc.content)
			ps, skipped, err := Load(p, false)
			require.NoError(t, err)
			var titles, keys []string
			for _, x := range ps {
				titles, keys = append(titles, x.Title), append(keys, x.Key)
			}
			assert.Equal(t, tc.titles, titles)
			assert.Equal(t, tc.keys, keys)
			assert.Len(t, skipped, tc.skipped)
			if tc.skipped > 0 {
				_, _, err := Load(p, true)
				assert.ErrorContains(t, err, "strict")
			}
		})
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "Plain text file.\n")
	write(t, dir, "sub/b.md", "# The Heading\n\nMarkdown body.\n")
	write(t, dir, "sub/c.md", "no heading here")
	write(t, dir, "bin.txt", "abc\x00def")
	write(t, dir, "latin1.txt", "caf\xe9")
	write(t, dir, "empty.md", "   \n")
	write(t, dir, ".hidden/x.txt", "hidden")
	write(t, dir, "image.png", "\x89PNG")
	ps, skipped, err := Load(dir, false)
	require.NoError(t, err)
	require.Len(t, ps, 3)
	assert.Equal(t, "a", ps[0].Title)
	assert.Equal(t, "Plain text file.", ps[0].Text)
	assert.Equal(t, "The Heading", ps[1].Title)
	assert.Equal(t, "c", ps[2].Title)
	assert.Equal(t, []string{"a.txt", "sub/b.md", "sub/c.md"}, []string{ps[0].Key, ps[1].Key, ps[2].Key}, "a file's key is its path below the corpus folder")
	for _, p := range ps {
		assert.Equal(t, p.Key, SourceKey(p.Source, p.Title, dir), "derived from the source, for indices without keys")
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[filepath.Base(s.Source)] = s.Reason
	}
	assert.Equal(t, map[string]string{"bin.txt": "binary content (NUL bytes)", "latin1.txt": "not valid UTF-8", "empty.md": "empty text"}, reasons)
}

// TestSourceKey: the key of a document of an index written before keys were kept.
func TestSourceKey(t *testing.T) {
	for _, tc := range []struct{ source, title, root, want string }{
		{"corpus.json#3", "Port Keswyn", "corpus.json", "Port Keswyn"},
		{"data/c.jsonl:12", "", "data/c.jsonl", ":12"},
		{"docs/a/b.md", "B", "docs", "a/b.md"},
		{"docs/a/b.md", "B", "./docs/", "a/b.md"},
		{"notes.txt", "notes", "notes.txt", "notes.txt"},
		{"elsewhere/x.txt", "x", "docs", "elsewhere/x.txt"},
		{"docs/x#2.txt", "x", "docs", "x#2.txt"},
	} {
		assert.Equal(t, tc.want, SourceKey(tc.source, tc.title, tc.root), tc.source)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"syntax error names the line", "[\n{\"text\":\"a\"},\n{\"text\": }\n]", "x.json:3: malformed JSON"},
		{"truncated array", "[{\"text\":\"a\"}", "malformed JSON"},
		{"not a corpus", "hello", "not a corpus"},
		{"empty file", "", "no usable passages"},
		{"nothing usable", `[{"title":"x"}]`, "no usable passages"},
		{"content after a {title: text} object", "{\n \"A\": \"a\"\n}\n{\"B\": \"b\"}\n", "x.json:3: content after the {title: text} object"},
		{"content after a pretty-printed record", "{\n \"title\": \"A\",\n \"text\": \"a\"\n}\n{\"B\": \"b\"}\n", "x.json:4: content after the {title: text} object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, dir, "x.json", tc.content)
			_, _, err := Load(p, false)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, _, err := Load(filepath.Join(dir, "missing.json"), false)
	assert.ErrorContains(t, err, "missing.json")
}

// TestLoadSaysWhatIsWrong: bad records and files are named with what was expected,
// in words, never a Go type; a single text file is a one-document corpus (issue 49
// rows 13, 14).
func TestLoadSaysWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, file, content, want string }{
		{"null element", "x.json", `[{"text":"a b"}, null]`, `x.json#1: want an object {"title", "text"}, got null`},
		{"number element", "x.json", `[{"text":"a b"}, 42]`, `x.json#1: want an object {"title", "text"}, got a number`},
		{"text a number", "x.json", `[{"text":"a b"}, {"text": 7}]`, `x.json#1: malformed record: field "text": want a string, got a number`},
		{"jsonl number line", "x.jsonl", "{\"text\":\"a b\"}\n42\n", `x.jsonl:2: want an object {"title", "text"}, got a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, skipped, err := Load(write(t, dir, tc.file, tc.content), false)
			require.NoError(t, err)
			require.Len(t, skipped, 1)
			got := skipped[0].Source + ": " + skipped[0].Reason
			assert.Contains(t, got, tc.want)
			assert.NotContains(t, got, "Go value")
		})
	}
	_, _, err := Load(write(t, dir, "notes.csv", "Alpha,beta"), false)
	assert.ErrorContains(t, err, "not a corpus: expected a JSON array of {\"title\", \"text\"}, JSONL, a {title: text} object, a .txt/.md file, or a directory of .txt/.md files")
	for name, title := range map[string]string{"notes.txt": "notes", "readme.md": "The Harbour"} {
		ps, _, err := Load(write(t, dir, name, "# The Harbour\nAlpha founded Beta in 1801.\n"), false)
		require.NoError(t, err, name)
		require.Len(t, ps, 1, name)
		assert.Equal(t, title, ps[0].Title, name)
		assert.Contains(t, ps[0].Text, "Alpha founded Beta")
	}
}

// TestLoadFollowsALinkedCorpus: a corpus directory given as a symbolic link is read;
// links to directories inside it are listed as skipped, with the reason (issue 49 row 7).
func TestLoadFollowsALinkedCorpus(t *testing.T) {
	base := t.TempDir()
	docs := filepath.Join(base, "docs")
	require.NoError(t, os.MkdirAll(filepath.Join(docs, "sub"), 0o755))
	write(t, docs, "a.txt", "Alpha founded Beta.")
	write(t, filepath.Join(docs, "sub"), "b.md", "Gamma lies near Delta.")
	other := filepath.Join(base, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	write(t, other, "c.txt", "Epsilon was born in Zeta.")
	require.NoError(t, os.Symlink(other, filepath.Join(docs, "linked")))
	require.NoError(t, os.Symlink(filepath.Join(other, "c.txt"), filepath.Join(docs, "c-link.txt")))
	require.NoError(t, os.Symlink(filepath.Join(base, "gone.txt"), filepath.Join(docs, "broken.txt")))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(docs, link))

	ps, skipped, err := Load(link, false)
	require.NoError(t, err)
	var sources []string
	for _, p := range ps {
		sources = append(sources, p.Source)
	}
	assert.Equal(t, []string{filepath.Join(link, "a.txt"), filepath.Join(link, "c-link.txt"), filepath.Join(link, "sub", "b.md")}, sources)
	assert.ElementsMatch(t, []Skipped{
		{Source: filepath.Join(link, "broken.txt"), Reason: "broken symbolic link"},
		{Source: filepath.Join(link, "linked"), Reason: "symbolic link to a directory: not followed (it may loop); pass that directory as its own corpus or copy its files in"},
	}, skipped)
}

// sentences of varying length, numbered so chunks can be checked.
func longText(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "Sentence number %d tells of the harbour and the %s. ", i, strings.Repeat("old ", i%7))
	}
	return strings.TrimSpace(b.String())
}

func TestSplitLongPassage(t *testing.T) {
	tok, err := NewTokenizer("cl100k_base")
	require.NoError(t, err)
	cfg := Config{ChunkTokens: 80, OverlapTokens: 25, Encoding: "cl100k_base"}
	ch, err := NewChunker(cfg, tok)
	require.NoError(t, err)
	text := longText(40)
	pieces := ch.Split("Doc", text)
	require.Greater(t, len(pieces), 5)
	seg, _ := NewSegmenter()
	starts := map[int]bool{}
	for _, s := range seg.Sentences(text) {
		starts[s.Start] = true
	}
	prevEnd := 0
	for k, p := range pieces {
		assert.Equal(t, fmt.Sprintf("Doc [chunk %d]", k+1), p.Title)
		assert.LessOrEqual(t, p.Tokens, cfg.ChunkTokens+2, "chunk %d", k) // re-encoding may merge at most at the seams
		at := strings.Index(text, p.Text)
		require.GreaterOrEqual(t, at, 0, "chunk %d is a substring", k)
		assert.True(t, starts[at], "chunk %d starts on a sentence", k)
		if k > 0 {
			assert.Less(t, at, prevEnd, "chunk %d overlaps its predecessor", k)
			assert.LessOrEqual(t, tok.Count(text[at:prevEnd]), cfg.OverlapTokens+1)
		} else {
			assert.Equal(t, 0, at)
		}
		prevEnd = at + len(p.Text)
	}
	assert.Equal(t, len(text), prevEnd, "chunks cover the text")

	short := ch.Split("Short", "Just a few words.")
	assert.Equal(t, []Piece{{Title: "Short", Text: "Just a few words.", Tokens: 5}}, short)
}

func TestSplitOverlongSentence(t *testing.T) {
	tok, err := NewTokenizer("cl100k_base")
	require.NoError(t, err)
	ch, err := NewChunker(Config{ChunkTokens: 20, OverlapTokens: 5, Encoding: "cl100k_base"}, tok)
	require.NoError(t, err)
	text := strings.Repeat("日本語の文章と絵文字🙂が続きます", 20)
	pieces := ch.Split("Long", text)
	require.Greater(t, len(pieces), 3)
	var joined strings.Builder
	for _, p := range pieces {
		assert.True(t, utf8.ValidString(p.Text), "chunk %q is valid UTF-8", p.Title)
		joined.WriteString(p.Text)
	}
	assert.Equal(t, text, joined.String(), "an over-long sentence is cut without overlap or loss")
}

// TestChunksAdvance: after short sentences, a sentence nearly a chunk long leaves
// the overlap no room; each chunk must still end past the previous one (chunks made of
// nothing but the previous chunk's tail were produced, one per short sentence).
func TestChunksAdvance(t *testing.T) {
	tok, err := NewTokenizer("cl100k_base")
	require.NoError(t, err)
	ch, err := NewChunker(Config{ChunkTokens: 40, OverlapTokens: 12, Encoding: "cl100k_base"}, tok)
	require.NoError(t, err)
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "Item %d holds. ", i)
	}
	b.WriteString("Then a very long sentence follows with " + strings.Repeat("many words ", 15) + "until it ends. ")
	b.WriteString("A last short one.")
	text := b.String()
	pieces := ch.Split("Doc", text)
	require.Greater(t, len(pieces), 1)
	prevStart, prevEnd := -1, 0
	for i, p := range pieces {
		at := strings.Index(text[prevStart+1:], p.Text)
		require.GreaterOrEqual(t, at, 0, "chunk %d is a piece of the text", i)
		start := prevStart + 1 + at
		end := start + len(p.Text)
		assert.Greater(t, end, prevEnd, "chunk %d (%q) reaches past chunk %d", i, p.Text, i-1)
		assert.LessOrEqual(t, p.Tokens, 40)
		prevStart, prevEnd = start, end
	}
	assert.Equal(t, len(text), prevEnd, "the last chunk ends the text")
}

func TestBuildMergesDuplicatesAndIsStable(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "c.json", fmt.Sprintf(`[{"title":"A","text":"Alpha."},{"title":"A","text":"Alpha."},{"title":"L","text":%q}]`, longText(400)))
	cfg := DefaultConfig()
	var calls int
	ix, rep, err := Build(context.Background(), p, cfg, func(done, total int) { calls++ })
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Records)
	assert.Equal(t, 2, rep.Documents)
	assert.Equal(t, 1, rep.Duplicates)
	assert.Equal(t, 2, ix.Documents[0].Count)
	assert.Equal(t, 2, calls)
	require.Greater(t, len(ix.Chunks), 3, "the long passage is split")
	assert.Equal(t, "Alpha.", ix.Chunks[0].Text)
	assert.Equal(t, "A", ix.Chunks[0].Title)
	assert.Equal(t, "L [chunk 1]", ix.Chunks[1].Title)
	for _, c := range ix.Chunks[1:] {
		assert.LessOrEqual(t, int(c.Tokens), 1202)
	}
	ix2, _, err := Build(context.Background(), p, cfg, nil)
	require.NoError(t, err)
	for i := range ix.Chunks {
		assert.Equal(t, ix.Chunks[i].ID, ix2.Chunks[i].ID)
	}
}

// TestFolderListsUnreadDocuments: a folder corpus reads .txt and .md files; a .jsonl
// or .pdf beside them is listed as skipped (strict mode refuses), an image is not.
func TestFolderListsUnreadDocuments(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.md", "Mara Vell founded Quillhaven.")
	write(t, dir, "data.jsonl", `{"title": "B", "text": "Harl Dunmere built the mill."}`)
	write(t, dir, "paper.pdf", "%PDF-1.4")
	write(t, dir, "map.png", "\x89PNG")
	ps, skipped, err := Load(dir, false)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	var sources []string
	for _, s := range skipped {
		sources = append(sources, filepath.Base(s.Source))
		assert.Contains(t, s.Reason, "file in a corpus folder is not read")
	}
	assert.ElementsMatch(t, []string{"data.jsonl", "paper.pdf"}, sources)
	_, _, err = Load(dir, true)
	assert.Error(t, err, "strict mode refuses a corpus with unread documents")
}
