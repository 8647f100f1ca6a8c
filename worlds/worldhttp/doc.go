// Package worldhttp serves any [worlds.World] over HTTP: a small JSON RPC endpoint
// to start, signal, inspect, cancel and reset runs and resume hooks, and a webhook endpoint that
// delivers a request body to the hook owning the token in its path. It needs only
// the World interface, so the AWS World's Function URL handlers and the embedded
// World's dev server share it.
//
// Routes, under a prefix (default /v1/workflow):
//
//	POST {prefix}/rpc               {"method": "runs.get", "params": {"runId": "..."}}
//	POST {prefix}/webhooks/{token}  any body; JSON is passed as is, other bodies as a JSON string
//
// An RPC call answers 200 with {"result": ...}, or an error status with
// {"error": {"code": "...", "message": "..."}}: 400 invalid_argument for bad input,
// 404 not_found, 409 conflict, 410 gone, 425 too_early, 413 too_large, 405 for a
// wrong HTTP method, 501 not_implemented for a call that needs workflow code the
// server lacks, 500 internal only for failures of the World itself. Methods:
//
//	runs.start    {workflowName, input?, attributes?, runId?}  -> Run (appends run_created, queues the run;
//	              retried with the same runId, workflowName and input it returns that run, queued again if pending)
//	runs.signal   {runId, name, payload?}                      -> Run (worlds.SendSignal: buffered in the run's
//	              log until its code reads it; 404 for an unknown run, 410 for an ended one)
//	runs.signalWithStart {workflowName, name, payload?, input?, attributes?, runId?} -> Run
//	              (worlds.SignalWithStart: starts the run with the signal unless runId exists, else signals it)
//	runs.get      {runId}                                      -> Run
//	runs.list     {workflowName?, status?, createdAfter?, createdBefore?, attributes?, limit?, cursor?} -> Page[Run]
//	              (attributes: runs holding every key with exactly that value)
//	runs.query    {runId, name, arg?}                          -> the JSON the run's query handler name answers for arg
//	              (worlds.QueryRun with Options.Workflows, which replays the run with their code and writes nothing;
//	              404 for an unknown run or handler, 400 for a handler that failed, 501 without the workflow's code)
//	runs.cancel   {runId, reason?}                             -> Run (worlds.RequestCancel: a pending run ends cancelled,
//	              a running one gets a cancel request and a delivery that hands it to the run's code)
//	runs.reset    {runId, to, newRunId?, reason?}              -> Run (worlds.ResetRun: the new run, made from the
//	              run's events up to to, an event seq or "last-step"; a live run ends linked to it)
//	events.list   {runId, afterSeq?, limit?, cursor?}          -> Page[Event]
//	steps.list    {runId, limit?, cursor?}                     -> Page[Step]
//	steps.get     {runId, stepId}                              -> Step
//	hooks.list    {runId?, limit?, cursor?}                    -> Page[HookView]
//	hooks.get     {hookId}                                     -> HookView (a Hook and, where the World
//	              knows its base URL, webhookUrl for an active hook)
//	hooks.resume  {token, payload?}                            -> ResumeContext
//	waits.get     {runId, waitId}                              -> Wait
//	streams.list  {runId}                                      -> []StreamInfo
//	streams.read  {runId, name, from?, limit?}                 -> StreamPage
//
// Before anything is written, runs.start checks the run ID, attributes and input
// against the limits of package worlds ([worlds.ValidateStart]), and, with
// Options.Workflows, the input's shape against the workflow's input type;
// hooks.resume and webhooks check the payload ([worlds.ValidateJSON]). Bad input
// answers 400 invalid_argument with a message naming the field. Paths that are
// not in canonical form ("/webhooks/.") answer a JSON 404.
//
// The handlers do not authenticate. Put the RPC endpoint behind IAM or an
// authorizer; webhooks are authorized by their token alone.
//
// # Browsers
//
// A server on a developer's machine is reachable by every page open in their
// browser, so the RPC endpoint refuses what only a page of another site would
// send: a body that is not Content-Type application/json answers 415 (forms
// and text/plain are what a page can POST without asking), and a request with
// Sec-Fetch-Site other than same-origin or none, or, from a browser without
// Sec-Fetch-Site, an Origin naming another host than Host, answers 403, unless
// the origin is one of Options.TrustedOrigins. Clients that are not browsers
// send neither header and are not affected.
//
// The webhook endpoint is exempt: third parties call it from their servers
// with whatever content type they use (forms included) and no browser
// headers, and its token already authorizes the one thing it does, so a page
// that knows a token could resume the hook by any other means too.
//
// Hook tokens are left out of hooks.list, hooks.get and events.list
// (tokenHidden is set on hook views) unless Options.ShowTokens is set: behind
// IAM that is safe, on an unauthenticated server it would hand every hook to
// whoever can reach it.
//
// # Timeouts
//
// The handlers bound request bodies (Options.MaxBodyBytes) but not time: set
// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout on the
// http.Server that serves them, so a client sending its body slowly cannot
// hold a connection open. A body that stops arriving before ReadTimeout
// answers 408. `cairn dev` and `cairn ui` use 10s, 30s, 2m and 2m. When you
// serve on a loopback address, also check the Host header (accept loopback
// names only), or a page whose DNS name rebinds to 127.0.0.1 reads from and
// writes to the server as if it were same-origin; the servers of `cairn dev`
// and `cairn ui` do.
package worldhttp
