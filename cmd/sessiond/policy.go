package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/session"
)

// repoPolicyCmd reads and changes a repository's policy (GET and PUT
// /v1/repos/{repo}/policy): how changesets are accepted, and what
// commands run on its sessions may use.
type repoPolicyCmd struct {
	Show repoPolicyShowCmd `cmd:"" help:"Show a repository's policy: how changesets are accepted and what commands may use."`
	Set  repoPolicySetCmd  `cmd:"" help:"Change a repository's policy: the fields a JSON object names and the flags given, over the current policy; the rest stays."`
}

type repoPolicyShowCmd struct {
	Repo string `arg:"" help:"Repository name."`
}

func (c *repoPolicyShowCmd) Run(ctx context.Context, x *cli) error {
	p, err := x.c.RepoPolicy(ctx, c.Repo)
	if err != nil {
		return err
	}
	return x.out(p, func(w io.Writer) { printPolicy(w, c.Repo, p) })
}

type repoPolicySetCmd struct {
	Repo string `arg:"" help:"Repository name."`
	JSON string `arg:"" optional:"" help:"Fields to change, as the API's policy object (for example {\"required_approvals\":1,\"exec\":{\"network\":true}}); - reads it from standard input. Flags apply after it." placeholder:"JSON"`

	RequiredApprovals *int  `help:"Approvals an accept needs (0 to 100; 0: an open changeset may be accepted)." placeholder:"N"`
	AllowCheckedOut   *bool `help:"Accept and undo onto the branch the repository's work tree has checked out, moving its index and work tree when they are clean (--allow-checked-out=false: refuse that branch)."`
	RefuseStaleReads  *bool `help:"Refuse an accept when a file its session read changed on the branch since its base (=false: only report it)."`

	ExecNetwork      *bool     `help:"Let a command that asks for the network share the host's (where the daemon allows it at all; =false: only its own loopback)."`
	ExecNetworkAllow []string  `help:"Let a command that asks for the network reach only these host names, wildcards (*.npmjs.org) and CIDRs (10.0.0.0/8), through the daemon's egress proxy (comma-separated or repeated; --exec-network or --exec-network=false ends the list)." sep:"," placeholder:"DEST"`
	ExecMemory       *byteSize `help:"Memory a command may use, narrower than the daemon's (0: the daemon's)." placeholder:"SIZE"`
	ExecPids         *int64    `help:"Processes a command may run (0: the daemon's limit)." placeholder:"N"`
	ExecCPUWeight    *int64    `name:"exec-cpu-weight" help:"A command's CPU weight, 1 to 10000 (0: the daemon's)." placeholder:"N"`
	ExecScratchBytes *byteSize `help:"Scratch space of a session's commands (0: the daemon's limit)." placeholder:"SIZE"`
	ExecTmpBytes     *byteSize `help:"Size of each private tmpfs of a command (0: the daemon's limit)." placeholder:"SIZE"`
	ExecServiceIdle  *int64    `name:"exec-service-idle-seconds" help:"Stop a session's services after this many seconds with no request through their ports and no command (0: 30 minutes)." placeholder:"N"`
}

func (c *repoPolicySetCmd) Run(ctx context.Context, x *cli) error {
	text := c.JSON
	if text == "-" {
		data, err := io.ReadAll(x.stdin)
		if err != nil {
			return err
		}
		text = string(data)
	}
	flags := c.RequiredApprovals != nil || c.AllowCheckedOut != nil || c.RefuseStaleReads != nil || c.ExecNetwork != nil || c.ExecNetworkAllow != nil ||
		c.ExecMemory != nil || c.ExecPids != nil || c.ExecCPUWeight != nil || c.ExecScratchBytes != nil || c.ExecTmpBytes != nil || c.ExecServiceIdle != nil
	if strings.TrimSpace(text) == "" && !flags {
		return usagef("repo policy set %s: nothing to change: give flags (see --help) or the fields as JSON", c.Repo)
	}
	p, err := x.c.RepoPolicy(ctx, c.Repo)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) != "" {
		if p, err = mergePolicy(p, []byte(text)); err != nil {
			return usagef("repo policy set %s: %v", c.Repo, err)
		}
	}
	if p.Exec == nil {
		p.Exec = &apitypes.ExecPolicy{}
	}
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	size := func(v *byteSize) *int64 {
		if v == nil {
			return nil
		}
		n := int64(*v)
		return &n
	}
	if c.RequiredApprovals != nil {
		p.RequiredApprovals = *c.RequiredApprovals
	}
	if c.AllowCheckedOut != nil {
		p.AllowCheckedOut = c.AllowCheckedOut
	}
	if c.RefuseStaleReads != nil {
		p.RefuseStaleReads = *c.RefuseStaleReads
	}
	if c.ExecNetwork != nil && c.ExecNetworkAllow != nil {
		return usagef("repo policy set %s: --exec-network and --exec-network-allow: give one", c.Repo)
	}
	if c.ExecNetwork != nil {
		p.Exec.Network, p.Exec.NetworkAllow = *c.ExecNetwork, nil
	}
	if c.ExecNetworkAllow != nil {
		p.Exec.Network, p.Exec.NetworkAllow = false, c.ExecNetworkAllow
	}
	set(&p.Exec.MemoryBytes, size(c.ExecMemory))
	set(&p.Exec.Pids, c.ExecPids)
	set(&p.Exec.CPUWeight, c.ExecCPUWeight)
	set(&p.Exec.ScratchBytes, size(c.ExecScratchBytes))
	set(&p.Exec.TmpBytes, size(c.ExecTmpBytes))
	set(&p.Exec.ServiceIdleSeconds, c.ExecServiceIdle)
	p, err = x.c.SetRepoPolicy(ctx, c.Repo, p)
	if err != nil {
		return err
	}
	return x.out(p, func(w io.Writer) { printPolicy(w, c.Repo, p) })
}

