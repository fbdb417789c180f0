package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Config's zero fields.
const (
	defaultStream       = "AKGENTIC"
	defaultPrefix       = "akgentic"
	defaultWindow       = 1024
	defaultAckTimeout   = 5 * time.Second
	defaultFlushTimeout = 10 * time.Second
	// defaultSnapshotEvery is Config.SnapshotEvery when 0: a restore
	// reads at most about this many records after the team's snapshot.
	defaultSnapshotEvery = 1000
	maxReplicas          = 5
	minLease             = 30 * time.Millisecond // a renewal's round trip must fit in a third of it
	// minReplicatedLease is the shortest lease on a replicated cluster
	// (Replicas > 1): the leases bucket's leader election after a server's
	// loss takes several seconds (4 to 7 s measured on three servers on
	// loopback), during which no lease is renewed; a worker stops its teams
	// whose lease ended unrenewed, and a shorter lease stops them all on
	// every election.
	minReplicatedLease = 10 * time.Second
)

// Config says where teams' ledgers live and how a Ledger publishes. The
// zero value is valid: stream "AKGENTIC", subjects under "akgentic", one
// replica, a window of 1,024 records.
type Config struct {
	// Stream is the JetStream stream holding every team's ledger; created
	// when missing (file storage). "AKGENTIC" when empty.
	Stream string
	// Prefix is the first token of the teams' subjects ("akgentic" when
	// empty): <Prefix>.rec.<team id>, <Prefix>.own.<team id> and
	// <Prefix>.snap.<team id>.
	Prefix string
	// Replicas is the stream's replica count when the stream is created:
	// 1 (the default) on one server, 3 on a three-server cluster.
	Replicas int
	// Window is how many records a Ledger keeps published but not yet
	// acknowledged by JetStream (1,024 when 0): all in flight on one
	// server; on a replicated stream one atomic batch in flight (up to
	// 1,000 records), the rest queued for the next. While JetStream is
	// unreachable the team goes on until the window is full; the next
	// record is refused and reported (ErrWindowFull).
	Window int
	// AckTimeout is how long a publish waits for its acknowledgement
	// before it is sent again (5 s when 0).
	AckTimeout time.Duration
	// FlushTimeout bounds how long the team's stop waits for the records
	// still unacknowledged (10 s when 0).
	FlushTimeout time.Duration
	// Lease is how long a Worker's lease on a team lasts unrenewed (10 s
	// when 0; at least 30 ms on one server, at least 10 s when Replicas is
	// more than 1, to outlast a leader election of the leases bucket); the
	// Worker renews it every third of that. A team whose
	// worker died is resumed elsewhere when its lease ends (about one
	// lease after the last renewal; the restore adds little).
	Lease time.Duration
	// IdleAfter passivates a Worker's idle teams: a team with no turn
	// running, no input delivered and no record for IdleAfter is stopped
	// on its worker and its lease marked passive, so it holds no
	// goroutine or memory anywhere; its next input (Client.Send, SendOnce,
	// Answer) activates it on the holder of its shard: restored from the
	// stream, then given the input. 0 (the default): never. A team that relies on a timer of
	// its own to wake it is not woken by it while passive: leave
	// IdleAfter at 0 for such teams.
	IdleAfter time.Duration
	// SnapshotEvery is how many records a Ledger stores between two
	// snapshots of its team (1,000 when 0; negative: no snapshots, neither
	// written nor read: every restore reads the whole ledger). A
	// snapshot is the team's log compacted to what its restore reads
	// (orchestrator.Compact with agent.Compaction), stored as one message
	// on <Prefix>.snap.<team id>, fenced as every record; it is written
	// once SnapshotEvery records came since the last one and all are
	// acknowledged, and when the team stops (a passivation, a handover).
	// A restore (OpenLedger, so a takeover or an activation) reads the
	// latest snapshot and the records after it, not the whole ledger; a
	// snapshot missing, unreadable or larger than the server takes falls
	// back to the whole read (logged). ReadTeam and Team.Messages past the
	// window still read every record, and Watch every record after the
	// latest snapshot ending before its index: the ledger is kept whole.
	SnapshotEvery int
	// Shards is the number of shards of each template's teams (see
	// Worker): fixed when the cluster is first used (stored in the leases
	// bucket, key "layout"), 64 when 0 then. A team's shard is a hash of
	// its id; a worker holds whole shards, and the server one durable
	// consumer per shard, whatever the number of teams. Given on a cluster
	// made with another count, StartWorker and NewClient fail; 0 takes the
	// cluster's. At most 4,096.
	Shards int
	// Owner names this worker in its claims and leases of teams; when
	// empty, the host name, the process id and a random suffix (a process
	// restarted in a container, pid 1 again, is a new worker). It must be
	// unique to each Worker: StartWorker fails while a live worker has it.
	Owner string
	// Logger receives the Ledger's failures; slog.Default() when nil.
	Logger *slog.Logger

	resumed    func(uuid.UUID) // tests: a Worker took a team over
	passivated func(uuid.UUID) // tests: a Worker passivated a team
	scanned    func()          // tests: a Worker ended a takeover scan
	presented  func()          // tests: a Worker ended a round of its presence and shards' renewals
	// tests: a Ledger read its team, from a snapshot or not, and how
	// many records of the ledger it read
	readTeam func(team uuid.UUID, fromSnapshot bool, records int)
	// tests: an input was acknowledged (its turn durable) or refused
	inputDone func(uuid.UUID)
	// tests: the leases bucket as the Worker uses it (a fault put in)
	wrapLeases func(jetstream.KeyValue) jetstream.KeyValue
}

