package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/cairn-go/cairn/internal/cli"
)

const runsUsage = `usage: cairn runs start WORKFLOW [--input JSON] [--run-id ID] [remote flags]
       cairn runs reset RUN --to SEQ|last-step [--new-run-id ID] [--reason R] [remote flags]
       cairn runs signal RUN NAME [JSON] [remote flags]
` + runsQueryUsage + `
start starts a run through a deployment's RPC endpoint and prints it as JSON.
  --input JSON   the run's input (default null)
  --run-id ID    start under this ID; retrying with the same ID and input returns the run
reset makes a new run from RUN's events up to SEQ (as cairn inspect numbers them),
or up to its last completed step, and prints the new run; its code replays the
copied steps instead of running them again. A live RUN ends, linked to the new run.
  --to SEQ|last-step  where to cut RUN's history
  --new-run-id ID     the new run's ID; retrying with the same ID finishes and returns it
  --reason R          RUN's cancel reason when it is still live (default "reset")
signal sends RUN the signal NAME with the payload JSON (default null) and prints
the run; the run's code reads it with workflow.NewSignalChannel(ctx, NAME), and
a signal sent before the code reads it waits in the run's log.
` + runsQueryHelp + `
Remote flags: --url URL (default $CAIRN_URL: the deploy/aws api_url output, ending in
  /v1/workflow) --region R (default $AWS_REGION, else the Function URL's region)
  --no-sign (a local server such as cairn dev, which takes unsigned requests)`

const hooksUsage = `usage: cairn hooks list [--run ID] [--json] [remote flags]
       cairn hooks resume <WEBHOOK-URL | TOKEN> [--payload JSON] [remote flags]
list prints the hooks (of one run) through the RPC endpoint with the URL that
resumes each (its token where the deployment has no webhook base URL). cairn dev
and cairn ui hide tokens unless started with --show-tokens.
resume resumes a hook and prints the answer. With a webhook URL
(<webhook_base_url>/webhooks/<token>) the payload is POSTed to it as is, unsigned
(the deployment's webhook URL is public; --sign signs it). With a bare token it
calls hooks.resume on the RPC endpoint at --url, signed.
  --payload JSON  the payload (default null)
Remote flags: --url URL (default $CAIRN_URL) --region R --no-sign --sign`

// remoteFlags address a deployment's HTTP endpoints.
type remoteFlags struct {
	url    string
	region string
	noSign bool
	sign   bool
}

func (f *remoteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "RPC base URL ending in /v1/workflow (default $CAIRN_URL)")
	fs.StringVar(&f.region, "region", "", "region to sign for (default $AWS_REGION, else the Function URL's)")
	fs.BoolVar(&f.noSign, "no-sign", false, "send RPC requests unsigned (a local server)")
}

// remote sends requests to a deployment: RPC calls to base, signed with SigV4
// for the lambda service when sign is set (an AWS_IAM Function URL).
type remote struct {
	base   string
	client *http.Client
	signer *requestSigner
}

// requestSigner signs requests with the default credential chain.
type requestSigner struct {
	creds  aws.CredentialsProvider
	region string
	now    func() time.Time
}

// sign adds a SigV4 signature for the lambda service, covering the body's hash.
func (s *requestSigner) sign(ctx context.Context, req *http.Request, body []byte) error {
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("AWS credentials for signing: %w", err)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	return v4.NewSigner().SignHTTP(ctx, creds, req, hash, "lambda", s.region, s.now())
}

// functionURLRegion returns the region of a Lambda Function URL host
// (<id>.lambda-url.<region>.on.aws), or "".
func functionURLRegion(host string) string {
	host, _, _ = strings.Cut(host, ":")
	parts := strings.Split(host, ".")
	if len(parts) == 5 && parts[1] == "lambda-url" && parts[3] == "on" && parts[4] == "aws" {
		return parts[2]
	}
	return ""
}

// newSigner loads the default AWS configuration for signing requests to rawURL.
func newSigner(ctx context.Context, rawURL, region string, getenv func(string) string) (*requestSigner, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, usageErrorf("URL %q: %v", rawURL, err)
	}
	if region == "" {
		region = getenv("AWS_REGION")
	}
	if region == "" {
		region = functionURLRegion(u.Host)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		return nil, usageErrorf("no region to sign for: pass --region or set AWS_REGION")
	}
	return &requestSigner{creds: cfg.Credentials, region: region, now: time.Now}, nil
}

