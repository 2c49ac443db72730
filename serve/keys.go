package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// errMalformed stops the walk at malformed JSON, which the decoder then reports.
var errMalformed = errors.New("malformed JSON")

// exactKeys checks that every object key in data names a field of t (a struct, or a
// pointer, slice or array of one) exactly as its JSON tag spells it, and that no object
// gives a key twice. encoding/json matches keys case-insensitively and keeps the last
// of duplicates, so {"question": "a", "Question": "b"} would be read as "b" — a body a
// proxy or a client library may read otherwise. A key no field names is left to the
// decoder's DisallowUnknownFields; malformed JSON to the decoder as well.
func exactKeys(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkKeys(dec, t, ""); err != nil && !errors.Is(err, errMalformed) {
		return err
	}
	return nil
}

// walkKeys reads one value from dec, checking the keys of its objects against t; at
// names the value's place for messages ("questions[2]").
func walkKeys(dec *json.Decoder, t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return errMalformed // a Token error repeats: stop here, the decoder says what
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return errMalformed
			}
			key, _ := kt.(string)
			where := key
			if at != "" {
				where = at + "." + key
			}
			if seen[key] {
				return fmt.Errorf("field %q given twice", where)
			}
			seen[key] = true
			ft, ok := fields[key]
			if !ok && fields != nil {
				for name := range fields {
					if strings.EqualFold(name, key) {
						return fmt.Errorf("field %q: keys are case-sensitive, want %q", where, name)
					}
				}
			}
			if err := walkKeys(dec, ft, where); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return errMalformed
		}
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkKeys(dec, et, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return errMalformed
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) { // promoted, as encoding/json reads them
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
