package encoder

// RelativeBucket exposes relativeBucket to the external tests.
var RelativeBucket = relativeBucket
