package llm

// Why a hand-written repairer: github.com/kaptinlin/jsonrepair v0.2.15 (a port of
// josdejong/jsonrepair) was tried in place of repairJSON behind the same candidate
// extraction and failed 10 of the 57 cases of TestExtractJSONRepairs and
// TestExtractJSONFailures: prose after the value, apostrophes in single-quoted strings,
// Python tuples, NaN/Infinity/undefined, '#' comments, numbers such as +1, .5 and 007,
// "…" placeholders, a truncated literal, raw control characters, and garbage after an
// opening bracket. It also repairs a whole text and reports no end offset, which the
// candidate search (a value followed by prose, several fenced blocks) needs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Errors of ParseJSON and ExtractJSON. Every error they return wraps ErrUnparseable
// and one of the others (or a decoding error).
var (
	ErrUnparseable = errors.New("llm: unparseable answer")
	// ErrNoJSON: the text holds no '{' or '['.
	ErrNoJSON = errors.New("no JSON object or array in the text")
	// ErrBrokenJSON: candidates were found but none could be repaired.
	ErrBrokenJSON = errors.New("JSON broken beyond repair")
	// ErrJSONMismatch: JSON was found but none of it decodes into the destination.
	ErrJSONMismatch = errors.New("JSON does not fit the destination")
	// ErrCutEarly: the answer was cut at the token limit before its first complete
	// value (ParseAnswer).
	ErrCutEarly = errors.New("answer cut at the token limit before its first complete value (raise max tokens)")
)

// FinishLength is the FinishReason of an answer cut at its token limit.
const FinishLength = "length"

// ParseAnswer decodes the JSON of resp into v as ParseJSON does. An answer cut at the
// token limit (FinishReason FinishLength) first loses its unfinished tail
// (DropUnfinished): ParseJSON would close a string cut mid-word and return its stump
// as a whole value — a triple ending in "Port Kes" for "Port Keswyn". The record the
// cut fell in goes whole; a flat answer cut anywhere is an ErrCutEarly.
func ParseAnswer(resp ChatResponse, v any) error {
	text := resp.Content
	if resp.FinishReason == FinishLength {
		var ok bool
		if text, ok = DropUnfinished(text); !ok {
			return &ParseError{Err: ErrCutEarly, Snippet: snippet(resp.Content)}
		}
	}
	return ParseJSON(text, v)
}

