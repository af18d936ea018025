// Package runstore keeps Tether's durable run records in a blob store:
// immutable, sequence-numbered checkpoints per run, and the key scheme of
// the session blobs those checkpoints name, all under one prefix per run so
// that a run is deleted as a unit.
//
// The Checkpoint type is defined here, once, with a format version;
// decoding any other version fails with ErrUnknownVersion. A checkpoint is
// stored as a gzip member of its JSON (Compress), authenticated when the
// store has a key (Seal); checkpoints stored as bare JSON still read, and
// a damaged frame is ErrCorruptCheckpoint. ErrNoCheckpoint
// means a run genuinely has no checkpoint (it wraps blob.ErrNotFound); a
// store fault is always some other error, so "start fresh" is never the
// answer to a sick store.
package runstore