func (f *remoteFlags) open(ctx context.Context, getenv func(string) string) (*remote, error) {
	base := f.url
	if base == "" {
		base = getenv("CAIRN_URL")
	}
	if base == "" {
		return nil, usageErrorf("no deployment URL: pass --url or set CAIRN_URL (terraform output -raw api_url)")
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, usageErrorf("--url %q: want an absolute http(s) URL ending in /v1/workflow", base)
	}
	r := &remote{base: strings.TrimRight(base, "/"), client: &http.Client{Timeout: time.Minute}}
	if !f.noSign {
		if r.signer, err = newSigner(ctx, base, f.region, getenv); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// rpcError is an error answer of the RPC endpoint.
type rpcError struct {
	Status  int
	Code    string
	Message string
}

func (e *rpcError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// post sends body to target, signed when the remote signs, and returns the
// answer's body; an error status becomes an *rpcError.
func (r *remote) post(ctx context.Context, target string, body []byte, sign bool) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if sign {
		if err := r.signer.sign(ctx, req, body); err != nil {
			return nil, err
		}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer from %s: %w", target, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &rpcError{Status: resp.StatusCode, Message: strings.TrimSpace(string(raw))}
		var parsed struct {
			Error struct{ Code, Message string } `json:"error"`
			// An AWS_IAM Function URL refuses with {"Message": "..."}.
			Message string `json:"Message"`
		}
		if json.Unmarshal(raw, &parsed) == nil {
			switch {
			case parsed.Error.Code != "":
				e.Code, e.Message = parsed.Error.Code, parsed.Error.Message
			case parsed.Message != "":
				e.Message = parsed.Message
			}
		}
		if resp.StatusCode == http.StatusForbidden && e.Code == "" {
			e.Message += " (the API URL needs requests signed by an identity allowed lambda:InvokeFunctionUrl and lambda:InvokeFunction on the api function)"
		}
		return nil, e
	}
	return raw, nil
}

// call invokes one RPC method and returns its result.
func (r *remote) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	body, err := json.Marshal(map[string]any{"method": method, "params": params})
	if err != nil {
		return nil, err
	}
	raw, err := r.post(ctx, r.base+"/rpc", body, r.signer != nil)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || answer.Result == nil {
		return nil, fmt.Errorf("%s: not an RPC answer: %.200s", method, raw)
	}
	return answer.Result, nil
}

// jsonFlag parses a flag holding JSON; empty is null.
func jsonFlag(name, v string) (json.RawMessage, error) {
	if v == "" {
		return json.RawMessage("null"), nil
	}
	if !json.Valid([]byte(v)) {
		return nil, usageErrorf("--%s %q is not JSON (quote strings: '\"text\"')", name, v)
	}
	return json.RawMessage(v), nil
}

func printJSON(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// remoteCommand runs one of the commands below, printing errors as inspect does.
func remoteCommand(name string, fn func(context.Context, []string, io.Writer, func(string) string) error) func(context.Context, []string, io.Writer, io.Writer) int {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		err := fn(ctx, args, stdout, os.Getenv)
		if err == nil {
			return 0
		}
		fmt.Fprintf(stderr, "cairn %s: %s\n", name, cli.OneLine(err))
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "run 'cairn %s -h' for usage\n", name)
			return 2
		}
		return 1
	}
}

var runsCommand = remoteCommand("runs", runsErr)

func runsErr(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, runsUsage)
		return nil
	}
	if args[0] == "reset" {
		return runsReset(ctx, args[1:], stdout, getenv)
	}
	if args[0] == "signal" {
		return runsSignal(ctx, args[1:], stdout, getenv)
	}
	if args[0] == "query" {
		return runsQuery(ctx, args[1:], stdout, getenv)
	}
	if args[0] != "start" {
		return usageErrorf("unknown subcommand %q: want start, reset, signal or query", args[0])
	}
	var rf remoteFlags
	var input, runID string
	fs := flag.NewFlagSet("cairn runs start", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs)
	fs.StringVar(&input, "input", "", "run input as JSON")
	fs.StringVar(&runID, "run-id", "", "run ID")
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, runsUsage)
		return nil
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) != 1 {
		return usageErrorf("want exactly one workflow name, got %d arguments", len(pos))
	}
	in, err := jsonFlag("input", input)
	if err != nil {
		return err
	}
	r, err := rf.open(ctx, getenv)
	if err != nil {
		return err
	}
	params := map[string]any{"workflowName": pos[0], "input": in}
	if runID != "" {
		params["runId"] = runID
	}
	res, err := r.call(ctx, "runs.start", params)
	if err != nil {
		return err
	}
	return printJSON(stdout, res)
}

// runsSignal is cairn runs signal RUN NAME [JSON].
func runsSignal(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	return runNameJSON(ctx, args, stdout, getenv, "signal", "runs.signal", "payload", "signal payload")
}

