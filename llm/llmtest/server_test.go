package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// post sends body to srv's root URL + path and returns the status and the body.
func post(t *testing.T, url string, body any) (int, []byte, http.Header) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out, resp.Header
}

func chatBody(user string) map[string]any {
	return map[string]any{"model": "m", "messages": []map[string]any{
		{"role": "system", "content": "sys"},
		{"role": "user", "content": user},
	}}
}

type wireAnswer struct {
	Choices []struct {
		Message      Message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Model string `json:"model"`
}

func chat(t *testing.T, srv *Server, user string) wireAnswer {
	t.Helper()
	status, body, _ := post(t, srv.URL()+"/chat/completions", chatBody(user))
	require.Equal(t, http.StatusOK, status, string(body))
	var a wireAnswer
	require.NoError(t, json.Unmarshal(body, &a))
	require.Len(t, a.Choices, 1)
	return a
}

func TestRulesAnswerInOrder(t *testing.T) {
	srv := NewServer(t)
	first := srv.On(UserContains("apple")).Reply("first").Times(2)
	srv.On(UserMatches(`(?i)APPLE|pear`)).Reply("second")
	srv.On(SystemContains("sys")).ReplyFunc(func(r Request) Reply {
		return Reply{Content: "echo " + r.LastUser(), PromptTokens: 7, CompletionTokens: 3, FinishReason: "length"}
	})

	for _, tc := range []struct {
		user, want string
	}{
		{"apple", "first"},
		{"apple pie", "first"},
		{"apple again", "second"}, // the first rule's two answers are spent
		{"pear", "second"},
		{"plum", "echo plum"},
	} {
		assert.Equal(t, tc.want, chat(t, srv, tc.user).Choices[0].Message.Content, tc.user)
	}
	assert.Equal(t, 2, first.Hits())

	a := chat(t, srv, "fig")
	assert.Equal(t, "length", a.Choices[0].FinishReason)
	assert.Equal(t, 7, a.Usage.PromptTokens)
	assert.Equal(t, 10, a.Usage.TotalTokens)
	assert.Equal(t, "m", a.Model)
	assert.Equal(t, "assistant", a.Choices[0].Message.Role)
}

func TestDefaultAnswerAndUnmatched(t *testing.T) {
	srv := NewServer(t)
	srv.On(ModelIs("other")).Reply("never")
	a := chat(t, srv, "one two three")
	assert.Equal(t, "{}", a.Choices[0].Message.Content)
	assert.Equal(t, 4, a.Usage.PromptTokens, "estimated as words")
	assert.Equal(t, 1, a.Usage.CompletionTokens)
	require.Len(t, srv.Unmatched(), 1)

	srv.SetDefault(func(r Request) Reply { return Reply{Content: "default " + r.LastUser()} })
	assert.Equal(t, "default x", chat(t, srv, "x").Choices[0].Message.Content)
}

func TestRequestsAreRecorded(t *testing.T) {
	srv := NewServer(t)
	srv.On(Any()).Reply("ok").Named("catch-all")
	body := map[string]any{
		"model": "m", "temperature": 0.3, "max_completion_tokens": 12,
		"response_format": map[string]string{"type": "json_object"},
		"messages": []map[string]any{
			{"role": "user", "content": []map[string]string{{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}}},
		},
	}
	status, _, _ := post(t, srv.URL()+"/chat/completions", body)
	require.Equal(t, http.StatusOK, status)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, 1, r.Seq)
	assert.Equal(t, Chat, r.Endpoint)
	assert.Equal(t, "part one\npart two", r.LastUser())
	require.NotNil(t, r.Temperature)
	assert.InDelta(t, 0.3, *r.Temperature, 1e-12)
	assert.Equal(t, 12, r.MaxTokens)
	assert.True(t, r.JSONMode)
	assert.Equal(t, "catch-all", r.Rule)
	assert.True(t, r.Matched && r.Answered && r.Done)
	assert.Equal(t, http.StatusOK, r.Status)
	assert.Equal(t, 1, srv.AnsweredCount())

	status, _, _ = post(t, srv.URL()+"/chat/completions", body)
	require.Equal(t, http.StatusOK, status)
	assert.Len(t, srv.Duplicates(), 1)
	assert.Equal(t, 2, srv.CountMatching(UserContains("part two")))

	srv.Reset()
	assert.Zero(t, srv.Count())
	assert.Zero(t, srv.AnsweredCount())
}

