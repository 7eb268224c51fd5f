package workdir

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/gitstore"
)

// The view's .git (SPEC §14). A command's view has a real git directory
// at its root: <scratch>/git, bound over the view's ".git" (an empty
// directory the layer keeps for it, which capture never reports). It is
// the session's alone and outlives commands: its index, local branches
// and stashes stay. sessiond sets, before each command, what it owns in
// it: the session's branch when sessiond moved the session's head (a
// checkpoint, a rollback, commits made inside re-created), the base
// branch and the repository's branches as refs/remotes/origin/*, and
// the configuration below; the rest is git's.
//
// Objects: the repository's own object directory is never shown, since
// it holds every session's objects. Each repository has a public object
// directory (<dir>/gitobjects/<hash of the repository's name>/objects) holding packs of exactly what its
// branches and tags reach, extended by a pack of what is new when they
// move (rebuilt when a branch moved back or went away), bound read-only
// at GitObjectsInside and named by the view's objects/info/alternates.
// The session's own commits (checkpoints, a base that no branch
// reaches) go into the view's own object directory as a pack of what
// the public one lacks. A command thus reads the history of branches and
// tags and its own session's objects, nothing else.
//
// The index is valid for the view as git would have written it after a
// checkout: built once per base tree from the base checkout's stat data
// (<dir>/gitbase/<tree>.index, with git's untracked cache of the base
// checkout; removed when the checkout is) and linked (or copied, see
// shareBeneath) into the session's .git when the session's git
// directory is made or its base changes, with
// core.checkStat minimal (only the whole seconds of mtime and the size
// are compared: the overlay shows a base file with its checkout's
// mtime and size, while the inode, device, owner and ctime seen inside
// differ from the host's). In overlay mode core.fsmonitor is answered by
// a hook that lists the upper directory (bound read-only at
// GitUpperInside): every path the session changed, and nothing of the
// base, so git status stats what changed.

// GitObjectsInside is where the repository's public objects appear
// inside a command's namespace; GitUpperInside the overlay's upper
// directory, read-only, for the fsmonitor hook.
const (
	GitObjectsInside = "/sessiond/objects"
	GitUpperInside   = "/sessiond/upper"
)

// Git is the .git a command's view gets.
type Git struct {
	// Branch is the session's branch ("sessiond/<short id>"); Head the
	// commit sessiond has for it (the newest checkpoint or the base) and
	// HeadTree its tree.
	Branch   string
	Head     gitstore.OID
	HeadTree gitstore.OID
	// BaseRef (may be empty) is set to BaseCommit under refs/heads.
	BaseRef    string
	BaseCommit gitstore.OID
	// Branches and Tags are the repository's (name without
	// refs/heads/ or refs/tags/): the branches appear as
	// refs/remotes/origin/<name>, the tags as refs/tags/<name>.
	Branches, Tags []GitRef
	// UserName and UserEmail are the agent's identity.
	UserName, UserEmail string
	// RepoGitDir is the repository's git directory on the host: the
	// public and the session's packs are made from it.
	RepoGitDir string
	// RepoName names the repository's public object directory.
	RepoName string
	// Stages are conflicts the index carries as stages 1 to 3 (the
	// session's unresolved conflicts).
	Stages []StageEntry
}

// GitRef is one ref of the repository.
type GitRef struct {
	Name string
	OID  gitstore.OID
}

// StageEntry is one conflicted path of the view's index: each side's
// blob and mode (a zero OID: the side does not have the path).
type StageEntry struct {
	Path                           string
	BaseMode, OursMode, TheirsMode gitstore.Mode
	Base, Ours, Theirs             gitstore.OID
}

// GitResult says what became of the view's .git in a command.
type GitResult struct {
	// Present: the command had a .git; Absent says why not.
	Present bool
	Absent  string
	// Before and After are the commit HEAD named when the command started
	// and when it ended (zero: none, or unreadable), and Branch the ref
	// HEAD named at the end ("" when detached).
	Before, After gitstore.OID
	Branch        string
}

// gitState is what sessiond last set in a view's .git.
type gitState struct {
	Head     gitstore.OID
	BaseTree gitstore.OID
	Branch   string
	Staged   bool
	// Refs is a digest of the base branch, the remote-tracking refs and
	// the tags last written, and of the configuration.
	Refs string
}

