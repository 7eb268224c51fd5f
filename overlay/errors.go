package overlay

import (
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/gitstore"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrNotFound: nothing at that path in the merged view. It is the same
	// sentinel as gitstore's, so one check covers both layers.
	ErrNotFound = gitstore.ErrNotFound
	// ErrInvalidPath: a path or mode that breaks a rule of the bad-input
	// section. Every such error is a *PathError naming the rule.
	ErrInvalidPath = errors.New("invalid path")
	// ErrIsDir: a file operation on a directory.
	ErrIsDir = errors.New("is a directory")
	// ErrNotDir: a directory operation (listing) on a file.
	ErrNotDir = errors.New("not a directory")
)

// Rule names a path rule. The names follow git fsck's message ids and are
// what the API reports in the "rule" field.
type Rule string

// The rules of the bad-input section.
const (
	RuleFullPathname           Rule = "fullPathname"
	RuleHasDot                 Rule = "hasDot"
	RuleHasDotdot              Rule = "hasDotdot"
	RuleHasDotgit              Rule = "hasDotgit"
	RuleBadPathChar            Rule = "badPathChar"
	RuleLargePathname          Rule = "largePathname"
	RuleFileDirectoryCollision Rule = "fileDirectoryCollision"
	RuleBadFilemode            Rule = "badFilemode"
	RuleGitmodulesSymlink      Rule = "gitmodulesSymlink"
	// RuleGitmodulesBlob is an addition to the section's list, named like
	// the git fsck error it prevents: .gitmodules (and, for symmetry,
	// .gitattributes and .gitignore) may not be a directory.
	RuleGitmodulesBlob Rule = "gitmodulesBlob"
	RuleCaseCollision  Rule = "caseCollision"

	// The content rules (CheckContent), named like the git fsck messages.
	// gitmodulesParse is only a warning in git fsck; sessiond refuses it.
	RuleGitmodulesName   Rule = "gitmodulesName"
	RuleGitmodulesPath   Rule = "gitmodulesPath"
	RuleGitmodulesURL    Rule = "gitmodulesUrl"
	RuleGitmodulesUpdate Rule = "gitmodulesUpdate"
	RuleGitmodulesParse  Rule = "gitmodulesParse"
	RuleGitmodulesLarge  Rule = "gitmodulesLarge"
	// Additions to the section's list: the git fsck errors for
	// .gitattributes, which git 2.39 checks too.
	RuleGitattributesLineLength Rule = "gitattributesLineLength"
	RuleGitattributesLarge      Rule = "gitattributesLarge"
	// RuleSymlinkTarget: a symlink with an empty target, which no file
	// system can create and git apply refuses.
	RuleSymlinkTarget Rule = "symlinkTarget"
)

// PathError reports a path that breaks Rule. errors.Is(err, ErrInvalidPath)
// holds for every *PathError.
type PathError struct {
	Rule    Rule
	Path    string
	Message string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("invalid path %q: %s: %s", e.Path, e.Rule, e.Message)
}

// Is makes every PathError match ErrInvalidPath.
func (e *PathError) Is(target error) bool { return target == ErrInvalidPath }

func pathErr(rule Rule, p, format string, args ...any) *PathError {
	return &PathError{Rule: rule, Path: p, Message: fmt.Sprintf(format, args...)}
}
