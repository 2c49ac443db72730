package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/internal/jsonmsg"
)

// Passage is one input text with its title and where it came from.
type Passage struct {
	Title  string
	Text   string
	Source string // "path#i" for the i-th element of a JSON file, "path:n" for line n of JSONL, or the file path
	// Key names the document stably across edits of its text, for `index --sync`: a
	// file's path below the corpus folder (slash-separated; a single text file's name),
	// a JSON or JSONL record's "id" (its title when it has none, "#i" or ":n" when it
	// has neither), the key of a {title: text} object. Keys are unique within a corpus:
	// a repeated key of a different text gets " #2", " #3", … in corpus order.
	Key string
}

// Skipped is an input that was left out, and why.
type Skipped struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// ErrNoPassages is returned when an input holds nothing usable.
var ErrNoPassages = errors.New("no usable passages")

// ErrStrict is wrapped by the error of a strict load that skipped inputs; the error
// names the first of them.
var ErrStrict = errors.New("strict mode")

// Load reads the passages of a corpus at path: a directory (every .txt, .md and
// .markdown file below it, hidden ones excepted; see loader.dir for links), a single
// such file (one document), a .jsonl/.ndjson file, or a .json file
// holding an array of {"title","text"} objects, JSONL, or a {title: text} object.
// Records that are not valid UTF-8, look binary, are empty or lack a text are skipped
// and listed; with strict set they are an error. A file that cannot be parsed at all is
// an error naming the file and line.
func Load(path string, strict bool) ([]Passage, []Skipped, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("ingest: %w", err)
	}
	var l loader
	if st.IsDir() {
		err = l.dir(path)
	} else {
		err = l.file(path)
	}
	if err != nil {
		return nil, l.skipped, err
	}
	if strict && len(l.skipped) > 0 {
		s := l.skipped[0]
		return nil, l.skipped, fmt.Errorf("ingest: %s: %s (and %d more skipped inputs; %w)", s.Source, s.Reason, len(l.skipped)-1, ErrStrict)
	}
	if len(l.passages) == 0 {
		return nil, l.skipped, fmt.Errorf("ingest: %s: %w (%d inputs skipped)", path, ErrNoPassages, len(l.skipped))
	}
	uniqueKeys(l.passages)
	return l.passages, l.skipped, nil
}

type loader struct {
	passages []Passage
	skipped  []Skipped
}

func (l *loader) skip(source, reason string) {
	l.skipped = append(l.skipped, Skipped{Source: source, Reason: reason})
}

// uniqueKeys makes the keys of passages with different texts distinct: the second
// passage of a key, in order, gets " #2", the third " #3", and so on. Copies of one
// passage (same title and text) keep one key: they are one document.
func uniqueKeys(ps []Passage) {
	first := map[string]string{} // key → document id of its first passage
	used := map[string]bool{}
	for _, p := range ps {
		used[p.Key] = true
	}
	seen := map[string]int{}
	for i := range ps {
		p := &ps[i]
		id := graphio.DocumentID(p.Title, p.Text)
		if d, ok := first[p.Key]; !ok {
			first[p.Key] = id
			continue
		} else if d == id {
			continue
		}
		base := p.Key
		for n := max(seen[base], 1) + 1; ; n++ {
			if k := fmt.Sprintf("%s #%d", base, n); !used[k] {
				seen[base], p.Key, used[k] = n, k, true
				first[k] = id
				break
			}
		}
	}
}

// addKeyed validates and keeps one record with its document key.
func (l *loader) addKeyed(key, source, title, text string) {
	switch {
	case !utf8.ValidString(text) || !utf8.ValidString(title):
		l.skip(source, "not valid UTF-8")
	case strings.IndexByte(text, 0) >= 0:
		l.skip(source, "binary content (NUL bytes)")
	case strings.TrimSpace(text) == "":
		l.skip(source, "empty text")
	default:
		l.passages = append(l.passages, Passage{Title: title, Text: text, Source: source, Key: key})
	}
}

var textExts = map[string]bool{".txt": true, ".md": true, ".markdown": true}

// unreadDocument is why a document file in a corpus folder is skipped.
func unreadDocument(ext string) string {
	return "a " + ext + " file in a corpus folder is not read (a folder's files are read as plain text: .txt, .md; pass a .json or .jsonl corpus as --corpus itself)"
}

// documentExts are files that hold documents a folder corpus does not read: listed
// as skipped (an error under --strict), where images or code are left out silently.
var documentExts = map[string]bool{".json": true, ".jsonl": true, ".csv": true, ".tsv": true, ".pdf": true, ".html": true,
	".htm": true, ".rst": true, ".docx": true, ".doc": true, ".odt": true, ".rtf": true, ".xml": true, ".epub": true, ".tex": true}

