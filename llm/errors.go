package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Kind classifies a failure. Failed HTTP attempts are counted by kind in [Usage], and
// [Classify] maps any error this package returns to one.
type Kind string

// Failure kinds.
const (
	KindTimeout     Kind = "timeout"      // the attempt ran past Config.Timeout, or the server answered 408; retried
	KindRateLimited Kind = "rate_limited" // 429; retried after Retry-After or backoff
	KindServerError Kind = "server_error" // 5xx; retried
	KindNetwork     Kind = "network"      // connection refused/reset, body cut short; retried
	KindBadResponse Kind = "bad_response" // a 200 whose body is not a well-formed answer; retried
	KindClientError Kind = "client_error" // other 4xx (bad request, auth, unknown model); not retried
	KindOther       Kind = "other"        // anything else; not retried
	KindCanceled    Kind = "canceled"     // the caller's context ended; not a server failure
	KindUnparseable Kind = "unparseable"  // the answer arrived but holds no usable JSON (ParseJSON)
	KindConfig      Kind = "config"       // the client is not configured for the call
	KindDown        Kind = "server_down"  // Config.FailFast attempts failed and none succeeded: the client gave up on the server
)

// Sentinel errors; errors.Is(err, ErrTimeout) holds for an *APIError of that kind.
var (
	ErrTimeout     = errors.New("llm: request timed out")
	ErrRateLimited = errors.New("llm: rate limited")
	ErrServerError = errors.New("llm: server error")
	ErrNetwork     = errors.New("llm: network error")
	ErrBadResponse = errors.New("llm: malformed response")
	ErrClientError = errors.New("llm: request rejected")
	ErrServerDown  = errors.New("llm: server unusable")
	// ErrNotConfigured is returned by Chat (Embed) when the base URL or model (embed
	// model) is not set.
	ErrNotConfigured = errors.New("llm: not configured (set a base URL and a model)")
)

var kindSentinel = map[Kind]error{
	KindTimeout:     ErrTimeout,
	KindRateLimited: ErrRateLimited,
	KindServerError: ErrServerError,
	KindNetwork:     ErrNetwork,
	KindBadResponse: ErrBadResponse,
	KindClientError: ErrClientError,
	KindDown:        ErrServerDown,
}

// APIError is a request that failed for good: after its retries, or at once when the
// failure is not worth retrying. It never holds the API key.
type APIError struct {
	Op        string // "chat" or "embed"
	Stage     string // accounting label of the request
	Kind      Kind
	Status    int  // HTTP status; 0 when no response arrived
	Retryable bool // whether the failure kind is retried (it was, MaxRetries times, if so)
	Attempts  int  // HTTP attempts made
	Message   string
	Err       error // underlying error, if any

	retryAfter    time.Duration
	hasRetryAfter bool
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: %s", e.Op)
	if e.Stage != "" && e.Stage != e.Op {
		fmt.Fprintf(&b, " (%s)", e.Stage)
	}
	fmt.Fprintf(&b, ": %s", e.Kind)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *APIError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's kind (ErrTimeout, ErrRateLimited, …).
func (e *APIError) Is(target error) bool {
	s, ok := kindSentinel[e.Kind]
	return ok && s == target
}

// Classify returns the kind of err: "" for nil, KindCanceled for a context that
// ended, KindUnparseable for a ParseJSON/ChatJSON failure, KindConfig for
// ErrNotConfigured, the kind of an *APIError, and KindOther otherwise. Callers use it
// to count and skip per-item failures:
//
//	resp, err := client.ChatJSON(ctx, req, &out)
//	switch llm.Classify(err) {
//	case "":
//	case llm.KindUnparseable, llm.KindBadResponse, llm.KindClientError:
//		skipped++ // this item only
//	default:
//		return err // the server is down, or the run was cancelled
//	}
func Classify(err error) Kind {
	var ae *APIError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ae):
		return ae.Kind
	case errors.Is(err, ErrUnparseable):
		return KindUnparseable
	case errors.Is(err, ErrNotConfigured):
		return KindConfig
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return KindCanceled
	default:
		return KindOther
	}
}

// IsRetryable reports whether err is a failure kind the client retries. An error
// returned by Chat or Embed has already been retried Config.MaxRetries times.
func IsRetryable(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Retryable
}

// badResponseError is a 200 answer that cannot be used.
type badResponseError struct {
	msg string
	err error
	// urlEnv, when set, marks an answer that is not JSON at all: the environment
	// variable of the base URL that is probably wrong (GRAPHLOOM_LLM_BASE_URL).
	urlEnv, url string
}

func (e *badResponseError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *badResponseError) Unwrap() error { return e.err }

// isNetworkError reports transport failures: refused or reset connections, a body
// cut short, DNS failures.
func isNetworkError(err error) bool {
	var (
		ue *url.Error
		ne net.Error
		oe *net.OpError
	)
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &oe) || errors.As(err, &ue) || errors.As(err, &ne)
}

func isTimeoutError(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