const gitStateFile = "sessiond-state"

func (s *Scratch) gitDir() string { return filepath.Join(s.dir, "git") }

// prepareGit makes or refreshes the view's .git before a command and
// adds its mounts and environment to spec.
func (m *Manager) prepareGit(ctx context.Context, s *Scratch, g *Git, spec *helperSpec) error {
	pub, err := m.publicObjects(ctx, g)
	if err != nil {
		return err
	}
	dir := s.gitDir()
	fresh := false
	if _, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil {
		if err := removeAll(dir); err != nil {
			return err
		}
		for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "refs/remotes/origin", "hooks", "info"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/"+g.Branch+"\n"), 0o644); err != nil {
			return err
		}
		fresh = true
	}
	var st gitState
	if b, err := readBeneath(dir, gitStateFile); err == nil {
		_ = json.Unmarshal(b, &st)
	}
	// What sessiond owns is written again before a command when it
	// changed: the configuration (the command may change it for
	// itself: sessiond's own is kept in the command's environment), the
	// alternates, the hook, the base branch, origin's branches, the tags.
	config := gitConfig(g, m.mode == ModeOverlay)
	refs := refsDigest(g, config)
	if fresh || st.Refs != refs {
		if err := writeBeneath(dir, "config", config); err != nil {
			return err
		}
		if err := writeBeneath(dir, "objects/info/alternates", []byte(GitObjectsInside+"\n")); err != nil {
			return err
		}
		if m.mode == ModeOverlay {
			if err := writeBeneath(dir, "sessiond-fsmonitor", []byte(fsmonitorHook())); err != nil {
				return err
			}
			if err := os.Chmod(filepath.Join(dir, "sessiond-fsmonitor"), 0o755); err != nil {
				return err
			}
		}
		if g.BaseRef != "" && g.BaseRef != g.Branch {
			if err := writeBeneath(dir, "refs/heads/"+g.BaseRef, []byte(g.BaseCommit.String()+"\n")); err != nil {
				return err
			}
		}
		if err := writeRefDir(dir, "refs/remotes/origin", g.Branches); err != nil {
			return err
		}
		if err := writeRefDir(dir, "refs/tags", g.Tags); err != nil {
			return err
		}
	}
	moved := fresh || st.Head != g.Head || st.Branch != g.Branch
	// A head that moved because the command's own commits became
	// checkpoints has the tree the view's HEAD already had: the index the
	// command left (what it staged beyond those commits) stays.
	keepIndex := moved && !fresh && st.Branch == g.Branch && !g.HeadTree.IsZero() && s.viewHeadTree() == g.HeadTree
	if moved {
		if err := m.packOwn(ctx, s, g, pub, st.Head); err != nil {
			return err
		}
		if err := writeBeneath(dir, "refs/heads/"+g.Branch, []byte(g.Head.String()+"\n")); err != nil {
			return err
		}
	}
	if len(g.Stages) > 0 {
		if err := m.packStages(ctx, s, g); err != nil {
			return err
		}
	}
	onBranch := false
	if b, err := readBeneath(dir, "HEAD"); err == nil && strings.TrimSpace(string(b)) == "ref: refs/heads/"+g.Branch {
		onBranch = true
	}
	lower := ""
	if p := s.layer.present(); p.Overlay {
		lower = p.Lower
	}
	base := s.st.BaseTree
	if fresh || st.BaseTree != base || (moved && onBranch && !keepIndex) || len(g.Stages) > 0 || st.Staged {
		if err := m.writeIndex(ctx, s, g, lower, base); err != nil {
			return err
		}
	}
	st = gitState{Head: g.Head, BaseTree: base, Branch: g.Branch, Staged: len(g.Stages) > 0, Refs: refs}
	b, _ := json.Marshal(st)
	if err := writeBeneath(dir, gitStateFile, b); err != nil {
		return err
	}

	target := spec.Target
	spec.Binds = append(spec.Binds, bindSpec{Src: dir, Dst: filepath.Join(target, ".git"), Writable: true})
	spec.Binds = append(spec.Binds, bindSpec{Src: filepath.Join(pub, "objects"), Dst: GitObjectsInside})
	if p := s.layer.present(); p.Overlay {
		spec.Binds = append(spec.Binds, bindSpec{Src: p.Upper, Dst: GitUpperInside})
	}
	spec.Env = withDefaults(spec.Env, gitEnv())
	return nil
}

