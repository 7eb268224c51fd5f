package workdir

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/durable"
	"github.com/sessiond/sessiond/internal/failpoint"
)

// Environment layers (SPEC §13). A repository's setup (package
// environment says which commands, and the key that names their result)
// runs once per key in a view of the base checkout with the repository's
// shared tool caches; what it produced that the view's .gitignore files
// ignore (node_modules/, .venv/, generated files), with the include
// files, becomes a read-only directory under <dir>/environments/<key>,
// stacked between the base checkout and the session's own layer: in
// overlay mode as a second lower directory, in copy mode copied into the
// view when it is rebuilt.
//
// A layer is built under a temporary name (".tmp-…", removed when the
// Manager opens) and renamed into place once synced, so a directory named
// by a key is always complete. Concurrent sessions needing one key wait
// for one build. A build that fails (a step exits non-zero, or changes a
// tracked file) leaves "<key>.failed" with its log; commands then run
// without the layer, and the key is not built again until it changes or
// RebuildEnvironments forgets the failure. Layers nobody holds are
// evicted least recently used beyond the byte budget.

// Env asks for an environment layer under a view.
type Env struct {
	// Key names the layer (a hash of exactly its inputs).
	Key string
	// Repo names the repository (its shared caches; listings); Commit is
	// the base commit it is built from (for listings).
	Repo   string
	Commit string
	Steps  []EnvStep
	// Include are files the layer holds beside what the steps produced.
	Include []EnvFile
	// Workspace is where the view appears inside the setup's namespace.
	Workspace string
	// Limits bound each step (zero fields take the Manager's).
	Limits Limits
	// Mask, when set, masks secrets in the build's log.
	Mask func([]byte) []byte
}

// EnvStep is one setup command.
type EnvStep struct {
	Argv    []string
	Env     []string
	Network bool
	// Egress, when set, is the step's egress proxy (Command.Egress).
	Egress Egress
	// Connect, when set, gives the step its network (Network, Egress)
	// just before it runs: only a build that runs pays for it (a
	// policy read, a new egress proxy), never a command whose layer
	// exists.
	Connect func(ctx context.Context) (network bool, egress Egress, err error)
	Timeout time.Duration
}

// EnvFile is an include file.
type EnvFile struct {
	Path string
	Data []byte
	// Private files (a secret's value) are mode 0600, others 0644.
	Private bool
}

// Layer statuses.
const (
	EnvReady    = "ready"
	EnvFailed   = "failed"
	EnvBuilding = "building"
)

// EnvInfo describes a layer (GET /v1/repos/{repo}/environments).
type EnvInfo struct {
	Key    string `json:"key"`
	Repo   string `json:"repo"`
	Commit string `json:"commit,omitempty"`
	Status string `json:"status"`
	// Bytes and Files are what the layer holds.
	Bytes int64 `json:"bytes"`
	Files int64 `json:"files"`
	// BuildMS is how long the build took.
	BuildMS  int64     `json:"build_ms"`
	BuiltAt  time.Time `json:"built_at"`
	LastUsed time.Time `json:"last_used"`
	// Include lists the include files' paths.
	Include []string `json:"include,omitempty"`
	// Log is the build's output (a failed build's is kept); Error says
	// why it failed.
	Log   string `json:"log,omitempty"`
	Error string `json:"error,omitempty"`
	// InUse counts the commands holding it.
	InUse int `json:"in_use"`
}

// EnvResult is what Prepare found of the view's environment.
type EnvResult struct {
	Key    string
	Status string
	// Built: this Prepare built it (or waited for the build).
	Built bool
	Log   string
	Error string
}

// maxEnvLog bounds the log kept of a build (its tail).
const maxEnvLog = 64 << 10

// envLayers owns <dir>/environments. mu guards every field below it.
type envLayers struct {
	m     *Manager
	dir   string
	bytes int64

	mu       sync.Mutex
	layers   map[string]*envLayer
	building map[string]*envBuild
	total    int64
}

type envLayer struct {
	info EnvInfo
	refs int
}

type envBuild struct {
	done chan struct{}
	repo string
	at   time.Time
}

