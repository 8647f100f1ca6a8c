// Package workflowui is a web UI for durable workflows, as an http.Handler you
// mount in your own process over any [worlds.World]: plain HTML, CSS and
// JavaScript embedded in the binary, and the JSON API they call. It lists runs
// with live status, shows a run's steps as a timeline with attempts, durations,
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
// on a loopback address. State-changing requests must be JSON, which a page on
// another origin cannot send without a CORS preflight the handler never grants.
package workflowui
