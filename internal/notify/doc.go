// Package notify tells people when a run needs them or ends: it builds
// and sends notices to webhook endpoints, in a generic JSON form or as
// Slack- and Teams-compatible incoming-webhook messages, each signed with
// HMAC-SHA256 and carrying an idempotency key.
//
// The workflow decides which notices a run sends and when (workflows'
// notice.go); the worker's Notify activity sends one notice to one
// endpoint through a Sender. The package promises:
//
//   - endpoints are configured on the workers only (TETHER_NOTIFY); an
//     endpoint's URL, which for Slack and Teams is itself a secret, never
//     leaves the worker: workflows name endpoints, logs show their host;
//   - every request carries Tether-Signature: t=UNIX,v1=HEX, where HEX is
//     HMAC-SHA256 of "UNIX.BODY" with TETHER_NOTIFY_SECRET (Verify checks
//     one), and the idempotency key in the Tether-Idempotency-Key header
//     and in the body; a notice sent again (a worker lost mid-request) has
//     the same key and the same body;
//   - a failure that may pass (the receiver unreachable, a timeout, 429 or
//     a 5xx) is ErrTransient, anything else (a 4xx, a redirect) is final;
//   - text a person or an agent wrote is escaped for the message format,
//     so a question cannot add links, mentions or markup of its own.
package notify
