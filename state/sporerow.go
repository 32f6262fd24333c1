package state

// SporeRow is one spore as a read of the whole fleet hands it on, one at
// a time (the directory store's RangeSpores): its record, its log's head
// and its outbox as the store keeps it, queued entries and dead letters
// (OutboxEntry.Dead set) in queue order. Spore and Outbox are the
// reader's for the call only.
type SporeRow struct {
	Spore  *Spore
	Head   SporeHead
	Outbox []OutboxEntry
}
