// Package workflowui is a web UI for durable workflows, as an http.Handler you
// mount in your own process over any [worlds.World]: plain HTML, CSS and
// JavaScript embedded in the binary, and the JSON API they call. It lists runs
// with live status, filtered by status and by search attributes (key=value
// pairs every listed run holds; GET api/runs?attr=KEY=VALUE, repeatable), shows a run's steps as a timeline with attempts, durations,
// errors, inputs and outputs, resumes hooks with a JSON payload, follows streams
// live (server-sent events), cancels runs and starts them again.
//
// Give it the runners of your workflows ([Options.Runners]) and it starts and
// re-runs them with inputs checked against their input types; leave them out when
// the workers run elsewhere (the AWS World's Lambda worker) and starts are queued
// for them. `cairn dev` serves it over the embedded World with demo workflows,
// and `cairn ui` over an existing World.
//
// The handler does not authenticate: mount it behind your own authentication, or
// on a loopback address. Pages of other sites open in the same browser are kept
// out of it: state-changing requests must be JSON (415 otherwise), which a page
// on another origin cannot send without a CORS preflight the handler never
// grants, and requests a browser marks as coming from another origin
// (Sec-Fetch-Site, or Origin against Host) answer 403 unless the origin is one
// of [Options.TrustedOrigins]. Hook tokens, which resume their hooks, are left
// out of the run view and its events unless [Options.ShowTokens] is set; the
// page resumes hooks by their ID.
//
// When you serve it yourself, set the http.Server's ReadHeaderTimeout,
// ReadTimeout, WriteTimeout and IdleTimeout, so a slow client cannot hold a
// connection open: a stream of server-sent events lifts the read deadline and
// renews its write deadline for its own connection (http.ResponseController),
// so the timeouts need no exception for it. On a loopback address, also accept
// only loopback names in the Host header, or a page whose DNS name rebinds to
// 127.0.0.1 reads the UI as if it were same-origin. `cairn dev` and `cairn ui`
// do both.
package workflowui
