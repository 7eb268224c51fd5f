package workdir

import (
	"syscall"
)

// Limits bound one command and the session's scratch. Zero fields take
// the defaults (DefaultLimits); a negative one means no limit.
type Limits struct {
	// MemoryBytes bounds the memory of the command and everything it
	// starts (tmpfs pages they write included).
	MemoryBytes int64
	// Pids bounds the processes and threads alive at once.
	Pids int64
	// CPUWeight is the command's share of the CPU against others, 1 to
	// 10000 (100 is an even share).
	CPUWeight int64
	// ScratchBytes bounds the session's scratch: its upper directory
	// (the overlay's files and ignored outputs) and its home.
	ScratchBytes int64
	// TmpBytes bounds each private tmpfs (/tmp, /var/tmp, /dev/shm).
	TmpBytes int64
}

// DefaultLimits are the limits of a command that names none.
var DefaultLimits = Limits{
	MemoryBytes:  4 << 30,
	Pids:         1024,
	CPUWeight:    100,
	ScratchBytes: 10 << 30,
	TmpBytes:     1 << 30,
}

// Fill returns l with its zero fields taken from d.
func (l Limits) Fill(d Limits) Limits {
	pick := func(v, def int64) int64 {
		if v == 0 {
			return def
		}
		return v
	}
	return Limits{
		MemoryBytes:  pick(l.MemoryBytes, d.MemoryBytes),
		Pids:         pick(l.Pids, d.Pids),
		CPUWeight:    pick(l.CPUWeight, d.CPUWeight),
		ScratchBytes: pick(l.ScratchBytes, d.ScratchBytes),
		TmpBytes:     pick(l.TmpBytes, d.TmpBytes),
	}
}

// Narrow returns the smaller of each limit of l and o (a negative limit,
// none, is the larger).
func (l Limits) Narrow(o Limits) Limits {
	m := func(a, b int64) int64 {
		switch {
		case a <= 0:
			return b
		case b <= 0:
			return a
		}
		return min(a, b)
	}
	return Limits{m(l.MemoryBytes, o.MemoryBytes), m(l.Pids, o.Pids), m(l.CPUWeight, o.CPUWeight),
		m(l.ScratchBytes, o.ScratchBytes), m(l.TmpBytes, o.TmpBytes)}
}

// The names of limits, in results.
const (
	LimitMemory  = "memory"
	LimitPids    = "pids"
	LimitCPU     = "cpu_weight"
	LimitScratch = "scratch"
	LimitTmp     = "tmp"
)

// How a limit was enforced, in results.
const (
	ViaCgroup2 = "cgroup v2"
	ViaCgroup1 = "cgroup v1"
	ViaRlimit  = "rlimit"
	ViaNice    = "nice"
	ViaTmpfs   = "tmpfs"
	ViaWatch   = "watch"
)

// AppliedLimit is one limit a command ran under and how it was enforced.
type AppliedLimit struct {
	Name  string
	Value int64
	Via   string
}

// freeBytes is the space left on the file system that holds dir.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
