package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/workdir"
)

// Environments (SPEC §13): which layer a session's commands run on. The
// repository's configuration (set through the API, or the file at the
// base commit, or derived from its lock files) is resolved against the
// session's base tree into a plan whose key names the layer; package
// workdir builds it once and stacks it under the view.

// EnvironmentResult is the environment layer a command ran on.
type EnvironmentResult struct {
	Key string
	// Status is workdir.EnvReady, workdir.EnvFailed (the command ran
	// without it) or EnvNone.
	Status string
	Source string
	Built  bool
	Log    string
	Error  string
	// Problem: the configuration could not be used (a file at the base
	// that does not parse, an include naming a secret that is not set).
	Problem string
}

// EnvNone: the session's repository has no environment to build.
const EnvNone = "none"

// planCache keeps resolved plans by repository, base tree and
// configuration: resolving lists the key files' directories, and a base
// tree never changes. mu guards plans.
type planCache struct {
	mu    sync.Mutex
	plans map[string]environment.Plan
}

// maxPlans bounds planCache (it is cleared when full).
const maxPlans = 1024

func (c *planCache) resolve(ctx context.Context, repo *gitstore.Repo, name string, tree gitstore.OID, cfg *environment.Config) (environment.Plan, error) {
	cj, _ := json.Marshal(cfg)
	k := name + "\x00" + tree.String() + "\x00" + string(cj)
	c.mu.Lock()
	p, ok := c.plans[k]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := environment.Resolve(ctx, repo, tree, cfg)
	if err != nil {
		return environment.Plan{}, err
	}
	c.mu.Lock()
	if c.plans == nil || len(c.plans) >= maxPlans {
		c.plans = map[string]environment.Plan{}
	}
	c.plans[k] = p
	c.mu.Unlock()
	return p, nil
}

// envTarget is what resolving a session's environment needs of it,
// taken under its lock.
type envTarget struct {
	repoName string
	repo     *gitstore.Repo
	tree     gitstore.OID
	commit   gitstore.OID
	// changed are the paths the session changed (for staleness).
	changed []string
	// limitedReads: the session's policy hides files; it gets no layer.
	limitedReads bool
}

func targetOf(ls *live) envTarget {
	t := envTarget{repoName: ls.meta.Repo, repo: ls.repo, tree: ls.baseTree, commit: ls.meta.BaseCommit, limitedReads: ls.policy.limitsReads()}
	for _, e := range ls.ov.Entries() {
		t.changed = append(t.changed, e.Path)
	}
	return t
}

