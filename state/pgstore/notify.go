package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventsChannel is the notification channel Append notifies, in the same
// transaction, with the id of the spore whose log grew.
const EventsChannel = "sporectl_events"

// Backoff of the listener's reconnects.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// Watch sends the id of each spore whose log grew, as Append's
// notifications arrive, until ctx ends; then it closes the channel (the
// page's live tails wait on it: mycelia/ui.Changes). It listens on a
// connection of its own, outside the pool (LISTEN belongs to a session,
// and a pooled connection is shared). When that connection breaks — the
// server restarted, or an administrator ended the backend — it connects
// again with backoff, and then sends "" (any spore may have grown
// meanwhile). It fails only if the first connection cannot be made.
//
// Notifications are sent by every process that appends (any serve
// replica, any CLI), since they travel through the server.
func (s *Store) Watch(ctx context.Context) (<-chan string, error) {
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		delay := listenRetryMin
		for {
			if conn != nil {
				err := s.relay(ctx, conn, out)
				closeConn(conn)
				conn = nil
				if ctx.Err() != nil {
					return
				}
				s.opts.Logger.Warn("postgres listener lost its connection, reconnecting", "location", s.location, "err", s.red.redact(err))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			if conn, err = s.listen(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.opts.Logger.Warn("postgres listener cannot reconnect", "location", s.location, "retry_in", delay, "err", s.red.redact(err))
				delay = min(2*delay, listenRetryMax)
				continue
			}
			delay = listenRetryMin
			select {
			case out <- "": // what arrived while it was away is unknown
			case <-ctx.Done():
				closeConn(conn)
				return
			}
		}
	}()
	return out, nil
}

// listen opens the listener's connection with the pool's settings.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, s.red.redact(classify("connect the listener to "+s.location, err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+EventsChannel); err != nil {
		closeConn(conn)
		return nil, s.red.redact(classify("listen on "+EventsChannel, err))
	}
	return conn, nil
}

// relay forwards notifications until ctx ends or the connection fails.
func (s *Store) relay(ctx context.Context, conn *pgx.Conn, out chan<- string) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel != EventsChannel {
			continue
		}
		select {
		case out <- n.Payload:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
