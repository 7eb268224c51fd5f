package merge

// A line diff that makes the same choices as git's xdiff with its default
// (Myers) algorithm: the same pre-pass that trims common ends and sets
// aside lines without a match, the same divide-and-conquer search with the
// same cost cut-offs, and the same sliding of change groups afterwards
// (optionally with git's indent heuristic). Merges depend on which lines
// a diff calls changed, so matching git here is what makes a clean
// three-way merge produce git's blob byte for byte.

import "bytes"

const (
	xdlMaxCostMin   = 256
	xdlHeurMinCost  = 256
	xdlSnakeCnt     = 20
	xdlKHeur        = 4
	xdlMaxEqLimit   = 1024
	xdlSimscanWin   = 100
	xdlKpdisRun     = 4
	xdlLineMax      = int(^uint(0) >> 1)
	maxIndent       = 200
	maxBlanks       = 20
	indentMaxSlide  = 100
	indentWeight    = 60
	startOfFilePen  = 1
	endOfFilePen    = 21
	totalBlankW     = -30
	postBlankW      = 6
	relIndentPen    = -4
	relIndentBlank  = 10
	relOutdentPen   = 24
	relOutdentBlank = 17
	relDedentPen    = 23
	relDedentBlank  = 17
)

// splitLines cuts data into records the way xdiff does: each line keeps
// its '\n'; a last line without one is a record too.
func splitLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	lines := make([][]byte, 0, bytes.Count(data, []byte{'\n'})+1)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	return lines
}

// classifier gives equal lines equal small integers.
type classifier struct {
	ids map[string]int
}

func newClassifier(n int) *classifier { return &classifier{ids: make(map[string]int, n)} }

func (c *classifier) classify(lines [][]byte) []int {
	out := make([]int, len(lines))
	for i, l := range lines {
		id, ok := c.ids[string(l)]
		if !ok {
			id = len(c.ids)
			c.ids[string(l)] = id
		}
		out[i] = id
	}
	return out
}

// edit is one change of a diff script: lines [i1, i1+chg1) of the old
// file become lines [i2, i2+chg2) of the new one.
type edit struct {
	i1, i2, chg1, chg2 int
}

// xdfile is one side of a diff in progress.
type xdfile struct {
	lines  [][]byte
	cls    []int  // class of every record
	rchg   []byte // changed flags, offset by one: rchg[i+1] is record i
	rindex []int  // effective record -> record
	ha     []int  // classes of the effective records
	dstart int
	dend   int
}

func (x *xdfile) nrec() int           { return len(x.cls) }
func (x *xdfile) changed(i int) bool  { return i >= -1 && x.rchg[i+1] != 0 }
func (x *xdfile) set(i int, v byte)   { x.rchg[i+1] = v }
func (x *xdfile) match(i, j int) bool { return x.cls[i] == x.cls[j] }

func bogosqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// diffOptions choose git's diff algorithm and heuristics.
type diffOptions struct {
	indentHeuristic bool // slide groups by indentation (diffs, not merges)
	histogram       bool // histogram instead of Myers (git's tree merges)
	// stop, when set, is asked before each split of the Myers search;
	// once it says true the search gives up and the script is
	// meaningless: the caller, whose request ended, throws it away.
	stop func() bool
}

// diffLines diffs two line slices and returns git's edit script.
func diffLines(a, b [][]byte, o diffOptions) []edit {
	c := newClassifier(len(a) + len(b))
	return diffClasses(a, b, c.classify(a), c.classify(b), o)
}

func diffClasses(a, b [][]byte, ca, cb []int, o diffOptions) []edit {
	x1 := &xdfile{lines: a, cls: ca, rchg: make([]byte, len(ca)+2)}
	x2 := &xdfile{lines: b, cls: cb, rchg: make([]byte, len(cb)+2)}
	if o.histogram {
		histogramDiff(x1, x2, 1, len(ca), 1, len(cb))
	} else {
		myersDiff(x1, x2, o.stop)
	}
	changeCompact(x1, x2, o.indentHeuristic)
	changeCompact(x2, x1, o.indentHeuristic)
	return buildScript(x1, x2)
}