// environmentFor resolves the environment of a session's commands: the
// layer to stack (nil: none), what the result says of it, and whether the
// session changed a key file.
func (m *Executor) environmentFor(ctx context.Context, t envTarget, vars repos.Variables, limits workdir.Limits, workspace string) (*workdir.Env, EnvironmentResult, bool, error) {
	cfg, err := m.repos.EnvironmentConfig(ctx, t.repoName)
	if err != nil {
		return nil, EnvironmentResult{}, false, err
	}
	plan, err := m.plans.resolve(ctx, t.repo, t.repoName, t.tree, cfg)
	if err != nil {
		return nil, EnvironmentResult{}, false, fmt.Errorf("environment of repository %q: %w", t.repoName, err)
	}
	stale := plan.Stale(t.changed)
	res := EnvironmentResult{Status: EnvNone, Source: plan.Source, Key: plan.Key, Problem: plan.Problem}
	if plan.Empty() {
		return nil, res, stale, nil
	}
	if t.limitedReads {
		// The setup reads the whole base: what it derives from files
		// the session may not read must not reach the session's view.
		res.Problem = "the session's policy limits reads: it runs without the repository's shared environment layer"
		return nil, res, stale, nil
	}
	env := &workdir.Env{Key: plan.Key, Repo: t.repoName, Commit: t.commit.String(), Workspace: workspace, Limits: limits}
	if !vars.Masker.Empty() {
		env.Mask = vars.Masker.Bytes
	}
	for _, s := range plan.Steps {
		timeout := environment.Timeout(s)
		if timeout > m.exec.MaxTimeout {
			timeout = m.exec.MaxTimeout
		}
		step := workdir.EnvStep{Argv: environment.Args(s), Env: commandEnv(vars, nil, s.Env), Timeout: timeout}
		if environment.NetworkWanted(s) {
			// What the repository's commands may reach, and no more; none
			// where the policy or the daemon gives commands none. Asked
			// only when the step runs: a command whose layer exists makes
			// no egress proxy.
			repo := t.repoName
			step.Connect = func(ctx context.Context) (bool, workdir.Egress, error) {
				n, err := m.NetworkFor(ctx, repo, true)
				if errors.Is(err, record.ErrForbidden) {
					return false, nil, nil
				}
				if err != nil {
					return false, nil, err
				}
				var c workdir.Command
				n.Apply(&c)
				return c.Network, c.Egress, nil
			}
		}
		env.Steps = append(env.Steps, step)
	}
	for i, in := range plan.Include {
		f := workdir.EnvFile{Path: in.Path}
		switch {
		case in.Content != nil:
			f.Data = []byte(*in.Content)
		default:
			v, ok := vars.Secrets[in.Secret]
			if !ok {
				res.Problem = fmt.Sprintf("include[%d].secret: repository %q has no secret %s", i, t.repoName, in.Secret)
				return nil, res, stale, nil
			}
			f.Data, f.Private = []byte(v), true
		}
		env.Include = append(env.Include, f)
	}
	return env, res, stale, nil
}

// fill completes res with what Prepare found of the layer.
func (res *EnvironmentResult) fill(r workdir.EnvResult) {
	res.Status, res.Built = r.Status, r.Built
	if r.Status == workdir.EnvFailed {
		res.Log, res.Error = r.Log, r.Error
	}
}

// PrepareEnvironment builds the session's environment layer ahead of its
// first command (prepare: true), waiting for it; a build that fails is
// not an error (its result says failed, with the log).
func (m *Executor) PrepareEnvironment(ctx context.Context, id uuid.UUID) (EnvironmentResult, error) {
	if m.workdirs == nil {
		return EnvironmentResult{}, ErrNoWorkdir
	}
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return EnvironmentResult{}, err
	}
	t := targetOf(ls)
	view := m.execView(ls, ls.ov.Clone())
	ls.unlock()
	vars, err := m.repos.Variables(ctx, t.repoName)
	if err != nil {
		return EnvironmentResult{}, err
	}
	limits, _, err := m.limitsFor(ctx, t.repoName, false)
	if err != nil {
		return EnvironmentResult{}, err
	}
	env, res, _, err := m.environmentFor(ctx, t, vars, limits, workspaceOf(view))
	if err != nil || env == nil {
		return res, err
	}
	view.Env = env
	r, err := m.workdirs.BuildEnvironment(ctx, view)
	if err != nil {
		return EnvironmentResult{}, err
	}
	res.fill(r)
	return res, nil
}

// Environments lists a repository's environment layers.
func (m *Executor) Environments(ctx context.Context, repo string) ([]workdir.EnvInfo, error) {
	if _, err := m.repos.Open(ctx, repo); err != nil {
		return nil, err
	}
	if m.workdirs == nil {
		return []workdir.EnvInfo{}, nil
	}
	return m.workdirs.Environments(repo), nil
}

// RebuildEnvironments forgets a repository's failed builds and drops its
// layers no command holds: the next command builds again.
func (m *Executor) RebuildEnvironments(ctx context.Context, repo string) (int, error) {
	if _, err := m.repos.Open(ctx, repo); err != nil {
		return 0, err
	}
	if m.workdirs == nil {
		return 0, nil
	}
	return m.workdirs.RebuildEnvironments(repo)
}
