// Package cluster runs teams on NATS JetStream (issue 14): the ledger of
// every team in one JetStream stream, written by a team subscriber and read
// back for orchestrator.Restore, with fencing so that a team taken over by
// another process can no longer be written by its old owner.
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
//   - Worker runs teams on a fleet: a lease per team in a JetStream
//     key-value bucket (owner and end, claimed and renewed with
//     compare-and-set on the key's revision), Create for a new team from
//     the worker's template, and the takeover of every team whose lease
//     expired, restored from the stream, by the worker with the fewest
//     teams.
//
// # Stream layout
//
// One stream (Config.Stream, "AKGENTIC" by default, file storage,
// Config.Replicas replicas) holds two subjects per team:
//
//   - <prefix>.rec.<team id>: the team's records, one JetStream message per
//     record, its data message.Marshal's encoding (the event log's codec),
//     its Nats-Msg-Id the record's id (a record published twice is stored
//     once, within the stream's duplicate window) and its Akgentic-Index
//     header its place in the team's ledger (1, 2, ...);
//   - <prefix>.own.<team id>: the team's claims, one message per owner that
//     took the team (OpenLedger).
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
// Records are acknowledged out of order when publishes are retried (a
// connection lost, a server restarted); a read puts them back in ledger
// order, owner by owner (the claim each record was published under), each
// by its Akgentic-Index. A missing index in the last owner's records is an
// error, never a silent gap; the next owner resumes from the record before
// it and writes over what follows.
//
// # Not built yet
//
// The durable inbox (input for a team waits in a stream until its owner
// processes it), the client (create, send, watch, list, stop from any
// process) and the -cluster demo are not built. Input sent to a team's
// members goes through the process that runs it (actor.System.Ask), and a
// turn cut by a crash is not run again: the team resumes from its last
// acknowledged record. On a replicated stream a Ledger keeps one record
// in flight (JetStream refuses overlapping subject checks there), which is
// slow; atomic batches would fix it.
package cluster
