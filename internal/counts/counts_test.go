package counts

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormat(t *testing.T) {
	assert.Equal(t, "b 3, a 1, c 1", Format(map[string]int{"a": 1, "b": 3, "c": 1}))
	assert.Equal(t, "", Format(nil))
}