// DropUnfinished cuts a text that was cut short back to its last whole record: the
// element of the outermost array still open that the cut fell in — a triple, an
// entity, a hyperedge with its members, a proposal with its chunk ids — goes whole,
// so no record reaches the caller short (HippoRAG 2's fix_broken_generated_json cuts
// at the last comma instead, leaving a two-part triple for its validation to drop).
// When that array has no finished element yet, the member holding it goes instead
// (an object's second list cut before its first element keeps the first list). An
// element that ended before the cut (a closed array, object or string) stays. The
// scan starts at the first bracket outside <think> blocks, as ParseJSON reads; a cut
// in prose after a whole value keeps the value. Strings are double-quoted
// (single-quoted ones are not tracked). It reports false when nothing whole
// precedes the cut (a flat answer cut in its first member).
func DropUnfinished(text string) (string, bool) {
	type open struct {
		array bool
		comma int // the position of the last comma at this level, -1 before any
		elem  int // where its current element starts (after '[' or that comma)
	}
	// The JSON follows the last closed reasoning block (stripThink's tags).
	off, lower := 0, strings.ToLower(text)
	for _, tag := range []string{"think", "thinking", "reasoning"} {
		if k := strings.LastIndex(lower, "</"+tag+">"); k >= 0 {
			off = max(off, k+len("</"+tag+">"))
		}
	}
	body := text[off:]
	start := strings.IndexAny(body, "[{")
	if start < 0 {
		return text, true // no JSON here: ParseJSON says so
	}
	var stack []open
	inString, escaped := false, false
	lastWhole := -1 // just after the last value that closed the whole stack
	for i := start; i < len(body); i++ {
		c := body[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			if len(stack) > 0 {
				inString = true
			}
		case c == '[' || c == '{':
			stack = append(stack, open{array: c == '[', comma: -1, elem: i + 1})
		case c == ']' || c == '}':
			if len(stack) > 0 {
				if stack = stack[:len(stack)-1]; len(stack) == 0 {
					lastWhole = i + 1
				}
			}
		case c == ',' && len(stack) > 0:
			top := &stack[len(stack)-1]
			top.comma, top.elem = i, i+1
		}
	}
	cut := func(at int) (string, bool) { return text[:off+at], true }
	if len(stack) == 0 {
		return text, true // whole: the cut fell after the JSON
	}
	outer := -1
	for k, o := range stack {
		if o.array {
			outer = k
			break
		}
	}
	if outer >= 0 {
		o := stack[outer]
		if outer == len(stack)-1 && !inString {
			// The cut fell between the array's elements: the last one ended whole if
			// it closes a container or a string.
			if last := strings.TrimSpace(body[o.elem:]); last != "" && strings.ContainsAny(last[len(last)-1:], "]}\"") {
				return text, true
			}
		}
		if o.comma >= 0 {
			return cut(o.comma)
		}
	} else {
		outer = len(stack)
	}
	// No finished element in the outermost open array (or no array open): drop the
	// member of the enclosing objects that holds the cut.
	for k := outer - 1; k >= 0; k-- {
		if stack[k].comma >= 0 {
			return cut(stack[k].comma)
		}
	}
	if lastWhole > 0 {
		return cut(lastWhole)
	}
	return "", false
}

// ParseError is the error of ParseJSON and ExtractJSON. errors.Is(err,
// ErrUnparseable) holds for it, and Classify returns KindUnparseable.
type ParseError struct {
	Err     error  // ErrNoJSON, ErrBrokenJSON, or ErrJSONMismatch wrapping the decoding error
	Snippet string // the start of the text, for a log line
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("llm: unparseable answer: %v (text starts %q)", e.Err, e.Snippet)
}

// Unwrap returns the specific cause.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnparseable.
func (e *ParseError) Is(target error) bool { return target == ErrUnparseable }

// Bounds on the work spent on one text.
const (
	maxCandidates = 16  // repaired values kept
	maxStarts     = 128 // '{' / '[' positions tried, over all sources
	maxFences     = 8   // markdown code blocks looked into
	maxDepth      = 512 // nesting of a repaired value
)

// ParseJSON decodes the JSON an LLM answer holds into v, a non-nil pointer, with
// encoding/json. It tolerates what models wrap around and break in JSON:
//
//   - <think>…</think> (and <thinking>, <reasoning>) blocks, including an unclosed
//     one and a lone closing tag after the opening one was in the prompt;
//   - markdown code fences, with or without a language tag, closed or not;
//   - prose before and after: the first balanced top-level {…} or […] is taken,
//     scanning string-aware, so brackets inside strings do not count;
//   - trailing commas, missing commas, comments (//, /* */, #), "..." placeholders;
//   - single-quoted and smart-quoted strings and keys, unquoted keys, unescaped
//     quotes and raw newlines inside strings, invalid escapes;
//   - Python and JavaScript literals: True, False, None, NaN, Infinity, undefined,
//     tuples; numbers like +1, .5, 1., 007;
//   - a truncated tail: open strings, arrays and objects are closed (a key left
//     without a value gets null).
//
// Candidates are tried in order (code blocks first, then the text; values needing
// only the mild repairs above before those that needed guesses, such as quoting a
// bare word or inventing a null), and the first that decodes into v's type wins.
// When none does, the error is a *ParseError.
func ParseJSON(text string, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("llm: ParseJSON: destination must be a non-nil pointer, got %T", v)
	}
	cs, sawStart := candidates(text, 0)
	if len(cs) == 0 {
		return noCandidate(text, sawStart)
	}
	if len(cs) == 1 {
		if err := json.Unmarshal([]byte(cs[0].text), v); err != nil {
			return &ParseError{Err: fmt.Errorf("%w: %w", ErrJSONMismatch, err), Snippet: snippet(text)}
		}
		return nil
	}
	var firstErr error
	for _, c := range cs {
		// Probe a fresh value first: a failed decode leaves v half-filled.
		probe := reflect.New(rv.Elem().Type())
		if err := json.Unmarshal([]byte(c.text), probe.Interface()); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return json.Unmarshal([]byte(c.text), v)
	}
	return &ParseError{Err: fmt.Errorf("%w: %w", ErrJSONMismatch, firstErr), Snippet: snippet(text)}
}

