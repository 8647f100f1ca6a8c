// Package local is cairn's embedded World: one SQLite file (modernc.org/sqlite,
// pure Go, WAL mode) holding every run's event log and projections, with an
// in-process queue whose workers are woken by one timer set to the earliest due
// delivery, so durable sleeps of seconds or months cost nothing while they wait.
//
// State lives in the file. A process that is killed and started again resumes its
// due deliveries with [World.Serve]; a delivery it was running returns after its
// lease (Config.Lease) with its Attempt incremented, so the runtime can tell a
// redelivery from a duplicate. Several processes may share one file: every append
// is an immediate transaction that re-reads the run and only commits if its event
// count is unchanged. Commits survive a process crash; with synchronous=NORMAL the
// last transactions may be lost on power failure, never corrupted.
//
// Queue with a fixed QueueOptions.ID keeps one delivery per ID while it is
// pending; queued again while it runs, it runs once more afterwards, so a wake-up
// racing with its own delivery is never lost. A failed delivery is retried after a
// backoff that doubles from [MinBackoff] to [MaxBackoff]. With Config.Retention,
// finishing a run queues an expire-<runID> delivery that Serve handles itself,
// deleting the run, its events, steps, waits, hooks, tokens and streams.
//
// A run started ([worlds.StartRun], workflow.Start) while this process serves
// its workflow and has a worker free starts eagerly ([World.StartEager]): its
// first delivery runs at once on that worker, and the run's creation is
// written with what the delivery writes first (run_started and the first
// step's start) and with the delivery itself, claimed, in one transaction.
// A 3-step run then makes 4 writes instead of 5. The start returns once that
// write is made, and the delivery is leased, retried and recovered after a
// crash like any other; Config.NoEagerStart turns it off.
//
// [World.SubscribeStream] sees writes made through the same World; readers in
// other processes poll ReadStream.
//
// With Config.BaseURL set to where the World's handlers are served (for
// example http://localhost:8080/v1/workflow for worldhttp.Handler on port
// 8080), the World implements [worlds.WebhookURLs]: workflow's Hook.URL and
// worldhttp's hook views give each active hook its webhook URL, as on AWS.
package local
