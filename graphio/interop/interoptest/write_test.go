package interoptest

import (
	"os"
	"testing"
)

func TestWriteSampleTo(t *testing.T) {
	if d := os.Getenv("INTEROPTEST_DIR"); d != "" {
		if err := Sample().Write(d); err != nil {
			t.Fatal(err)
		}
	}
}