// mergePolicy sets in p the fields the JSON object text names (an
// object's own fields one by one, so {"exec":{"network":true}} keeps the
// exec limits). A field the API does not have, or a value of the wrong
// type, is an error naming it.
func mergePolicy(p apitypes.RepoPolicy, text []byte) (apitypes.RepoPolicy, error) {
	var patch map[string]any
	if err := json.Unmarshal(text, &patch); err != nil {
		return p, fmt.Errorf("JSON: %v", err)
	}
	cur, err := json.Marshal(p)
	if err != nil {
		return p, err
	}
	var merged map[string]any
	if err := json.Unmarshal(cur, &merged); err != nil {
		return p, err
	}
	mergeJSON(merged, patch)
	data, err := json.Marshal(merged)
	if err != nil {
		return p, err
	}
	var out apitypes.RepoPolicy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return p, fmt.Errorf("JSON: %v", err)
	}
	return out, nil
}

// mergeJSON sets patch's fields in dst, objects field by field.
func mergeJSON(dst, patch map[string]any) {
	for k, v := range patch {
		sub, isObj := v.(map[string]any)
		cur, curObj := dst[k].(map[string]any)
		if isObj && curObj {
			mergeJSON(cur, sub)
			continue
		}
		dst[k] = v
	}
}

// printPolicy writes a policy for a person: what each setting means, not
// only its value.
func printPolicy(w io.Writer, repo string, p apitypes.RepoPolicy) {
	fmt.Fprintf(w, "policy of %s\n", repo)
	approvals := "none: an open changeset may be accepted"
	if p.RequiredApprovals > 0 {
		approvals = count(p.RequiredApprovals, "approval")
	}
	checkedOut := "allowed: the work tree moves with the branch when it is clean, else refused naming its changes"
	if p.AllowCheckedOut != nil && !*p.AllowCheckedOut {
		checkedOut = "refused"
	}
	stale := "reported"
	if p.RefuseStaleReads {
		stale = "refused"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	{
		fmt.Fprintf(tw, "  required approvals\t%s\n", approvals)
		fmt.Fprintf(tw, "  checked-out branch\t%s\n", checkedOut)
		fmt.Fprintf(tw, "  stale reads\t%s\n", stale)
		checks := "none"
		if len(p.RequiredChecks) > 0 {
			names := make([]string, len(p.RequiredChecks))
			for i, argv := range p.RequiredChecks {
				names[i] = shellWords(argv)
			}
			checks = strings.Join(names, "; ")
		}
		fmt.Fprintf(tw, "  required checks\t%s\n", checks)
		var ex apitypes.ExecPolicy
		if p.Exec != nil {
			ex = *p.Exec
		}
		network := "own loopback only"
		switch {
		case ex.NetworkAllow != nil && len(ex.NetworkAllow) == 0:
			network = "an empty allowlist: nothing through the egress proxy, when a command asks for it"
		case ex.NetworkAllow != nil:
			network = "only " + strings.Join(ex.NetworkAllow, ", ") + ", through the egress proxy, when a command asks for it"
		case ex.Network:
			network = "the host's, when a command asks for it"
		}
		fmt.Fprintf(tw, "  exec network\t%s\n", network)
		limit := func(name string, v int64, bytes bool) {
			switch {
			case v == 0:
				fmt.Fprintf(tw, "  exec %s\tthe daemon's\n", name)
			case bytes:
				fmt.Fprintf(tw, "  exec %s\t%s\n", name, policyBytes(v))
			default:
				fmt.Fprintf(tw, "  exec %s\t%d\n", name, v)
			}
		}
		limit("memory", ex.MemoryBytes, true)
		limit("pids", ex.Pids, false)
		limit("cpu weight", ex.CPUWeight, false)
		limit("scratch", ex.ScratchBytes, true)
		limit("tmp", ex.TmpBytes, true)
		idle, dflt := time.Duration(ex.ServiceIdleSeconds)*time.Second, ""
		if idle <= 0 {
			idle, dflt = session.DefaultServiceIdle, " (the default)"
		}
		fmt.Fprintf(tw, "  service idle stop\tafter %s with no request through a port and no command%s\n", idle, dflt)
	}
}

// policyBytes writes a size with the largest binary unit that divides it.
func policyBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return count(n, "byte")
}
