// Package cluster runs teams on NATS JetStream: the ledger of every team in
// one JetStream stream, written by a team subscriber and read back for
// orchestrator.Restore, with fencing so that a team taken over by another
// process can no longer be written by its old owner.
//
// # What exists
//
//   - RunEmbedded starts an in-process NATS server with JetStream (file
//     storage in a directory, loopback, a random port), so one machine
//     needs no install; against a real cluster the same code takes a
//     connection to its URL.
//   - OpenLedger claims a team and returns its Ledger, the team subscriber
//     that publishes every record to the stream, with the records the
//     stream already holds for orchestrator.Restore. ReadTeam reads a
//     team's records without claiming it.
//   - Worker runs teams on a fleet: a lease on each shard it holds in a
//     JetStream key-value bucket, renewed every beat, and a lease per team
//     in the same bucket (owner, end, template and state, stored with
//     compare-and-set on the key's revision when the team is taken or
//     changes, never renewed: a team is held while its worker holds its
//     shard), a presence entry of its own (its templates and subject,
//     renewed with its shards), Create for a new team from one of the
//     worker's named Templates, and the takeover of every team of its
//     shards whose lease ended, restored from the stream (see Placement).
//   - The durable inbox: a team's input waits in a JetStream stream
//     (Config.Stream + "_INBOX", a work queue, <prefix>.in.<team id>) and
//     is consumed by the team's owner through a durable consumer per team,
//     opened when the worker creates or resumes the team. Each input is
//     sent to its member from the team's person (Template.Person) with
//     agent.Say, as the person's own message (a slash command included),
//     and acknowledged only once the record closing its turn (its
//     ProcessedMessage, or HandledMessage) is acknowledged by JetStream.
//     Input sent while no worker owns the team waits and is delivered when
//     one resumes it. A person's answer to a member's question
//     (Client.Answer, the inbox's orchestrator.ProcessHumanInput) goes the
//     same way: the owner finds the question in the team's log and sends
//     the answer from the person to its sender (agent.Answer).
//   - Client, from any process with a NATS connection: Create a team from
//     a template by name (a request to the worker it is placed on), Send
//     input, Answer a member's question, Watch a team's records from any
//     record index (catch-up, then follow), list Teams with their owners,
//     Stop a team.
//   - Template.Resume runs on a team restored by a takeover or an
//     activation, for what the ledger does not hold (the catalog of cards
//     it does hold: orchestrator.CatalogChanged).
//
// # Placement
//
// A new team (Client.Create) goes to the live worker serving its
// template with the fewest teams running, as its presence says (a worker
// stores its count there every beat and on every Create; Create reads the
// presences alone), a tie broken at random: the request goes to that worker's own subject,
// and to the queue group of every worker serving the template when that
// worker does not answer (gone since it last renewed its presence).
// Worker.Create runs the team on the worker it is called on.
//
// A dead worker's shards (their leases ended unrenewed, its presence
// ended) are taken by the live workers serving their template, each up to
// its fair share of the template's shards; the holder of a shard then
// takes over, in one scan of its copy of the bucket, every team of the
// shard whose lease ended and that no live worker runs (a team's lease is
// stored when it is taken, not renewed, so a dead worker's teams' leases
// have all ended by then). The lease's compare-and-set decides between
// two workers trying the same team. The survivors thus take all of its
// teams about a lease after its death, about evenly, a few at a time
// each.
//
// # At least once
//
// An input whose turn was cut (its owner crashed, or lost the team,
// before the turn's close was stored) is delivered again to the team's
// next owner, about a lease later, and run again, as a message of its own
// (a new id derived from the input's). A turn may thus run twice, and its
// side effects (a tool, a message sent) happen twice; its records are in
// the ledger once per run that finished. An LLM agent (agent.BaseAgent)
// does not pay twice for a model call of the cut turn whose answer the
// ledger holds: restored, it replays the logged answers while the rerun
// matches the cut run (llm.Runner.RestoreCut), and calls the model from
// the first difference on (a tool that answers differently this time). An input whose turn's close is
// in the ledger is never run again, even when its acknowledgement was
// lost. Without a crash, each input runs once.
//
// # Passivation
//
// With Config.IdleAfter set, a worker stops a team idle that long (no turn
// running, no input in flight, no record), deletes its inbox consumer and
// marks its lease passive; the team's next input (Client.Send, SendOnce,
// Answer) wakes a worker serving its template, which takes the lease,
// restores the team from the stream (the snapshot its passivation stored,
// and the records after it: Config.SnapshotEvery) and delivers the input. A wake lost
// is made up by the takeover scan, which takes the passive teams whose
// inbox holds input. A worker that stops a team to hand it over (Close, a
// shard it could not keep, a passivation) first cuts the team's ledger
// (no record closing a message is stored from then on), so that a turn the
// stop cuts is not closed in it and runs again.
//
// # Stream layout
//
// One stream (Config.Stream, "AKGENTIC" by default, file storage,
// Config.Replicas replicas) holds three subjects per team:
//
//   - <prefix>.rec.<team id>: the team's records, one JetStream message per
//     record, its data message.Marshal's encoding (the event log's codec),
//     its Nats-Msg-Id the record's id (a record published twice is stored
//     once, within the stream's duplicate window) and its Akgentic-Index
//     header its place in the team's ledger (1, 2, ...);
//   - <prefix>.own.<team id>: the team's claims, one message per owner that
//     took the team (OpenLedger);
//   - <prefix>.snap.<team id>: the team's latest snapshot (Config.SnapshotEvery):
//     its ledger up to an index compacted to what a restore reads
//     (orchestrator.Compact with agent.Compaction), fenced as its records;
//     a restore reads it and the records above its index, the whole
//     ledger when it is missing or cannot be read.
//
// # Fencing
//
// Every record is published with Nats-Expected-Last-Subject-Sequence set to
// the sequence of its owner's claim, checked on the team's claims subject
// (jetstream.WithExpectLastSequenceForSubject). The claims subject changes
// only when another process claims the team, so the check costs nothing
// while the owner keeps the team, lets records be published without
// waiting for each other's acknowledgement, and refuses every record of the
// old owner as soon as a new claim is stored. The old owner's Ledger then
// stops its copy of the team and logs why (ErrFenced).
//
// A replicated stream refuses a publish whose claims-subject check
// overlaps one still being applied, so there a Ledger keeps one send in
// flight: a JetStream atomic batch (nats-server 2.12 and later) of every
// record queued meanwhile, up to 1,000 (the server's default bound), each
// record carrying the check, the batch stored whole or not at all and
// acknowledged by its commit. A fenced batch stores none of its records.
// The stream is created taking atomic batches, and a stream made without
// them is updated to take them when a Ledger opens it; when that fails
// (an older server) the Ledger logs it and sends one record at a time. On
// one server (R1) records are sent one by one, the window in flight, which
// is faster there than batches.
//
// Records are acknowledged out of order when publishes are retried (a
// connection lost, a server restarted); a read puts them back in ledger
// order, owner by owner (the claim each record was published under), each
// by its Akgentic-Index. A missing index in the last owner's records is an
// error, never a silent gap; the next owner resumes from the record before
// it and writes over what follows.
//
// # Limits
//
// The server bounds the atomic batches in flight (50 per stream by
// default): past that many teams sending at once on a replicated stream, a
// refused batch is sent again after a pause. Stopped teams' leases,
// claims and records are kept: each worker's view of the bucket (kept by
// one watcher) holds every lease, a few hundred bytes each, though a
// takeover scan reads only the leases ended (an index by end) and the
// passive teams with pending input. The streams bound their consumers at 2^20 (the server's
// default would be 1,000 per stream): one durable inbox consumer per team
// while it is active. On a replicated cluster a lease is at least 10 s.
package cluster
