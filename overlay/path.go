package overlay

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/sessiond/sessiond/gitstore"
)

// Limits of the largePathname rule.
const (
	MaxComponentBytes = 255
	MaxPathBytes      = 4096
)

// ValidatePath checks the syntactic rules every repository path must pass
// before anything is written: fullPathname, badPathChar, largePathname,
// hasDot, hasDotdot and hasDotgit. It is the one place these rules live;
// the rules that depend on what is already there (collisions, modes) are
// checked by Overlay.CheckPut and Overlay.Delete, which call it first.
func ValidatePath(p string) error {
	if p == "" {
		return pathErr(RuleFullPathname, p, "empty path")
	}
	if !utf8.ValidString(p) {
		return pathErr(RuleBadPathChar, p, "not valid UTF-8")
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == 0:
			return pathErr(RuleBadPathChar, p, "NUL byte at offset %d", i)
		case c < 0x20 || c == 0x7f:
			return pathErr(RuleBadPathChar, p, "control character %#02x at offset %d", c, i)
		case c == '\\':
			return pathErr(RuleBadPathChar, p, "backslash at offset %d", i)
		}
	}
	if len(p) > MaxPathBytes {
		return pathErr(RuleLargePathname, p, "path is %d bytes, over %d", len(p), MaxPathBytes)
	}
	if p[0] == '/' {
		return pathErr(RuleFullPathname, p, "leading slash")
	}
	if p[len(p)-1] == '/' {
		return pathErr(RuleFullPathname, p, "trailing slash")
	}
	for rest := p; ; {
		c, tail, more := strings.Cut(rest, "/")
		if err := validateComponent(p, c); err != nil {
			return err
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

func validateComponent(p, c string) error {
	switch {
	case c == "":
		return pathErr(RuleFullPathname, p, "empty component")
	case len(c) > MaxComponentBytes:
		return pathErr(RuleLargePathname, p, "component is %d bytes, over %d", len(c), MaxComponentBytes)
	case c == ".":
		return pathErr(RuleHasDot, p, "component %q", c)
	case c == "..":
		return pathErr(RuleHasDotdot, p, "component %q", c)
	case isDotgit(c):
		return pathErr(RuleHasDotgit, p, "component %q names the .git directory on some file system", c)
	}
	return nil
}

// ValidateMode checks the badFilemode rule for a write: only regular
// files, executables and symlinks may be written.
func ValidateMode(p string, m gitstore.Mode) error {
	if !m.Writable() {
		return pathErr(RuleBadFilemode, p, "mode %s may not be written (only 100644, 100755, 120000)", m)
	}
	return nil
}

// validName checks only what git itself requires of a path in a tree:
// no empty, "." or ".." component, no leading or trailing slash, no NUL,
// and no .git component. Names git allows but ValidatePath refuses (a
// tab, a backslash, a long component) pass.
func validName(p string) error {
	if p == "" || p[0] == '/' || p[len(p)-1] == '/' || strings.Contains(p, "//") {
		return pathErr(RuleFullPathname, p, "not a path git allows")
	}
	if i := strings.IndexByte(p, 0); i >= 0 {
		return pathErr(RuleBadPathChar, p, "NUL byte at offset %d", i)
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == ".":
			return pathErr(RuleHasDot, p, "component %q", c)
		case c == "..":
			return pathErr(RuleHasDotdot, p, "component %q", c)
		case isDotgit(c):
			return pathErr(RuleHasDotgit, p, "component %q names the .git directory on some file system", c)
		}
	}
	return nil
}

// CheckExisting validates a path that is read, listed, deleted or moved
// away from: one ValidatePath accepts, or one the base holds under a name
// git allows but the write rules refuse (a tab, a backslash), which stays
// reachable. Anything else is ValidatePath's error. Writes still go
// through CheckPut, which takes no such path.
func (o *Overlay) CheckExisting(ctx context.Context, p string) error {
	err := ValidatePath(p)
	if err == nil || validName(p) != nil {
		return err
	}
	_, found, berr := o.rawBase(ctx, p)
	if berr != nil {
		return berr
	}
	if found {
		return nil
	}
	return err
}

// emptyBlob is the id of the empty blob.
var emptyBlob = gitstore.HashObject(gitstore.KindBlob, nil)

// ValidateSymlinkTarget refuses a symlink whose target (blob id) is
// empty: rule symlinkTarget. Other modes always pass.
func ValidateSymlinkTarget(p string, m gitstore.Mode, id gitstore.OID) error {
	if m == gitstore.ModeSymlink && id == emptyBlob {
		return pathErr(RuleSymlinkTarget, p, "a symlink needs a target; this one is empty")
	}
	return nil
}

// hfsIgnorable reports the code points HFS+ drops when comparing names, as
// git's is_hfs_dotgit does.
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f,
		r >= 0x202a && r <= 0x202e,
		r >= 0x206a && r <= 0x206f,
		r == 0xfeff:
		return true
	}
	return false
}

// hfsName is c as HFS+ compares it: ignorable code points removed.
func hfsName(c string) string {
	if !strings.ContainsFunc(c, hfsIgnorable) {
		return c
	}
	return strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, c)
}

