package workdir

import (
	"errors"
	"os/exec"
)

// The helper is this same binary, started again by Run in new user, mount
// and PID namespaces (and a network namespace when asked). It mounts the
// view, hides what the command must not reach, starts the command and
// reports on file descriptor 3. As PID 1 of its namespace, its death kills
// every process the command started, and the mounts die with the
// namespace: nothing stays mounted after a crash.
const helperEnv = "SESSIOND_WORKDIR_HELPER"

// helperOuterEnv marks the helper's first stage, started plainly by the
// daemon, which starts the second in the namespaces (see nsAttr).
const helperOuterEnv = "SESSIOND_WORKDIR_HELPER_OUTER"

// helperSpec is what the helper is told to do.
type helperSpec struct {
	View presentation `json:"view"`
	// Target is where the view is mounted; Home is bound at its own path.
	Target string   `json:"target"`
	Home   string   `json:"home,omitempty"`
	Hide   []string `json:"hide,omitempty"`
	Cwd    string   `json:"cwd"`
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
	// Probe: set up the mounts and report, without a command.
	Probe bool `json:"probe,omitempty"`
	// NewNet: the command gets a network namespace of its own.
	NewNet bool `json:"new_net,omitempty"`
}

// helperStatus is one report line of the helper.
type helperStatus struct {
	Error   string `json:"error,omitempty"`
	Started int64  `json:"started,omitempty"`
	// Began is when the helper's own code began (with Started).
	Began  int64  `json:"began,omitempty"`
	Exited bool   `json:"exited,omitempty"`
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
