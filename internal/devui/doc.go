// Package devui is the local development server behind `cairn dev`: a web UI
// served from the binary (plain HTML, CSS and JavaScript, embedded) and the JSON
// API it calls, over any [worlds.World]. It lists runs with live status, shows a
// run's steps as a timeline with attempts, durations, errors, inputs and outputs,
// lets a developer resume hooks with a JSON payload, follows streams live (server-
// sent events), cancels runs and starts them again. It also mounts the World's
// RPC and webhook endpoints (package worldhttp) under /v1/workflow, so code that
// talks to a deployed World's HTTP entry point can talk to the dev server instead.
package devui
