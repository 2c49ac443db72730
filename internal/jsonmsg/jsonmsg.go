// Package jsonmsg says in a user's words what is wrong with a JSON value: the field,
// what was expected and what came, never encoding/json's Go type names.
package jsonmsg

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Kind names the kind of a raw JSON value: "an object", "an array", "a string",
// "a number", "true", "false", "null", or "nothing" for an empty value.
func Kind(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	}
	return "a number"
}

// want names what a Go type holds in JSON words.
func want(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a value"
}

// gotWords maps encoding/json's UnmarshalTypeError.Value to words.
var gotWords = map[string]string{"number": "a number", "string": "a string", "array": "an array", "object": "an object", "bool": "true or false"}

// Describe rewrites an error of encoding/json in a user's words: for a type mismatch
// the field (dotted path), what it should hold and what it holds; for a syntax error
// the byte offset. Other errors are returned as they are.
func Describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got := te.Value
		if w, ok := gotWords[got]; ok {
			got = w
		} else if strings.HasPrefix(got, "number") {
			got = "the number" + strings.TrimPrefix(got, "number")
		}
		if te.Field == "" {
			return fmt.Sprintf("want %s, got %s", want(te.Type), got)
		}
		return fmt.Sprintf("field %q: want %s, got %s", te.Field, want(te.Type), got)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return err.Error()
}
