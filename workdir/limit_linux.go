//go:build linux

package workdir

import (
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

var cgroupSeq atomic.Int64

// limit puts a command under l: in a cgroup of its own where the daemon
// can make one, by rlimits of the command otherwise (per process, so
// weaker: said in the result). A file may never outgrow the scratch, and
// nothing dumps core.
func (m *Manager) limit(s *Scratch, spec *helperSpec, l Limits) (*cgroup, []AppliedLimit, error) {
	spec.Rlimits = []rlimitSpec{{Resource: unix.RLIMIT_CORE, Value: 0}}
	var applied []AppliedLimit
	if l.ScratchBytes > 0 {
		spec.Rlimits = append(spec.Rlimits, rlimitSpec{Resource: unix.RLIMIT_FSIZE, Value: uint64(l.ScratchBytes)})
		applied = append(applied, AppliedLimit{Name: LimitScratch, Value: l.ScratchBytes, Via: ViaWatch})
	}
	if m.cgroups.available() {
		name := s.id + "-" + strconv.FormatInt(cgroupSeq.Add(1), 10)
		cg, a, err := m.cgroups.create(name, l, m.isolated)
		if err != nil {
			return nil, nil, err
		}
		spec.Cgroups = cg.procs()
		if l.CPUWeight == 100 {
			a = append(a, AppliedLimit{Name: LimitCPU, Value: 100, Via: m.cgroups.via})
		}
		return cg, append(a, applied...), nil
	}
	if l.MemoryBytes > 0 {
		spec.Rlimits = append(spec.Rlimits, rlimitSpec{Resource: unix.RLIMIT_DATA, Value: uint64(l.MemoryBytes)})
		applied = append(applied, AppliedLimit{Name: LimitMemory, Value: l.MemoryBytes, Via: ViaRlimit})
	}
	// RLIMIT_NPROC counts the processes of the command's user in its
	// user namespace; it binds no one running as root outside one, and
	// unisolated it would count the daemon's user's every process.
	if l.Pids > 0 && m.isolated && os.Getuid() != 0 {
		spec.Rlimits = append(spec.Rlimits, rlimitSpec{Resource: unix.RLIMIT_NPROC, Value: uint64(l.Pids)})
		applied = append(applied, AppliedLimit{Name: LimitPids, Value: l.Pids, Via: ViaRlimit})
	}
	if l.CPUWeight > 0 && l.CPUWeight < 100 {
		spec.Nice = int(min(19, (100-l.CPUWeight)*19/99))
		applied = append(applied, AppliedLimit{Name: LimitCPU, Value: l.CPUWeight, Via: ViaNice})
	}
	return nil, applied, nil
}