// refsDigest digests what prepareGit writes when it changed.
func refsDigest(g *Git, config []byte) string {
	h := sha256.New()
	h.Write(config)
	fmt.Fprintf(h, "%s %s %s\n", fsmonitorHook(), g.BaseRef, g.BaseCommit)
	for _, r := range g.Branches {
		fmt.Fprintf(h, "b %s %s\n", r.Name, r.OID)
	}
	for _, r := range g.Tags {
		fmt.Fprintf(h, "t %s %s\n", r.Name, r.OID)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// gitEnv keeps the host's git configuration out (hooks, helpers) and lets
// git use the view whoever owns it inside.
func gitEnv() []string {
	return []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
	}
}

func gitConfig(g *Git, fsmonitor bool) []byte {
	var b bytes.Buffer
	b.WriteString("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n")
	b.WriteString("\tcheckStat = minimal\n\ttrustctime = false\n")
	if fsmonitor {
		b.WriteString("\tfsmonitor = .git/sessiond-fsmonitor\n\tuntrackedCache = true\n")
	}
	b.WriteString("[gc]\n\tauto = 0\n")
	fmt.Fprintf(&b, "[user]\n\tname = %s\n\temail = %s\n", configValue(g.UserName), configValue(g.UserEmail))
	return b.Bytes()
}

// configValue quotes a value for a git config file.
func configValue(v string) string {
	v = strings.Map(func(r rune) rune {
		if r == '\n' || r == 0 {
			return ' '
		}
		return r
	}, v)
	v = strings.ReplaceAll(v, `\`, `\\`)
	return `"` + strings.ReplaceAll(v, `"`, `\"`) + `"`
}

// fsmonitorHook answers git's fsmonitor protocol (version 2) with what
// the overlay's upper directory holds: every path the session changed
// since the base. Its files, symlinks and whiteouts (deletions) are
// named, and its opaque directories (whose base content is hidden), never
// the directories copied up only to hold a changed file (git would take
// such a name as everything below it changed). The answer is the same
// whatever token git gives, a superset of what changed since it, which
// fsmonitor allows. Opaque directories are told by their xattr, read by
// perl's syscall (the number is this platform's); without perl every
// directory is named (slower, as correct).
func fsmonitorHook() string {
	return `#!/bin/sh
[ "$1" = 2 ] || exit 1
if [ -x /usr/bin/perl ]; then
	exec /usr/bin/perl -e '
printf "sessiond\0";
chdir "` + GitUpperInside + `" or do { print "/\0"; exit 0 };
sub opaque { my ($f, $x, $b) = ($_[0], "` + opaqueXattr + `", "\0" x 4); my $r = syscall(` + strconv.Itoa(unix.SYS_LGETXATTR) + `, $f, $x, $b, 4); return $r == 1 && substr($b, 0, 1) eq "y"; }
sub walk {
	my ($d, $p) = @_;
	opendir(my $h, $d) or return;
	my @n = grep { $_ ne "." && $_ ne ".." } readdir($h);
	closedir($h);
	for my $n (@n) {
		next if $p eq "" && $n eq ".git";
		my $rel = $p eq "" ? $n : "$p/$n";
		my $full = "$d/$n";
		if (-d $full && ! -l $full) {
			print "$rel\0" if opaque($full);
			walk($full, $rel);
		} else {
			print "$rel\0";
		}
	}
}
walk(".", "");
'
fi
printf 'sessiond\0'
cd ` + GitUpperInside + ` 2>/dev/null || { printf '/\0'; exit 0; }
find . -mindepth 1 \( -name .git -prune -o -print0 \) | sed -z 's|^\./||'
`
}

// writeRefDir makes dir hold exactly refs (each a loose ref file).
func writeRefDir(gitDir, dir string, refs []GitRef) error {
	full := filepath.Join(gitDir, dir)
	if err := removeAll(full); err != nil {
		return err
	}
	if err := os.MkdirAll(full, 0o755); err != nil {
		return err
	}
	for _, r := range refs {
		if gitstore.ValidateRefName(gitstore.RefName(dir+"/"+r.Name)) != nil {
			continue
		}
		if err := writeBeneath(gitDir, dir+"/"+r.Name, []byte(r.OID.String()+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// readBeneath reads the regular file rel below root, following no
// symlink: the view's .git is the command's, and a link it planted must
// not lead the daemon elsewhere.
func readBeneath(root, rel string) ([]byte, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, root, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC})
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	f, err := unix.Openat2(fd, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, err
	}
	file := os.NewFile(uintptr(f), rel)
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
		return nil, fmt.Errorf("%s: not a regular file", rel)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(file)
	return buf.Bytes(), err
}

// writeBeneath replaces the file rel below root (its directories made),
// through no symlink: what stands in the way is removed.
func writeBeneath(root, rel string, data []byte) error {
	parts := strings.Split(rel, "/")
	cur := root
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if err == nil && fi.IsDir() {
			continue
		}
		if err == nil {
			if err := removeAll(cur); err != nil {
				return err
			}
		}
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	full := filepath.Join(root, rel)
	tmp := full + ".sessiond-tmp"
	_ = removeAll(tmp)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
		if err := removeAll(full); err != nil {
			return err
		}
	}
	return os.Rename(tmp, full)
}

// copyBeneath copies the file src to rel below root, as writeBeneath
// writes.
func copyBeneath(src, root, rel string) error {
	if err := writeBeneath(root, rel, nil); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	full := filepath.Join(root, rel)
	tmp := full + ".sessiond-tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, full)
}

// ReadGitHead reads what HEAD names in the view's .git: the commit and
// the branch ("" when detached). Read without following any link the
// command planted; zero when unreadable.
func (s *Scratch) ReadGitHead() (gitstore.OID, string) {
	dir := s.gitDir()
	b, err := readBeneath(dir, "HEAD")
	if err != nil {
		return gitstore.ZeroOID, ""
	}
	line := strings.TrimSpace(string(b))
	ref, ok := strings.CutPrefix(line, "ref: ")
	if !ok {
		id, err := gitstore.ParseOID(line)
		if err != nil {
			return gitstore.ZeroOID, ""
		}
		return id, ""
	}
	branch := strings.TrimPrefix(ref, "refs/heads/")
	if !strings.HasPrefix(ref, "refs/") || gitstore.ValidateRefName(gitstore.RefName(ref)) != nil {
		return gitstore.ZeroOID, ""
	}
	if b, err := readBeneath(dir, ref); err == nil {
		if id, err := gitstore.ParseOID(strings.TrimSpace(string(b))); err == nil {
			return id, branch
		}
	}
	// git pack-refs (git gc) moves refs into packed-refs.
	if b, err := readBeneath(dir, "packed-refs"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if id, name, ok := strings.Cut(l, " "); ok && name == ref {
				if oid, err := gitstore.ParseOID(id); err == nil {
					return oid, branch
				}
			}
		}
	}
	return gitstore.ZeroOID, branch
}

// viewHeadTree is the tree of the commit the view's HEAD names, read from
// the view's own objects; zero when there is none or it is unreadable.
func (s *Scratch) viewHeadTree() gitstore.OID {
	id, _ := s.ReadGitHead()
	objs := s.GitObjects()
	if id.IsZero() || objs == nil {
		return gitstore.ZeroOID
	}
	c, err := objs.Commit(id)
	if err != nil {
		return gitstore.ZeroOID
	}
	return c.Tree
}

// GitObjects reads the objects of the view's .git (the commits a command
// made), never through its alternates or a link it planted; nil when the
// session has no .git.
func (s *Scratch) GitObjects() *gitstore.ForeignObjects {
	if _, err := os.Lstat(filepath.Join(s.gitDir(), "HEAD")); err != nil {
		return nil
	}
	return gitstore.OpenForeignObjects(s.gitDir())
}

// PublicObjects reads the objects of repo's public object directory (what
// its branches and tags reach), nil before there is one.
func (m *Manager) PublicObjects(repo string) *gitstore.ForeignObjects {
	dir := m.publicDir(repo)
	if _, err := os.Lstat(filepath.Join(dir, "tips")); err != nil {
		return nil
	}
	return gitstore.OpenForeignObjects(dir)
}

func (m *Manager) publicDir(repo string) string {
	return filepath.Join(m.dir, "gitobjects", instanceName(repo))
}

// maxPublicPacks bounds the packs of a public object directory.
const maxPublicPacks = 32

// publicLocks serializes the updates of each repository's public object
// directory.
var publicLocks sync.Map

// publicObjects brings g's repository's public object directory in step
// with its branches and tags and returns it: a pack of what the tips
// reach and the tips packed before do not, or, when a packed tip is no
// longer reached (a branch moved back or went away), everything again.
func (m *Manager) publicObjects(ctx context.Context, g *Git) (string, error) {
	dir := m.publicDir(g.RepoName)
	mu, _ := publicLocks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	var tips []string
	for _, r := range slices.Concat(g.Branches, g.Tags) {
		tips = append(tips, r.OID.String())
	}
	slices.Sort(tips)
	tips = slices.Compact(tips)
	packDir := filepath.Join(dir, "objects", "pack")
	var old []string
	if b, err := os.ReadFile(filepath.Join(dir, "tips")); err == nil {
		old = strings.Fields(string(b))
	} else if err := removeAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		return "", err
	}
	if slices.Equal(old, tips) {
		return dir, nil
	}
	// Past maxPublicPacks packs, one pack of everything again.
	packs, _ := filepath.Glob(filepath.Join(packDir, "*.pack"))
	full := len(packs) >= maxPublicPacks
	for _, o := range old {
		if _, found := slices.BinarySearch(tips, o); found {
			continue
		}
		// Is the old tip still reached by a new one?
		out, err := gitOutput(ctx, g.RepoGitDir, strings.Join(append([]string{o, "--not"}, tips...), "\n")+"\n",
			"rev-list", "-n1", "--stdin")
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			full = true
			break
		}
	}
	in := strings.Join(tips, "\n") + "\n"
	if !full {
		for _, o := range old {
			in += "^" + o + "\n"
		}
	}
	if err := packInto(ctx, g.RepoGitDir, in, packDir, filepath.Join(dir, "tmp"), full); err != nil {
		return "", fmt.Errorf("workdir: public objects of %s: %w", g.RepoName, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tips.tmp"), []byte(strings.Join(tips, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	return dir, os.Rename(filepath.Join(dir, "tips.tmp"), filepath.Join(dir, "tips"))
}

// packInto packs the objects git rev-list --objects gives for revs (one
// a line) from the repository at gitDir into packDir (through tmp, a
// directory of the daemon's); replace drops the packs there were.
func packInto(ctx context.Context, gitDir, revs, packDir, tmp string, replace bool) error {
	if err := removeAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	defer removeAll(tmp)
	if _, err := gitOutput(ctx, gitDir, revs, "pack-objects", "--revs", "-q", filepath.Join(tmp, "pack")); err != nil {
		return err
	}
	var olds []string
	if replace {
		ents, _ := os.ReadDir(packDir)
		for _, e := range ents {
			olds = append(olds, e.Name())
		}
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	// The pack first, its index last, as git does.
	slices.SortFunc(ents, func(a, b os.DirEntry) int {
		return strings.Compare(filepath.Ext(b.Name()), filepath.Ext(a.Name()))
	})
	for _, e := range ents {
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(packDir, e.Name())); err != nil {
			return err
		}
	}
	for _, o := range olds {
		if !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == o }) {
			_ = os.Remove(filepath.Join(packDir, o))
		}
	}
	return nil
}

// gitOutput runs git on the repository at gitDir (a registered one, not
// a view's) with stdin.
func gitOutput(ctx context.Context, gitDir, stdin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", gitDir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// packOwn writes into the view's object directory a pack of what the
// session's head reaches and the public objects lack (its checkpoints,
// and its base when no branch reaches it).
func (m *Manager) packOwn(ctx context.Context, s *Scratch, g *Git, pub string, packed gitstore.OID) error {
	in := g.Head.String() + "\n"
	if !packed.IsZero() {
		in += "^" + packed.String() + "\n"
	}
	if b, err := os.ReadFile(filepath.Join(pub, "tips")); err == nil {
		tips := strings.Fields(string(b))
		if slices.Contains(tips, g.Head.String()) {
			return nil // a branch or tag is there: the public objects have it all
		}
		for _, t := range tips {
			in += "^" + t + "\n"
		}
	}
	packDir := filepath.Join(s.gitDir(), "objects", "pack")
	// The view's pack directory is the command's: no link in the way.
	for _, d := range []string{filepath.Join(s.gitDir(), "objects"), packDir} {
		fi, err := os.Lstat(d)
		if err == nil && !fi.IsDir() {
			if err := removeAll(d); err != nil {
				return err
			}
			fi = nil
		}
		if fi == nil {
			if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
	}
	err := packInto(ctx, g.RepoGitDir, in, packDir, filepath.Join(s.dir, "gitpack.tmp"), false)
	if err != nil && !packed.IsZero() {
		// What was packed before may be gone (a pruned checkpoint).
		return m.packOwn(ctx, s, g, pub, gitstore.ZeroOID)
	}
	return err
}

// packStages writes into the view's object directory a pack of the
// conflicts' stage blobs, which nothing the view's refs reach may hold
// (the session's side of a rebase it kept the conflicts of), so git
// checkout --ours or --theirs and git diff read them. Only these ids,
// sessiond's, are packed.
func (m *Manager) packStages(ctx context.Context, s *Scratch, g *Git) error {
	var ids strings.Builder
	for _, st := range g.Stages {
		for _, id := range []gitstore.OID{st.Base, st.Ours, st.Theirs} {
			if !id.IsZero() {
				ids.WriteString(id.String() + "\n")
			}
		}
	}
	packDir := filepath.Join(s.gitDir(), "objects", "pack")
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, "gitstages.tmp")
	if err := removeAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	defer removeAll(tmp)
	if _, err := gitOutput(ctx, g.RepoGitDir, ids.String(), "pack-objects", "-q", filepath.Join(tmp, "pack")); err != nil {
		return err
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	// The pack first, its index last, as git does.
	slices.SortFunc(ents, func(a, b os.DirEntry) int {
		return strings.Compare(filepath.Ext(b.Name()), filepath.Ext(a.Name()))
	})
	for _, e := range ents {
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(packDir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// baseIndexes builds each base tree's index once.
var baseIndexes sync.Map // path -> *sync.Mutex

// writeIndex writes the view's index: the base tree's entries with the
// base checkout's stat data (built once per base tree, shared), the
// entries where the session's head differs from the base without stat
// data (git compares their content), and the conflicts' stages.
func (m *Manager) writeIndex(ctx context.Context, s *Scratch, g *Git, lower string, base gitstore.OID) error {
	repo := s.layerRepo
	var ix *gitstore.Index
	var err error
	if lower != "" {
		path := m.baseIndexPath(base)
		if err := m.baseIndex(ctx, repo, g.RepoGitDir, base, lower, path); err != nil {
			return err
		}
		if (g.HeadTree.IsZero() || g.HeadTree == base) && len(g.Stages) == 0 {
			// The shared index as it is: the same file when no command
			// can write it (git replaces the index by renaming
			// index.lock over it, never in place), else a copy.
			return shareBeneath(path, s.gitDir(), "index")
		}
		ix, err = gitstore.ReadIndex(path)
	} else {
		ix, err = statIndex(ctx, repo, base, s.layer.present().Src, s.layer.cacheState())
	}
	if err != nil {
		return err
	}
	if !g.HeadTree.IsZero() && g.HeadTree != base {
		if ix, err = withTree(ctx, repo, ix, g.HeadTree); err != nil {
			return err
		}
	}
	if len(g.Stages) > 0 {
		ix = withStages(ix, g.Stages)
	}
	if lower != "" && len(g.Stages) == 0 {
		// Every entry valid: the fsmonitor hook names all the session
		// changed (the upper directory), whatever the token. Not while
		// the index has conflicts' stages: git would take a conflicted
		// file as up to date with each stage (git checkout --theirs
		// writing nothing), so it stats every file then.
		ix.FSMonitorToken = "sessiond"
	}
	var buf bytes.Buffer
	if err := ix.Encode(&buf); err != nil {
		return err
	}
	return writeBeneath(s.gitDir(), "index", buf.Bytes())
}

// baseIndex makes sure path holds the index of tree checked out at
// lower (built once, then shared): the checkout's stat data, the
// cache-tree, the fsmonitor extension with every entry valid (the hook
// names all the session changed, the upper directory) and git's
// untracked cache of the checkout, so that a session's git status reads
// only the directories the hook names.
func (m *Manager) baseIndex(ctx context.Context, repo Repo, repoGitDir string, tree gitstore.OID, lower, path string) error {
	mu, _ := baseIndexes.LoadOrStore(path, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	ix, err := statIndex(ctx, repo, tree, lower, nil)
	if err != nil {
		return err
	}
	ix.FSMonitorToken = "sessiond"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if ix.Untracked, err = untrackedCache(ctx, repoGitDir, ix, tree, lower, path+".untracked"); err != nil {
		// Slower, as correct: git builds it in the session.
		ix.Untracked = nil
	}
	var buf bytes.Buffer
	if err := ix.Encode(&buf); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		return err
	}
	protectShared(tmp)
	return os.Rename(tmp, path)
}

// cacheTrees builds the cache-tree of tree from its listing (pre-order,
// each directory before its children): add is called with every entry.
type cacheTrees struct {
	root  *gitstore.CacheTree
	nodes map[string]*gitstore.CacheTree
}

func newCacheTrees(tree gitstore.OID) *cacheTrees {
	root := &gitstore.CacheTree{OID: tree}
	return &cacheTrees{root: root, nodes: map[string]*gitstore.CacheTree{"": root}}
}

func (c *cacheTrees) add(e gitstore.Entry) {
	dir := parentOf(e.Path)
	if e.Mode.IsDir() {
		n := &gitstore.CacheTree{Name: e.Path[strings.LastIndexByte(e.Path, '/')+1:], OID: e.OID}
		c.nodes[e.Path] = n
		c.nodes[dir].Subtrees = append(c.nodes[dir].Subtrees, n)
		return
	}
	for d := dir; ; d = parentOf(d) {
		c.nodes[d].Entries++
		if d == "" {
			break
		}
	}
}

// statIndex lists tree's files with the stat data of root's copies, and
// its cache-tree. With a stat cache (a copy mode view, which may differ
// from tree) only the files the cache knows hold tree's content get stat
// data (the others none: git compares their content); without one root
// is tree's own checkout and every file is lstat'ed.
func statIndex(ctx context.Context, repo Repo, tree gitstore.OID, root string, cache map[string]statEntry) (*gitstore.Index, error) {
	ix := &gitstore.Index{Version: 4}
	ct := newCacheTrees(tree)
	ix.Tree = ct.root
	err := repo.List(ctx, tree, "", true, func(e gitstore.Entry) error {
		ct.add(e)
		if !e.Mode.IsBlob() {
			return nil
		}
		ie := gitstore.IndexEntry{Path: e.Path, Mode: e.Mode, OID: e.OID}
		if c, ok := cache[e.Path]; ok && c.OID == e.OID {
			ie.Stat = gitstore.IndexStat{MTime: time.Unix(0, c.Mtime), CTime: time.Unix(0, c.Ctime), Size: uint32(c.Size)}
		} else if cache == nil {
			// root is the tree's own checkout.
			var st unix.Stat_t
			if unix.Lstat(filepath.Join(root, e.Path), &st) == nil && gitModeOf(&st) == e.Mode {
				mt, ct := statTimes(&st)
				ie.Stat = gitstore.IndexStat{MTime: time.Unix(0, mt), CTime: time.Unix(0, ct), Size: uint32(st.Size)}
			}
		}
		ix.Entries = append(ix.Entries, ie)
		return nil
	})
	return ix, err
}

// withTree is ix with tree's entries: those ix has with the same blob and
// mode keep their stat data.
func withTree(ctx context.Context, repo Repo, ix *gitstore.Index, tree gitstore.OID) (*gitstore.Index, error) {
	old := make(map[string]gitstore.IndexEntry, len(ix.Entries))
	for _, e := range ix.Entries {
		old[e.Path] = e
	}
	out := &gitstore.Index{Version: ix.Version}
	ct := newCacheTrees(tree)
	out.Tree = ct.root
	err := repo.List(ctx, tree, "", true, func(e gitstore.Entry) error {
		ct.add(e)
		if !e.Mode.IsBlob() {
			return nil
		}
		if o, ok := old[e.Path]; ok && o.OID == e.OID && o.Mode == e.Mode {
			out.Entries = append(out.Entries, o)
			return nil
		}
		out.Entries = append(out.Entries, gitstore.IndexEntry{Path: e.Path, Mode: e.Mode, OID: e.OID})
		return nil
	})
	return out, err
}

// withStages replaces each conflicted path's entry of ix by its stages.
func withStages(ix *gitstore.Index, stages []StageEntry) *gitstore.Index {
	drop := map[string]bool{}
	for _, s := range stages {
		drop[s.Path] = true
	}
	// No cache-tree: the conflicted paths have no tree yet.
	out := &gitstore.Index{Version: ix.Version}
	for _, e := range ix.Entries {
		if !drop[e.Path] {
			out.Entries = append(out.Entries, e)
		}
	}
	for _, s := range stages {
		for i, side := range []struct {
			id   gitstore.OID
			mode gitstore.Mode
		}{{s.Base, s.BaseMode}, {s.Ours, s.OursMode}, {s.Theirs, s.TheirsMode}} {
			if side.id.IsZero() {
				continue
			}
			mode := side.mode
			if mode == 0 {
				mode = gitstore.ModeFile
			}
			out.Entries = append(out.Entries, gitstore.IndexEntry{Path: s.Path, Mode: mode, OID: side.id, Stage: i + 1})
		}
	}
	// git's order: by path (bytes), then stage; git looks entries up by
	// binary search.
	slices.SortStableFunc(out.Entries, func(a, b gitstore.IndexEntry) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Stage, b.Stage))
	})
	return out
}

// gitMountPoint keeps (want) or removes the empty ".git" directory at the
// root of the layer that the view's .git is bound over.
func (s *Scratch) gitMountPoint(want bool) error {
	p := s.layer.present()
	root := p.Src
	if p.Overlay {
		root = p.Upper
	}
	if l, ok := s.layer.(*overlayLayer); ok && l.shared != nil {
		root = l.shared.dir // never beneath a mounted view
	}
	full := filepath.Join(root, ".git")
	fi, err := os.Lstat(full)
	switch {
	case err == nil && fi.IsDir() && want:
		return nil
	case err == nil && fi.IsDir():
		return removeAll(full)
	case err == nil:
		if err := removeAll(full); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if !want {
		return nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return os.Mkdir(full, 0o755)
}

func (m *Manager) baseIndexPath(tree gitstore.OID) string {
	return filepath.Join(m.dir, "gitbase", tree.String()+".index")
}

// dropBaseIndex removes the shared index of tree, whose base checkout was
// evicted or built anew: its stat data was the old checkout's.
func (m *Manager) dropBaseIndex(tree gitstore.OID) {
	path := m.baseIndexPath(tree)
	mu, _ := baseIndexes.LoadOrStore(path, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	_ = os.Remove(path)
}

// pruneBaseIndexes removes the shared indexes of trees the base cache
// has no checkout of (left by an earlier run).
func (m *Manager) pruneBaseIndexes() {
	ents, _ := os.ReadDir(filepath.Join(m.dir, "gitbase"))
	for _, e := range ents {
		id, err := gitstore.ParseOID(strings.TrimSuffix(e.Name(), ".index"))
		if err != nil || !strings.HasSuffix(e.Name(), ".index") {
			_ = removeAll(filepath.Join(m.dir, "gitbase", e.Name())) // debris
			continue
		}
		if !m.cache.has(id) {
			m.dropBaseIndex(id)
		}
	}
}

// PruneGitObjects removes the public object directories of repositories
// not named in repos (removed from the registry): the views of their
// sessions are gone with them.
func (m *Manager) PruneGitObjects(repos []string) error {
	keep := map[string]bool{}
	for _, r := range repos {
		keep[instanceName(r)] = true
	}
	root := filepath.Join(m.dir, "gitobjects")
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if keep[e.Name()] {
			continue
		}
		dir := filepath.Join(root, e.Name())
		mu, _ := publicLocks.LoadOrStore(dir, &sync.Mutex{})
		mu.(*sync.Mutex).Lock()
		err := removeAll(dir)
		mu.(*sync.Mutex).Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
