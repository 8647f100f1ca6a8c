// Package local is cairn's embedded World: one SQLite file (modernc.org/sqlite,
// pure Go, WAL mode) holding every run's event log and projections, with an
// in-process queue whose workers are woken by one timer set to the earliest due
// delivery, so durable sleeps of seconds or months cost nothing while they wait.
// State lives in the file, so a process that is killed and started again resumes
// its due deliveries with [World.Serve]; several processes may share one file, as
// every append is a transaction guarded by the run's event count.
package local