// myersDiff marks the changed records of x1 and x2 the way xdl_do_diff
// does with its default algorithm.
func myersDiff(x1, x2 *xdfile, stop func() bool) {
	prepare(x1, x2)
	n1, n2 := len(x1.ha), len(x2.ha)
	ndiags := n1 + n2 + 3
	kvd := make([]int, 2*ndiags+2)
	e := &xdalgo{
		kvdf:     kvd[:ndiags],
		kvdb:     kvd[ndiags:],
		fbase:    n2 + 1,
		bbase:    n2 + 1,
		mxcost:   max(bogosqrt(ndiags), xdlMaxCostMin),
		snakeCnt: xdlSnakeCnt,
		heurMin:  xdlHeurMinCost,
		stop:     stop,
	}
	e.recsCmp(x1, 0, n1, x2, 0, n2, false)
}

// prepare trims the common ends and sets aside records that cannot
// match (xdl_trim_ends and xdl_cleanup_records).
func prepare(x1, x2 *xdfile) {
	n1, n2 := x1.nrec(), x2.nrec()
	lim := min(n1, n2)
	i := 0
	for i < lim && x1.cls[i] == x2.cls[i] {
		i++
	}
	x1.dstart, x2.dstart = i, i
	lim -= i
	j := 0
	for j < lim && x1.cls[n1-1-j] == x2.cls[n2-1-j] {
		j++
	}
	x1.dend = n1 - j - 1
	x2.dend = n2 - j - 1

	count := func(cls []int) map[int]int {
		m := make(map[int]int, len(cls))
		for _, c := range cls {
			m[c]++
		}
		return m
	}
	cnt1, cnt2 := count(x1.cls), count(x2.cls)
	dis := func(x *xdfile, other map[int]int) []byte {
		mlim := min(bogosqrt(x.nrec()), xdlMaxEqLimit)
		d := make([]byte, x.nrec()+1)
		for i := x.dstart; i <= x.dend; i++ {
			nm := min(other[x.cls[i]], mlim)
			switch {
			case nm == 0:
				d[i] = 0
			case nm >= mlim:
				d[i] = 2
			default:
				d[i] = 1
			}
		}
		return d
	}
	d1, d2 := dis(x1, cnt2), dis(x2, cnt1)
	keep := func(x *xdfile, d []byte) {
		x.rindex = make([]int, 0, max(x.dend-x.dstart+1, 0))
		x.ha = make([]int, 0, cap(x.rindex))
		for i := x.dstart; i <= x.dend; i++ {
			if d[i] == 1 || (d[i] == 2 && !cleanMmatch(d, i, x.dstart, x.dend)) {
				x.rindex = append(x.rindex, i)
				x.ha = append(x.ha, x.cls[i])
			} else {
				x.set(i, 1)
			}
		}
	}
	keep(x1, d1)
	keep(x2, d2)
}

// cleanMmatch reports whether a line with many matches sits in a run of
// lines without matches, and may be treated as changed outright.
func cleanMmatch(dis []byte, i, s, e int) bool {
	if i-s > xdlSimscanWin {
		s = i - xdlSimscanWin
	}
	if e-i > xdlSimscanWin {
		e = i + xdlSimscanWin
	}
	rdis0, rpdis0 := 0, 1
	for r := 1; i-r >= s; r++ {
		if dis[i-r] == 0 {
			rdis0++
		} else if dis[i-r] == 2 {
			rpdis0++
		} else {
			break
		}
	}
	if rdis0 == 0 {
		return false
	}
	rdis1, rpdis1 := 0, 1
	for r := 1; i+r <= e; r++ {
		if dis[i+r] == 0 {
			rdis1++
		} else if dis[i+r] == 2 {
			rpdis1++
		} else {
			break
		}
	}
	if rdis1 == 0 {
		return false
	}
	rdis1 += rdis0
	rpdis1 += rpdis0
	return rpdis1*xdlKpdisRun < rpdis1+rdis1
}

