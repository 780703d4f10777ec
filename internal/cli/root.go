package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/tlsconf"
)

// DefaultEndpoint is where `anvil serve` listens by default.
const DefaultEndpoint = "http://127.0.0.1:6385"

// Env is what the commands take from the process; tests build their own.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	Getenv         func(string) string
	// Exit ends the process with a code after an error has been printed;
	// nil means the commands only return (tests read Result).
	Exit func(code int)
	// IsTerminal reports whether w is a terminal (progress bars).
	IsTerminal func(w io.Writer) bool
	// NewWaiter builds the waiter of --wait and `node wait`; nil means the
	// watch stream (falling back to polling on servers without it).
	NewWaiter func(c *Client) Waiter
	// Now is the clock of reports; nil is time.Now.
	Now func() time.Time
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// app holds the global options shared by every command.
type app struct {
	env  Env
	opts globalOpts
}

type globalOpts struct {
	endpoint      string
	apiVersion    string
	authType      string
	username      string
	password      string
	maxRetries    int
	retryInterval float64
	debug         bool
	cacert        string
	cert, key     string
	insecure      bool
	token         string
}

// Commands returns the operator commands: node, port, volume, driver,
// conductor and fleet. Each carries the global options (--os-endpoint, ...) as
// persistent flags, so they may come before or after the subcommand.
func Commands(env Env) []*cobra.Command {
	return newApp(env).commands()
}

func newApp(env Env) *app {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.IsTerminal == nil {
		env.IsTerminal = func(io.Writer) bool { return false }
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	return &app{env: env}
}

func (a *app) commands() []*cobra.Command {
	cmds := []*cobra.Command{a.nodeCmd(), a.portCmd(), a.volumeCmd(), a.driverCmd(), a.conductorCmd(), a.fleetCmd()}
	for _, c := range cmds {
		a.addGlobalFlags(c)
	}
	return cmds
}

func (a *app) addGlobalFlags(c *cobra.Command) {
	f := c.PersistentFlags()
	f.StringVar(&a.opts.endpoint, "os-endpoint", "",
		"the API endpoint (env ANVIL_URL, then OS_ENDPOINT; default "+DefaultEndpoint+")")
	f.StringVar(&a.opts.apiVersion, "os-baremetal-api-version", "",
		"the API microversion, 1.N or latest (env OS_BAREMETAL_API_VERSION; default "+DefaultAPIVersion+", lowered to the server's maximum)")
	f.StringVar(&a.opts.authType, "os-auth-type", "", "none, http_basic or token (env OS_AUTH_TYPE; default token when OS_TOKEN is set, else none)")
	f.StringVar(&a.opts.token, "os-token", "", "bearer token for token auth, sent as X-Auth-Token (env OS_TOKEN)")
	f.StringVar(&a.opts.username, "os-username", "", "user for http_basic (env OS_USERNAME)")
	f.StringVar(&a.opts.password, "os-password", "", "password for http_basic (env OS_PASSWORD)")
	f.IntVar(&a.opts.maxRetries, "max-retries", 5, "retries of a request answered 409 (node locked) or 503")
	f.Float64Var(&a.opts.retryInterval, "retry-interval", 2, "seconds before the first retry; later retries back off")
	f.BoolVar(&a.opts.debug, "debug", false, "log every request and answer to stderr (secrets masked)")
	f.StringVar(&a.opts.cacert, "os-cacert", "", "PEM CA bundle that verifies an https endpoint (env OS_CACERT)")
	f.StringVar(&a.opts.cert, "os-cert", "", "PEM client certificate presented to an https endpoint that asks for one (env OS_CERT)")
	f.StringVar(&a.opts.key, "os-key", "", "PEM private key of --os-cert (env OS_KEY)")
	f.BoolVar(&a.opts.insecure, "insecure", false, "do not verify an https endpoint's certificate")
}

// client builds the API client from the options and the environment.
func (a *app) client() (*Client, error) {
	o := a.opts
	endpoint := firstNonEmpty(o.endpoint, a.env.Getenv("ANVIL_URL"), a.env.Getenv("OS_ENDPOINT"), DefaultEndpoint)
	token := firstNonEmpty(o.token, a.env.Getenv("OS_TOKEN"))
	defAuth := "none"
	if token != "" {
		defAuth = "token"
	}
	auth := firstNonEmpty(o.authType, a.env.Getenv("OS_AUTH_TYPE"), defAuth)
	cfg := ClientConfig{
		Endpoint:      endpoint,
		APIVersion:    firstNonEmpty(o.apiVersion, a.env.Getenv("OS_BAREMETAL_API_VERSION")),
		MaxRetries:    max(o.maxRetries, 0),
		RetryInterval: time.Duration(o.retryInterval * float64(time.Second)),
	}
	switch auth {
	case "none", "noauth":
	case "http_basic":
		cfg.Username = firstNonEmpty(o.username, a.env.Getenv("OS_USERNAME"))
		cfg.Password = firstNonEmpty(o.password, a.env.Getenv("OS_PASSWORD"))
	case "token", "admin_token", "v3token":
		if token == "" {
			return nil, fmt.Errorf("--os-auth-type %s needs --os-token or OS_TOKEN", auth)
		}
		cfg.Token = token
	default:
		return nil, fmt.Errorf("unsupported --os-auth-type %q: use none, http_basic or token", auth)
	}
	if o.debug {
		cfg.Debug = a.env.Stderr
	}
	tr, err := tlsTransport(tlsconf.Client{CAFile: firstNonEmpty(o.cacert, a.env.Getenv("OS_CACERT")),
		CertFile: firstNonEmpty(o.cert, a.env.Getenv("OS_CERT")), KeyFile: firstNonEmpty(o.key, a.env.Getenv("OS_KEY")),
		InsecureSkipVerify: o.insecure})
	if err != nil {
		return nil, err
	}
	cfg.Transport = tr
	return NewClient(cfg)
}

// waiter builds the waiter for --wait and `node wait`.
func (a *app) waiter(c *Client) Waiter {
	if a.env.NewWaiter != nil {
		return a.env.NewWaiter(c)
	}
	return &StreamWaiter{Client: c}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// exitError carries an exit code other than 1; err may be nil when the
// command already said everything.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// errReported means the command printed its own failure lines.
var errReported = errors.New("failure already reported")

// usageErrorf is a mistake on the command line.
func usageErrorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// runner is the body of a command.
type runner func(ctx context.Context, cmd *cobra.Command, args []string) error

// run wraps a command body: an error is printed as one line ("<message>
// (HTTP <code>)" for API errors, as python-ironicclient) and ends the
// process with exit code 1 (or the code an exitError carries).
func (a *app) run(fn runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		err := fn(ctx, cmd, args)
		if err == nil {
			return nil
		}
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code, err = ee.code, ee.err
		}
		if err != nil && !errors.Is(err, errReported) {
			fmt.Fprintln(a.env.Stderr, errorLine(err))
		}
		if a.env.Exit != nil {
			a.env.Exit(code)
		}
		return nil
	}
}

// errorLine is the one line an error prints as.
func errorLine(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	return strings.TrimSpace(err.Error())
}

// group is a command that only holds subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() }}
	c.AddCommand(subs...)
	return c
}

// ctxTimeout bounds interactive calls such as shell completion.
func ctxTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, d)
}