// runNameJSON is a `cairn runs SUB RUN NAME [JSON]` command: it calls the RPC
// method with runId, name and, as field, the JSON (null when left out), and
// prints the answer. what names the JSON in a usage error.
func runNameJSON(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string, sub, method, field, what string) error {
	var rf remoteFlags
	fs := flag.NewFlagSet("cairn runs "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs)
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, runsUsage)
		return nil
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) < 2 || len(pos) > 3 {
		return usageErrorf("want RUN NAME [JSON], got %d arguments", len(pos))
	}
	arg := ""
	if len(pos) == 3 {
		arg = pos[2]
	}
	raw, err := jsonFlag(field, arg)
	if err != nil {
		return usageErrorf("the %s %q is not JSON (quote strings: '\"text\"')", what, arg)
	}
	r, err := rf.open(ctx, getenv)
	if err != nil {
		return err
	}
	res, err := r.call(ctx, method, map[string]any{"runId": pos[0], "name": pos[1], field: raw})
	if err != nil {
		return err
	}
	return printJSON(stdout, res)
}

var hooksCommand = remoteCommand("hooks", hooksErr)

func hooksErr(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, hooksUsage)
		return nil
	}
	if args[0] == "list" {
		return hooksList(ctx, args[1:], stdout, getenv)
	}
	if args[0] != "resume" {
		return usageErrorf("unknown subcommand %q: want list or resume", args[0])
	}
	var rf remoteFlags
	var payload string
	fs := flag.NewFlagSet("cairn hooks resume", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs)
	fs.BoolVar(&rf.sign, "sign", false, "sign the request to a webhook URL")
	fs.StringVar(&payload, "payload", "", "payload as JSON")
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, hooksUsage)
		return nil
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) != 1 {
		return usageErrorf("want one webhook URL or token, got %d arguments", len(pos))
	}
	body, err := jsonFlag("payload", payload)
	if err != nil {
		return err
	}
	target := pos[0]
	if !strings.HasPrefix(target, "https://") && !strings.HasPrefix(target, "http://") {
		r, err := rf.open(ctx, getenv)
		if err != nil {
			return err
		}
		res, err := r.call(ctx, "hooks.resume", map[string]any{"token": target, "payload": body})
		if err != nil {
			return err
		}
		return printJSON(stdout, res)
	}
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || !strings.Contains(u.Path, "/webhooks/") {
		return usageErrorf("%q is not a webhook URL (<base>/webhooks/<token>)", target)
	}
	r := &remote{client: &http.Client{Timeout: time.Minute}}
	if rf.sign {
		if r.signer, err = newSigner(ctx, target, rf.region, getenv); err != nil {
			return err
		}
	}
	res, err := r.post(ctx, target, body, rf.sign)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(res)) == 0 {
		fmt.Fprintln(stdout, "resumed")
		return nil
	}
	return printJSON(stdout, res)
}

// hookView is the part of the RPC's hook view hooks list prints.
type hookView struct {
	HookID     string          `json:"hookId"`
	RunID      string          `json:"runId"`
	Token      string          `json:"token"`
	Status     string          `json:"status"`
	WebhookURL string          `json:"webhookUrl"`
	Metadata   json.RawMessage `json:"metadata"`
	// TokenHidden is set by a server that leaves tokens out of listings
	// (cairn dev and cairn ui without --show-tokens).
	TokenHidden bool `json:"tokenHidden"`
}

func hooksList(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var rf remoteFlags
	var runID string
	var jsonOut bool
	fs := flag.NewFlagSet("cairn hooks list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs)
	fs.StringVar(&runID, "run", "", "only hooks of this run")
	fs.BoolVar(&jsonOut, "json", false, "print the RPC's JSON")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, hooksUsage)
		return nil
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected arguments %v", pos)
	}
	r, err := rf.open(ctx, getenv)
	if err != nil {
		return err
	}
	params := map[string]any{}
	if runID != "" {
		params["runId"] = runID
	}
	var hooks []hookView
	for {
		res, err := r.call(ctx, "hooks.list", params)
		if err != nil {
			return err
		}
		if jsonOut && params["cursor"] == nil {
			// One page as the RPC answers it; --json is for scripts that page themselves.
			return printJSON(stdout, res)
		}
		var page struct {
			Items  []hookView `json:"items"`
			Cursor string     `json:"cursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return fmt.Errorf("hooks.list: not a page of hooks: %w", err)
		}
		hooks = append(hooks, page.Items...)
		if page.Cursor == "" {
			break
		}
		params["cursor"] = page.Cursor
	}
	table(stdout, "HOOK ID\tRUN ID\tSTATUS\tRESUME AT", func(add func(...string)) {
		for _, h := range hooks {
			at := h.WebhookURL
			switch {
			case at != "":
			case h.TokenHidden:
				at = "(token hidden by the server; serve with --show-tokens)"
			default:
				at = h.Token
			}
			add(h.HookID, h.RunID, h.Status, at)
		}
	})
	return nil
}
