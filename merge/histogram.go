package merge

// git's histogram diff (xdiff/xhistogram.c), which git's tree merges use
// for their line merges: find the longest run of lines common to both
// sides whose lines occur least often in the old side, and recurse on
// what is before and after it. Line numbers here are 1-based, as in git.

// histogramMaxChain is how often a line may occur in the old side and
// still anchor a match; when only lines more common than that are shared,
// git falls back to Myers for the range.
const histogramMaxChain = 64

type lcsRegion struct{ begin1, end1, begin2, end2 int }

// histogramDiff marks the changed records of lines [line1, line1+count1)
// of x1 and [line2, line2+count2) of x2.
func histogramDiff(x1, x2 *xdfile, line1, count1, line2, count2 int) {
	for {
		switch {
		case count1 <= 0 && count2 <= 0:
			return
		case count1 <= 0:
			for i := range count2 {
				x2.set(line2-1+i, 1)
			}
			return
		case count2 <= 0:
			for i := range count1 {
				x1.set(line1-1+i, 1)
			}
			return
		}
		lcs, fallBack := findLCS(x1, x2, line1, count1, line2, count2)
		switch {
		case fallBack:
			myersRange(x1, x2, line1, count1, line2, count2)
			return
		case lcs.begin1 == 0 && lcs.begin2 == 0: // nothing in common
			for i := range count1 {
				x1.set(line1-1+i, 1)
			}
			for i := range count2 {
				x2.set(line2-1+i, 1)
			}
			return
		}
		histogramDiff(x1, x2, line1, lcs.begin1-line1, line2, lcs.begin2-line2)
		end1, end2 := line1+count1-1, line2+count2-1
		line1, count1 = lcs.end1+1, end1-lcs.end1
		line2, count2 = lcs.end2+1, end2-lcs.end2
	}
}

// histRecord is one distinct line of the old side: its first occurrence
// in the range and how many there are.
type histRecord struct{ ptr, cnt int }

// findLCS finds the anchor run (find_lcs and try_lcs). fallBack reports
// that the sides share only lines too common to anchor on.
func findLCS(x1, x2 *xdfile, line1, count1, line2, count2 int) (lcs lcsRegion, fallBack bool) {
	end1, end2 := line1+count1-1, line2+count2-1
	records := make(map[int]*histRecord, count1)
	next := make([]int, count1)            // next occurrence of the same line, 0 for none
	lineMap := make([]*histRecord, count1) // the record of each line
	for ptr := end1; ptr >= line1; ptr-- {
		c := x1.cls[ptr-1]
		r := records[c]
		if r == nil {
			r = &histRecord{ptr: ptr, cnt: 1}
			records[c] = r
		} else {
			next[ptr-line1] = r.ptr
			r.ptr = ptr
			r.cnt++
		}
		lineMap[ptr-line1] = r
	}

	cnt := histogramMaxChain + 1 // the rarest anchor so far
	hasCommon := false
	for bptr := line2; bptr <= end2; {
		bnext := bptr + 1
		r := records[x2.cls[bptr-1]]
		if r != nil {
			hasCommon = true
		}
		if r != nil && r.cnt <= cnt {
			for as := r.ptr; ; {
				np := next[as-line1]
				bs, ae, be, rc := bptr, as, bptr, r.cnt
				for line1 < as && line2 < bs && x1.cls[as-2] == x2.cls[bs-2] {
					as--
					bs--
					if rc > 1 {
						rc = min(rc, lineMap[as-line1].cnt)
					}
				}
				for ae < end1 && be < end2 && x1.cls[ae] == x2.cls[be] {
					ae++
					be++
					if rc > 1 {
						rc = min(rc, lineMap[ae-line1].cnt)
					}
				}
				if bnext <= be {
					bnext = be + 1
				}
				if lcs.end1-lcs.begin1 < ae-as || rc < cnt {
					lcs = lcsRegion{as, ae, bs, be}
					cnt = rc
				}
				for np != 0 && np <= ae {
					np = next[np-line1]
				}
				if np == 0 {
					break
				}
				as = np
			}
		}
		bptr = bnext
	}
	return lcs, hasCommon && cnt > histogramMaxChain
}

// myersRange diffs a range with Myers, as a diff of its own
// (xdl_fall_back_diff), and marks the changes in x1 and x2.
func myersRange(x1, x2 *xdfile, line1, count1, line2, count2 int) {
	s1 := &xdfile{lines: x1.lines[line1-1 : line1-1+count1], cls: x1.cls[line1-1 : line1-1+count1], rchg: make([]byte, count1+2)}
	s2 := &xdfile{lines: x2.lines[line2-1 : line2-1+count2], cls: x2.cls[line2-1 : line2-1+count2], rchg: make([]byte, count2+2)}
	myersDiff(s1, s2, nil)
	copy(x1.rchg[line1:line1+count1], s1.rchg[1:count1+1])
	copy(x2.rchg[line2:line2+count2], s2.rchg[1:count2+1])
}
