//go:build linux

package workdir

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroups makes one cgroup per command, below the daemon's own: in the
// unified hierarchy (v2) where the daemon's cgroup is delegated to it
// (writable, with the memory and pids controllers), or else in the v1
// memory, pids, cpu and freezer hierarchies where those are writable.
// Where neither is, commands get rlimits instead (see rlimitsFor).
type cgroups struct {
	via string // ViaCgroup2, ViaCgroup1, or "" (none)
	// v2: the directory command cgroups are made in.
	v2 string
	// v1: controller → the directory command cgroups are made in.
	v1 map[string]string
	// why says why there are none, for the log.
	why string

	// mu guards left: command cgroups that could not be removed when
	// their command ended (a process slow to die), removed at the next
	// command's start.
	mu   sync.Mutex
	left []*cgroup
}

// cgroup is one command's cgroup.
type cgroup struct {
	via  string
	dirs map[string]string // controller ("" for v2) → directory
}

const cgroupBase = "sessiond"

// cgroupMount is one cgroup file system mounted in this namespace.
type cgroupMount struct {
	root, point, fstype, opts string
}

func cgroupMounts() []cgroupMount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || (b[0] != "cgroup" && b[0] != "cgroup2") {
			continue
		}
		out = append(out, cgroupMount{root: a[3], point: a[4], fstype: b[0], opts: b[2]})
	}
	return out
}

// ownCgroups maps each hierarchy's controllers ("" for v2) to this
// process's cgroup path in it.
func ownCgroups() map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			out[parts[1]] = parts[2]
		}
	}
	return out
}

// detectCgroups finds where command cgroups can be made, below
// sessiond/<instance> of the daemon's own cgroup (instance names the
// daemon's data directory, so daemons beside each other keep apart), and
// removes those a crashed daemon left there.
func detectCgroups(instance string) *cgroups {
	mounts, own := cgroupMounts(), ownCgroups()
	var whyV2 string
	for _, m := range mounts {
		if m.fstype != "cgroup2" {
			continue
		}
		dir, ok := within(m, own[""])
		if !ok {
			continue
		}
		base, err := delegateV2(dir, instance)
		if err != nil {
			whyV2 = err.Error()
			break
		}
		c := &cgroups{via: ViaCgroup2, v2: base}
		c.removeStale()
		return c
	}
	v1 := map[string]string{}
	for _, ctl := range []string{"memory", "pids", "cpu", "freezer"} {
		for _, m := range mounts {
			if m.fstype != "cgroup" || !hasOpt(m.opts, ctl) {
				continue
			}
			for ctls, path := range own {
				if hasOpt(ctls, ctl) {
					if dir, ok := within(m, path); ok {
						base := filepath.Join(dir, cgroupBase, instance)
						if err := os.MkdirAll(base, 0o755); err == nil && writable(base) {
							v1[ctl] = base
						}
					}
				}
			}
		}
	}
	if v1["memory"] != "" && v1["pids"] != "" {
		c := &cgroups{via: ViaCgroup1, v1: v1}
		c.removeStale()
		return c
	}
	why := "no writable cgroup (neither a delegated cgroup v2 subtree nor writable v1 memory and pids hierarchies)"
	if whyV2 != "" {
		why += "; cgroup v2: " + whyV2
	}
	return &cgroups{why: why}
}

func hasOpt(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// within is the directory of cgroup path in mount m, if m shows it.
func within(m cgroupMount, path string) (string, bool) {
	if path == "" {
		return "", false
	}
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

func writable(dir string) bool { return syscall.Access(dir, 2 /* W_OK */) == nil }

// delegateV2 prepares the daemon's cgroup v2 dir for command cgroups
// and returns the directory to make them in: dir must be writable and
// offer memory and pids. A cgroup with processes cannot give its
// children controllers, so the daemon moves itself into a leaf "daemon"
// below it first, as delegated services do.
func delegateV2(dir, instance string) (string, error) {
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return "", err
	}
	for _, need := range []string{"memory", "pids"} {
		if !hasOpt(strings.ReplaceAll(strings.TrimSpace(string(ctl)), " ", ","), need) {
			return "", fmt.Errorf("%s has no %s controller", dir, need)
		}
	}
	if !writable(dir) || !writable(filepath.Join(dir, "cgroup.procs")) {
		return "", fmt.Errorf("%s is not delegated (not writable)", dir)
	}
	enable := "+memory +pids"
	if strings.Contains(string(ctl), "cpu") {
		enable += " +cpu"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
		leaf := filepath.Join(dir, "daemon")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return "", fmt.Errorf("move the daemon into %s: %w", leaf, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
			return "", fmt.Errorf("enable %s in %s: %w", enable, dir, err)
		}
	}
	base := dir
	for _, d := range []string{cgroupBase, instance} {
		base = filepath.Join(base, d)
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
			return "", fmt.Errorf("enable %s in %s: %w", enable, base, err)
		}
	}
	return base, nil
}

