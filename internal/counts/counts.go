// Package counts formats counts by name for reports and error messages.
package counts

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Format renders counts as "name n, name n", the largest first, ties by name.
func Format(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(m[b]-m[a], strings.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
