// Package localtest holds the workflow runtime's integration tests on the embedded
// SQLite World (worlds/local), including a crash-and-restart test that SIGKILLs a
// child process mid-run. It has no non-test code.
package localtest
