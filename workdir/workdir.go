package workdir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessiond/sessiond/gitstore"
)

// Config configures a Manager.
type Config struct {
	// Dir holds the base checkouts and the sessions' scratch directories
	// (under the daemon's data directory).
	Dir string
	// Mode is overlay, copy or auto (the default).
	Mode Mode
	// CacheBytes bounds the base checkouts kept (0: no bound).
	CacheBytes int64
	// ToolCacheBytes bounds each repository's shared tool caches (0: no
	// bound; see caches.go).
	ToolCacheBytes int64
	// EnvironmentBytes bounds the environment layers kept (0: no bound;
	// see environment.go).
	EnvironmentBytes int64
	// Hide lists paths hidden from commands (the data directory, the
	// registered repositories), asked before each command.
	Hide func() []string
	// Logf reports what the probe found; nil: silent.
	Logf func(format string, args ...any)
	// NoNamespaces runs commands without namespaces even where the kernel
	// allows them, as where it refuses them: copy mode, unisolated. Tests
	// use it to exercise that path on a machine that has namespaces.
	NoNamespaces bool
	// Limits are the limits of a command that names none (zero fields:
	// DefaultLimits).
	Limits Limits
	// NoCgroups limits commands by rlimits even where cgroups could (for
	// tests of that path).
	NoCgroups bool
	// NoLandlock runs commands without Landlock even where the kernel
	// has it, as on kernels without it, so that tests show the mounts
	// and the dropped privileges hold on their own.
	NoLandlock bool
	// Show lists host paths commands see read-only at their own path,
	// even where they would be hidden (a toolchain in a home directory,
	// a dataset below /tmp); what the daemon hides below them stays
	// hidden.
	Show []string
}

// Manager makes view directories: it owns the base checkout cache and the
// per-session scratch directories, and runs commands in them. It is safe
// for concurrent use; one session runs one command at a time (its caller,
// the session engine, guarantees that). mu guards scratches and running.
type Manager struct {
	dir      string
	mode     Mode
	isolated bool
	exe      string
	cache    *Cache
	hide     func() []string
	limits   Limits
	show     []string
	// noLandlock: Config.NoLandlock.
	noLandlock bool
	cgroups    *cgroups
	reach      reachCache
	tools      *toolCaches
	envs       *envLayers

	mu        sync.Mutex
	scratches map[string]*Scratch
	running   map[*exec.Cmd]struct{}
	closed    bool
}

// New opens a Manager. It probes what the kernel allows: a mode of auto
// becomes overlay where overlayfs mounts in a user namespace and copy
// otherwise; where no namespaces can be made commands run unisolated
// (Isolated reports it). A mode of overlay that the kernel refuses is
// ErrUnsupported.
func New(cfg Config) (*Manager, error) {
	mode := cfg.Mode
	if mode == "" {
		mode = ModeAuto
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	cache, err := OpenCache(filepath.Join(cfg.Dir, "bases"), cfg.CacheBytes)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		dir: cfg.Dir, exe: exe, cache: cache, hide: cfg.Hide, limits: cfg.Limits.Fill(DefaultLimits), show: cfg.Show,
		noLandlock: cfg.NoLandlock,
		scratches:  map[string]*Scratch{}, running: map[*exec.Cmd]struct{}{},
		tools: newToolCaches(filepath.Join(cfg.Dir, "caches"), cfg.ToolCacheBytes),
	}
	cache.onGone(m.dropBaseIndex)
	m.pruneBaseIndexes()
	if m.envs, err = openEnvLayers(m, filepath.Join(cfg.Dir, "environments"), cfg.EnvironmentBytes); err != nil {
		return nil, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if cfg.NoCgroups {
		m.cgroups = &cgroups{why: "turned off by the configuration"}
	} else {
		m.cgroups = detectCgroups(instanceName(cfg.Dir))
	}
	if !m.cgroups.available() {
		logf("workdir: commands are limited by rlimits, per process: %s", m.cgroups.why)
	}
	var nsErr, ovErr error
	switch {
	case cfg.NoNamespaces:
		nsErr = errors.New("turned off by the configuration")
	case namespaces() != nil:
		nsErr = namespaces()
	default:
		nsErr, ovErr = m.probe()
	}
	switch {
	case nsErr != nil:
		if mode == ModeOverlay {
			return nil, fmt.Errorf("workdir mode overlay: %w: %v", ErrUnsupported, nsErr)
		}
		logf("workdir: the kernel refuses user and mount namespaces (%v): commands run without isolation, and can read the data directory and the repositories", nsErr)
		m.mode = ModeCopy
	case ovErr != nil:
		if mode == ModeOverlay {
			return nil, fmt.Errorf("workdir mode overlay: %w: %v", ErrUnsupported, ovErr)
		}
		logf("workdir: overlayfs is not available (%v): view directories are copies", ovErr)
		m.mode, m.isolated = ModeCopy, true
	default:
		m.isolated = true
		m.mode = mode
		if mode == ModeAuto {
			m.mode = ModeOverlay
		}
	}
	return m, nil
}

// Mode is the mode view directories use (never auto).
func (m *Manager) Mode() Mode { return m.mode }

// Isolated reports whether commands run in namespaces of their own with
// the data directory and the repositories hidden.
func (m *Manager) Isolated() bool { return m.isolated }

// Cache is the base checkout cache.
func (m *Manager) Cache() *Cache { return m.cache }

// Cgroups says how commands' memory, processes and CPU are limited: by
// a cgroup per command (ViaCgroup2 or ViaCgroup1), or by rlimits ("").
func (m *Manager) Cgroups() string { return m.cgroups.via }

// hidden lists the host paths absent from a command's root: the data
// directory (this Manager's too), the repositories, and what the host
// keeps of its services and its people (reach.go).
func (m *Manager) hidden() []string { return m.hiddenWith(m.hide) }

// hiddenWith is hidden with the caller's paths from hide (nil: none, as
// for the probe, which runs before the caller can name any).
func (m *Manager) hiddenWith(hide func() []string) []string {
	ps := []string{filepath.Dir(m.dir), m.dir}
	if hide != nil {
		ps = append(ps, hide()...)
	}
	return append(resolveAll(ps), m.reach.system().hide...)
}

// shown lists the host paths a command sees read-only though they are
// below hidden ones: the toolchains of the daemon's PATH in a hidden
// home, and those the configuration names.
func (m *Manager) shown() []string {
	return append(resolveAll(m.show), m.reach.system().show...)
}

// instanceName names a Manager's cgroups after its directory.
func instanceName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:6])
}

