package graph

import (
	"context"
	"fmt"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// Summary is a review summary of the change from one tree to another: per
// changed file, in git order, the symbols added, modified and removed.
type Summary struct {
	Files []FileSummary `json:"files"`
}

// Summary compares trees base and tree of repo; a commit id stands for
// its tree. Its
// cost is proportional to what changed: equal subtrees are skipped, and
// each Go file's two versions are parsed once for all callers (the blob
// cache). A file that does not parse is listed with its reason and no
// symbols.
func (g *Graph) Summary(ctx context.Context, repo *gitstore.Repo, base, tree gitstore.OID) (Summary, error) {
	out := Summary{Files: []FileSummary{}}
	base, err := repo.TreeOf(ctx, base)
	if err != nil {
		return Summary{}, fmt.Errorf("summary: %w", err)
	}
	if tree, err = repo.TreeOf(ctx, tree); err != nil {
		return Summary{}, fmt.Errorf("summary: %w", err)
	}
	err = merge.WalkChanges(ctx, repo, base, tree, func(c merge.FileChange) error {
		from, to := blobOf(c.From()), blobOf(c.To())
		if from == to {
			return nil // a mode change only
		}
		fs := FileSummary{Path: c.Path(), Lang: langOf(c.Path()), Status: (&fileDelta{base: from, cur: to}).status()}
		if fs.Lang != "" {
			of, err := g.files.get(ctx, repo, c.Path(), from)
			if err != nil {
				return err
			}
			nf, err := g.files.get(ctx, repo, c.Path(), to)
			if err != nil {
				return err
			}
			switch {
			case of != nil && of.Err != "":
				fs.ParseError = "base: " + of.Err
			case nf != nil && nf.Err != "":
				fs.ParseError = nf.Err
			default:
				fs.SymbolChanges = DiffSymbols(of, nf)
			}
		}
		out.Files = append(out.Files, fs)
		return nil
	})
	if err != nil {
		return Summary{}, fmt.Errorf("summary: %w", err)
	}
	return out, nil
}