// dir reads every text file below root. A root that is a symbolic link is followed;
// links inside it to files are read, links to directories are skipped and listed (a
// link may loop back up the tree), as are broken links.
func (l *loader) dir(root string) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	var files, keys []string
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != real && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(real, p)
		shown := filepath.Join(root, rel) // as the user named it
		if d.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(p)
			switch {
			case err != nil:
				l.skip(shown, "broken symbolic link")
			case st.IsDir():
				l.skip(shown, "symbolic link to a directory: not followed (it may loop); pass that directory as its own corpus or copy its files in")
			case textExts[strings.ToLower(filepath.Ext(p))]:
				files, keys = append(files, shown), append(keys, filepath.ToSlash(rel))
			case documentExts[strings.ToLower(filepath.Ext(p))]:
				l.skip(shown, unreadDocument(strings.ToLower(filepath.Ext(p))))
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(p))
		switch {
		case d.IsDir():
		case textExts[ext]:
			files, keys = append(files, shown), append(keys, filepath.ToSlash(rel))
		case documentExts[ext]:
			l.skip(shown, unreadDocument(ext))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ingest: %s: %w", root, err)
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return files[order[a]] < files[order[b]] })
	for _, i := range order {
		p := files[i]
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		text := strings.TrimSpace(string(bytes.TrimPrefix(b, bom)))
		l.addKeyed(keys[i], p, fileTitle(p, text), text)
	}
	return nil
}

var bom = []byte("\xef\xbb\xbf")

// fileTitle is a Markdown file's leading "# " heading, or the file name without its
// extension.
func fileTitle(path, text string) string {
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".md" || ext == ".markdown" {
		first, _, _ := strings.Cut(text, "\n")
		if h, ok := strings.CutPrefix(strings.TrimSpace(first), "# "); ok && utf8.ValidString(h) {
			return strings.TrimSpace(h)
		}
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

func (l *loader) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	if b, _ := br.Peek(3); bytes.Equal(b, bom) {
		_, _ = br.Discard(3)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if textExts[ext] { // one document
		b, err := io.ReadAll(br)
		if err != nil {
			return fmt.Errorf("ingest: %s: %w", path, err)
		}
		text := strings.TrimSpace(string(b))
		l.addKeyed(filepath.Base(path), path, fileTitle(path, text), text)
		return nil
	}
	if ext == ".jsonl" || ext == ".ndjson" {
		return l.jsonl(path, br)
	}
	first, err := firstByte(br)
	if err != nil {
		return fmt.Errorf("ingest: %s: %w", path, err)
	}
	switch {
	case first == '[':
		return l.jsonArray(path, br)
	case first == '{' && ext != ".json":
		return l.jsonl(path, br)
	case first == '{':
		// A .json file starting with an object: JSONL (its first line a whole object
		// and more lines after it, or a record with "text"), one record
		// {"title", "text"}, however laid out, or one {title: text} object.
		all, err := io.ReadAll(br)
		if err != nil {
			return fmt.Errorf("ingest: %s: %w", path, err)
		}
		trimmed := bytes.TrimSpace(all)
		line, rest, _ := bytes.Cut(trimmed, []byte("\n"))
		var probe map[string]json.RawMessage
		if json.Unmarshal(line, &probe) == nil && (probe["text"] != nil || len(bytes.TrimSpace(rest)) > 0) {
			return l.jsonl(path, bytes.NewReader(all))
		}
		if isRecord(trimmed) {
			l.addRecord(path+"#0", "#0", trimmed)
			return nil
		}
		return l.jsonObject(path, all)
	}
	return fmt.Errorf("ingest: %s: not a corpus: expected a JSON array of {\"title\", \"text\"}, JSONL, a {title: text} object, a .txt/.md file, or a directory of .txt/.md files (first byte %q)", path, first)
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return 0, ErrNoPassages
		}
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\n' && b != '\r' && b != '\t' {
			return b, br.UnreadByte()
		}
	}
}

// record is one JSON corpus record. Text is required; title and id are optional.
type record struct {
	ID    json.RawMessage `json:"id"`
	Title *string         `json:"title"`
	Text  *string         `json:"text"`
}