type xdalgo struct {
	kvdf, kvdb   []int
	fbase, bbase int
	mxcost       int
	snakeCnt     int
	heurMin      int
	stop         func() bool // see diffOptions.stop
	stopped      bool
}

func (e *xdalgo) kf(d int) *int { return &e.kvdf[d+e.fbase] }
func (e *xdalgo) kb(d int) *int { return &e.kvdb[d+e.bbase] }

type split struct {
	i1, i2       int
	minLo, minHi bool
}

func (e *xdalgo) split(ha1 []int, off1, lim1 int, ha2 []int, off2, lim2 int, needMin bool) split {
	dmin, dmax := off1-lim2, lim1-off2
	fmid, bmid := off1-off2, lim1-lim2
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	*e.kf(fmid) = off1
	*e.kb(bmid) = lim1
	for ec := 1; ; ec++ {
		gotSnake := false
		if fmin > dmin {
			fmin--
			*e.kf(fmin - 1) = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			*e.kf(fmax + 1) = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			var i1 int
			if *e.kf(d - 1) >= *e.kf(d + 1) {
				i1 = *e.kf(d - 1) + 1
			} else {
				i1 = *e.kf(d + 1)
			}
			prev1 := i1
			i2 := i1 - d
			for i1 < lim1 && i2 < lim2 && ha1[i1] == ha2[i2] {
				i1++
				i2++
			}
			if i1-prev1 > e.snakeCnt {
				gotSnake = true
			}
			*e.kf(d) = i1
			if odd && bmin <= d && d <= bmax && *e.kb(d) <= i1 {
				return split{i1, i2, true, true}
			}
		}
		if bmin > dmin {
			bmin--
			*e.kb(bmin - 1) = xdlLineMax
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			*e.kb(bmax + 1) = xdlLineMax
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			var i1 int
			if *e.kb(d - 1) < *e.kb(d + 1) {
				i1 = *e.kb(d - 1)
			} else {
				i1 = *e.kb(d + 1) - 1
			}
			prev1 := i1
			i2 := i1 - d
			for i1 > off1 && i2 > off2 && ha1[i1-1] == ha2[i2-1] {
				i1--
				i2--
			}
			if prev1-i1 > e.snakeCnt {
				gotSnake = true
			}
			*e.kb(d) = i1
			if !odd && fmin <= d && d <= fmax && i1 <= *e.kf(d) {
				return split{i1, i2, true, true}
			}
		}
		if needMin {
			continue
		}
		if gotSnake && ec > e.heurMin {
			best := 0
			var s split
			for d := fmax; d >= fmin; d -= 2 {
				dd := d - fmid
				if dd < 0 {
					dd = -dd
				}
				i1 := *e.kf(d)
				i2 := i1 - d
				v := (i1 - off1) + (i2 - off2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1+e.snakeCnt <= i1 && i1 < lim1 &&
					off2+e.snakeCnt <= i2 && i2 < lim2 {
					for k := 1; ha1[i1-k] == ha2[i2-k]; k++ {
						if k == e.snakeCnt {
							best = v
							s.i1, s.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				s.minLo, s.minHi = true, false
				return s
			}
			for d := bmax; d >= bmin; d -= 2 {
				dd := d - bmid
				if dd < 0 {
					dd = -dd
				}
				i1 := *e.kb(d)
				i2 := i1 - d
				v := (lim1 - i1) + (lim2 - i2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1 < i1 && i1 <= lim1-e.snakeCnt &&
					off2 < i2 && i2 <= lim2-e.snakeCnt {
					for k := 0; ha1[i1+k] == ha2[i2+k]; k++ {
						if k == e.snakeCnt-1 {
							best = v
							s.i1, s.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				s.minLo, s.minHi = false, true
				return s
			}
		}
		if ec >= e.mxcost {
			fbest, fbest1 := -1, -1
			for d := fmax; d >= fmin; d -= 2 {
				i1 := min(*e.kf(d), lim1)
				i2 := i1 - d
				if lim2 < i2 {
					i1, i2 = lim2+d, lim2
				}
				if fbest < i1+i2 {
					fbest = i1 + i2
					fbest1 = i1
				}
			}
			bbest, bbest1 := xdlLineMax, xdlLineMax
			for d := bmax; d >= bmin; d -= 2 {
				i1 := max(off1, *e.kb(d))
				i2 := i1 - d
				if i2 < off2 {
					i1, i2 = off2+d, off2
				}
				if i1+i2 < bbest {
					bbest = i1 + i2
					bbest1 = i1
				}
			}
			if (lim1+lim2)-bbest < fbest-(off1+off2) {
				return split{fbest1, fbest - fbest1, true, false}
			}
			return split{bbest1, bbest - bbest1, false, true}
		}
	}
}

func (e *xdalgo) recsCmp(x1 *xdfile, off1, lim1 int, x2 *xdfile, off2, lim2 int, needMin bool) {
	ha1, ha2 := x1.ha, x2.ha
	for off1 < lim1 && off2 < lim2 && ha1[off1] == ha2[off2] {
		off1++
		off2++
	}
	for off1 < lim1 && off2 < lim2 && ha1[lim1-1] == ha2[lim2-1] {
		lim1--
		lim2--
	}
	switch {
	case off1 == lim1:
		for ; off2 < lim2; off2++ {
			x2.set(x2.rindex[off2], 1)
		}
	case off2 == lim2:
		for ; off1 < lim1; off1++ {
			x1.set(x1.rindex[off1], 1)
		}
	default:
		if e.stopped || e.stop != nil && e.stop() {
			e.stopped = true
			return
		}
		s := e.split(ha1, off1, lim1, ha2, off2, lim2, needMin)
		e.recsCmp(x1, off1, s.i1, x2, off2, s.i2, s.minLo)
		e.recsCmp(x1, s.i1, lim1, x2, s.i2, lim2, s.minHi)
	}
}

// group is a run of changed lines [start, end); empty when start == end.
type group struct{ start, end int }

func groupInit(x *xdfile) group {
	g := group{}
	for x.changed(g.end) {
		g.end++
	}
	return g
}

func groupNext(x *xdfile, g *group) bool {
	if g.end == x.nrec() {
		return false
	}
	g.start = g.end + 1
	for g.end = g.start; x.changed(g.end); g.end++ {
	}
	return true
}

func groupPrevious(x *xdfile, g *group) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	for g.start = g.end; x.changed(g.start - 1); g.start-- {
	}
	return true
}

func groupSlideDown(x *xdfile, g *group) bool {
	if g.end < x.nrec() && x.match(g.start, g.end) {
		x.set(g.start, 0)
		g.start++
		x.set(g.end, 1)
		g.end++
		for x.changed(g.end) {
			g.end++
		}
		return true
	}
	return false
}

func groupSlideUp(x *xdfile, g *group) bool {
	if g.start > 0 && x.match(g.start-1, g.end-1) {
		g.start--
		x.set(g.start, 1)
		g.end--
		x.set(g.end, 0)
		for x.changed(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// changeCompact slides change groups as xdl_change_compact does.
func changeCompact(x, xo *xdfile, indentHeuristic bool) {
	g := groupInit(x)
	gofs := groupInit(xo)
	for {
		if g.end != g.start {
			var groupsize, earliestEnd, endMatchingOther int
			for {
				groupsize = g.end - g.start
				endMatchingOther = -1
				for groupSlideUp(x, &g) {
					groupPrevious(xo, &gofs)
				}
				earliestEnd = g.end
				if gofs.end > gofs.start {
					endMatchingOther = g.end
				}
				for groupSlideDown(x, &g) {
					groupNext(xo, &gofs)
					if gofs.end > gofs.start {
						endMatchingOther = g.end
					}
				}
				if groupsize == g.end-g.start {
					break
				}
			}
			switch {
			case g.end == earliestEnd:
			case endMatchingOther != -1:
				for gofs.end == gofs.start {
					groupSlideUp(x, &g)
					groupPrevious(xo, &gofs)
				}
			case indentHeuristic:
				shift := earliestEnd
				if g.end-groupsize-1 > shift {
					shift = g.end - groupsize - 1
				}
				if g.end-indentMaxSlide > shift {
					shift = g.end - indentMaxSlide
				}
				bestShift := -1
				var best splitScore
				for ; shift <= g.end; shift++ {
					var s splitScore
					s.add(measureSplit(x, shift))
					s.add(measureSplit(x, shift-groupsize))
					if bestShift == -1 || scoreCmp(s, best) <= 0 {
						best = s
						bestShift = shift
					}
				}
				for g.end > bestShift {
					groupSlideUp(x, &g)
					groupPrevious(xo, &gofs)
				}
			}
		}
		if !groupNext(x, &g) {
			break
		}
		groupNext(xo, &gofs)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func getIndent(line []byte) int {
	ret := 0
	for _, c := range line {
		if !isSpace(c) {
			return ret
		}
		if c == ' ' {
			ret++
		} else if c == '\t' {
			ret += 8 - ret%8
		}
		if ret >= maxIndent {
			return maxIndent
		}
	}
	return -1
}

type splitMeasurement struct {
	endOfFile, indent, preBlank, preIndent, postBlank, postIndent int
}

type splitScore struct{ effectiveIndent, penalty int }

func measureSplit(x *xdfile, split int) splitMeasurement {
	var m splitMeasurement
	if split >= x.nrec() {
		m.endOfFile = 1
		m.indent = -1
	} else {
		m.indent = getIndent(x.lines[split])
	}
	m.preIndent = -1
	for i := split - 1; i >= 0; i-- {
		m.preIndent = getIndent(x.lines[i])
		if m.preIndent != -1 {
			break
		}
		m.preBlank++
		if m.preBlank == maxBlanks {
			m.preIndent = 0
			break
		}
	}
	m.postIndent = -1
	for i := split + 1; i < x.nrec(); i++ {
		m.postIndent = getIndent(x.lines[i])
		if m.postIndent != -1 {
			break
		}
		m.postBlank++
		if m.postBlank == maxBlanks {
			m.postIndent = 0
			break
		}
	}
	return m
}

func (s *splitScore) add(m splitMeasurement) {
	if m.preIndent == -1 && m.preBlank == 0 {
		s.penalty += startOfFilePen
	}
	if m.endOfFile != 0 {
		s.penalty += endOfFilePen
	}
	postBlank := 0
	if m.indent == -1 {
		postBlank = 1 + m.postBlank
	}
	totalBlank := m.preBlank + postBlank
	s.penalty += totalBlankW * totalBlank
	s.penalty += postBlankW * postBlank
	indent := m.indent
	if indent == -1 {
		indent = m.postIndent
	}
	anyBlanks := totalBlank != 0
	s.effectiveIndent += indent
	pick := func(blank, plain int) int {
		if anyBlanks {
			return blank
		}
		return plain
	}
	switch {
	case indent == -1, m.preIndent == -1:
	case indent > m.preIndent:
		s.penalty += pick(relIndentBlank, relIndentPen)
	case indent == m.preIndent:
	default:
		if m.postIndent != -1 && m.postIndent > indent {
			s.penalty += pick(relOutdentBlank, relOutdentPen)
		} else {
			s.penalty += pick(relDedentBlank, relDedentPen)
		}
	}
}

func scoreCmp(a, b splitScore) int {
	c := 0
	if a.effectiveIndent > b.effectiveIndent {
		c = 1
	} else if a.effectiveIndent < b.effectiveIndent {
		c = -1
	}
	return indentWeight*c + (a.penalty - b.penalty)
}

func buildScript(x1, x2 *xdfile) []edit {
	var rev []edit
	for i1, i2 := x1.nrec(), x2.nrec(); i1 >= 0 && i2 >= 0; i1, i2 = i1-1, i2-1 {
		if x1.changed(i1-1) || x2.changed(i2-1) {
			l1, l2 := i1, i2
			for x1.changed(i1 - 1) {
				i1--
			}
			for x2.changed(i2 - 1) {
				i2--
			}
			rev = append(rev, edit{i1: i1, i2: i2, chg1: l1 - i1, chg2: l2 - i2})
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
