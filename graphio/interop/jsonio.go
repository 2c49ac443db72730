package interop

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// object is a JSON object whose member order is kept (LightRAG's kv stores are
// Python dicts dumped in insertion order).
type object struct {
	Keys    []string                   `json:"keys"`
	Records map[string]json.RawMessage `json:"records"`
}

func newObject() *object { return &object{Records: map[string]json.RawMessage{}} }

func (o *object) set(key string, v json.RawMessage) {
	if _, ok := o.Records[key]; !ok {
		o.Keys = append(o.Keys, key)
	}
	o.Records[key] = v
}

// decodeObject reads a JSON object keeping its member order. file names the input in
// errors.
func decodeObject(r io.Reader, file string) (*object, error) {
	d := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	t, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: malformed JSON: %w", file, err)
	}
	if t != json.Delim('{') {
		return nil, fmt.Errorf("%s: want a JSON object, found %v", file, t)
	}
	o := newObject()
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: malformed JSON after record %d: %w", file, len(o.Keys), err)
		}
		key := t.(string) // object keys are always strings
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s: record %q: malformed JSON: %w", file, key, err)
		}
		if _, dup := o.Records[key]; dup {
			return nil, fmt.Errorf("%s: record %q appears twice", file, key)
		}
		o.set(key, raw)
	}
	if _, err := d.Token(); err != nil {
		return nil, fmt.Errorf("%s: malformed JSON at the end: %w", file, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", file)
	}
	return o, nil
}

func readObject(path string) (*object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeObject(f, path)
}

// encode writes the object like Python's json.dump(indent=2, ensure_ascii=False).
func (o *object) encode(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if len(o.Keys) == 0 {
		bw.WriteString("{}")
		return bw.Flush()
	}
	bw.WriteString("{\n")
	var buf bytes.Buffer
	for i, k := range o.Keys {
		kb, err := marshal(k)
		if err != nil {
			return err
		}
		buf.Reset()
		if err := json.Indent(&buf, o.Records[k], "  ", "  "); err != nil {
			return fmt.Errorf("record %q: %w", k, err)
		}
		bw.WriteString("  ")
		bw.Write(kb)
		bw.WriteString(": ")
		bw.Write(buf.Bytes())
		if i < len(o.Keys)-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("}")
	return bw.Flush()
}

// marshal is json.Marshal without HTML escaping (Python writes '<' as is).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func mustMarshal(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		panic(fmt.Sprintf("interop: marshal %T: %v", v, err)) // only called on plain structs
	}
	return b
}

// encodeSidecar serialises a sidecar (records kept for re-export) with gob: vectors and
// verbatim JSON records are byte slices, copied rather than re-escaped.
func encodeSidecar(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, fmt.Errorf("interop: encode kept records: %w", err)
	}
	return buf.Bytes(), nil
}

func decodeSidecar(b []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(b)).Decode(v)
}