// addRecord decodes one raw JSON record, the at-th of its file ("#i" or ":n", its key
// when it has neither id nor title). encoding/json silently replaces invalid UTF-8
// with U+FFFD, so the raw bytes are checked first.
func (l *loader) addRecord(source, at string, raw []byte) {
	if !utf8.Valid(raw) {
		l.skip(source, "not valid UTF-8")
		return
	}
	if k := jsonmsg.Kind(raw); k != "an object" {
		l.skip(source, `want an object {"title", "text"}, got `+k)
		return
	}
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		l.skip(source, "malformed record: "+jsonmsg.Describe(err))
		return
	}
	if r.Text == nil {
		l.skip(source, `record has no "text" string`)
		return
	}
	title, id := "", ""
	if len(r.ID) > 0 && string(r.ID) != "null" {
		var s string
		if json.Unmarshal(r.ID, &s) == nil {
			id = s
		} else {
			id = string(r.ID)
		}
	}
	if r.Title != nil {
		title = *r.Title
	} else {
		title = id
	}
	key := id
	if key == "" {
		key = title
	}
	if key == "" {
		key = at
	}
	l.addKeyed(key, source, title, *r.Text)
}

func (l *loader) jsonArray(path string, r io.Reader) error {
	// Decode element by element so one bad record is skipped, not fatal.
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("ingest: %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return syntaxError(path, data, dec.InputOffset(), err)
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntaxError(path, data, dec.InputOffset(), err)
		}
		l.addRecord(fmt.Sprintf("%s#%d", path, i), fmt.Sprintf("#%d", i), raw)
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(path, data, dec.InputOffset(), err)
	}
	return nil
}

func syntaxError(path string, data []byte, off int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	line := 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
	return fmt.Errorf("ingest: %s:%d: malformed JSON: %w", path, line, err)
}

func (l *loader) jsonl(path string, r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			l.addRecord(fmt.Sprintf("%s:%d", path, n), fmt.Sprintf(":%d", n), bytes.TrimSpace(line))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("ingest: %s:%d: %w", path, n, err)
		}
	}
}

// isRecord reports whether data, one JSON object, is one corpus record — a string
// "text" with a string "title", an "id", or nothing else, whatever other fields it
// has — rather than a {title: text} map (whose titles would have to be "title" and
// "text"). It reads at most maxRecordFields members, so a map of many passages is
// not decoded twice (jsonObject streams it next).
func isRecord(data []byte) bool {
	const maxRecordFields = 64
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	kinds := map[string]string{}
	for n := 0; dec.More(); n++ {
		if n == maxRecordFields {
			return false
		}
		t, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		kinds[key] = jsonmsg.Kind(v)
	}
	if _, err := dec.Token(); err != nil || len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return false // content after it: jsonObject says where
	}
	if kinds["text"] != "a string" {
		return false
	}
	_, id := kinds["id"]
	return len(kinds) == 1 || id || kinds["title"] == "a string"
}

// jsonObject reads GFM-RAG's dataset_corpus.json form: {"title": "text", ...}, in file order.
func (l *loader) jsonObject(path string, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return syntaxError(path, data, dec.InputOffset(), err)
	}
	for i := 0; dec.More(); i++ {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(path, data, dec.InputOffset(), err)
		}
		title, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntaxError(path, data, dec.InputOffset(), err)
		}
		source := fmt.Sprintf("%s#%d", path, i)
		var text string
		if !utf8.Valid(raw) {
			l.skip(source, "not valid UTF-8")
		} else if json.Unmarshal(raw, &text) != nil {
			l.skip(source, "value is not a string")
		} else {
			key := title
			if key == "" {
				key = fmt.Sprintf("#%d", i)
			}
			l.addKeyed(key, source, title, text)
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(path, data, dec.InputOffset(), err)
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		return fmt.Errorf("ingest: %s:%d: content after the {title: text} object (JSON Lines of records? give them \"text\", or name the file .jsonl)", path, line)
	}
	return nil
}

// SourceKey derives a document's key (see Passage.Key) from what an index written
// before keys were kept holds, its source and title, for a corpus loaded from root: a
// record of a JSON or JSONL file is keyed by its title (its id was not kept), a file
// by its path below root (its name when it is root itself), or by its source as
// recorded when it is not below root.
func SourceKey(source, title, root string) string {
	if i := strings.LastIndexAny(source, "#:"); i > 0 && i < len(source)-1 && strings.Trim(source[i+1:], "0123456789") == "" {
		if ext := strings.ToLower(filepath.Ext(source[:i])); ext == ".json" || ext == ".jsonl" || ext == ".ndjson" {
			if title != "" {
				return title
			}
			return source[i:]
		}
	}
	if root != "" {
		if rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(source)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if rel == "." {
				return filepath.Base(source)
			}
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(source)
}
