package retrieve

import (
	"sync"
	"unsafe"
)

// bufPools recycles the node-sized vectors of queries (scores of every passage, fact
// or hyperedge and their normalised copies): a ppr query over 120K passages and 465K
// facts needs about 20 MB of them, which fresh from the heap the process must zero
// and, while the heap grows towards its GC goal, fault in page by page (on a VM a
// whole query's worth of time: 120K ppr p50 65 → 110 ms for the hundred questions
// after a collection). One sync.Pool per length: a Searcher's vectors have a few
// lengths (its chunks, facts, entities, hyperedges), and idle buffers go with the GC.
type bufPools struct {
	mu  sync.Mutex
	f64 map[int]*sync.Pool
	f32 map[int]*sync.Pool
	// fresh lends nothing: every query vector is allocated, the reference the tests
	// hold recycling to.
	fresh bool
}

func (b *bufPools) pool(f32 bool, n int) *sync.Pool {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := &b.f64
	if f32 {
		m = &b.f32
	}
	if *m == nil {
		*m = map[int]*sync.Pool{}
	}
	p := (*m)[n]
	if p == nil {
		p = &sync.Pool{}
		(*m)[n] = p
	}
	return p
}

// scratch lends one query vectors from its Searcher's pools and takes them back at
// done (or one at a time at release64 and release32). A nil *scratch allocates fresh vectors and
// takes nothing back, for callers off the query path. A scratch is not safe for
// concurrent use.
type scratch struct {
	pools *bufPools
	f64s  []*[]float64
	f32s  []*[]float32
}

// scratch returns a new scratch over s's pools.
func (s *Searcher) scratch() *scratch {
	if s.bufs.fresh {
		return nil
	}
	return &scratch{pools: &s.bufs}
}

// f64 returns a vector of n float64 whose contents are undefined; f64z one of zeros.
func (sc *scratch) f64(n int) []float64 {
	if sc == nil {
		return make([]float64, n)
	}
	return lend(sc.pools, false, &sc.f64s, n)
}

func (sc *scratch) f64z(n int) []float64 {
	v := sc.f64(n)
	if sc != nil {
		clear(v)
	}
	return v
}

// f32 returns a vector of n float32 whose contents are undefined.
func (sc *scratch) f32(n int) []float32 {
	if sc == nil {
		return make([]float32, n)
	}
	return lend(sc.pools, true, &sc.f32s, n)
}

// lend takes a vector of n from the pools (a fresh one when they have none) and
// records it in lent.
func lend[T float32 | float64](pools *bufPools, f32 bool, lent *[]*[]T, n int) []T {
	if n == 0 {
		return []T{}
	}
	p, _ := pools.pool(f32, n).Get().(*[]T)
	if p == nil {
		v := make([]T, n)
		p = &v
	}
	*lent = append(*lent, p)
	return *p
}

// release64 and release32 give back vectors from f64, f64z or f32 before done;
// others are ignored. The caller must not use them again.
func (sc *scratch) release64(vs ...[]float64) {
	for _, v := range vs {
		if sc != nil {
			sc.f64s = giveBack(sc.pools, false, sc.f64s, v)
		}
	}
}

func (sc *scratch) release32(vs ...[]float32) {
	for _, v := range vs {
		if sc != nil {
			sc.f32s = giveBack(sc.pools, true, sc.f32s, v)
		}
	}
}

func giveBack[T float32 | float64](pools *bufPools, f32 bool, lent []*[]T, v []T) []*[]T {
	if len(v) == 0 {
		return lent
	}
	for i, p := range lent {
		if unsafe.SliceData(*p) == unsafe.SliceData(v) {
			pools.pool(f32, len(*p)).Put(p)
			return append(lent[:i], lent[i+1:]...)
		}
	}
	return lent
}

// done gives back every vector still lent; none may be used again.
func (sc *scratch) done() {
	if sc == nil {
		return
	}
	for _, p := range sc.f64s {
		sc.pools.pool(false, len(*p)).Put(p)
	}
	for _, p := range sc.f32s {
		sc.pools.pool(true, len(*p)).Put(p)
	}
	sc.f64s, sc.f32s = nil, nil
}