func TestPathsWithAndWithoutV1(t *testing.T) {
	srv := NewServer(t)
	for _, url := range []string{srv.URL() + "/chat/completions", srv.RootURL() + "/chat/completions"} {
		status, _, _ := post(t, url, chatBody("x"))
		assert.Equal(t, http.StatusOK, status, url)
	}
	for _, url := range []string{srv.URL() + "/embeddings", srv.RootURL() + "/embeddings"} {
		status, _, _ := post(t, url, map[string]any{"model": "e", "input": "x"})
		assert.Equal(t, http.StatusOK, status, url)
	}
	status, body, _ := post(t, srv.URL()+"/completions", chatBody("x"))
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), `"error"`)
}

func TestBadRequestsAreRejected(t *testing.T) {
	srv := NewServer(t)
	for _, body := range []any{
		map[string]any{"model": "m"},                     // no messages
		map[string]any{"model": "m", "messages": "nope"}, // wrong type
		map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "x"}}, "stream": true},
	} {
		status, _, _ := post(t, srv.URL()+"/chat/completions", body)
		assert.Equal(t, http.StatusBadRequest, status)
	}
	status, _, _ := post(t, srv.URL()+"/embeddings", map[string]any{"model": "e", "input": []int{1, 2}})
	assert.Equal(t, http.StatusBadRequest, status)
}

func TestEmbeddings(t *testing.T) {
	srv := NewServer(t)
	srv.SetEmbedDim(16)
	status, body, _ := post(t, srv.URL()+"/embeddings", map[string]any{"model": "e", "input": []string{"the cat sat", "the cat", "quantum chromodynamics"}})
	require.Equal(t, http.StatusOK, status)
	var a struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(body, &a))
	require.Len(t, a.Data, 3)
	for i, d := range a.Data {
		assert.Equal(t, i, d.Index)
		assert.Len(t, d.Embedding, 16)
		assert.InDelta(t, 1, norm(d.Embedding), 1e-5)
	}
	assert.Equal(t, 7, a.Usage.PromptTokens)
	assert.Equal(t, Embed("the cat sat", 16), a.Data[0].Embedding)
	assert.Greater(t, dot(a.Data[0].Embedding, a.Data[1].Embedding), dot(a.Data[0].Embedding, a.Data[2].Embedding),
		"texts sharing words are closer")

	// base64 encoding: little-endian float32s.
	status, body, _ = post(t, srv.URL()+"/embeddings", map[string]any{"model": "e", "input": "the cat sat", "encoding_format": "base64"})
	require.Equal(t, http.StatusOK, status)
	var b struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &b))
	raw, err := base64.StdEncoding.DecodeString(b.Data[0].Embedding)
	require.NoError(t, err)
	got := make([]float32, len(raw)/4)
	for i := range got {
		got[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	assert.Equal(t, Embed("the cat sat", 16), got)
}

func TestEmbed(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		{"case and punctuation ignored", "The Cat!", "the cat", true},
		{"word order ignored", "cat the", "the cat", true},
		{"different words", "dog", "cat", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, assert.ObjectsAreEqual(Embed(tc.a, 32), Embed(tc.b, 32)))
		})
	}
	assert.Equal(t, []float32{1, 0, 0}, Embed("  ", 3), "no words: first unit vector")
	assert.Len(t, Embed("x", 0), 1)
}

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fault      Fault
		wantStatus int
		wantErr    bool // reading the answer fails
		check      func(t *testing.T, body []byte, h http.Header)
	}{
		{"rate limited", RateLimited("2"), 429, false, func(t *testing.T, body []byte, h http.Header) {
			assert.Equal(t, "2", h.Get("Retry-After"))
			assert.Contains(t, string(body), "rate_limit_exceeded")
		}},
		{"server error", ServerError(503), 503, false, nil},
		{"custom message", Fault{Status: 401, Message: "bad key"}, 401, false, func(t *testing.T, body []byte, _ http.Header) {
			assert.Contains(t, string(body), "bad key")
		}},
		{"html body", Fault{Status: 502, Body: "<html>oops</html>"}, 502, false, func(t *testing.T, body []byte, h http.Header) {
			assert.Equal(t, "<html>oops</html>", string(body))
			assert.Equal(t, "text/html", h.Get("Content-Type"))
		}},
		{"malformed", Malformed(), 200, false, func(t *testing.T, body []byte, _ http.Header) {
			assert.False(t, json.Valid(body))
		}},
		{"truncated", Truncated(), 200, true, nil},
		{"hangup", Hangup(), 200, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(t)
			srv.FailNext(1, tc.fault)
			data, _ := json.Marshal(chatBody("x"))
			resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", bytes.NewReader(data))
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.wantStatus, resp.StatusCode)
			body, err := io.ReadAll(resp.Body)
			if tc.wantErr {
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			} else {
				require.NoError(t, err)
			}
			if tc.check != nil {
				tc.check(t, body, resp.Header)
			}
			r := srv.Requests()[0]
			assert.False(t, r.Answered)
			assert.NotEmpty(t, r.Fault)
			// The fault was for one request only.
			assert.Equal(t, "{}", chat(t, srv, "y").Choices[0].Message.Content)
		})
	}
}

