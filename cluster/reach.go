package cluster

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnreachable is wrapped by a Client's error when NATS or its JetStream
// could not be reached: the connection is closed, or reconnecting, or the
// servers answered that JetStream is not enabled. The error says the
// connection's status and the underlying failure.
var ErrUnreachable = errors.New("cluster: NATS unreachable")

// reach returns err wrapping ErrUnreachable when it comes from nc being
// unable to reach NATS or JetStream; err unchanged otherwise (nil for nil).
func reach(nc *nats.Conn, err error) error {
	if err == nil || errors.Is(err, ErrUnreachable) {
		return err
	}
	status := nc.Status()
	if status != nats.CONNECTED ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrNoServers) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		return fmt.Errorf("%w (connection %s): %w", ErrUnreachable, status, err)
	}
	return err
}
