package engine

// The pure-Go backend is always linked: it is the default and the fallback.
import _ "github.com/gomlx/compute/gobackend"
