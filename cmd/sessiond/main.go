// Command sessiond is the session daemon and its command-line client.
//
//	sessiond serve [flags]          run the daemon (HTTP API v1)
//	sessiond quickstart [flags]     build the sample repository and serve it (make run)
//	sessiond <command> [flags]      talk to a running daemon (see sessiond help)
//
// Exit codes: 0 ok, 1 error, 2 usage, 3 conflict.
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitConflict = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serveCmd(args[1:], stdout, stderr, nil)
	case "quickstart":
		return quickstartCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	}
	return clientCmd(args, stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: sessiond <command> [flags] [args]

daemon:
  serve        run the daemon (sessiond serve --help for its flags)
  quickstart   build the sample repository into a data directory and serve it

client (flags: --server URL, --token T, --session ID, --json):
  repo ls | repo add NAME PATH | repo init NAME | repo branches NAME
  session new --repo R [--base B] [--agent-id A] [--intent I] [--mode read_only] [--ttl 1h]
  session ls [--repo R] [--state S] | session show [ID] | session rm [ID]
  ls [PREFIX] [-r] [--modified] [--glob G]
  cat PATH
  put PATH [FILE|-] [--mode 100755] [--if-match OID] [--create]
  rm PATH [-r]
  grep PATTERN [--glob G] [-i]
  log [--after N]
  checkpoint [--label L] [-m MESSAGE] | checkpoint ls
  diff [--against base|CHECKPOINT] [--color auto|always|never]
  rollback CHECKPOINT
  fork [--checkpoint C] [--agent-id A] [--intent I]
  events [--after N] [--repo R]
  rebase [--onto REV] | merge FROM-SESSION
  changeset submit [--intent I] [--target BRANCH] | changeset ls [--repo R] [--status S]
  changeset show ID [--diff] | changeset review ID --verdict V [-m TEXT] [--comment PATH:LINE:BODY]
  changeset accept ID [--expected-head OID] [-m MESSAGE] | changeset layers REPO [--branch B]
  changeset undo ID [ID…] [--dry-run]

environment: SESSIOND_SERVER, SESSIOND_TOKEN, SESSIOND_SESSION
exit codes: 0 ok, 1 error, 2 usage, 3 conflict
`)
}