func TestDropClosesWithoutAnswer(t *testing.T) {
	srv := NewServer(t)
	srv.FailNext(1, Drop())
	data, _ := json.Marshal(chatBody("x"))
	_, err := http.Post(srv.URL()+"/chat/completions", "application/json", bytes.NewReader(data))
	require.Error(t, err)
	assert.Zero(t, srv.Requests()[0].Status)
}

func TestDelayAndInFlight(t *testing.T) {
	srv := NewServer(t)
	srv.On(Any()).Delay(50 * time.Millisecond)
	var wg sync.WaitGroup
	start := time.Now()
	for range 4 {
		wg.Go(func() { chat(t, srv, "x") })
	}
	wg.Wait()
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	assert.Equal(t, 4, srv.MaxInFlight())
	assert.Zero(t, srv.InFlight())
}

func TestDelayEndsWhenClientGivesUp(t *testing.T) {
	srv := NewServer(t)
	srv.On(Any()).Delay(time.Minute)
	client := &http.Client{Timeout: 50 * time.Millisecond}
	data, _ := json.Marshal(chatBody("x"))
	_, err := client.Post(srv.URL()+"/chat/completions", "application/json", bytes.NewReader(data))
	require.Error(t, err)
	require.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 5*time.Millisecond)
	r := srv.Requests()[0]
	assert.Zero(t, r.Status)
	assert.False(t, r.Answered)
}

func TestFailNextQueuesInOrder(t *testing.T) {
	srv := NewServer(t)
	srv.FailNext(1, ServerError(500))
	srv.FailNext(2, RateLimited(""))
	var got []int
	for range 4 {
		status, _, _ := post(t, srv.URL()+"/chat/completions", chatBody("x"))
		got = append(got, status)
	}
	assert.Equal(t, []int{500, 429, 429, 200}, got)
}

func TestOnEmbeddingsFaults(t *testing.T) {
	srv := NewServer(t)
	srv.OnEmbeddings(UserContains("bad")).Fault(Status(400))
	srv.On(UserContains("bad")).Reply("chat is unaffected")
	status, _, _ := post(t, srv.URL()+"/embeddings", map[string]any{"model": "e", "input": []string{"good", "bad"}})
	assert.Equal(t, 400, status)
	status, _, _ = post(t, srv.URL()+"/embeddings", map[string]any{"model": "e", "input": "good"})
	assert.Equal(t, 200, status)
	assert.Equal(t, "chat is unaffected", chat(t, srv, "bad").Choices[0].Message.Content)
}

func TestMatchers(t *testing.T) {
	chatReq := Request{Endpoint: Chat, Model: "m1", Messages: []Message{
		{Role: "system", Content: "You extract entities."},
		{Role: "user", Content: "Alice met Bob."},
		{Role: "assistant", Content: "ok"},
	}}
	embedReq := Request{Endpoint: Embeddings, Model: "e1", Input: []string{"first text", "second text"}}
	for _, tc := range []struct {
		name      string
		m         Matcher
		chat, emb bool
	}{
		{"any", Any(), true, true},
		{"user contains", UserContains("Alice"), true, false},
		{"user contains is not system", UserContains("extract"), false, false},
		{"user contains input", UserContains("second"), false, true},
		{"user matches", UserMatches(`^Alice\b`), true, false},
		{"message contains system", MessageContains("extract"), true, false},
		{"message matches", MessageMatches(`(?i)SECOND`), false, true},
		{"system contains", SystemContains("entities"), true, false},
		{"model", ModelIs("e1"), false, true},
		{"endpoint", EndpointIs(Chat), true, false},
		{"all", All(ModelIs("m1"), UserContains("Bob")), true, false},
		{"not", Not(ModelIs("m1")), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.chat, tc.m(chatReq), "chat")
			assert.Equal(t, tc.emb, tc.m(embedReq), "embeddings")
		})
	}
}

func norm(v []float32) float64 { return math.Sqrt(dot(v, v)) }

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
