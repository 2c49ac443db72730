package llm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cacheVersion is bumped when the key material or the entry format changes, so old
// entries are simply never found again.
const cacheVersion = 1

// diskCache stores one answer per file, CacheDir/ab/abcdef….json, named by the
// SHA-256 of the request's canonical description. Files are written atomically
// (temporary file in the same directory, fsync, rename), so a reader sees either no
// entry or a complete one, even if the writer is killed.
type diskCache struct {
	dir string
}

// openCache opens dir, creating it, and checks that an entry can be written there: a
// cache that cannot keep answers (a directory another user made, a read-only disk)
// would let a killed run pay for them all again.
func openCache(dir string) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("llm: cache: %w", err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("llm: cache %s cannot be written, so answers would not be kept for a rerun: %w; set GRAPHLOOM_LLM_CACHE (--llm-cache) to a writable directory, or to off", dir, err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	shards := make([]string, sweepShards) // a few shards each time: listing all 256 is O(entries)
	for i := range shards {
		shards[i] = fmt.Sprintf("%02x", rand.IntN(256))
	}
	sweepTemps(dir, time.Now(), shards)
	return &diskCache{dir: dir}, nil
}

// staleTemp is the age past which a temporary file in the cache (put's .tmp-* in a
// shard folder, openCache's .probe-* at its root) is a killed writer's: a live
// writer's lives for milliseconds, and several processes may share the cache with no
// lock between them, so age is what tells a dead writer's file. sweepShards is how
// many of the 256 shard folders each opening sweeps (chosen at random): listing them
// all costs time in the number of entries, and a killed writer's few-KB file can
// wait for a later opening.
const (
	staleTemp   = time.Hour
	sweepShards = 8
)

// sweepTemps removes, best effort, the stale .probe-* files at the root of the cache
// at dir and the stale .tmp-* files in the given shard folders (two hex digits,
// path's).
func sweepTemps(dir string, now time.Time, shards []string) {
	sweep := func(d, prefix string) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if name := e.Name(); !e.IsDir() && strings.HasPrefix(name, prefix) {
				if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleTemp {
					_ = os.Remove(filepath.Join(d, name))
				}
			}
		}
	}
	sweep(dir, ".probe-")
	for _, s := range shards {
		sweep(filepath.Join(dir, s), ".tmp-")
	}
}

func (c *diskCache) path(key string) string {
	return filepath.Join(c.dir, key[:2], key+".json")
}

// cacheEntry is the content of one cache file. It holds the answer and what it
// answered (kind, model), never the API key or the prompt.
type cacheEntry struct {
	Version   int           `json:"v"`
	Kind      string        `json:"kind"` // "chat", "embed" or "embedspaces"
	Key       string        `json:"key"`
	Model     string        `json:"model"`
	Created   time.Time     `json:"created"`
	Chat      *cachedChat   `json:"chat,omitempty"`
	Embedding string        `json:"embedding,omitempty"` // base64 of little-endian float32s
	Dim       int           `json:"dim,omitempty"`
	Spaces    []cachedSpace `json:"spaces,omitempty"` // kindEmbedSpaces
}

type cachedChat struct {
	Content          string `json:"content"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	FinishReason     string `json:"finish_reason,omitempty"`
}

type lookup int

const (
	cacheMiss lookup = iota
	cacheHit
	cacheCorrupt
)

// get reads the entry for key. An unreadable, truncated or inconsistent file is
// reported as cacheCorrupt and is otherwise a miss.
func (c *diskCache) get(key, kind string) (cacheEntry, lookup) {
	data, err := os.ReadFile(c.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return cacheEntry{}, cacheMiss
	}
	if err != nil {
		return cacheEntry{}, cacheCorrupt
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.Version != cacheVersion || e.Kind != kind || e.Key != key {
		return cacheEntry{}, cacheCorrupt
	}
	switch kind {
	case kindChat:
		if e.Chat == nil {
			return cacheEntry{}, cacheCorrupt
		}
	case kindEmbed:
		if _, err := decodeVector(e.Embedding, e.Dim); err != nil {
			return cacheEntry{}, cacheCorrupt
		}
	case kindEmbedSpaces:
		if len(e.Spaces) == 0 {
			return cacheEntry{}, cacheCorrupt
		}
	}
	return e, cacheHit
}

// put stores e atomically under e.Key.
func (c *diskCache) put(e cacheEntry) error {
	e.Version, e.Created = cacheVersion, time.Now().UTC()
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("llm: cache: encoding entry: %w", err)
	}
	final := c.path(e.Key)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("llm: cache: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("llm: cache: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("llm: cache: writing %s: %w", final, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable across power loss; best effort (a SIGKILL loses
// nothing either way once rename has returned).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

func encodeVector(v []float32) string {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

func decodeVector(s string, dim int) ([]float32, error) {
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if dim <= 0 || len(buf) != 4*dim {
		return nil, fmt.Errorf("vector of %d bytes, want %d floats", len(buf), dim)
	}
	v := make([]float32, dim)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return v, nil
}

// Cache entry kinds, also the Op of errors.
const (
	kindChat  = "chat"
	kindEmbed = "embed"
)

// chatKey is everything that changes a chat answer. Field order is fixed, so its
// JSON encoding is canonical.
type chatKey struct {
	V              int       `json:"v"`
	Kind           string    `json:"kind"`
	BaseURL        string    `json:"base_url"`
	Model          string    `json:"model"`
	Messages       []Message `json:"messages"`
	Temperature    float64   `json:"temperature"`
	MaxTokens      int       `json:"max_tokens"`
	MaxTokensField string    `json:"max_tokens_field"`
	JSONMode       bool      `json:"json_mode"`
}

type embedKey struct {
	V       int    `json:"v"`
	Kind    string `json:"kind"`
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// Space tells apart models served under one name (EmbedProbe); "" for the
	// first one seen, whose keys are those written before spaces existed.
	Space string `json:"space,omitempty"`
	Input string `json:"input"`
}

// hashKey returns the hex SHA-256 of v's JSON encoding.
func hashKey(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("llm: encoding cache key: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalBaseURL drops user info and trailing slashes, so equivalent spellings of
// a server share cache entries and no credential enters key material.
func canonicalBaseURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		u.User = nil
		s = u.String()
	}
	return strings.TrimRight(s, "/")
}