// ExtractJSON returns the JSON value an LLM answer holds, repaired into strict JSON,
// by the rules of ParseJSON (without a destination type, the first candidate wins).
// A text that is entirely one valid JSON value is returned trimmed, unchanged.
func ExtractJSON(text string) (string, error) {
	cs, sawStart := candidates(text, 0)
	if len(cs) == 0 {
		return "", noCandidate(text, sawStart)
	}
	return cs[0].text, nil
}

func noCandidate(text string, sawStart bool) error {
	err := ErrNoJSON
	if sawStart {
		err = ErrBrokenJSON
	}
	return &ParseError{Err: err, Snippet: snippet(text)}
}

func snippet(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= 80 {
		return text
	}
	return string([]rune(text)[:80]) + "…"
}

type candidate struct {
	text  string // strict JSON
	heavy int    // guessed repairs
}

// candidates lists the JSON values text may hold, best first, and reports whether
// it saw any '{' or '['.
func candidates(text string, depth int) ([]candidate, bool) {
	var cs []candidate
	seen := make(map[string]bool)
	add := func(s string, heavy int) {
		if len(cs) < maxCandidates && !seen[s] && json.Valid([]byte(s)) {
			seen[s] = true
			cs = append(cs, candidate{s, heavy})
		}
	}
	if t := strings.TrimSpace(text); json.Valid([]byte(t)) {
		if t[0] == '{' || t[0] == '[' {
			return []candidate{{text: t}}, true
		}
		// A JSON string may itself hold the JSON ("{\"a\": 1}"); a bare number or
		// literal is kept last.
		var inner string
		if t[0] == '"' && depth == 0 && json.Unmarshal([]byte(t), &inner) == nil {
			cs, _ = candidates(inner, depth+1)
			for _, c := range cs {
				seen[c.text] = true
			}
		}
		add(t, 0)
		return cs, true
	}

	body := stripThink(text)
	sources := fences(body)
	sources = append(sources, body)
	if body != text {
		sources = append(sources, text)
	}
	sawStart, starts := false, 0
	for _, src := range sources {
		if t := strings.TrimSpace(src); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			add(t, 0)
			sawStart = true
			continue
		}
		for i := 0; i < len(src) && starts < maxStarts && len(cs) < maxCandidates; {
			j := strings.IndexAny(src[i:], "{[")
			if j < 0 {
				break
			}
			p := i + j
			starts++
			sawStart = true
			out, end, heavy, ok := repairJSON(src[p:])
			if ok {
				add(out, heavy)
				i = p + end
			} else {
				i = p + 1
			}
		}
	}
	slices.SortStableFunc(cs, func(a, b candidate) int {
		return boolInt(a.heavy > 0) - boolInt(b.heavy > 0)
	})
	return cs, sawStart
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stripThink removes reasoning blocks.
func stripThink(s string) string {
	for _, tag := range []string{"think", "thinking", "reasoning"} {
		s = stripTag(s, "<"+tag+">", "</"+tag+">")
	}
	return s
}