func openEnvLayers(m *Manager, dir string, bytes int64) (*envLayers, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("environments: %w", err)
	}
	e := &envLayers{m: m, dir: dir, bytes: bytes, layers: map[string]*envLayer{}, building: map[string]*envBuild{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("environments: %w", err)
	}
	for _, d := range ents {
		full := filepath.Join(dir, d.Name())
		if strings.HasPrefix(d.Name(), ".tmp-") {
			// A build a crash interrupted: never complete.
			if err := removeAll(full); err != nil {
				return nil, fmt.Errorf("environments: remove %s: %w", d.Name(), err)
			}
			continue
		}
		if !d.IsDir() {
			continue
		}
		info, err := readEnvInfo(full)
		if err != nil {
			continue
		}
		if st, err := os.Stat(full); err == nil {
			info.LastUsed = st.ModTime()
		}
		e.layers[d.Name()] = &envLayer{info: info}
		e.total += info.Bytes
	}
	return e, nil
}

func readEnvInfo(dir string) (EnvInfo, error) {
	b, err := os.ReadFile(filepath.Join(dir, "info.json"))
	if err != nil {
		return EnvInfo{}, err
	}
	var info EnvInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return EnvInfo{}, err
	}
	return info, nil
}

func validKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for _, c := range k {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (e *envLayers) failedPath(key string) string { return filepath.Join(e.dir, key+".failed") }

// treeOf is the directory a layer stacks.
func (e *envLayers) treeOf(key string) string { return filepath.Join(e.dir, key, "tree") }

// acquire returns the layer env names, building it first when there is
// none and no failure is remembered, and holds it until release: a held
// layer is never evicted. tree is "" when there is no layer to stack
// (the build failed now or before).
func (e *envLayers) acquire(ctx context.Context, v View, base string, env *Env) (tree string, res EnvResult, release func(), err error) {
	if !validKey(env.Key) {
		return "", EnvResult{}, nil, fmt.Errorf("%w: environment key %q", ErrInvalid, env.Key)
	}
	res.Key = env.Key
	for {
		e.mu.Lock()
		if l := e.layers[env.Key]; l != nil {
			l.refs++
			l.info.LastUsed = time.Now()
			used := l.info.LastUsed // l's fields are e.mu's
			e.mu.Unlock()
			_ = os.Chtimes(filepath.Join(e.dir, env.Key), used, used)
			var once sync.Once
			res.Status = EnvReady
			return e.treeOf(env.Key), res, func() { once.Do(func() { e.release(env.Key) }) }, nil
		}
		if b := e.building[env.Key]; b != nil {
			e.mu.Unlock()
			select {
			case <-b.done:
			case <-ctx.Done():
				return "", EnvResult{}, nil, ctx.Err()
			}
			res.Built = true
			continue
		}
		if info, err := readFailed(e.failedPath(env.Key)); err == nil {
			e.mu.Unlock()
			res.Status, res.Log, res.Error = EnvFailed, info.Log, info.Error
			return "", res, func() {}, nil
		}
		b := &envBuild{done: make(chan struct{}), repo: env.Repo, at: time.Now()}
		e.building[env.Key] = b
		e.mu.Unlock()

		info, err := e.build(context.WithoutCancel(ctx), v, base, env)
		ready := err == nil && info.Status == EnvReady
		e.mu.Lock()
		delete(e.building, env.Key)
		if ready {
			// Held by this caller from the start: the eviction below
			// cannot take it.
			e.layers[env.Key] = &envLayer{info: info, refs: 1}
			e.total += info.Bytes
		}
		close(b.done)
		e.mu.Unlock()
		if err != nil {
			return "", EnvResult{}, nil, err
		}
		res.Built = true
		if ready {
			e.evict()
			var once sync.Once
			res.Status = EnvReady
			return e.treeOf(env.Key), res, func() { once.Do(func() { e.release(env.Key) }) }, nil
		}
	}
}

func readFailed(p string) (EnvInfo, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return EnvInfo{}, err
	}
	var info EnvInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return EnvInfo{}, err
	}
	return info, nil
}

// hold holds the layer whose tree is at tree ("": none) until release,
// as acquire does, for a service that outlives the command that prepared
// its view.
func (e *envLayers) hold(tree string) (release func()) {
	if tree == "" {
		return func() {}
	}
	key := filepath.Base(filepath.Dir(tree))
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.layers[key]
	if l == nil {
		return func() {}
	}
	l.refs++
	var once sync.Once
	return func() { once.Do(func() { e.release(key) }) }
}

