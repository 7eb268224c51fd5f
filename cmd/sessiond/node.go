package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sessiond/sessiond/apitypes"
)

// The nodes of a cluster (SPEC section 16).

type nodeCmd struct {
	Ls    nodeLsCmd    `cmd:"" help:"List the nodes of the cluster, their health and what each holds."`
	Drain nodeDrainCmd `cmd:"" help:"Hand a node's sessions to the other nodes before stopping it (admin)."`
}

type nodeLsCmd struct{}

func (c *nodeLsCmd) Run(ctx context.Context, x *cli) error {
	st, err := x.c.Cluster(ctx)
	if err != nil {
		return err
	}
	return x.out(st, func(w io.Writer) {
		table(w, "NODE\tHEALTH\tDRAINING\tSESSIONS\tRUNNING\tURL", func(tw io.Writer) {
			for _, n := range st.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%t\t%d\t%d\t%s\n", n.ID, n.Health, n.Draining, n.Sessions, n.RunningCommands, n.AdvertiseURL)
			}
		})
	})
}

type nodeDrainCmd struct {
	Node    string        `arg:"" optional:"" help:"The node to drain (default: the one --server reaches)."`
	Timeout time.Duration `help:"How long to wait for the node's running commands before handing their sessions off." default:"60s"`
}

func (c *nodeDrainCmd) Run(ctx context.Context, x *cli) error {
	node := c.Node
	if node == "" {
		st, err := x.c.Cluster(ctx)
		if err != nil {
			return err
		}
		if !st.Enabled {
			return usagef("the daemon at %s is no node of a cluster: nothing to drain to", x.server)
		}
		node = st.Self
	}
	res, err := x.c.DrainNode(ctx, node, apitypes.DrainRequest{TimeoutSeconds: c.Timeout.Seconds()})
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "drained node %s: %d sessions handed off, %d kept (still busy), after %.1fs\n",
			res.Node, len(res.HandedOff), len(res.Kept), res.WaitedSecs)
	})
}
