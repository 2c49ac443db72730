package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pprTeam runs every pass of one solve on the same goroutines. A sweep by colour has
// a barrier after each colour (7 per pass on HippoRAG graphs); starting goroutines for
// each colour and parking the caller until they finish costs a wake-up of an idle
// core per barrier, tens of microseconds, which on a 100K-node graph is as long as a
// colour's work. The team's members instead stay on their cores for the whole solve,
// take chunks from a shared counter and meet at a spinning barrier.
//
// Every member runs the same loop and takes the same decisions (they read the same
// values after each barrier), so a solve's bits do not depend on the team's size.
type pprTeam struct {
	size    int
	next    atomic.Int64 // chunks taken in the current phase
	arrived atomic.Int64 // members at the barrier
	gen     atomic.Int64 // barriers passed
	// A member that has waited pprTeamPark sleeps on wake until gen moves.
	mu       sync.Mutex
	wake     *sync.Cond
	sleepers int // under mu
}

// pprTeamSpins is how many times a member polls the barrier before yielding its core
// to other goroutines on each further poll.
const pprTeamSpins = 1 << 12

// pprTeamPark is how long a member waits at a barrier, polling, before it sleeps until
// the last member arrives. On an idle machine a barrier is a few microseconds of
// imbalance and nobody sleeps. On an oversubscribed one (more runnable threads than
// cores) the member that has not arrived is usually a thread the OS has descheduled,
// and polling, even with runtime.Gosched, keeps the waiting thread on its core for
// its whole time slice: a sleeping member's thread gives the core back, so that the
// late member can run. bench/ppr's single query on two goroutines at a load average
// of 5–7 on a 2-core VM took 1.7–3.7× the one-goroutine time with polling only, and
// 0.8–1.5× with the sleep.
const pprTeamPark = 50 * time.Microsecond

// runPPRTeam runs body on size members, the caller as member 0 and size−1 goroutines,
// and returns when all have returned. The team is never larger than GOMAXPROCS: a
// member without a core would keep the others spinning at every barrier.
func runPPRTeam(size int, body func(t *pprTeam, id int)) {
	t := &pprTeam{size: max(min(size, runtime.GOMAXPROCS(0)), 1)}
	t.wake = sync.NewCond(&t.mu)
	var wg sync.WaitGroup
	for id := 1; id < t.size; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(t, id)
		}()
	}
	body(t, 0)
	wg.Wait()
}

// forRange calls fn for each of the chunks [c0, c1), shared out among the members,
// and returns once every member has finished its chunks.
func (t *pprTeam) forRange(c0, c1 int, fn func(c int)) {
	for {
		c := c0 + int(t.next.Add(1)) - 1
		if c >= c1 {
			break
		}
		fn(c)
	}
	t.barrier()
}

// barrier returns once every member has called it; the last to arrive resets the
// chunk counter for the next phase before releasing the others.
func (t *pprTeam) barrier() {
	if t.size == 1 {
		t.next.Store(0)
		return
	}
	g := t.gen.Load() // before arriving: the last arrival may advance gen at once
	if t.arrived.Add(1) == int64(t.size) {
		t.next.Store(0)
		t.arrived.Store(0)
		// gen moves under mu, so that a member deciding to sleep either sees it
		// moved or is asleep before the broadcast.
		t.mu.Lock()
		t.gen.Add(1)
		if t.sleepers > 0 {
			t.wake.Broadcast()
		}
		t.mu.Unlock()
		return
	}
	var since time.Time
	for spins := 0; t.gen.Load() == g; spins++ {
		if spins < pprTeamSpins {
			continue
		}
		runtime.Gosched()
		if spins%64 != 0 {
			continue
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) >= pprTeamPark {
			t.mu.Lock()
			t.sleepers++
			for t.gen.Load() == g {
				t.wake.Wait()
			}
			t.sleepers--
			t.mu.Unlock()
			return
		}
	}
}

// teamSweep runs one pass over the matrix with pass(c) on every chunk, shared out
// among the team: all chunks at once (Jacobi, Chebyshev), or colour after colour (SOR,
// whose passes update in place). The result does not depend on the team's size: a
// chunk's pass reads only what other chunks of its colour do not write.
func (s *PPRSolver) teamSweep(t *pprTeam, pass func(c int)) {
	if s.cfg.Method != PPRSOR {
		t.forRange(0, s.numChunks(), pass)
		return
	}
	cc := s.lay.colourChunk
	for k := 0; k+1 < len(cc); k++ {
		t.forRange(int(cc[k]), int(cc[k+1]), pass)
	}
}