// ntfsName is c as NTFS resolves it: an alternate data stream suffix
// (":$DATA", "::$INDEX_ALLOCATION", …) and trailing dots and spaces
// dropped.
func ntfsName(c string) string {
	if i := strings.IndexAny(c, ":\\"); i >= 0 {
		c = c[:i]
	}
	return strings.TrimRight(c, ". ")
}

// isDotgit reports whether component c would name the .git directory on
// some file system: ".git" in any case, with HFS+ ignorable code points,
// with NTFS trailing dots, spaces or a stream suffix, or as the NTFS short
// name "git~1". The check is a superset of git's is_hfs_dotgit and
// is_ntfs_dotgit: both spellings are folded together.
func isDotgit(c string) bool {
	n := ntfsName(hfsName(c))
	return strings.EqualFold(n, ".git") || strings.EqualFold(n, "git~1")
}

// isGitSpecialFile reports whether component c names .gitmodules,
// .gitattributes or .gitignore under the same HFS+ and NTFS spellings,
// including NTFS 8.3 short names (GITMOD~1, GI7EBA~1, …).
func isGitSpecialFile(c string) bool { return specialKind(c) != "" }

// specialKind is the special file component c names under those
// spellings ("gitmodules", "gitattributes", "gitignore"), or "".
func specialKind(c string) string {
	n := ntfsName(hfsName(c))
	for _, f := range specialFiles {
		if strings.EqualFold(n, "."+f.name) || isNTFSShortName(n, f.name, f.hash) {
			return f.name
		}
	}
	return ""
}

var specialFiles = []struct{ name, hash string }{
	{"gitmodules", "gi7eba"},
	{"gitattributes", "gi7d29"},
	{"gitignore", "gi250a"},
}

// isNTFSShortName reports whether n is an 8.3 short name NTFS may give a
// file called "."+name: the first six letters and ~1..~4, or a prefix of
// the hashed form (hash) followed by ~ and a number, eight bytes at most.
func isNTFSShortName(n, name, hash string) bool {
	if len(n) == 8 && strings.EqualFold(n[:6], name[:6]) && n[6] == '~' && n[7] >= '1' && n[7] <= '4' {
		return true
	}
	tilde := strings.IndexByte(n, '~')
	if tilde < 1 || tilde > 6 || len(n) > 8 || tilde+1 >= len(n) {
		return false
	}
	if !strings.EqualFold(n[:tilde], hash[:tilde]) {
		return false
	}
	if n[tilde+1] < '1' || n[tilde+1] > '9' {
		return false
	}
	for i := tilde + 2; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// foldName is the form two names in one directory are compared in for the
// caseCollision rule: canonical caseless matching (NFD, full case folding,
// NFD), so "Makefile"/"makefile", "ß"/"SS" and precomposed/decomposed
// accents collide.
func foldName(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	return norm.NFD.String(cases.Fold().String(norm.NFD.String(s)))
}

// CheckPut reports whether writing a blob with mode m at p would be
// accepted, without changing anything: the syntactic rules of ValidatePath,
// badFilemode, gitmodulesSymlink, gitmodulesBlob, and against the merged view
// fileDirectoryCollision, read-only gitlinks and (unless
// Options.AllowCaseCollisions) caseCollision. Put calls it first, then the
// content rules (CheckContent), which need the blob.
func (o *Overlay) CheckPut(ctx context.Context, p string, m gitstore.Mode) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	return o.checkPutView(ctx, p, m)
}

// checkPutView is CheckPut without the syntax of ValidatePath.
func (o *Overlay) checkPutView(ctx context.Context, p string, m gitstore.Mode) error {
	if err := ValidateMode(p, m); err != nil {
		return err
	}
	if m == gitstore.ModeSymlink && isGitSpecialFile(baseName(p)) {
		return pathErr(RuleGitmodulesSymlink, p, "%q may not be a symlink", baseName(p))
	}
	for d := parentDir(p); d != ""; d = parentDir(d) {
		if isGitSpecialFile(baseName(d)) {
			return pathErr(RuleGitmodulesBlob, p, "%q may not be a directory", baseName(d))
		}
	}
	// Walk down from the root: every existing ancestor must be a directory.
	// The first missing component is the new name that needs the case check.
	newName := ""
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		d := p[:i]
		n, err := o.Stat(ctx, d)
		if errors.Is(err, ErrNotFound) {
			newName = d
			break
		}
		if err != nil {
			return err
		}
		if i == len(p) {
			switch {
			case n.Mode.IsDir():
				return pathErr(RuleFileDirectoryCollision, p, "%q is a directory with entries", p)
			case n.Mode == gitstore.ModeGitlink:
				return pathErr(RuleBadFilemode, p, "%q is a submodule (gitlink), which is read-only", p)
			}
			break
		}
		switch n.Mode {
		case gitstore.ModeDir:
		case gitstore.ModeSymlink:
			return pathErr(RuleFileDirectoryCollision, p, "%q is a symlink; writes never go through a symlink", d)
		case gitstore.ModeGitlink:
			return pathErr(RuleFileDirectoryCollision, p, "%q is a submodule (gitlink)", d)
		default:
			return pathErr(RuleFileDirectoryCollision, p, "%q is a file", d)
		}
	}
	if newName != "" && !o.opts.AllowCaseCollisions {
		return o.checkCase(ctx, p, newName)
	}
	return nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