// probe starts the helper once: with a bind mount (namespaces), then
// with an overlay mount.
func (m *Manager) probe() (nsErr, ovErr error) {
	dir := filepath.Join(m.dir, "probe")
	_ = removeAll(dir)
	defer removeAll(dir)
	for _, d := range []string{"lower", "upper", "work", "mnt", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err, err
		}
	}
	try := func(p presentation) error {
		spec := helperSpec{View: p, Stage: filepath.Join(dir, "mnt"), Target: DefaultWorkspace,
			Home: HomeInside, HomeSrc: filepath.Join(dir, "home"), Hide: m.hiddenWith(nil), Show: m.shown(), Probe: true, NewNet: true}
		return m.runHelper(spec)
	}
	if err := try(presentation{Src: filepath.Join(dir, "lower")}); err != nil {
		return err, err
	}
	ovErr = try(presentation{Overlay: true, Lower: filepath.Join(dir, "lower"), Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work")})
	return nil, ovErr
}

// runHelper runs the helper for a probe and returns its setup error.
func (m *Manager) runHelper(spec helperSpec) error {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer statusR.Close()
	b, _ := jsonMarshal(spec)
	cmd := exec.Command(m.exe)
	cmd.Env = []string{helperEnv + "=" + string(b)}
	cmd.SysProcAttr = m.nsAttr(spec.NewNet)
	cmd.ExtraFiles = []*os.File{statusW}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	waited, err := startPinned(cmd)
	if err == nil {
		err = <-waited
	}
	statusW.Close()
	if err != nil {
		var st helperStatus
		if d := jsonDecodeLine(statusR, &st); d == nil && st.Error != "" {
			return errors.New(st.Error)
		}
		if out.Len() > 0 {
			return fmt.Errorf("%v: %s", err, out.Bytes())
		}
		return err
	}
	return nil
}

func (m *Manager) track(cmd *exec.Cmd, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if add {
		m.running[cmd] = struct{}{}
	} else {
		delete(m.running, cmd)
	}
}

// Close kills every running command (their process trees and mounts go
// with them) and refuses new ones.
func (m *Manager) Close() error {
	defer m.tools.idle()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for cmd := range m.running {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	}
	return nil
}

// Scratch is one session's scratch directory: its layer, its home
// directory and the mount point of its view. Its methods are called by
// one goroutine at a time (one command per session).
type Scratch struct {
	m     *Manager
	id    string
	dir   string
	layer layer
	// layerRepo is the repository of the view last prepared.
	layerRepo Repo
	// st is what the layer reflects; base is the checkout held while a
	// command is prepared or running.
	st      scratchState
	loaded  bool
	release func()
	// ranAt is when the last Run began (wall clock, ns); zero before one.
	ranAt int64
	// env is what Prepare found of the view's environment layer;
	// releaseEnv lets go of the layer it holds.
	env        EnvResult
	releaseEnv func()
	// repo is the repository of the view last prepared (for Serve).
	repo Repo
	// overLimit: the last command outgrew the scratch's bound; Settle
	// drops the scratch's ignored outputs and home.
	overLimit bool

	// shareMu guards share and inUse, which services' ends change too.
	shareMu sync.Mutex
	// share is the view's mount its services and commands share while
	// services run (share.go); nil otherwise.
	share *viewShare
	// inUse: between Prepare and Settle or Abort.
	inUse bool
}

// scratchState is saved in the scratch directory after every command.
type scratchState struct {
	Mode     Mode
	BaseTree gitstore.OID
	Seq      int64
	Cache    map[string]statEntry
	// Env is the environment layer's directory the view stacks ("":
	// none).
	Env string
	// Usage is the disk space the scratch took after the last command.
	Usage int64
}

// runningMarker exists in a scratch directory while a command may change
// it; finding it means the last command never settled (a crash), so the
// layer is rebuilt from the record.
const runningMarker = "running"

func (m *Manager) scratch(id string) *Scratch {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scratches[id]
	if s == nil {
		s = &Scratch{m: m, id: id, dir: filepath.Join(m.dir, "sessions", id)}
		m.scratches[id] = s
	}
	return s
}

// Prepare brings the session's scratch directory in step with v and holds
// its base checkout: a scratch already at v's sequence number costs
// nothing, one behind is synced on the paths the mutations since changed,
// and one left by a crash (or on another base) is rebuilt. Every Prepare
// is followed by Settle or Abort.
func (m *Manager) Prepare(ctx context.Context, v View) (*Scratch, error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("workdir: %w: shutting down", ErrUnsupported)
	}
	s := m.scratch(v.Session)
	shared := s.using(true)
	if shared != nil {
		if err := shared.lost(); err != nil {
			s.using(false)
			return nil, fmt.Errorf("workdir: prepare %s: %w", v.Session, err)
		}
	}
	lower, release, err := m.cache.Acquire(ctx, v.Repo, v.BaseTree)
	if err != nil {
		s.using(false)
		return nil, err
	}
	env, envRes, releaseEnv := "", EnvResult{}, func() {}
	if v.Env == nil && v.KeepEnv {
		if !s.loaded {
			s.load()
		}
		if _, err := os.Stat(s.st.Env); s.st.Env != "" && err == nil {
			env, releaseEnv = s.st.Env, m.envs.hold(s.st.Env)
		}
	}
	if v.Env != nil {
		if env, envRes, releaseEnv, err = m.envs.acquire(ctx, v, lower, v.Env); err != nil {
			release()
			s.using(false)
			return nil, fmt.Errorf("workdir: prepare %s: %w", v.Session, err)
		}
	}
	if err := s.prepare(ctx, v, lower, env, shared); err != nil {
		releaseEnv()
		release()
		s.using(false)
		return nil, fmt.Errorf("workdir: prepare %s: %w", v.Session, err)
	}
	s.release, s.releaseEnv, s.env = release, releaseEnv, envRes
	s.repo = v.Repo
	return s, nil
}