// Available reports whether commands get cgroups, and how.
func (c *cgroups) available() bool { return c.via != "" }

// bases lists the directories command cgroups are made in.
func (c *cgroups) bases() map[string]string {
	if c.via == ViaCgroup2 {
		return map[string]string{"": c.v2}
	}
	return c.v1
}

// removeStale kills and removes the command cgroups a crashed daemon
// left.
func (c *cgroups) removeStale() {
	names := map[string]bool{}
	for _, base := range c.bases() {
		ents, _ := os.ReadDir(base)
		for _, e := range ents {
			if e.IsDir() {
				names[e.Name()] = true
			}
		}
	}
	for n := range names {
		g := c.open(n)
		g.kill()
		g.remove()
	}
}

func (c *cgroups) open(name string) *cgroup {
	g := &cgroup{via: c.via, dirs: map[string]string{}}
	for ctl, base := range c.bases() {
		g.dirs[ctl] = filepath.Join(base, name)
	}
	return g
}

// create makes the cgroup name with the limits l, and returns it with
// the limits it applies. In v1, each hierarchy a process joins costs the
// kernel a grace period, so a command joins only those it needs: memory
// and pids always, cpu for a weight other than the even share, freezer
// to kill a tree that no PID namespace holds (unisolated).
func (c *cgroups) create(name string, l Limits, isolated bool) (*cgroup, []AppliedLimit, error) {
	c.retryLeft()
	g := c.open(name)
	if c.via == ViaCgroup1 {
		if l.CPUWeight <= 0 || l.CPUWeight == 100 {
			delete(g.dirs, "cpu")
		}
		if isolated {
			delete(g.dirs, "freezer")
		}
	}
	for _, d := range g.dirs {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			g.remove()
			return nil, nil, fmt.Errorf("cgroup: %w", err)
		}
	}
	var applied []AppliedLimit
	set := func(ctl, file, value, limit string, v int64) error {
		d, ok := g.dirs[ctl]
		if !ok {
			return nil
		}
		if err := os.WriteFile(filepath.Join(d, file), []byte(value), 0); err != nil {
			return fmt.Errorf("cgroup %s: %w", file, err)
		}
		applied = append(applied, AppliedLimit{Name: limit, Value: v, Via: c.via})
		return nil
	}
	var err error
	if c.via == ViaCgroup2 {
		if l.MemoryBytes > 0 {
			err = errors.Join(err, set("", "memory.max", strconv.FormatInt(l.MemoryBytes, 10), LimitMemory, l.MemoryBytes))
			_ = os.WriteFile(filepath.Join(g.dirs[""], "memory.swap.max"), []byte("0"), 0)
		}
		if l.Pids > 0 {
			err = errors.Join(err, set("", "pids.max", strconv.FormatInt(l.Pids, 10), LimitPids, l.Pids))
		}
		if l.CPUWeight > 0 {
			if _, statErr := os.Stat(filepath.Join(g.dirs[""], "cpu.weight")); statErr == nil {
				err = errors.Join(err, set("", "cpu.weight", strconv.FormatInt(l.CPUWeight, 10), LimitCPU, l.CPUWeight))
			}
		}
	} else {
		if l.MemoryBytes > 0 {
			err = errors.Join(err, set("memory", "memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10), LimitMemory, l.MemoryBytes))
			_ = os.WriteFile(filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(l.MemoryBytes, 10)), 0)
		}
		if l.Pids > 0 {
			err = errors.Join(err, set("pids", "pids.max", strconv.FormatInt(l.Pids, 10), LimitPids, l.Pids))
		}
		if l.CPUWeight > 0 {
			err = errors.Join(err, set("cpu", "cpu.shares", strconv.FormatInt(max(2, l.CPUWeight*1024/100), 10), LimitCPU, l.CPUWeight))
		}
	}
	if err != nil {
		g.remove()
		return nil, nil, err
	}
	return g, applied, nil
}

