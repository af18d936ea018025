package workflows

// A run recorded before one-trip visits keeps its two-activity visits; its
// slots record their blobs' digests too, so a restore can check them, and
// it resumes its conversation through them.
func (s *GraphRunSuite) TestLegacyVisitsRecordDigests() {
	s.recordedBefore(changeOneTripVisit, versionOneTripVisit)
	s.wipeOnJudge(nil)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 3)
	s.Equal("claude_code-s1", calls[2].SessionID, "the legacy path resumed through the digest-checked restore")
	slot := s.latest().NodeSessions["writer"]
	s.Equal("claude_code", slot.Backend)
	s.Regexp(`^sha256:[0-9a-f]{64}$`, slot.Digest, "a legacy visit's slot records the digest of its blob")
}