// Environment is what Prepare found of the view's environment layer
// (zero when the view asked for none).
func (s *Scratch) Environment() EnvResult { return s.env }

func (s *Scratch) newLayer(mode Mode, lower, env string) layer {
	if mode == ModeOverlay {
		return newOverlayLayer(lower, s.dir, env)
	}
	return newCopyLayer(filepath.Join(s.dir, "view"), env)
}

func (s *Scratch) prepare(ctx context.Context, v View, lower, env string, shared *viewShare) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if !s.loaded {
		s.load()
	}
	if shared != nil && s.st.BaseTree != v.BaseTree {
		return fmt.Errorf("%w on base tree %s: stop them to run on tree %s", ErrViewHeld, s.st.BaseTree, v.BaseTree)
	}
	if shared != nil && s.st.Env != env {
		return fmt.Errorf("%w with environment layer %s: stop them to run with layer %s", ErrViewHeld, envName(s.st.Env), envName(env))
	}
	s.layerRepo = v.Repo
	_, err := os.Lstat(filepath.Join(s.dir, runningMarker))
	crashed := err == nil
	full := crashed || s.overLimit || s.layer == nil || s.st.Mode != s.m.mode || s.st.BaseTree != v.BaseTree || s.st.Seq > v.Seq || s.st.Env != env
	var cache map[string]statEntry
	if s.layer != nil {
		cache = s.layer.cacheState()
	}
	s.layer = s.newLayer(s.m.mode, lower, env)
	if l, ok := s.layer.(*overlayLayer); ok {
		l.shared = shared
	}
	if cache != nil && !full {
		s.layer.setCacheState(cache)
	}
	if err := os.WriteFile(filepath.Join(s.dir, runningMarker), nil, 0o644); err != nil {
		return err
	}
	if !full && s.st.Seq < v.Seq {
		paths, all, err := v.Changed(ctx, s.st.Seq)
		if err != nil {
			return err
		}
		if all {
			full = true
		} else if err := s.layer.sync(ctx, v, paths); err != nil {
			return err
		}
	}
	if full {
		if err := s.layer.reset(ctx, v); err != nil {
			return err
		}
	}
	s.st = scratchState{Mode: s.m.mode, BaseTree: v.BaseTree, Seq: v.Seq, Env: env, Usage: s.st.Usage}
	return nil
}

