package kernels

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPPRTeamPhases: each phase's chunks are taken exactly once between two barriers,
// and no member leaves a phase before every chunk of it is done — also when a member
// is late often enough that the others sleep at the barrier (pprTeamPark).
func TestPPRTeamPhases(t *testing.T) {
	const phases = 2000
	for _, tc := range []struct {
		size, chunks int
		late         bool // the last member sleeps past pprTeamPark in every 50th phase
	}{{1, 5, false}, {2, 7, false}, {3, 2, false}, {4, 9, false}, {2, 7, true}, {3, 4, true}} {
		done := make([][]atomic.Int32, phases)
		for p := range done {
			done[p] = make([]atomic.Int32, tc.chunks)
		}
		var early atomic.Int32 // members that saw an unfinished chunk after a barrier
		runPPRTeam(tc.size, func(tm *pprTeam, id int) {
			for p := range phases {
				if tc.late && id == tm.size-1 && p%50 == 0 {
					time.Sleep(4 * pprTeamPark)
				}
				c0 := p % 2 // alternate ranges, as colours do
				tm.forRange(c0, tc.chunks, func(c int) { done[p][c].Add(1) })
				for c := c0; c < tc.chunks; c++ {
					if done[p][c].Load() != 1 {
						early.Add(1)
					}
				}
			}
		})
		assert.Zero(t, early.Load(), "size %d late %v", tc.size, tc.late)
		for p := range done {
			for c := range done[p] {
				want := int32(1)
				if c < p%2 {
					want = 0
				}
				if !assert.Equal(t, want, done[p][c].Load(), "size %d phase %d chunk %d", tc.size, p, c) {
					return
				}
			}
		}
	}
}