func stripTag(s, open, close string) string {
	// A closing tag before any opening one ends reasoning whose opening tag was part
	// of the prompt template (DeepSeek-R1, Qwen3): drop everything before it.
	if j, i := indexFold(s, close), indexFold(s, open); j >= 0 && (i < 0 || j < i) {
		s = s[j+len(close):]
	}
	var b strings.Builder
	for {
		i := indexFold(s, open)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+len(open):]
		k := indexFold(rest, close)
		if k < 0 {
			return b.String() // unclosed: the answer was cut while reasoning
		}
		s = rest[k+len(close):]
	}
}

// indexFold is strings.Index, ignoring ASCII case; sub must be lower-case ASCII.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lowerASCII(s[i+j]) == sub[j] {
			j++
		}
		if j == len(sub) {
			return i
		}
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// fences returns the contents of markdown code blocks, the last one possibly
// unclosed (a truncated answer).
func fences(s string) []string {
	var out []string
	for len(out) < maxFences {
		i := strings.Index(s, "```")
		if i < 0 {
			break
		}
		rest := strings.TrimLeft(s[i:], "`")
		// A language tag: a run of tag characters followed by white space.
		n := 0
		for n < len(rest) && isTagChar(rest[n]) {
			n++
		}
		if n > 0 && (n == len(rest) || rest[n] == ' ' || rest[n] == '\t' || rest[n] == '\r' || rest[n] == '\n') {
			rest = rest[n:]
		}
		end := strings.Index(rest, "```")
		if end < 0 {
			out = append(out, rest)
			break
		}
		out = append(out, rest[:end])
		s = strings.TrimLeft(rest[end:], "`")
	}
	return out
}

func isTagChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '+' || c == '.'
}

// Parser states of repairJSON.
const (
	stValue = iota // a value is expected
	stKey          // an object key (or the end of the object) is expected
	stColon        // the colon after a key is expected
	stAfter        // a comma or the end of the container is expected
)

var errUnrepairable = errors.New("unrepairable")

// repairer rewrites one lenient JSON value, starting at '{' or '[', into strict JSON.
type repairer struct {
	src   string
	pos   int
	out   []byte
	stack []byte // '{', '[' or '(' (a Python tuple, written as an array)
	heavy int
}

// repairJSON rewrites the value at the start of src (which begins with '{' or '[')
// into strict JSON. It returns the JSON, the number of bytes of src it consumed, the
// number of guessed repairs, and whether it succeeded.
func repairJSON(src string) (out string, consumed, heavy int, ok bool) {
	r := &repairer{src: src, out: make([]byte, 0, len(src)+16)}
	if err := r.run(); err != nil {
		return "", 0, 0, false
	}
	return string(r.out), r.pos, r.heavy, true
}

func (r *repairer) run() error {
	if r.src == "" || (r.src[0] != '{' && r.src[0] != '[') {
		return errUnrepairable
	}
	state := stValue
	for {
		r.skipSpace()
		if r.pos >= len(r.src) {
			r.finish(state)
			return nil
		}
		c := r.src[r.pos]
		switch state {
		case stValue:
			switch {
			case c == '{':
				if err := r.push('{'); err != nil {
					return err
				}
				state = stKey
			case c == '[' || c == '(':
				if err := r.push(c); err != nil {
					return err
				}
			case c == '}' || c == ']' || c == ')':
				if r.top() == '{' { // "key": } — the value is missing
					r.emit("null")
					r.heavy++
				}
				state = stAfter
			case c == ',':
				if r.top() == '{' {
					r.emit("null")
					r.heavy++
					state = stAfter
				} else {
					r.pos++ // [1,,2]
				}
			case r.atEllipsis():
				r.skipEllipsis()
			case c == '"' || c == '\'' || r.atSmartQuote():
				r.readString()
				state = stAfter
			case c == '-' || c == '+' || c == '.' || isDigit(c):
				r.readNumber()
				state = stAfter
			case isWordStart(c):
				r.readWord()
				state = stAfter
			default:
				return errUnrepairable
			}
		case stKey:
			switch {
			case c == '}':
				if r.closeWith(c) {
					return nil
				}
				state = stAfter
			case c == ']' || c == ')':
				state = stAfter // a mismatched closer; stAfter sorts it out
			case c == ',':
				r.pos++
			case c == '"' || c == '\'' || r.atSmartQuote():
				r.readString()
				state = stColon
			case isWordStart(c) || isDigit(c) || c == '-':
				r.readBareKey()
				state = stColon
			default:
				return errUnrepairable
			}
		case stColon:
			switch {
			case c == ':':
				r.emit(":")
				r.pos++
				state = stValue
			case c == '}' || c == ']' || c == ')' || c == ',':
				r.emit(":null")
				r.heavy++
				state = stAfter
			case startsValue(c):
				r.emit(":")
				r.heavy++
				state = stValue
			default:
				return errUnrepairable
			}
		case stAfter:
			switch {
			case c == ',':
				r.emit(",")
				r.pos++
				state = r.afterComma()
			case c == '}' || c == ']' || c == ')':
				if r.closeWith(c) {
					return nil
				}
			case c != ':' && startsValue(c): // a missing comma
				r.emit(",")
				r.heavy++
				state = r.afterComma()
			default:
				return errUnrepairable
			}
		}
	}
}

