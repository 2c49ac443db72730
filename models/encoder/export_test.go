package encoder

// RelativeBucket exposes relativeBucket to the external tests.
var RelativeBucket = relativeBucket

// GTEInvFreq exposes GTEConfig.invFreq to the external tests.
func GTEInvFreq(g GTEConfig, hd int) []float32 { return g.invFreq(hd) }

// AlibiSlopes exposes alibiSlopes to the external tests.
var AlibiSlopes = alibiSlopes
