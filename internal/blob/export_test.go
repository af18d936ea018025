package blob

// RetryBufferBytes is how much of a body that cannot seek a retried Put
// keeps to send again.
const RetryBufferBytes = retryBufferBytes
