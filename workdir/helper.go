package workdir

import (
	"errors"
	"os/exec"
)

// The helper is this same binary, started again by Run. Isolated, it has
// two stages: the first, started plainly by the daemon, joins the
// command's cgroup and starts the second in new user, mount, PID, network,
// IPC, UTS and cgroup namespaces; the second builds the command's root
// (sandbox_linux.go), drops every privilege and starts the command,
// reporting on file descriptor 3. As PID 1 of its namespace, its death
// kills every process the command started, and the mounts die with the
// namespace: nothing stays mounted after a crash. Unisolated (the kernel
// refuses namespaces), one plain stage runs the command as a child
// subreaper, so that every descendant is found and killed when the
// command ends or times out.
const helperEnv = "SESSIOND_WORKDIR_HELPER"

// helperOuterEnv marks the helper's first stage, started plainly by the
// daemon, which starts the second in the namespaces (see nsAttr).
const helperOuterEnv = "SESSIOND_WORKDIR_HELPER_OUTER"

// helperPlainEnv marks the unisolated helper.
const helperPlainEnv = "SESSIOND_WORKDIR_HELPER_PLAIN"

// helperSpec is what the helper is told to do.
type helperSpec struct {
	View presentation `json:"view"`
	// Stage is a directory the second stage mounts the command's new
	// root on while it builds it (an empty directory of the scratch).
	Stage string `json:"stage,omitempty"`
	// Target is where the view appears inside; Home is the home
	// directory's path inside, HomeSrc the directory on the host.
	Target  string `json:"target"`
	Home    string `json:"home,omitempty"`
	HomeSrc string `json:"home_src,omitempty"`
	// Hide lists host paths that are absent inside (or, where their
	// directory is too large to rebuild, covered by an empty read-only
	// mount nothing inside can lift).
	Hide []string `json:"hide,omitempty"`
	// Show lists host paths shown read-only at the same path inside,
	// even below a hidden path or a mount of the command's own (/tmp);
	// hidden paths below them stay hidden.
	Show []string `json:"show,omitempty"`
	// Binds are further host directories shown at other paths inside.
	Binds []bindSpec `json:"binds,omitempty"`
	// TmpBytes bounds each private tmpfs (/tmp, /var/tmp, /dev/shm).
	TmpBytes int64    `json:"tmp_bytes,omitempty"`
	Cwd      string   `json:"cwd"`
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
	// Hold: mount the view once and hand clones of the mount out on
	// this socket (share_linux.go), without a command.
	Hold string `json:"hold,omitempty"`
	// Probe: set up the mounts and report, without a command.
	Probe bool `json:"probe,omitempty"`
	// NewNet: the command gets a network namespace of its own, with only
	// its own loopback.
	NewNet bool `json:"new_net,omitempty"`
	// Cgroups are the cgroup.procs files the first stage writes itself
	// into (the command's cgroups), before it starts anything.
	Cgroups []string `json:"cgroups,omitempty"`
	// Rlimits are set on the command (the fallback where no cgroup
	// limits the command, and the per-file and core limits everywhere).
	Rlimits []rlimitSpec `json:"rlimits,omitempty"`
	// NoLandlock: the command runs without Landlock (Config.NoLandlock).
	NoLandlock bool `json:"no_landlock,omitempty"`
	// Nice is the command's scheduling niceness (the fallback for a CPU
	// weight without cgroups).
	Nice int `json:"nice,omitempty"`
	// Ports join ports of the command's loopback to Unix sockets of the
	// host (ports.go); without NewNet, exposed ones only.
	Ports []portSpec `json:"ports,omitempty"`
	// Term: SIGTERM to the helper is passed on to the command's process
	// group (a service asked to stop), instead of being ignored.
	Term bool `json:"term,omitempty"`
}

// bindSpec shows the host path Src at Dst inside, read-only unless
// Writable (then nosuid and nodev).
type bindSpec struct {
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	Writable bool   `json:"writable,omitempty"`
}

// rlimitSpec is one resource limit (soft and hard alike).
type rlimitSpec struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// helperStatus is one report line of the helper.
type helperStatus struct {
	Error   string `json:"error,omitempty"`
	Started int64  `json:"started,omitempty"`
	// PID is the command's process id (with Started).
	PID int `json:"pid,omitempty"`
	// Began is when the helper's own code began (with Started).
	Began int64 `json:"began,omitempty"`
	// Landlock is the Landlock ABI the command is restricted by (with
	// Started); 0 where the kernel has none.
	Landlock int    `json:"landlock,omitempty"`
	Exited   bool   `json:"exited,omitempty"`
	Code     int    `json:"code"`
	Signal   string `json:"signal,omitempty"`
	// Full names the limits the command filled (with Exited): LimitTmp
	// when a private tmpfs had no space left.
	Full []string `json:"full,omitempty"`
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