// procs are the cgroup.procs files a process writes itself into to join.
func (g *cgroup) procs() []string {
	var out []string
	for _, d := range g.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// pids lists the processes in the cgroup.
func (g *cgroup) pids() []int {
	var out []int
	for _, d := range g.dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
		break // every hierarchy holds the same processes
	}
	return out
}

// kill kills every process in the cgroup, double-forked grandchildren
// included: by cgroup.kill (v2), or frozen, killed and thawed (v1), so
// that nothing forks meanwhile.
func (g *cgroup) kill() {
	if g.via == ViaCgroup2 {
		if os.WriteFile(filepath.Join(g.dirs[""], "cgroup.kill"), []byte("1"), 0) == nil {
			return
		}
	}
	freezer := ""
	if g.via == ViaCgroup2 {
		freezer = filepath.Join(g.dirs[""], "cgroup.freeze")
		_ = os.WriteFile(freezer, []byte("1"), 0)
	} else if d, ok := g.dirs["freezer"]; ok {
		freezer = filepath.Join(d, "freezer.state")
		_ = os.WriteFile(freezer, []byte("FROZEN"), 0)
	}
	for round := 0; round < 100; round++ {
		ps := g.pids()
		if len(ps) == 0 {
			break
		}
		for _, p := range ps {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if freezer != "" {
			thaw := "THAWED"
			if g.via == ViaCgroup2 {
				thaw = "0"
			}
			_ = os.WriteFile(freezer, []byte(thaw), 0)
		}
		time.Sleep(time.Millisecond)
	}
}

// exceeded lists the limits the cgroup's processes ran into: memory (the
// kernel killed one out of memory) and pids (a fork was refused).
func (g *cgroup) exceeded() []string {
	var out []string
	count := func(file, key string) int64 {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == key {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
		return 0
	}
	if g.via == ViaCgroup2 {
		if count(filepath.Join(g.dirs[""], "memory.events"), "oom_kill") > 0 {
			out = append(out, LimitMemory)
		}
		if count(filepath.Join(g.dirs[""], "pids.events"), "max") > 0 {
			out = append(out, LimitPids)
		}
		return out
	}
	if d, ok := g.dirs["memory"]; ok && count(filepath.Join(d, "memory.oom_control"), "oom_kill") > 0 {
		out = append(out, LimitMemory)
	}
	if d, ok := g.dirs["pids"]; ok && count(filepath.Join(d, "pids.events"), "max") > 0 {
		out = append(out, LimitPids)
	}
	return out
}

// remove deletes the cgroup once its processes are gone, and says
// whether it is gone.
func (g *cgroup) remove() bool {
	gone := true
	for _, d := range g.dirs {
		removed := false
		for i := 0; i < 50; i++ {
			if err := os.Remove(d); err == nil || errors.Is(err, fs.ErrNotExist) {
				removed = true
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		gone = gone && removed
	}
	return gone
}

// release kills and removes a command's cgroup when the command ended;
// one that stays (a process slow to die) is removed later.
func (c *cgroups) release(g *cgroup) {
	g.kill()
	if !g.remove() {
		c.mu.Lock()
		c.left = append(c.left, g)
		c.mu.Unlock()
	}
}

// retryLeft removes the cgroups release could not.
func (c *cgroups) retryLeft() {
	c.mu.Lock()
	left := c.left
	c.left = nil
	c.mu.Unlock()
	var still []*cgroup
	for _, g := range left {
		g.kill()
		if !removeNow(g) {
			still = append(still, g)
		}
	}
	if len(still) > 0 {
		c.mu.Lock()
		c.left = append(c.left, still...)
		c.mu.Unlock()
	}
}

// removeNow removes g's directories without waiting, and says whether
// they are gone.
func removeNow(g *cgroup) bool {
	gone := true
	for _, d := range g.dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			gone = false
		}
	}
	return gone
}
