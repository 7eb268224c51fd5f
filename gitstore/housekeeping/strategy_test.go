package housekeeping_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore/housekeeping"
)

func ownPacks(names ...int) []housekeeping.PackInfo {
	var ps []housekeeping.PackInfo
	for i, n := range names {
		ps = append(ps, housekeeping.PackInfo{Name: fmt.Sprintf("pack-%02d", i), Objects: n, Size: int64(n) * 100, Own: true})
	}
	return ps
}

func TestHeuristicStrategy(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := housekeeping.HeuristicStrategy{}
	many := func(n, objects int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = objects
		}
		return out
	}
	names := func(ps []housekeeping.PackInfo) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	t.Run("few packs: nothing", func(t *testing.T) {
		p := s.Plan(housekeeping.State{Now: now, Packs: ownPacks(many(15, 3)...)})
		assert.True(t, p.Empty(), "%+v", p)
	})
	t.Run("trigger: equal packs all roll up", func(t *testing.T) {
		ps := ownPacks(many(16, 3)...)
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Equal(t, names(ps), p.MergePacks)
	})
	t.Run("geometric: a large pack stays", func(t *testing.T) {
		ps := ownPacks(append(many(16, 1), 1000)...)
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Equal(t, names(ps[:16]), p.MergePacks)
	})
	t.Run("geometric: a pack smaller than twice the rest rolls up", func(t *testing.T) {
		ps := ownPacks(append(many(16, 3), 60)...)
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Len(t, p.MergePacks, 17)
	})
	t.Run("progression: nothing to roll", func(t *testing.T) {
		ps := ownPacks(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Empty(t, p.MergePacks)
	})
	t.Run("git's packs are never merged", func(t *testing.T) {
		ps := ownPacks(many(20, 3)...)
		for i := range ps {
			ps[i].Own = false
		}
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Empty(t, p.MergePacks)
	})
	t.Run("over the pack limit: every own pack", func(t *testing.T) {
		ps := ownPacks(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
		for range 45 {
			ps = append(ps, housekeeping.PackInfo{Name: "pack-git", Objects: 10})
		}
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Len(t, p.MergePacks, 10)
	})
	t.Run("over half the pack limit: every own pack", func(t *testing.T) {
		ps := ownPacks(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
		for range 16 {
			ps = append(ps, housekeeping.PackInfo{Name: "pack-git", Objects: 10})
		}
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Len(t, p.MergePacks, 10, "26 live packs")
		p = s.Plan(housekeeping.State{Now: now, Packs: ps[:len(ps)-1]})
		assert.Empty(t, p.MergePacks, "25 live packs, a progression")
	})
	t.Run("large own packs are left to git gc", func(t *testing.T) {
		ps := ownPacks(many(16, 3)...)
		ps[0].Size = 1 << 30
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Empty(t, p.MergePacks, "15 candidates are under the trigger")
	})
	t.Run("loose objects", func(t *testing.T) {
		assert.False(t, s.Plan(housekeeping.State{Now: now, Loose: 255}).PackLoose)
		p := s.Plan(housekeeping.State{Now: now, Loose: 256, Packs: ownPacks(3)})
		assert.True(t, p.PackLoose)
		assert.Empty(t, p.MergePacks)
	})
	t.Run("superseded packs are neither merged nor live", func(t *testing.T) {
		ps := ownPacks(many(20, 3)...)
		s := housekeeping.HeuristicStrategy{PackLimit: 100} // room for 19 to wait
		for i := range ps[1:] {
			ps[i+1].CoveredBy = ps[0].Name // merged by an earlier process
		}
		ps[0].Made = now.Add(-time.Second)
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Empty(t, p.MergePacks, "merged once is enough")
		assert.Empty(t, p.DeletePacks, "the cover is younger than the delay")
		ps[0].Made = now.Add(-time.Minute)
		p = s.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Equal(t, names(ps[1:]), p.DeletePacks, "the cover is old enough: every process may delete them")
	})
	t.Run("the wait never crowds the pack limit", func(t *testing.T) {
		// Restarts faster than the delay: 30 superseded packs, covered by
		// three young packs of different ages.
		ps := ownPacks(100, 100, 100)
		for i := range ps {
			ps[i].Made = now.Add(-time.Duration(3-i) * time.Second)
		}
		waiting := ownPacks(many(30, 3)...)
		for i := range waiting {
			waiting[i].Name = fmt.Sprintf("pack-w%02d", i)
			waiting[i].CoveredBy = ps[i%3].Name
		}
		p := s.Plan(housekeeping.State{Now: now, Packs: append(ps, waiting...)})
		assert.Empty(t, p.MergePacks)
		// A quarter of 50 (the rest is room for the packs written before
		// the next run) less 3 live: 9 may wait, those whose cover is
		// youngest; the other 21 go.
		require.Len(t, p.DeletePacks, 21)
		for _, pk := range waiting {
			if !slices.Contains(p.DeletePacks, pk.Name) {
				assert.Equal(t, ps[2].Name, pk.CoveredBy, "%s waits though its cover is not the youngest", pk.Name)
			}
		}
	})
	t.Run("a merge's packs wait as room allows", func(t *testing.T) {
		ps := ownPacks(many(16, 3)...)
		p := s.Plan(housekeeping.State{Now: now, Packs: ps})
		require.Len(t, p.MergePacks, 16)
		assert.Equal(t, 12-1, p.MergedWait, "a quarter of 50 less the new pack")
		p = housekeeping.HeuristicStrategy{PackLimit: 100}.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Equal(t, 16, p.MergedWait)
		p = housekeeping.HeuristicStrategy{RetireDelay: -1}.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Zero(t, p.MergedWait)
	})
	t.Run("no delay", func(t *testing.T) {
		ps := ownPacks(10, 3)
		ps[1].CoveredBy = ps[0].Name
		ps[0].Made = now
		p := housekeeping.HeuristicStrategy{RetireDelay: -1}.Plan(housekeeping.State{Now: now, Packs: ps})
		assert.Equal(t, []string{ps[1].Name}, p.DeletePacks)
	})
	t.Run("debris after the grace period", func(t *testing.T) {
		p := s.Plan(housekeeping.State{Now: now, Debris: []housekeeping.Debris{
			{Path: "pack/tmp_pack_old", ModTime: now.Add(-2 * time.Hour)},
			{Path: "pack/tmp_pack_young", ModTime: now.Add(-time.Minute)},
			{Path: "ab/tmp_obj_1", ModTime: now.Add(-time.Hour)},
		}})
		assert.Equal(t, []string{"pack/tmp_pack_old", "ab/tmp_obj_1"}, p.RemoveDebris)
	})
}
