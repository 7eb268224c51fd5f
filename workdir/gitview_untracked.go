package workdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/gitstore"
)

// untrackedCache has git build its untracked cache (the UNTR extension)
// of the checkout of tree at lower, beside ix, in a git directory of its
// own at tmp (no info/exclude, no configuration of the host's), and
// returns it with its identity changed to the view's: git keeps a cache
// only where it was built ("Location <work tree>, system <kernel>"), and
// a view's work tree is DefaultWorkspace inside the command. A command
// with another workspace, or whose git finds an exclude file, has git
// build its own. With the fsmonitor extension beside it, git trusts
// every directory the cache holds except those the hook names.
func untrackedCache(ctx context.Context, repoGitDir string, ix *gitstore.Index, tree gitstore.OID, lower, tmp string) ([]byte, error) {
	if err := removeAll(tmp); err != nil {
		return nil, err
	}
	defer removeAll(tmp)
	for _, d := range []string{"objects/info", "refs/heads", "home"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o700); err != nil {
			return nil, err
		}
	}
	// The fsmonitor hook of the build names nothing: the checkout is
	// the tree's, as the index says. The repository's objects by
	// alternates, for HEAD's tree.
	hook := filepath.Join(tmp, "fsmonitor")
	files := map[string]string{
		"HEAD": "ref: refs/heads/base\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tcheckStat = minimal\n\ttrustctime = false\n" +
			"\tuntrackedCache = true\n\tfsmonitor = " + hook + "\n",
		"fsmonitor":               "#!/bin/sh\nprintf 'sessiond\\0'\n",
		"objects/info/alternates": filepath.Join(repoGitDir, "objects") + "\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(data), 0o700); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := ix.Encode(&buf); err != nil {
		return nil, err
	}
	index := filepath.Join(tmp, "index")
	if err := os.WriteFile(index, buf.Bytes(), 0o600); err != nil {
		return nil, err
	}
	home := filepath.Join(tmp, "home")
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", tmp, "--work-tree", lower}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "HOME="+home,
			"XDG_CONFIG_HOME="+home, "GIT_INDEX_FILE="+index,
			"GIT_AUTHOR_NAME=sessiond", "GIT_AUTHOR_EMAIL=sessiond@localhost", "GIT_AUTHOR_DATE=@0 +0000",
			"GIT_COMMITTER_NAME=sessiond", "GIT_COMMITTER_EMAIL=sessiond@localhost", "GIT_COMMITTER_DATE=@0 +0000")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	out, err := git("commit-tree", "-m", "base", tree.String())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "refs/heads/base"), out, 0o600); err != nil {
		return nil, err
	}
	if _, err := git("status", "--porcelain"); err != nil {
		return nil, err
	}
	built, err := gitstore.ReadIndex(index)
	if err != nil {
		return nil, err
	}
	return untrackedIdent(built.Untracked, DefaultWorkspace)
}

// untrackedIdent is the untracked cache ext with its location replaced
// by workTree. The extension begins with its identity: a length (git's
// varint) then "Location <work tree>, system <kernel>" and a NUL.
func untrackedIdent(ext []byte, workTree string) ([]byte, error) {
	n, used := gitVarint(ext)
	if used == 0 || n == 0 || uint64(len(ext)-used) < n {
		return nil, errors.New("untracked cache: no identity")
	}
	ident := string(ext[used : used+int(n)])
	rest := ext[used+int(n):]
	sys := strings.LastIndex(ident, ", system ")
	if !strings.HasPrefix(ident, "Location ") || sys < 0 || !strings.HasSuffix(ident, "\x00") {
		return nil, fmt.Errorf("untracked cache: identity %q", ident)
	}
	ident = "Location " + workTree + ident[sys:]
	out := appendGitVarint(nil, uint64(len(ident)))
	out = append(out, ident...)
	return append(out, rest...), nil
}

// gitVarint decodes git's offset varint (as the index and packs write
// it): the value and the bytes used (0: malformed).
func gitVarint(b []byte) (v uint64, used int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v = uint64(c & 127)
	used = 1
	for c&128 != 0 {
		v++
		if v>>57 != 0 || used >= len(b) {
			return 0, 0
		}
		c = b[used]
		used++
		v = v<<7 + uint64(c&127)
	}
	return v, used
}

func appendGitVarint(b []byte, v uint64) []byte {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(v & 127)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		pos--
		buf[pos] = 128 | byte(v&127)
	}
	return append(b, buf[pos:]...)
}

// sharedOwner owns the shared files a command's view links to: a user
// and group the commands' namespaces do not map, so that no command,
// root inside, may write them or change their mode.
const sharedOwner = 65534

// protectShared makes the file at path readable by all and writable by
// none a command can be, when the daemon runs as root (which alone can
// give a file away). Elsewhere it stays the daemon's, and is copied.
func protectShared(path string) {
	if os.Geteuid() != 0 || os.Getuid() == sharedOwner || os.Getgid() == sharedOwner {
		_ = os.Chmod(path, 0o644)
		return
	}
	if os.Chown(path, sharedOwner, sharedOwner) == nil {
		_ = os.Chmod(path, 0o444)
	}
}

// shareBeneath gives root the file src at rel: a hard link when src is
// protected (see protectShared) and on the same file system, else a
// copy.
func shareBeneath(src, root, rel string) error {
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		return err
	}
	if st.Uid != sharedOwner || st.Gid != sharedOwner || st.Mode&0o222 != 0 || st.Uid == uint32(os.Getuid()) {
		return copyBeneath(src, root, rel)
	}
	if err := writeBeneath(root, rel, nil); err != nil {
		return err
	}
	full := filepath.Join(root, rel)
	tmp := full + ".sessiond-tmp"
	_ = removeAll(tmp)
	if err := os.Link(src, tmp); err != nil {
		return copyBeneath(src, root, rel)
	}
	return os.Rename(tmp, full)
}