func (e *envLayers) release(key string) {
	e.mu.Lock()
	if l := e.layers[key]; l != nil {
		l.refs--
	}
	e.mu.Unlock()
	e.evict()
}

// evict removes the least recently used layers nobody holds while the
// layers take more than the budget.
func (e *envLayers) evict() {
	if e.bytes <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.total <= e.bytes {
		return
	}
	keys := make([]string, 0, len(e.layers))
	for k := range e.layers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return e.layers[keys[i]].info.LastUsed.Before(e.layers[keys[j]].info.LastUsed) })
	for _, k := range keys {
		if e.total <= e.bytes {
			return
		}
		l := e.layers[k]
		if l.refs > 0 {
			continue
		}
		if err := e.removeLocked(k); err == nil {
			e.total -= l.info.Bytes
		}
	}
}

// removeLocked removes a layer's directory: renamed away first, so a
// crash midway leaves a ".tmp-" name that the next open removes.
func (e *envLayers) removeLocked(key string) error {
	gone := filepath.Join(e.dir, ".tmp-gone-"+key+"-"+randomSuffix())
	if err := os.Rename(filepath.Join(e.dir, key), gone); err != nil {
		return err
	}
	delete(e.layers, key)
	return removeAll(gone)
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// list returns the layers of repo ("" for all): built, failed and being
// built, most recently used first.
func (e *envLayers) list(repo string) []EnvInfo {
	e.mu.Lock()
	var out []EnvInfo
	for _, l := range e.layers {
		if repo == "" || l.info.Repo == repo {
			info := l.info
			info.InUse = l.refs
			out = append(out, info)
		}
	}
	for k, b := range e.building {
		if repo == "" || b.repo == repo {
			out = append(out, EnvInfo{Key: k, Repo: b.repo, Status: EnvBuilding, BuiltAt: b.at})
		}
	}
	e.mu.Unlock()
	ents, _ := os.ReadDir(e.dir)
	for _, d := range ents {
		k, ok := strings.CutSuffix(d.Name(), ".failed")
		if !ok || strings.HasPrefix(k, ".") {
			continue
		}
		info, err := readFailed(filepath.Join(e.dir, d.Name()))
		if err == nil && (repo == "" || info.Repo == repo) {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastUsed.Equal(out[j].LastUsed) {
			return out[i].LastUsed.After(out[j].LastUsed)
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// rebuild forgets repo's failed builds and removes its layers nobody
// holds, so the next command builds again. It returns how many it
// dropped.
func (e *envLayers) rebuild(repo string) (int, error) {
	n := 0
	ents, _ := os.ReadDir(e.dir)
	for _, d := range ents {
		if !strings.HasSuffix(d.Name(), ".failed") {
			continue
		}
		p := filepath.Join(e.dir, d.Name())
		if info, err := readFailed(p); err == nil && info.Repo == repo {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return n, err
			}
			n++
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, l := range e.layers {
		if l.info.Repo != repo || l.refs > 0 {
			continue
		}
		if err := e.removeLocked(k); err != nil {
			return n, err
		}
		e.total -= l.info.Bytes
		n++
	}
	return n, nil
}

// errTracked: setup changed files git tracks.
var errTracked = errors.New("setup changed tracked files")

// build runs env's steps in a view of the base checkout base and turns
// what they produced into the layer. A failure of the setup itself (a
// step failed, tracked files changed) is remembered in "<key>.failed"
// and is not an error: the view is then prepared without a layer.
func (e *envLayers) build(ctx context.Context, v View, base string, env *Env) (EnvInfo, error) {
	start := time.Now()
	tmp := filepath.Join(e.dir, ".tmp-"+env.Key+"-"+randomSuffix())
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, err)
	}
	defer removeAll(tmp)
	info := EnvInfo{Key: env.Key, Repo: env.Repo, Commit: env.Commit, Status: EnvReady, BuiltAt: start}
	for _, f := range env.Include {
		info.Include = append(info.Include, f.Path)
	}
	var log bytes.Buffer
	fail := func(err error) (EnvInfo, error) {
		info.Status, info.Error = EnvFailed, err.Error()
		info.Log = tailString(log.Bytes(), maxEnvLog)
		if env.Mask != nil {
			info.Log, info.Error = string(env.Mask([]byte(info.Log))), string(env.Mask([]byte(info.Error)))
		}
		info.BuildMS = time.Since(start).Milliseconds()
		b, _ := json.Marshal(info)
		name, werr := durable.WriteTemp(e.dir, ".tmp-failed-*", b, 0o600)
		if werr != nil {
			return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, werr)
		}
		if werr := os.Rename(name, e.failedPath(env.Key)); werr != nil {
			return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, werr)
		}
		return info, nil
	}
	s := &Scratch{m: e.m, id: "environment-" + env.Key, dir: filepath.Join(tmp, "build"), loaded: true}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return EnvInfo{}, err
	}
	var produced string
	if e.m.mode == ModeOverlay {
		ol := newOverlayLayer(base, s.dir, "")
		for _, d := range []string{ol.upper, ol.work} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return EnvInfo{}, err
			}
		}
		s.layer, produced = ol, ol.upper
	} else {
		cl := newCopyLayer(filepath.Join(s.dir, "view"), "")
		if err := copyTree(base, hostTree(cl.dir), nil); err != nil {
			return EnvInfo{}, fmt.Errorf("environment %s: copy the base: %w", env.Key, err)
		}
		s.layer, produced = cl, cl.dir
	}
	for _, f := range env.Include {
		if err := writeInclude(produced, f); err != nil {
			return EnvInfo{}, fmt.Errorf("environment %s: include %q: %w", env.Key, f.Path, err)
		}
	}
	for _, st := range env.Steps {
		fmt.Fprintf(&log, "$ %s\n", describeArgv(st.Argv))
		if st.Connect != nil {
			network, egress, err := st.Connect(ctx)
			if err != nil {
				return EnvInfo{}, fmt.Errorf("environment %s: network of setup %q: %w", env.Key, describeArgv(st.Argv), err)
			}
			st.Network, st.Egress = network, egress
		}
		res, err := s.Run(ctx, Command{
			Argv: st.Argv, Env: st.Env, Network: st.Network, Egress: st.Egress, Timeout: st.Timeout,
			Workspace: env.Workspace, Limits: env.Limits, Caches: Caches{Repo: env.Repo},
			Output: func(_ string, p []byte) { log.Write(p) },
		})
		if err != nil {
			return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, err)
		}
		if res.TimedOut {
			return fail(fmt.Errorf("setup %q timed out after %s", describeArgv(st.Argv), st.Timeout))
		}
		if res.ExitCode != 0 {
			return fail(fmt.Errorf("setup %q exited with %d", describeArgv(st.Argv), res.ExitCode))
		}
	}
	if p := s.layer.present(); p.Overlay {
		_ = os.Chmod(filepath.Join(p.Work, "work"), 0o755)
	}
	changed, err := trackedChanges(base, produced, e.m.mode == ModeOverlay)
	if err != nil {
		return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, err)
	}
	if len(changed) > 0 {
		return fail(fmt.Errorf("%w: %s (an environment must not edit the code)", errTracked, quoteList(changed, 20)))
	}
	tree := filepath.Join(tmp, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return EnvInfo{}, err
	}
	if err := moveIgnored(base, produced, tree); err != nil {
		return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, err)
	}
	for _, f := range env.Include {
		if err := writeInclude(tree, f); err != nil {
			return EnvInfo{}, fmt.Errorf("environment %s: include %q: %w", env.Key, f.Path, err)
		}
	}
	// The layer keeps no setuid bit or file capability either.
	sweep(tree)
	if err := removeAll(s.dir); err != nil {
		return EnvInfo{}, err
	}
	info.Bytes, info.Files = treeSize(tree)
	info.BuildMS = time.Since(start).Milliseconds()
	info.Log = tailString(log.Bytes(), maxEnvLog)
	if env.Mask != nil {
		info.Log = string(env.Mask([]byte(info.Log)))
	}
	info.LastUsed = time.Now()
	b, err := json.Marshal(info)
	if err != nil {
		return EnvInfo{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "info.json"), b, 0o600); err != nil {
		return EnvInfo{}, err
	}
	if err := syncFS(tmp); err != nil {
		return EnvInfo{}, err
	}
	failpoint.Hit(failpoint.EnvironmentBuilt)
	final := filepath.Join(e.dir, env.Key)
	if err := os.Rename(tmp, final); err != nil {
		return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, err)
	}
	if err := durable.SyncDir(e.dir); err != nil {
		return EnvInfo{}, fmt.Errorf("environment %s: %w", env.Key, err)
	}
	_ = os.Remove(e.failedPath(env.Key))
	return info, nil
}

