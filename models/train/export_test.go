package train

// CrossEntropyIndexed exposes crossEntropyIndexed to the external tests: its int64
// flat-index path serves logits past 2³¹ elements, too large to test directly.
var CrossEntropyIndexed = crossEntropyIndexed
