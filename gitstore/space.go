package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sessiond/sessiond/internal/durable"
)

// The parts of a repository a write can find full, as Options.NoSpace
// receives them.
const (
	SpaceObjects = "objects" // the object directory: loose objects and packs
	SpaceRefs    = "refs"    // the ref files and their locks
)

// IsNoSpace reports whether err is a write the device or the quota refused
// for lack of space (ENOSPC, EDQUOT).
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// noSpace passes the error of a write to part through Options.NoSpace when
// the write failed for lack of space; other errors, and every error when
// no NoSpace is set, go unchanged.
func (r *Repo) noSpace(part string, err error) error {
	if err == nil || r.opts.NoSpace == nil || !IsNoSpace(err) {
		return err
	}
	return r.opts.NoSpace(part, err)
}

// SpaceProbeBytes is what a probe of space writes: about what a small
// write needs (a loose object, a ref).
const SpaceProbeBytes = 64 << 10

// SpaceReserve is the room a device must have for a probe to find it has
// space again: a device a write found full that has freed less than this
// would refuse the next write of any size, so it is still full.
const SpaceReserve = 1 << 20

// ProbeSpace reports whether the device holding dir takes writes: it has
// SpaceReserve bytes available, and a temporary file (named by pattern,
// as os.CreateTemp takes it) of SpaceProbeBytes is written, fsynced and
// removed there, which quotas the free space does not show would refuse.
// The lack of space is an error IsNoSpace recognises.
func ProbeSpace(dir, pattern string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("probe %q: %w", dir, err)
	}
	if avail := st.Bavail * uint64(st.Bsize); avail < SpaceReserve {
		return fmt.Errorf("probe %q: %d bytes available, under the %d a write needs: %w", dir, avail, SpaceReserve, syscall.ENOSPC)
	}
	tmp, err := durable.WriteTemp(dir, pattern, make([]byte, SpaceProbeBytes), 0o400)
	if err != nil {
		return fmt.Errorf("probe %q: %w", dir, err)
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("probe %q: %w", dir, err)
	}
	return nil
}

// CheckSpace probes whether the repository takes writes again after one
// failed for lack of space (ProbeSpace on the object directory, with a
// file named as the temporary files housekeeping sweeps after a crash).
// The refs live in the same git directory, on the same device, so the
// probe stands for them too. The lack of space comes through
// Options.NoSpace.
func (r *Repo) CheckSpace() error {
	return r.noSpace(SpaceObjects, ProbeSpace(filepath.Join(r.gitDir, "objects"), "tmp_obj_space_"))
}
