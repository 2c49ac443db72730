package train

import (
	"bytes"
	"encoding/json"
	"math"
)

// nullFloat is a float64 that JSON can always hold: NaN and ±Inf, which JSON cannot
// represent (encoding/json refuses them), are written as null, and null reads back as
// NaN. An infinity therefore reads back as NaN: the log records that the value was not
// a number it can write, not which infinity it was.
type nullFloat float64

// MarshalJSON writes f, or null when f is NaN or infinite.
func (f nullFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads a number, or null as NaN.
func (f *nullFloat) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*f = nullFloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = nullFloat(v)
	return nil
}

// optFloat decodes an optional field of a log line: absent is nil, null is NaN.
func optFloat(raw json.RawMessage) (*float64, error) {
	if raw == nil {
		return nil, nil
	}
	var f nullFloat
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	v := float64(f)
	return &v, nil
}
