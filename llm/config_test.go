package llm

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultConfig(t *testing.T) {
	cfg := DefaultConfig()
	assert.Equal(t, 16, cfg.Concurrency)
	assert.Equal(t, 120*time.Second, cfg.Timeout)
	assert.Equal(t, 6, cfg.MaxRetries)
	assert.Equal(t, time.Second, cfg.BackoffBase)
	assert.Equal(t, 60*time.Second, cfg.BackoffMax)
	assert.Equal(t, 64, cfg.EmbedBatchSize)
	assert.Zero(t, cfg.Temperature)
	assert.Empty(t, cfg.CacheDir)
	assert.False(t, cfg.Configured())

	// Zero fields take defaults; set ones are kept; a negative MaxRetries disables retries.
	c := Config{Concurrency: 2, MaxRetries: -1, BackoffMax: 10 * time.Millisecond}.withDefaults()
	assert.Equal(t, 2, c.Concurrency)
	assert.Equal(t, 0, c.retries())
	assert.Equal(t, 10*time.Millisecond, c.BackoffBase, "BackoffBase is lowered to BackoffMax")
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want func(*Config)
	}{
		{"nothing set", map[string]string{}, func(*Config) {}},
		{"ollama", map[string]string{
			"GRAPHLOOM_LLM_BASE_URL": "http://localhost:11434/v1",
			"GRAPHLOOM_LLM_MODEL":    "qwen3:8b",
			"GRAPHLOOM_EMBED_MODEL":  "nomic-embed-text",
			"HOME":                   "/home/u",
		}, func(c *Config) {
			c.BaseURL, c.Model, c.EmbedModel = "http://localhost:11434/v1", "qwen3:8b", "nomic-embed-text"
			c.CacheDir = filepath.Join("/home/u", ".cache", "graphloom", "llm")
		}},
		{"separate embed server", map[string]string{
			"GRAPHLOOM_LLM_BASE_URL":   "http://a/v1",
			"GRAPHLOOM_EMBED_BASE_URL": "http://b/v1",
		}, func(c *Config) { c.BaseURL, c.EmbedBaseURL = "http://a/v1", "http://b/v1" }},
		{"graphloom key wins", map[string]string{
			"GRAPHLOOM_API_KEY": "k1", "OPENAI_API_KEY": "k2",
		}, func(c *Config) { c.APIKey = "k1" }},
		{"openai key fallback", map[string]string{"OPENAI_API_KEY": " k2 "}, func(c *Config) { c.APIKey = "k2" }},
		{"embeddings batch", map[string]string{"GRAPHLOOM_EMBED_BATCH": "32"}, func(c *Config) { c.EmbedBatchSize = 32 }},
		{"embeddings batch not a count", map[string]string{"GRAPHLOOM_EMBED_BATCH": "lots"}, func(c *Config) { c.EmbedBatchSize = -1 }},
		{"XDG cache", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/home/u"},
			func(c *Config) { c.CacheDir = filepath.Join("/x", "graphloom", "llm") }},
		{"explicit cache", map[string]string{"GRAPHLOOM_LLM_CACHE": "/tmp/c", "HOME": "/home/u"},
			func(c *Config) { c.CacheDir = "/tmp/c" }},
		{"cache off", map[string]string{"GRAPHLOOM_LLM_CACHE": "off", "HOME": "/home/u"}, func(*Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := DefaultConfig()
			tc.want(&want)
			got := ConfigFromEnv(func(k string) string { return tc.env[k] })
			assert.Equal(t, want, got)
		})
	}
}

func TestConfiguredAndEmbedConfigured(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		chat, embd bool
	}{
		{"empty", Config{}, false, false},
		{"chat only", Config{BaseURL: "http://h/v1", Model: "m"}, true, false},
		{"embed on the chat server", Config{BaseURL: "http://h/v1", EmbedModel: "e"}, false, true},
		{"embed on its own server", Config{EmbedBaseURL: "http://e/v1", EmbedModel: "e"}, false, true},
		{"model without URL", Config{Model: "m"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.chat, tc.cfg.Configured())
			assert.Equal(t, tc.embd, tc.cfg.EmbedConfigured())
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"empty", Config{}, true},
		{"http", Config{BaseURL: "http://localhost:8000/v1"}, true},
		{"https", Config{BaseURL: "https://api.openai.com/v1"}, true},
		{"no scheme", Config{BaseURL: "localhost:8000"}, false},
		{"ftp", Config{EmbedBaseURL: "ftp://h/v1"}, false},
		{"unparseable", Config{BaseURL: "http://[::1"}, false},
		{"negative temperature", Config{Temperature: -0.1}, false},
		{"negative max tokens", Config{MaxTokens: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestConfigRedactsSecrets(t *testing.T) {
	cfg := Config{BaseURL: "http://user:hunter2@host/v1", Model: "m", APIKey: testKey}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "llm", cfg)
	for _, s := range []string{cfg.String(), cfg.GoString(), logs.String()} {
		assert.NotContains(t, s, testKey)
		assert.NotContains(t, s, "hunter2")
		assert.Contains(t, s, "REDACTED")
	}
	assert.Contains(t, Config{}.String(), "APIKey: unset")

	require.NoError(t, cfg.Validate())
	_, err := New(Config{BaseURL: "gopher://user:hunter2@host/v1"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	// A URL that does not parse: url.Error would quote it whole.
	for _, u := range []string{"https://key:hunter2%zz@gw/v1", "http://user:hunter2@[::1/v1"} {
		err = Config{BaseURL: u}.Validate()
		require.Error(t, err, u)
		assert.NotContains(t, err.Error(), "hunter2", u)
		assert.Contains(t, err.Error(), "does not parse as a URL", u)
		assert.NotContains(t, RedactURL(u), "hunter2", u)
	}
}

// TestRequestDeadlineDefault: the default deadline never caps the attempt timeout
// asked for (an --llm-timeout of 30m met a fixed 10-minute deadline); one set is kept.
func TestRequestDeadlineDefault(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		deadline time.Duration
	}{
		{"defaults", Config{}, 10 * time.Minute},
		{"short timeout", Config{Timeout: 30 * time.Second}, 10 * time.Minute},
		{"long timeout", Config{Timeout: 30 * time.Minute}, 90 * time.Minute},
		{"deadline set", Config{Timeout: 30 * time.Minute, RequestDeadline: 5 * time.Minute}, 5 * time.Minute},
	} {
		assert.Equal(t, tc.deadline, tc.cfg.withDefaults().RequestDeadline, tc.name)
	}
}

// TestEmbedBatchFromEnvIsChecked: a GRAPHLOOM_EMBED_BATCH that is no positive count
// is an error naming the variable, not a silent return to the default.
func TestEmbedBatchFromEnvIsChecked(t *testing.T) {
	for _, v := range []string{"lots", "0", "-3", "32k"} {
		cfg := ConfigFromEnv(func(k string) string {
			if k == EnvEmbedBatch {
				return v
			}
			return ""
		})
		_, err := New(cfg)
		assert.ErrorContains(t, err, EnvEmbedBatch, v)
	}
}