func (r *repairer) afterComma() int {
	if r.top() == '{' {
		return stKey
	}
	return stValue
}

func (r *repairer) emit(s string) { r.out = append(r.out, s...) }

func (r *repairer) top() byte {
	if len(r.stack) == 0 {
		return 0
	}
	return r.stack[len(r.stack)-1]
}

func (r *repairer) push(c byte) error {
	if len(r.stack) >= maxDepth {
		return errUnrepairable
	}
	r.stack = append(r.stack, c)
	if c == '{' {
		r.emit("{")
	} else {
		r.emit("[")
	}
	r.pos++
	return nil
}

// pop closes the innermost container, dropping a trailing comma.
func (r *repairer) pop() {
	if n := len(r.out); n > 0 && r.out[n-1] == ',' {
		r.out = r.out[:n-1]
	}
	if r.top() == '{' {
		r.emit("}")
	} else {
		r.emit("]")
	}
	r.stack = r.stack[:len(r.stack)-1]
}

// closeWith handles the closer c at r.pos and reports whether the top-level value
// is complete. A closer that matches an outer container closes the inner ones
// first; one that matches nothing is dropped.
func (r *repairer) closeWith(c byte) bool {
	want := byte('[')
	if c == '}' {
		want = '{'
	}
	kind := func(o byte) byte {
		if o == '(' {
			return '['
		}
		return o
	}
	switch {
	case kind(r.top()) == want:
		r.pos++
		r.pop()
	case slices.ContainsFunc(r.stack, func(o byte) bool { return kind(o) == want }):
		r.pop() // close the inner container; the closer is seen again
		r.heavy++
	default:
		r.pos++ // a stray closer
		r.heavy++
	}
	return len(r.stack) == 0
}

// finish completes a value cut short at the end of the text.
func (r *repairer) finish(state int) {
	switch {
	case state == stColon:
		r.emit(":null")
	case state == stValue && r.top() == '{':
		r.emit("null")
	}
	for len(r.stack) > 0 {
		r.pop()
	}
}

// skipSpace skips white space (Unicode included) and comments.
func (r *repairer) skipSpace() {
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			r.pos++
		case c == '/' && strings.HasPrefix(r.src[r.pos:], "//"), c == '#':
			if i := strings.IndexByte(r.src[r.pos:], '\n'); i >= 0 {
				r.pos += i + 1
			} else {
				r.pos = len(r.src)
			}
		case c == '/' && strings.HasPrefix(r.src[r.pos:], "/*"):
			if i := strings.Index(r.src[r.pos+2:], "*/"); i >= 0 {
				r.pos += i + 4
			} else {
				r.pos = len(r.src)
			}
		case c >= utf8.RuneSelf:
			ch, size := utf8.DecodeRuneInString(r.src[r.pos:])
			if !unicode.IsSpace(ch) && ch != '\uFEFF' {
				return
			}
			r.pos += size
		default:
			return
		}
	}
}