func tailString(b []byte, max int) string {
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func quoteList(ps []string, max int) string {
	q := make([]string, 0, len(ps))
	for i, p := range ps {
		if i == max {
			q = append(q, fmt.Sprintf("and %d more", len(ps)-max))
			break
		}
		q = append(q, fmt.Sprintf("%q", p))
	}
	return strings.Join(q, ", ")
}

func describeArgv(argv []string) string {
	if len(argv) == 3 && argv[0] == "/bin/sh" && argv[1] == "-c" {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

func writeInclude(root string, f EnvFile) error {
	if err := ensureDirs(hostTree(root), f.Path); err != nil {
		return err
	}
	full := filepath.Join(root, f.Path)
	if err := removeAll(full); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if f.Private {
		mode = 0o600
	}
	return os.WriteFile(full, f.Data, mode)
}

// viewFile says what the build's view holds at p (relative): the file's
// path on the host, or "" when the view has nothing there. In overlay
// mode produced is the upper directory over base; otherwise it is the
// whole view.
func viewFile(base, produced string, overlay bool, p string) string {
	if !overlay {
		return filepath.Join(produced, p)
	}
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		a := filepath.Join(produced, strings.Join(parts[:i], "/"))
		st, err := os.Lstat(a)
		if err != nil {
			break
		}
		if st.Mode()&fs.ModeCharDevice != 0 {
			return "" // whiteout
		}
		if i == len(parts) {
			return a
		}
		if !st.IsDir() {
			return ""
		}
		if isOpaque(hostTree(produced), strings.Join(parts[:i], "/")) {
			return ""
		}
	}
	return filepath.Join(base, p)
}

// trackedChanges lists the files of the base checkout that the build's
// view no longer holds as they were (content, mode or kind).
func trackedChanges(base, produced string, overlay bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(base, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		p, _ := filepath.Rel(base, full)
		p = filepath.ToSlash(p)
		got := viewFile(base, produced, overlay, p)
		if got == "" {
			out = append(out, p)
			return nil
		}
		if got == full {
			return nil
		}
		if !sameFile(full, got) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func sameFile(a, b string) bool {
	sa, err := os.Lstat(a)
	if err != nil {
		return false
	}
	sb, err := os.Lstat(b)
	if err != nil || sa.Mode().Type() != sb.Mode().Type() || sa.Mode().Perm()&0o100 != sb.Mode().Perm()&0o100 || sa.Size() != sb.Size() {
		return false
	}
	if sa.Mode()&fs.ModeSymlink != 0 {
		ta, _ := os.Readlink(a)
		tb, _ := os.Readlink(b)
		return ta == tb
	}
	ca, err := os.ReadFile(a)
	if err != nil {
		return false
	}
	cb, err := os.ReadFile(b)
	return err == nil && bytes.Equal(ca, cb)
}

// moveIgnored moves what the build produced that the view's .gitignore
// files ignore, and the base does not hold, from produced into tree:
// each ignored directory whole, as the shallowest ignored path.
func moveIgnored(base, produced, tree string) error {
	ig := newIgnorer(func(dir string) []byte {
		if b := readIgnoreFile(hostTree(produced), dir); b != nil {
			return b
		}
		return readIgnoreFile(hostTree(base), dir)
	})
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(filepath.Join(produced, dir))
		if err != nil {
			return err
		}
		for _, d := range ents {
			p := join(dir, d.Name())
			if dir == "" && d.Name() == ".git" {
				continue
			}
			full := filepath.Join(produced, p)
			st, err := os.Lstat(full)
			if err != nil {
				return err
			}
			if st.Mode()&fs.ModeCharDevice != 0 || st.Mode()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0 {
				continue
			}
			_, inBase := os.Lstat(filepath.Join(base, p))
			isDir := st.IsDir()
			if inBase != nil && ig.match(p, isDir) {
				if err := ensureDirs(hostTree(tree), p); err != nil {
					return err
				}
				if err := os.Rename(full, filepath.Join(tree, p)); err != nil {
					return err
				}
				continue
			}
			if isDir {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("")
}

// treeSize is the bytes (a block per directory too) and files below dir.
func treeSize(dir string) (bytes, files int64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			bytes += 4096
			return nil
		}
		files++
		if info, err := d.Info(); err == nil {
			bytes += info.Size()
		}
		return nil
	})
	return bytes, files
}

// copyTree copies the tree at src into dst, files, symlinks and
// directories, keeping modes and modification times. skip, when set, is
// called with each path relative to src and true leaves it out (with
// what is below). Paths dst already holds are kept as they are (a
// directory where dst has something else is left out).
func copyTree(src string, dst tree, skip func(p string) bool) error {
	d, err := dst.dir("", true)
	if err != nil {
		return err
	}
	defer d.close()
	return copyDir(src, "", d, skip)
}

// copyDir copies src's directory rel into d.
func copyDir(src, rel string, d *dirAt, skip func(p string) bool) error {
	ents, err := os.ReadDir(filepath.Join(src, rel))
	if err != nil {
		return err
	}
	for _, e := range ents {
		p, name := join(rel, e.Name()), e.Name()
		if skip != nil && skip(p) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		full := filepath.Join(src, p)
		var st unix.Stat_t
		switch {
		case e.IsDir():
			err := d.mkdir(name, uint32(info.Mode().Perm()|0o700))
			if errors.Is(err, fs.ErrExist) {
				if d.lstat(name, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
					continue // the view has a file there: it wins
				}
			} else if err != nil {
				return err
			}
			sub, err := d.sub(name)
			if err != nil {
				return err
			}
			err = copyDir(src, p, sub, skip)
			sub.close()
			if err != nil {
				return err
			}
		case e.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(full)
			if err != nil {
				return err
			}
			if err := d.create(name, gitstore.ModeSymlink, []byte(t), nil); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case e.Type().IsRegular():
			if d.lstat(name, &st) == nil {
				continue
			}
			if err := copyFile(full, d, name, info); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyFile copies the file src (of stat info) to name in d, which must
// not exist there, with its mode and modification time.
func copyFile(src string, d *dirAt, name string, info fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(info.Mode().Perm()))
	if err != nil {
		return d.err("openat", name, err)
	}
	out := os.NewFile(uintptr(fd), d.name+"/"+name)
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	mt := unix.NsecToTimespec(info.ModTime().UnixNano())
	if err := unix.UtimesNanoAt(d.fd, name, []unix.Timespec{mt, mt}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		out.Close()
		return d.err("utimensat", name, err)
	}
	return out.Close()
}

// BuildEnvironment builds the environment layer v asks for (v.Env), if
// it is not there yet, without preparing a session's view: a session
// created with prepare. A setup that fails is not an error: the result
// says failed, with the log.
func (m *Manager) BuildEnvironment(ctx context.Context, v View) (EnvResult, error) {
	if v.Env == nil {
		return EnvResult{}, nil
	}
	lower, release, err := m.cache.Acquire(ctx, v.Repo, v.BaseTree)
	if err != nil {
		return EnvResult{}, err
	}
	defer release()
	_, res, rel, err := m.envs.acquire(ctx, v, lower, v.Env)
	if err != nil {
		return EnvResult{}, err
	}
	rel()
	return res, nil
}

// Environments lists the environment layers of repo ("" for all).
func (m *Manager) Environments(repo string) []EnvInfo { return m.envs.list(repo) }

// RebuildEnvironments forgets repo's failed builds and removes its layers
// no command holds, so that the next command that needs one builds it
// again. It returns how many it dropped.
func (m *Manager) RebuildEnvironments(repo string) (int, error) { return m.envs.rebuild(repo) }

// EnvironmentBytes is the disk the layers take.
func (m *Manager) EnvironmentBytes() int64 {
	m.envs.mu.Lock()
	defer m.envs.mu.Unlock()
	return m.envs.total
}

// includePaths are the include files of the layer whose tree is at tree.
func includePaths(tree string) []string {
	if tree == "" {
		return nil
	}
	info, err := readEnvInfo(filepath.Dir(tree))
	if err != nil {
		return nil
	}
	return slices.Clone(info.Include)
}
