package sessionlog

import "fmt"

// maxIDLen keeps a session's file name well under every filesystem's limit.
const maxIDLen = 128

// ValidateID checks that id can name a session in every backend: 1 to 128
// characters from [A-Za-z0-9._-], not starting with a dot. Ids are file
// names in the JSONL backend, so nothing else is accepted.
func ValidateID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%w: session id %q must be 1 to %d characters", ErrInvalid, id, maxIDLen)
	}
	if id[0] == '.' {
		return fmt.Errorf("%w: session id %q must not start with a dot", ErrInvalid, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: session id %q may contain only letters, digits, '.', '_' and '-'", ErrInvalid, id)
		}
	}
	return nil
}

// ValidateHeader checks a header read back from storage or given to Create
// (after Create filled in the format version).
func ValidateHeader(h Header) error {
	if err := ValidateID(h.ID); err != nil {
		return err
	}
	if h.FormatVersion != FormatVersion {
		return fmt.Errorf("%w: session %s is format %d, this build reads only %d", ErrVersion, h.ID, h.FormatVersion, FormatVersion)
	}
	if h.Backend == "" {
		return fmt.Errorf("%w: session %s has no backend", ErrInvalid, h.ID)
	}
	if err := CheckSerializable(h); err != nil {
		return fmt.Errorf("session %s header: %w", h.ID, err)
	}
	if h.ForkedFrom != nil {
		if err := ValidateID(h.ForkedFrom.SessionID); err != nil {
			return fmt.Errorf("session %s lineage: %w", h.ID, err)
		}
	}
	return nil
}