func (s *Scratch) load() {
	s.loaded = true
	f, err := os.Open(filepath.Join(s.dir, "state"))
	if err != nil {
		return
	}
	defer f.Close()
	var st scratchState
	if gob.NewDecoder(f).Decode(&st) == nil {
		s.st = st
		s.layer = s.newLayer(st.Mode, "", st.Env)
		if st.Cache != nil {
			s.layer.setCacheState(st.Cache)
		}
		s.st.Cache = nil
	}
}

func (s *Scratch) save() error {
	st := s.st
	st.Cache = s.layer.cacheState()
	tmp := filepath.Join(s.dir, "state.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(st); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, "state"))
}

// Run runs c on the view.
func (s *Scratch) Run(ctx context.Context, c Command) (Result, error) {
	s.ranAt = time.Now().UnixNano()
	return s.m.run(ctx, s, c)
}

// Capture lists what the command changed against v, the view it was
// prepared for. Files over maxFile bytes come back without their data.
func (s *Scratch) Capture(ctx context.Context, v View, maxFile int64) ([]Change, error) {
	since := s.ranAt
	if since == 0 {
		since = time.Now().UnixNano()
	}
	return s.layer.capture(ctx, v, since, maxFile)
}

// Settle brings paths in step with v (the view after the command was
// recorded: what was refused or not recorded goes back to what the record
// holds), saves the scratch state and releases the base checkout.
func (s *Scratch) Settle(ctx context.Context, v View, paths []string) error {
	defer s.releaseBase()
	if s.overLimit {
		// Past its bound the scratch keeps only what the record holds.
		if err := s.layer.reset(ctx, v); err != nil {
			return fmt.Errorf("workdir: settle %s: %w", s.id, err)
		}
		if err := removeAll(filepath.Join(s.dir, "home")); err != nil {
			return fmt.Errorf("workdir: settle %s: %w", s.id, err)
		}
		// Its private tool caches too (caches.go).
		if err := removeAll(filepath.Join(s.dir, "cache")); err != nil {
			return fmt.Errorf("workdir: settle %s: %w", s.id, err)
		}
		s.overLimit = false
		s.st.Usage = sweep(s.dir)
	} else if err := s.layer.sync(ctx, v, paths); err != nil {
		return fmt.Errorf("workdir: settle %s: %w", s.id, err)
	}
	s.st.Seq, s.st.BaseTree = v.Seq, v.BaseTree
	if err := s.save(); err != nil {
		return fmt.Errorf("workdir: settle %s: %w", s.id, err)
	}
	if err := os.Remove(filepath.Join(s.dir, runningMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Abort releases the base checkout and leaves the scratch to be rebuilt
// before the next command.
func (s *Scratch) Abort() { s.releaseBase() }

func (s *Scratch) releaseBase() {
	defer s.using(false)
	if s.releaseEnv != nil {
		s.releaseEnv()
		s.releaseEnv = nil
	}
	if s.release != nil {
		s.release()
		s.release = nil
	}
}

// ScratchDir is the scratch directory of session id (made by its first
// Prepare).
func (m *Manager) ScratchDir(id string) string { return filepath.Join(m.dir, "sessions", id) }

// Dir is the scratch directory (for disk accounting).
func (s *Scratch) Dir() string { return s.dir }

// ScratchIDs lists the sessions that have a scratch directory, so that
// the caller can remove those of sessions that ended while no daemon was
// there to (a crash between the end and the removal).
func (m *Manager) ScratchIDs() []string {
	ents, _ := os.ReadDir(filepath.Join(m.dir, "sessions"))
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Remove deletes a session's scratch directory (the session ended).
func (m *Manager) Remove(id string) error {
	m.mu.Lock()
	delete(m.scratches, id)
	m.mu.Unlock()
	return removeAll(filepath.Join(m.dir, "sessions", id))
}

// envName names an environment layer's directory by its key ("none").
func envName(dir string) string {
	if dir == "" {
		return "none"
	}
	return filepath.Base(filepath.Dir(dir))
}
