package blob

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3 error codes that mean "try again later".
var transientCodes = map[string]bool{
	"SlowDown":                true,
	"Throttling":              true,
	"ThrottlingException":     true,
	"TooManyRequests":         true,
	"RequestLimitExceeded":    true,
	"RequestTimeout":          true,
	"InternalError":           true,
	"ServiceUnavailable":      true,
	"OperationAborted":        true,
	"RequestTimeoutException": true,
}

// IsTransient reports whether err is a failure that trying again later
// may cure: the store unreachable (connection refused or reset, a network
// or DNS failure that says it is temporary, a timeout), the connection
// cut mid-stream (io.ErrUnexpectedEOF), or S3 throttling (503 SlowDown,
// 429) or a 5xx. It is false for nil, a cancelled context or an expired
// deadline, and for every answer a retry would repeat: not found, exists,
// an invalid key, a body of the wrong size, a blob over a limit, a blob
// that cannot be decrypted, and any other HTTP answer (403 access denied,
// a missing bucket, ...).
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	for _, permanent := range []error{context.Canceled, context.DeadlineExceeded, ErrNotFound, ErrExists, ErrInvalidKey, ErrTooLarge, ErrDecrypt, errBodySize} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	code, status := apiError(err)
	switch {
	case transientCodes[code], status == 429, status >= 500:
		return true
	case code != "", status != 0:
		return false // the server answered, and would answer the same
	}
	for _, errno := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN, syscall.ENETRESET} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	// The SDK could not send the request or read its answer.
	var send *smithyhttp.RequestSendError
	return errors.As(err, &send)
}