// withDefaults checks c and fills its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Stream == "" {
		c.Stream = defaultStream
	}
	if c.Prefix == "" {
		c.Prefix = defaultPrefix
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Window == 0 {
		c.Window = defaultWindow
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = defaultAckTimeout
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = defaultFlushTimeout
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = defaultSnapshotEvery
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		c.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), uuid.NewString()[:8]) // a restart is a new worker
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	var errs []error
	if strings.ContainsAny(c.Stream, ". *>\t\r\n/\\") {
		errs = append(errs, fmt.Errorf("Config.Stream %q: a stream name has no '.', '*', '>', '/', '\\' or white space", c.Stream))
	}
	if strings.ContainsAny(c.Prefix, " *>\t\r\n") || strings.HasPrefix(c.Prefix, ".") || strings.HasSuffix(c.Prefix, ".") || strings.Contains(c.Prefix, "..") {
		errs = append(errs, fmt.Errorf("Config.Prefix %q: not a subject prefix (tokens separated by single dots, no wildcard or white space)", c.Prefix))
	}
	if c.Replicas < 0 || c.Replicas > maxReplicas {
		errs = append(errs, fmt.Errorf("Config.Replicas %d: must be between 1 and %d", c.Replicas, maxReplicas))
	}
	if c.Window < 0 {
		errs = append(errs, fmt.Errorf("Config.Window %d: must be positive", c.Window))
	}
	if c.AckTimeout < 0 {
		errs = append(errs, fmt.Errorf("Config.AckTimeout %v: must be positive", c.AckTimeout))
	}
	if c.Lease < 0 || (c.Lease > 0 && c.Lease < minLease) {
		errs = append(errs, fmt.Errorf("Config.Lease %v: must be at least %v (renewed every third of it)", c.Lease, minLease))
	}
	if c.Replicas > 1 && c.Lease > 0 && c.Lease < minReplicatedLease {
		errs = append(errs, fmt.Errorf("Config.Lease %v: must be at least %v on a replicated cluster (Replicas %d): a leader election of the leases bucket takes several seconds, and a worker stops every team whose lease it cannot renew in time",
			c.Lease, minReplicatedLease, c.Replicas))
	}
	if c.Shards < 0 || c.Shards > maxShards {
		errs = append(errs, fmt.Errorf("Config.Shards %d: must be between 1 and %d (0: the cluster's, 64 on a new one)", c.Shards, maxShards))
	}
	if c.IdleAfter < 0 {
		errs = append(errs, fmt.Errorf("Config.IdleAfter %v: must be positive (0: never passivate)", c.IdleAfter))
	}
	if c.FlushTimeout < 0 {
		errs = append(errs, fmt.Errorf("Config.FlushTimeout %v: must be positive", c.FlushTimeout))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("cluster: %w", errors.Join(errs...))
	}
	return c, nil
}

// recordsSubject is the subject of a team's records.
func (c Config) recordsSubject(team uuid.UUID) string { return c.Prefix + ".rec." + team.String() }

// claimsSubject is the subject of a team's claims (fencing).
func (c Config) claimsSubject(team uuid.UUID) string { return c.Prefix + ".own." + team.String() }

// snapshotSubject is the subject of a team's snapshots.
func (c Config) snapshotSubject(team uuid.UUID) string { return c.Prefix + ".snap." + team.String() }