func (r *repairer) atEllipsis() bool {
	return strings.HasPrefix(r.src[r.pos:], "...") || strings.HasPrefix(r.src[r.pos:], "…")
}

func (r *repairer) skipEllipsis() {
	for r.pos < len(r.src) {
		switch {
		case r.src[r.pos] == '.':
			r.pos++
		case strings.HasPrefix(r.src[r.pos:], "…"):
			r.pos += len("…")
		default:
			return
		}
	}
}

// Smart quotes and the quotes that may close them.
var smartClosers = map[rune]string{
	'“': "”\"", '”': "”\"", '„': "“”\"",
	'‘': "’'", '’': "’'", '‚': "‘’'",
}

func (r *repairer) atSmartQuote() bool {
	ch, _ := utf8.DecodeRuneInString(r.src[r.pos:])
	_, ok := smartClosers[ch]
	return ok
}

// readString rewrites a quoted string (double, single or smart quotes) as a JSON
// string. A quote that is not followed by a delimiter is taken as part of the text
// and escaped; a string cut by the end of the text is closed.
func (r *repairer) readString() {
	open, size := utf8.DecodeRuneInString(r.src[r.pos:])
	closers := string(open)
	if s, ok := smartClosers[open]; ok {
		closers = s
	}
	r.pos += size
	r.emit(`"`)
	for r.pos < len(r.src) {
		ch, size := utf8.DecodeRuneInString(r.src[r.pos:])
		if ch == '\\' {
			r.readEscape()
			continue
		}
		if strings.ContainsRune(closers, ch) && r.closesString(r.pos+size) {
			r.pos += size
			r.emit(`"`)
			return
		}
		switch {
		case ch == '"':
			r.emit(`\"`)
		case ch < 0x20:
			r.emit(controlEscape(ch))
		case ch == utf8.RuneError && size == 1:
			r.emit(`\ufffd`)
		default:
			r.emit(r.src[r.pos : r.pos+size])
		}
		r.pos += size
	}
	r.emit(`"`)
}

// readEscape rewrites the backslash escape at r.pos.
func (r *repairer) readEscape() {
	if r.pos+1 >= len(r.src) {
		r.pos++ // a lone backslash at the very end
		return
	}
	switch n := r.src[r.pos+1]; n {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		r.emit(r.src[r.pos : r.pos+2])
		r.pos += 2
	case 'u':
		if r.pos+6 <= len(r.src) && isHex4(r.src[r.pos+2:r.pos+6]) {
			r.emit(r.src[r.pos : r.pos+6])
			r.pos += 6
		} else {
			r.emit(`\\`)
			r.pos++
		}
	case '\'':
		r.emit("'")
		r.pos += 2
	case '\n':
		r.pos += 2 // a line continuation
	default:
		r.emit(`\\`) // a literal backslash; the next character is read normally
		r.pos++
	}
}

// closesString reports whether a quote ending at i ends the string: it does when
// followed (after blanks) by a delimiter, a comment, a line break or the end, or by
// another quoted string that is itself followed by a delimiter (a missing comma:
// "a" "b": …).
func (r *repairer) closesString(i int) bool {
	for i < len(r.src) {
		switch c := r.src[i]; c {
		case ' ', '\t':
			i++
		case '\n', '\r', ',', ':', '}', ']', ')':
			return true
		case '/':
			return strings.HasPrefix(r.src[i:], "//") || strings.HasPrefix(r.src[i:], "/*")
		case '"':
			end := strings.IndexAny(r.src[i+1:], "\"\n")
			if end < 0 || r.src[i+1+end] != '"' || r.src[i+end] == '\\' {
				return false
			}
			for j := i + end + 2; j < len(r.src); j++ {
				switch r.src[j] {
				case ' ', '\t':
					continue
				case ',', ':', '}', ']', '\n', '\r':
					return true
				}
				return false
			}
			return true
		default:
			return false
		}
	}
	return true
}

