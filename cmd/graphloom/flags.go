package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphloom/graphloom/llm"
)

// rangeAnnotation is the pflag annotation holding a numeric flag's allowed range.
const rangeAnnotation = "graphloom/range"

// numericFlagTypes are the pflag value types whose values are range-checked.
var numericFlagTypes = map[string]bool{
	"int": true, "int32": true, "int64": true, "uint": true, "float32": true, "float64": true,
	"duration": true, "intSlice": true,
}

// flagRange is the allowed interval of a numeric flag; durations are in seconds.
type flagRange struct {
	lo, hi         float64
	loOpen, hiOpen bool // exclude the bound itself
}

func (r flagRange) contains(x float64) bool {
	if math.IsNaN(x) {
		return false
	}
	if x < r.lo || (r.loOpen && x == r.lo) {
		return false
	}
	return x < r.hi || (!r.hiOpen && x == r.hi)
}

func fmtBound(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "∞"
	case math.IsInf(x, -1):
		return "-∞"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func (r flagRange) String() string {
	lb, rb := "[", "]"
	if r.loOpen {
		lb = "("
	}
	if r.hiOpen {
		rb = ")"
	}
	return lb + fmtBound(r.lo) + ", " + fmtBound(r.hi) + rb
}

func (r flagRange) encode() []string {
	return []string{fmtBound(r.lo), fmtBound(r.hi), strconv.FormatBool(r.loOpen), strconv.FormatBool(r.hiOpen)}
}

func decodeRange(a []string) (flagRange, bool) {
	if len(a) != 4 {
		return flagRange{}, false
	}
	parse := func(s string) float64 {
		switch s {
		case "∞":
			return math.Inf(1)
		case "-∞":
			return math.Inf(-1)
		}
		x, _ := strconv.ParseFloat(s, 64)
		return x
	}
	return flagRange{lo: parse(a[0]), hi: parse(a[1]), loOpen: a[2] == "true", hiOpen: a[3] == "true"}, true
}

// Common ranges.
var (
	atLeast1 = func(hi float64) flagRange { return flagRange{lo: 1, hi: hi} }
	atLeast0 = func(hi float64) flagRange { return flagRange{lo: 0, hi: hi} }
	unit     = flagRange{lo: 0, hi: 1} // [0, 1]
	openUnit = flagRange{lo: 0, hi: 1, loOpen: true, hiOpen: true}
	anyInt64 = flagRange{lo: math.Inf(-1), hi: math.Inf(1)}
)

// limitFlag records the allowed range of the numeric flag name of cmd; checkFlags
// enforces it before the command runs.
func limitFlag(cmd *cobra.Command, name string, r flagRange) {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		panic("limitFlag: no flag --" + name + " on " + cmd.Name()) // programming error, caught by tests
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[rangeAnnotation] = r.encode()
}

// choicesAnnotation is the pflag annotation holding a string flag's allowed values.
const choicesAnnotation = "graphloom/choices"

// limitChoices records the allowed values of the string flag name of cmd; checkFlags
// enforces them before the command runs.
func limitChoices(cmd *cobra.Command, name string, choices ...string) {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		panic("limitChoices: no flag --" + name + " on " + cmd.Name()) // programming error, caught by tests
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[choicesAnnotation] = choices
}

// checkFlags validates every numeric flag of cmd that was set against its range, and
// every string flag with choices against them, and returns a usage error naming the
// flag and what it accepts for the first that is off.
func checkFlags(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if choices, ok := f.Annotations[choicesAnnotation]; ok && err == nil && !slices.Contains(choices, f.Value.String()) {
			err = usageError{fmt.Errorf("%s: --%s %q: want one of %s", cmd.Name(), f.Name, f.Value.String(), strings.Join(choices, ", "))}
		}
		if err != nil || !numericFlagTypes[f.Value.Type()] {
			return
		}
		r, ok := decodeRange(f.Annotations[rangeAnnotation])
		if !ok {
			return // a numeric flag without a range is caught by TestEveryNumericFlagHasARange
		}
		for _, x := range numericValues(f) {
			if !r.contains(x) {
				unit := ""
				if f.Value.Type() == "duration" {
					unit = " seconds"
				}
				err = usageError{fmt.Errorf("%s: --%s %s: out of range, want a value in %s%s", cmd.Name(), f.Name, f.Value.String(), r, unit)}
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return checkLLMConfig(cmd)
}

// checkLLMConfig rejects an LLM base URL without any model: graphloom would
// otherwise quietly use its offline components.
func checkLLMConfig(cmd *cobra.Command) error {
	get := func(name string) string {
		if f := cmd.Flags().Lookup(name); f != nil {
			return strings.TrimSpace(f.Value.String())
		}
		return ""
	}
	if u := get("llm-base-url"); u != "" && get("llm-model") == "" && get("embed-model") == "" {
		return usageError{fmt.Errorf("%s: an LLM base URL is set (%s) but no model: set GRAPHLOOM_LLM_MODEL or --llm-model (or unset GRAPHLOOM_LLM_BASE_URL to work offline)", cmd.Name(), llm.RedactURL(u))}
	}
	return nil
}

// numericValues returns the values of a numeric flag as float64 (durations in seconds).
func numericValues(f *pflag.Flag) []float64 {
	s := f.Value.String()
	switch f.Value.Type() {
	case "duration":
		d, _ := time.ParseDuration(s)
		return []float64{d.Seconds()}
	case "intSlice":
		var out []float64
		for _, p := range strings.Split(strings.Trim(s, "[]"), ",") {
			if p = strings.TrimSpace(p); p != "" {
				x, _ := strconv.ParseFloat(p, 64)
				out = append(out, x)
			}
		}
		return out
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return []float64{math.NaN()}
	}
	return []float64{x}
}

// decimalValue makes a numeric flag read its value as a decimal number: pflag parses
// integers with base prefixes (ParseInt base 0), so "010" would be 8 and "08" an
// error, and floats in hexadecimal. Leading zeros are dropped, anything but decimal
// digits (and a float's point and exponent) is refused.
type decimalValue struct {
	pflag.Value
}

func (d decimalValue) Set(s string) error {
	parts := []string{s}
	if d.Value.Type() == "intSlice" {
		parts = strings.Split(s, ",")
	}
	for i, p := range parts {
		n, err := decimalNumber(strings.TrimSpace(p), d.Value.Type())
		if err != nil {
			return err
		}
		parts[i] = n
	}
	return d.Value.Set(strings.Join(parts, ","))
}

// decimalNumber checks that s is a decimal number for a flag of type typ and returns
// it without leading zeros.
func decimalNumber(s, typ string) (string, error) {
	if typ == "float32" || typ == "float64" {
		if strings.ContainsAny(s, "xXpP_") {
			return "", fmt.Errorf("%q is not a decimal number", s)
		}
		return s, nil
	}
	sign, digits := "", s
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, digits = s[:1], s[1:]
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", fmt.Errorf("%q is not a decimal integer", s)
	}
	if digits = strings.TrimLeft(digits, "0"); digits == "" {
		digits = "0"
	}
	return sign + digits, nil
}

// decimalFlagTypes are the numeric types read through decimalValue (durations have
// their own syntax).
var decimalFlagTypes = map[string]bool{
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true,
	"float32": true, "float64": true, "intSlice": true,
}

// decimalFlags makes every numeric flag of cmd and its subcommands decimal.
func decimalFlags(cmd *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(decimalValue); !done && decimalFlagTypes[f.Value.Type()] {
			f.Value = decimalValue{f.Value}
		}
	}
	cmd.Flags().VisitAll(wrap)
	cmd.PersistentFlags().VisitAll(wrap)
	for _, c := range cmd.Commands() {
		decimalFlags(c)
	}
}
