package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessiond/sessiond/apitypes"
)

// serviceCmd is `sessiond service start|ls|logs|stop`: long-running
// processes on the session's view, their ports reached through the
// daemon (SPEC §15).
type serviceCmd struct {
	Start serviceStartCmd `cmd:"" help:"Start a service (after --); with --port, print the URL that reaches it."`
	Ls    serviceLsCmd    `cmd:"" help:"List the session's services."`
	Logs  serviceLogsCmd  `cmd:"" help:"Print a service's last lines of output (-f: and follow)."`
	Stop  serviceStopCmd  `cmd:"" help:"Stop a service and its whole process tree."`
}

type serviceStartCmd struct {
	Name         string        `help:"Its name in the session." required:"" placeholder:"NAME"`
	Port         int           `help:"The port it listens on at 127.0.0.1 (1 to 65535)." placeholder:"PORT"`
	Cwd          string        `help:"Directory of the view to run in (default: its root)." placeholder:"DIR"`
	Env          []string      `help:"KEY=VALUE added to its environment (repeatable)." short:"e" sep:"none" placeholder:"KEY=VALUE"`
	ReadyHTTP    string        `help:"Wait until GET of this path answers below 400." name:"ready-http" placeholder:"PATH"`
	ReadyTCP     bool          `help:"Wait until the port accepts connections." name:"ready-tcp"`
	ReadyTimeout time.Duration `help:"How long the ready check may take (default 30s)." name:"ready-timeout" placeholder:"D"`
	Restart      string        `help:"no, or on-failure: start it again when it exits other than 0." enum:"no,on-failure" default:"no"`
	Network      bool          `help:"Give it the network a command with --network gets (the host's, or the repository's allowlist through the daemon's egress proxy); by default only its own loopback."`
	Argv         []string      `arg:"" passthrough:"" help:"The command and its arguments, after --."`
}

func (c *serviceStartCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	argv := c.Argv
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return usagef("service start: no command: sessiond service start --name NAME [--port PORT] -- CMD ARGS…")
	}
	req := apitypes.ServiceRequest{Name: c.Name, Argv: argv, Cwd: c.Cwd, Restart: c.Restart, Network: c.Network}
	if c.Port != 0 {
		p := c.Port
		req.Port = &p
	}
	if c.ReadyHTTP != "" || c.ReadyTCP {
		req.Ready = &apitypes.ServiceReady{HTTP: c.ReadyHTTP, TCP: c.ReadyTCP, TimeoutSeconds: c.ReadyTimeout.Seconds()}
	}
	for _, kv := range c.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef("service start: --env %q: want KEY=VALUE", kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	s, err := x.c.StartService(ctx, id, req)
	if err != nil {
		return err
	}
	if x.json {
		x.printJSON(s)
		return nil
	}
	fmt.Fprintf(x.stdout, "%s %s (pid %d inside)\n", s.Name, s.State, s.PID)
	if s.URL != "" {
		fmt.Fprintln(x.stdout, s.URL)
	}
	if s.PreviewURL != "" {
		fmt.Fprintln(x.stdout, s.PreviewURL)
	}
	return nil
}

type serviceLsCmd struct{}

func (c *serviceLsCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	l, err := x.c.Services(ctx, id)
	if err != nil {
		return err
	}
	if x.json {
		x.printJSON(l)
		return nil
	}
	tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPORT\tPID\tSTARTED\tURL")
	for _, s := range l.Services {
		state := s.State
		if s.Reason != "" {
			state += ": " + s.Reason
		}
		if s.ExitCode != nil {
			state += " (exit " + strconv.Itoa(*s.ExitCode) + ")"
		}
		if len(s.NetworkRefused) > 0 {
			state += " (network refused: " + strings.Join(s.NetworkRefused, ", ") + ")"
		}
		port, pid := "-", "-"
		if s.Port != 0 {
			port = strconv.Itoa(s.Port)
		}
		if s.PID != 0 && (s.State == "running" || s.State == "starting") {
			pid = strconv.Itoa(s.PID)
		}
		url := s.URL
		if s.PreviewURL != "" {
			url = s.PreviewURL
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, state, port, pid, s.Started.Local().Format(time.DateTime), url)
	}
	return tw.Flush()
}

type serviceLogsCmd struct {
	Tail   int    `help:"Lines of the end to print first." short:"n" default:"100" placeholder:"N"`
	Follow bool   `help:"Go on printing what comes, until the service ends." short:"f"`
	Name   string `arg:"" help:"The service."`
}

func (c *serviceLogsCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	return x.c.ServiceLogs(ctx, id, c.Name, c.Tail, c.Follow, func(line string) {
		fmt.Fprintln(x.stdout, line)
	})
}

type serviceStopCmd struct {
	Name string `arg:"" help:"The service."`
}

func (c *serviceStopCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	s, err := x.c.StopService(ctx, id, c.Name)
	if err != nil {
		return err
	}
	if x.json {
		x.printJSON(s)
		return nil
	}
	fmt.Fprintf(x.stdout, "%s %s\n", s.Name, s.State)
	return nil
}

// portCmd is `sessiond port link`.
type portCmd struct {
	Link portLinkCmd `cmd:"" help:"Print a signed link that opens one port of the session in a browser, without a token, until it expires."`
}

type portLinkCmd struct {
	TTL  time.Duration `help:"How long the link works." default:"1h" placeholder:"D"`
	Port int           `arg:"" help:"The port."`
}

func (c *portLinkCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	if c.TTL < time.Second {
		return usagef("port link: --ttl %s: want at least 1s", c.TTL)
	}
	l, err := x.c.PortLink(ctx, id, c.Port, c.TTL.Seconds())
	if err != nil {
		return err
	}
	if x.json {
		x.printJSON(l)
		return nil
	}
	fmt.Fprintln(x.stdout, l.URL)
	return nil
}