func controlEscape(ch rune) string {
	switch ch {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	}
	return fmt.Sprintf(`\u%04x`, ch)
}

func isHex4(s string) bool {
	for i := range 4 {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$' || c >= utf8.RuneSelf
}

func isIdentChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '$'
}

func startsValue(c byte) bool {
	return c == '{' || c == '[' || c == '"' || c == '\'' || c == '-' || c == '+' || c == '.' ||
		isDigit(c) || isWordStart(c)
}

// readNumber rewrites a number, fixing the forms JavaScript and Python allow but
// JSON does not; a token that is no number becomes a string.
func (r *repairer) readNumber() {
	start := r.pos
	for r.pos < len(r.src) && strings.IndexByte("+-0123456789.eE", r.src[r.pos]) >= 0 {
		r.pos++
	}
	if r.pos < len(r.src) && (isIdentChar(r.src[r.pos]) || r.src[r.pos] >= utf8.RuneSelf) {
		r.pos = start // glued to letters: -Infinity, 5a3f, 1st
		r.readWord()
		return
	}
	tok := r.src[start:r.pos]
	if n, ok := normalizeNumber(tok); ok {
		r.emit(n)
		return
	}
	r.emit(quoteJSON(tok))
	r.heavy++
}

func normalizeNumber(tok string) (string, bool) {
	s, sign := tok, ""
	if s != "" && s[0] == '+' {
		s = s[1:]
	} else if s != "" && s[0] == '-' {
		s, sign = s[1:], "-"
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac, hasDot := strings.Cut(mant, ".")
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	if exp == "+" || exp == "-" {
		exp = "" // cut short
	}
	if mant == "" || (mant == "." && frac == "") {
		return "", false
	}
	n := sign + intPart
	if hasDot && frac != "" {
		n += "." + frac
	}
	if exp != "" {
		n += "e" + exp
	}
	if !json.Valid([]byte(n)) {
		return "", false
	}
	return n, true
}

// literals maps Python and JavaScript literals to JSON.
var literals = map[string]string{
	"true": "true", "True": "true", "TRUE": "true",
	"false": "false", "False": "false", "FALSE": "false",
	"null": "null", "Null": "null", "NULL": "null", "None": "null", "nil": "null", "undefined": "null",
	"NaN": "null", "Infinity": "null", "-Infinity": "null", "+Infinity": "null", "inf": "null", "-inf": "null",
}

// readWord rewrites a literal, or quotes a bare word running to the next delimiter.
func (r *repairer) readWord() {
	start := r.pos
	if c := r.src[r.pos]; c == '-' || c == '+' {
		r.pos++
	}
	for r.pos < len(r.src) && isIdentChar(r.src[r.pos]) {
		r.pos++
	}
	word := r.src[start:r.pos]
	if lit, ok := literals[word]; ok {
		r.emit(lit)
		return
	}
	if r.pos == len(r.src) && word != "" { // cut short: "tr", "Fal", "nu"
		for _, full := range []string{"true", "false", "null", "True", "False", "None"} {
			if strings.HasPrefix(full, word) {
				r.emit(literals[full])
				return
			}
		}
	}
	for r.pos < len(r.src) && strings.IndexByte(",}])\n\r", r.src[r.pos]) < 0 {
		r.pos++
	}
	r.emit(quoteJSON(strings.TrimSpace(r.src[start:r.pos])))
	r.heavy++
}

// readBareKey quotes an unquoted key. An identifier is a mild repair (JavaScript
// style); anything else is a guess.
func (r *repairer) readBareKey() {
	start := r.pos
	for r.pos < len(r.src) && strings.IndexByte(":,}\n\r", r.src[r.pos]) < 0 {
		r.pos++
	}
	key := strings.TrimSpace(r.src[start:r.pos])
	for i := 0; i < len(key); i++ {
		if !isIdentChar(key[i]) {
			r.heavy++
			break
		}
	}
	r.emit(quoteJSON(key))
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
